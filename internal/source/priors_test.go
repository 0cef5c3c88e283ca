package source

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ripple-dev/ripple/internal/refs"
)

func cachedConfigMap(t *testing.T, version, value string) *corev1.ConfigMap {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "app", ResourceVersion: version}, Data: map[string]string{"k": value}}
	if _, err := Transform(cm); err != nil {
		t.Fatal(err)
	}
	return cm
}

// Priors keep the data before the latest change and when it was seen,
// ignore updates that leave the data alone, and forget a deleted source.
func TestPriors(t *testing.T) {
	var p Priors
	ref := refs.Ref{Kind: refs.ConfigMap, Name: "app"}
	t0 := time.Date(2026, 11, 24, 1, 0, 0, 0, time.UTC)
	v1, v2, v3 := cachedConfigMap(t, "1", "a"), cachedConfigMap(t, "2", "b"), cachedConfigMap(t, "3", "c")
	relabelled := cachedConfigMap(t, "4", "c")

	if _, ok := p.Of("shop", ref); ok {
		t.Fatal("a prior before any change")
	}
	p.Observe(refs.ConfigMap, v1, v2, t0)
	got, ok := p.Of("shop", ref)
	if !ok || got.Digest != Digest(v1) || got.Keys != Keys(v1) || !got.Seen.Equal(t0) {
		t.Fatalf("after the first change: %+v, %v; want v1's digests seen at %s", got, ok, t0)
	}
	p.Observe(refs.ConfigMap, v2, v3, t0.Add(time.Minute))
	p.Observe(refs.ConfigMap, v3, relabelled, t0.Add(2*time.Minute)) // no data change
	if got, _ := p.Of("shop", ref); got.Digest != Digest(v2) || !got.Seen.Equal(t0.Add(time.Minute)) {
		t.Fatalf("after the second change: %+v; want v2's digest seen a minute later", got)
	}
	if _, ok := p.Of("shop", refs.Ref{Kind: refs.Secret, Name: "app"}); ok {
		t.Error("a Secret of the same name has the ConfigMap's prior")
	}
	p.Forget(refs.ConfigMap, v3)
	if _, ok := p.Of("shop", ref); ok {
		t.Error("a prior kept after the delete")
	}
	var none *Priors
	if _, ok := none.Of("shop", ref); ok {
		t.Error("a nil Priors has a prior")
	}
}
