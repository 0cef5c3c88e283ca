package configpods

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/ripple-dev/ripple/internal/refs"
)

// config is a cached ConfigMap with the digest and data write time the
// cache transform records (internal/source).
func config(created, written time.Time, digest string) *corev1.ConfigMap {
	ann := map[string]string{"internal.ripple.dev/sha1": digest}
	if !written.IsZero() {
		ann["internal.ripple.dev/written"] = written.UTC().Format(time.RFC3339)
	}
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app",
		CreationTimestamp: metav1.NewTime(created), Annotations: ann}}
}

func TestChange(t *testing.T) {
	created := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	now := created.Add(time.Hour)
	k := Key{Kind: refs.ConfigMap, Namespace: "ns", Name: "app"}
	c := &Controller{env: Env{Clock: clocktesting.NewFakePassiveClock(now)}, changes: map[Key]seen{}}
	if s := c.change(k, config(created, created, "d1")); !s.at.IsZero() {
		t.Errorf("first sight of data written only at creation: change at %s, want none", s.at)
	}
	if s := c.change(k, config(created, created, "d1")); !s.at.IsZero() {
		t.Errorf("the same data again: change at %s, want none", s.at)
	}
	written := now.Add(-time.Second).Truncate(time.Second)
	if s := c.change(k, config(created, written, "d2")); !s.at.Equal(written) {
		t.Errorf("new data: change at %s, want its write %s", s.at, written)
	}
	if s := c.change(k, config(created, now.Add(-time.Second), "d2")); !s.at.Equal(written) {
		t.Errorf("the same data, written again (labels): change at %s, want still %s", s.at, written)
	}
	if s := c.change(k, config(created, created, "d3")); !s.at.Equal(now) {
		t.Errorf("new data with a stale write time: change at %s, want now %s", s.at, now)
	}
	c.forget(k)
	later := created.Add(30 * time.Minute)
	if s := c.change(k, config(created, later, "d3")); !s.at.Equal(later) {
		t.Errorf("first sight (a Ripple restart) of data written after creation: change at %s, want %s", s.at, later)
	}
}

func TestOwned(t *testing.T) {
	ctrlRef := func(kind, name string) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: "v1", Kind: kind, Name: name, UID: "u", Controller: ptr.To(true)}}
	}
	pod := func(refs []metav1.OwnerReference, labels map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", OwnerReferences: refs, Labels: labels}}
	}
	cache := fake.NewClientBuilder().WithObjects(&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}}).Build()
	c := &Controller{env: Env{Cache: cache, Kinds: map[string]bool{"Deployment": true, "StatefulSet": true},
		Deployment: func() client.Object { return &appsv1.Deployment{} }}}
	tests := []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{"a bare pod", pod(nil, nil), false},
		{"a StatefulSet's pod", pod(ctrlRef("StatefulSet", "db"), nil), true},
		{"a Deployment's pod", pod(ctrlRef("ReplicaSet", "web-abc12"), map[string]string{"pod-template-hash": "abc12"}), true},
		{"a ReplicaSet of no Deployment", pod(ctrlRef("ReplicaSet", "solo-abc12"), map[string]string{"pod-template-hash": "abc12"}), false},
		{"a ReplicaSet without the hash label", pod(ctrlRef("ReplicaSet", "web"), nil), false},
		{"an operator's pod", pod(ctrlRef("Database", "web"), nil), false},
		{"an owner that is not its controller", pod([]metav1.OwnerReference{{Kind: "StatefulSet", Name: "db"}}, nil), false},
	}
	for _, tt := range tests {
		if got := c.owned(t.Context(), tt.pod); got != tt.want {
			t.Errorf("%s: owned %v, want %v", tt.name, got, tt.want)
		}
	}
}
