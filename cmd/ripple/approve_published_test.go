package main

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stypes "k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/ripple-dev/ripple/api/v1alpha1"
	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/workload"
)

// Without Ripple's digest key, approve takes what waits from the
// ConfigRollouts Ripple publishes: each config whose newest change lists
// the workload waiting for approval, at the config's resourceVersion;
// not a config whose newest change it does not wait for, nor an older
// change it waited for.
func TestPublishedWaiting(t *testing.T) {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = v1alpha1.AddToScheme(scheme)
	db := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "db", UID: "db-uid"}}
	app := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "app", UID: "app-uid"}}
	w := workload.Ref{Kind: "Deployment", Namespace: "shop", Name: "web"}
	waits := []v1alpha1.Consumer{{Kind: "Deployment", Name: "web", State: v1alpha1.ConsumerPending, Reason: "ReloadPending"}}
	done := []v1alpha1.Consumer{{Kind: "Deployment", Name: "web", State: v1alpha1.ConsumerComplete}}
	cr := func(name, kind, label, config, uid, revision string, age time.Duration, consumers []v1alpha1.Consumer) *v1alpha1.ConfigRollout {
		return &v1alpha1.ConfigRollout{
			ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, CreationTimestamp: metav1.NewTime(time.Now().Add(-age)),
				Labels: map[string]string{v1alpha1.LabelConfigKind: label, v1alpha1.LabelConfigName: config}},
			Spec:   v1alpha1.ConfigRolloutSpec{Config: v1alpha1.ConfigReference{Kind: kind, Name: config, UID: k8stypes.UID(uid)}, Revision: revision},
			Status: v1alpha1.ConfigRolloutStatus{Consumers: consumers},
		}
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(db, app,
		cr("db-1", "Secret", "secret", "db", "db-uid", "r-db-new", time.Minute, waits),
		cr("db-0", "Secret", "secret", "db", "db-uid", "r-db-old", time.Hour, done),
		cr("app-1", "ConfigMap", "configmap", "app", "app-uid", "r-app-new", time.Minute, done),
		cr("app-0", "ConfigMap", "configmap", "app", "app-uid", "r-app-old", time.Hour, waits),
	).Build()
	sources := []plan.SourcePlan{{Ref: refs.Ref{Kind: refs.ConfigMap, Name: "app"}}, {Ref: refs.Ref{Kind: refs.Secret, Name: "db"}}}
	got, revisions, err := published(t.Context(), c, w, sources)
	if err != nil {
		t.Fatal(err)
	}
	var stored corev1.Secret
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(db), &stored); err != nil {
		t.Fatal(err)
	}
	dbRef := refs.Ref{Kind: refs.Secret, Name: "db"}
	if len(got.Changes) != 1 || got.Changes[0].Ref != dbRef || got.Changes[0].Hash != "" ||
		got.Versions[dbRef] != stored.ResourceVersion || stored.ResourceVersion == "" || len(revisions) != 1 || revisions[0] != "r-db-new" {
		t.Fatalf("published %+v, revisions %v: want Secret db alone at resourceVersion %q, revision r-db-new", got, revisions, stored.ResourceVersion)
	}
	a := plan.ApprovalOf(got, "alice", time.Now(), false)
	if a.Changes[0].Digest != "" || a.Changes[0].Version != stored.ResourceVersion {
		t.Errorf("approval %+v: want no digest and the resourceVersion", a)
	}
	_, _, err = published(t.Context(), c, w, sources[:1])
	if err == nil || !strings.Contains(err.Error(), "no ConfigRollout of its configs says it waits for an approval") {
		t.Errorf("nothing waits: error %v", err)
	}
}
