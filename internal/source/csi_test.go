package source

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ripple-dev/ripple/internal/digest"
	"github.com/ripple-dev/ripple/internal/refs"
)

func podStatus(class string, versions ...string) *unstructured.Unstructured {
	u := PodStatusObject()
	u.SetNamespace("shop")
	u.SetName("pod-" + class)
	_ = unstructured.SetNestedField(u.Object, class, "status", "secretProviderClassName")
	var objs []any
	for _, v := range versions {
		objs = append(objs, map[string]any{"id": "secret/db", "version": v})
	}
	if objs != nil {
		_ = unstructured.SetNestedSlice(u.Object, objs, "status", "objects")
	}
	return u
}

// A pod status keeps Reloader's digest of what it mounted, never the
// entries; nothing mounted yet is no digest; a transformed status passes
// again unchanged, and other objects pass untouched.
func TestTransformPodStatus(t *testing.T) {
	ps := podStatus("vault", "1")
	want := digest.SecretProviderClassPodStatus("vault", []digest.SecretProviderClassObject{{ID: "secret/db", Version: "1"}})
	if _, err := TransformPodStatus(ps); err != nil {
		t.Fatal(err)
	}
	if _, found, _ := unstructured.NestedSlice(ps.Object, "status", "objects"); found {
		t.Error("the mounted versions are kept")
	}
	if name, sum := ClassOf(ps); name != "vault" || sum != want {
		t.Errorf("ClassOf = %q, %q; want vault, %q", name, sum, want)
	}
	if _, err := TransformPodStatus(ps); err != nil || Digest(ps) != want {
		t.Errorf("second transform: %v, digest %q", err, Digest(ps))
	}
	empty := podStatus("vault")
	if _, err := TransformPodStatus(empty); err != nil || Digest(empty) != "" {
		t.Errorf("nothing mounted: %v, digest %q", err, Digest(empty))
	}
	cm := &corev1.ConfigMap{Data: map[string]string{"k": "v"}}
	if out, err := TransformPodStatus(cm); err != nil || out.(*corev1.ConfigMap).Data["k"] != "v" {
		t.Errorf("a ConfigMap was changed: %v, %v", out, err)
	}
	if name, sum := ClassOf(&corev1.ConfigMap{}); name != "" || sum != "" {
		t.Errorf("ClassOf(ConfigMap) = %q, %q", name, sum)
	}
	if l := PodStatusList(); l.GroupVersionKind().Kind != "SecretProviderClassPodStatusList" {
		t.Errorf("PodStatusList kind %v", l.GroupVersionKind())
	}
}

// The latest rotation seen of a class wins, per namespace and class; a
// status without a class or digest is no rotation.
func TestRotations(t *testing.T) {
	var nilRotations *Rotations
	if nilRotations.Served() {
		t.Error("nil Rotations served")
	}
	r := &Rotations{}
	if r.Served() || r.Latest("shop", "vault") != "" {
		t.Error("new Rotations served or with a rotation")
	}
	r.Serve()
	for _, v := range []string{"1", "2"} {
		ps := podStatus("vault", v)
		_, _ = TransformPodStatus(ps)
		r.Observe(ps)
	}
	r.Observe(podStatus("")) // no class, no digest
	latest := podStatus("vault", "2")
	_, _ = TransformPodStatus(latest)
	if !r.Served() || r.Latest("shop", "vault") != Digest(latest) || r.Latest("other", "vault") != "" {
		t.Errorf("Latest = %q, want %q", r.Latest("shop", "vault"), Digest(latest))
	}
}

// Each source kind has its object and list; Names lists a list's names;
// Watched leaves SecretProviderClasses to their pod statuses.
func TestKindsObjectsAndNames(t *testing.T) {
	for _, k := range refs.Kinds() {
		if Object(k) == nil || List(k) == nil {
			t.Errorf("%s: no object or list", k)
		}
	}
	if _, ok := Object(refs.SecretProviderClass).(*metav1.PartialObjectMetadata); !ok {
		t.Error("a SecretProviderClass is not cached as metadata")
	}
	list := &corev1.SecretList{Items: []corev1.Secret{{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, {ObjectMeta: metav1.ObjectMeta{Name: "b"}}}}
	if got := Names(list); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("Names = %v", got)
	}
	if got := Watched(refs.Kinds()); !slices.Equal(got, []refs.Kind{refs.ConfigMap, refs.Secret}) {
		t.Errorf("Watched = %v", got)
	}
}
