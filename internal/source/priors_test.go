package source

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/ripple-dev/ripple/internal/digest"
	"github.com/ripple-dev/ripple/internal/refs"
)

func cachedConfigMap(t *testing.T, version, value string) *corev1.ConfigMap {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "app", ResourceVersion: version}, Data: map[string]string{"k": value}}
	if _, err := Transform(digest.Digester{}, cm); err != nil {
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

// The transform of a kind records the prior of a change from the version
// an informer's store holds (with --namespaces, one store per namespace),
// and none for a source created, created again under the same name (another
// UID), or of another kind; a late delete of the old source keeps the prior
// of the new one.
func TestPriorsTransform(t *testing.T) {
	now := time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC)
	p := &Priors{Clock: clocktesting.NewFakePassiveClock(now)}
	other, shop := toolscache.NewStore(toolscache.MetaNamespaceKeyFunc), toolscache.NewStore(toolscache.MetaNamespaceKeyFunc)
	p.Track(refs.ConfigMap, other)
	p.Track(refs.ConfigMap, shop)
	v1 := cachedConfigMap(t, "1", "a")
	v1.UID = "u1"
	if err := shop.Add(v1); err != nil {
		t.Fatal(err)
	}
	raw := func(uid types.UID, value string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "app", UID: uid}, Data: map[string]string{"k": value}}
	}
	ref := refs.Ref{Kind: refs.ConfigMap, Name: "app"}
	transform := p.Transform(refs.ConfigMap)

	if _, err := transform(raw("u2", "b")); err != nil {
		t.Fatal(err)
	}
	if got, ok := p.Of("shop", ref); ok {
		t.Fatalf("a source created again has the old one's prior: %+v", got)
	}
	if _, err := p.Transform(refs.Secret)(raw("u1", "b")); err != nil {
		t.Fatal(err)
	}
	if got, ok := p.Of("shop", ref); ok {
		t.Fatalf("the Secrets' transform recorded a ConfigMap's prior: %+v", got)
	}
	v2, err := transform(raw("u1", "b"))
	if err != nil {
		t.Fatal(err)
	}
	got, ok := p.Of("shop", ref)
	if !ok || got.Digest != Digest(v1) || got.Keys != Keys(v1) || !got.Seen.Equal(now) || got.UID != "u1" {
		t.Fatalf("prior %+v, %v; want v1's digests, seen %s", got, ok, now)
	}
	if Digest(v2.(*corev1.ConfigMap)) == Digest(v1) {
		t.Fatal("the transform did not digest the new data")
	}
	gone := v1.DeepCopy()
	gone.UID = "u0"
	p.Forget(refs.ConfigMap, gone)
	if _, ok := p.Of("shop", ref); !ok {
		t.Error("the delete of an older source of the same name dropped the prior")
	}
}
