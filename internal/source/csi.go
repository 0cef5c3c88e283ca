package source

import (
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/internal/digest"
)

// csiGroupVersion is the Secrets Store CSI driver's API. A
// SecretProviderClass (SPC) names what to mount; the driver writes one
// SecretProviderClassPodStatus (SPCPS) per pod, with the versions it
// mounted.
var csiGroupVersion = schema.GroupVersion{Group: "secrets-store.csi.x-k8s.io", Version: "v1"}

// SecretProviderClassGVK and SecretProviderClassPodStatusGVK are the CSI
// driver's kinds.
var (
	SecretProviderClassGVK          = csiGroupVersion.WithKind("SecretProviderClass")
	SecretProviderClassPodStatusGVK = csiGroupVersion.WithKind("SecretProviderClassPodStatus")
)

// PodStatusObject is an SPCPS as the cache holds it: unstructured, its
// status objects replaced by their digest (TransformPodStatus).
func PodStatusObject() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(SecretProviderClassPodStatusGVK)
	return u
}

// PodStatusList is a list of PodStatusObject.
func PodStatusList() *unstructured.UnstructuredList {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(csiGroupVersion.WithKind("SecretProviderClassPodStatusList"))
	return l
}

// TransformPodStatus records an SPCPS's Reloader digest (of the
// "id=version" entries and the SPC name) and drops the entries. Other
// objects pass.
func TransformPodStatus(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || u.GroupVersionKind() != SecretProviderClassPodStatusGVK {
		return obj, nil
	}
	objects, found, _ := unstructured.NestedSlice(u.Object, "status", "objects")
	if !found && transformed(u) {
		return obj, nil
	}
	spc, _, _ := unstructured.NestedString(u.Object, "status", "secretProviderClassName")
	var entries []digest.SecretProviderClassObject
	for _, o := range objects {
		m, _ := o.(map[string]any)
		id, _ := m["id"].(string)
		version, _ := m["version"].(string)
		entries = append(entries, digest.SecretProviderClassObject{ID: id, Version: version})
	}
	sum := ""
	if len(objects) > 0 { // nothing mounted yet is no state, as in Reloader
		sum = digest.SecretProviderClassPodStatus(spc, entries)
	}
	unstructured.RemoveNestedField(u.Object, "status", "objects")
	ann := u.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[digestAnnotation], ann[transformedAnnotation] = sum, transformMark
	u.SetAnnotations(ann)
	u.SetManagedFields(nil)
	return u, nil
}

// ClassOf returns the SPC name of a cached SPCPS and its digest.
func ClassOf(obj client.Object) (name, sum string) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		name, _, _ = unstructured.NestedString(u.Object, "status", "secretProviderClassName")
	}
	return name, Digest(obj)
}

// Rotations is what Ripple has seen of SecretProviderClass rotations. The
// pods of a workload each have an SPCPS, and during a rotation some show
// the new versions and some the old: the latest change seen wins, so a
// rotation rolls once and never back.
type Rotations struct {
	// served is set once the driver's API is served and watched.
	served atomic.Bool
	mu     sync.Mutex
	latest map[types.NamespacedName]string // SPC -> digest of its latest change
}

// Serve records that the driver's API is served and watched.
func (r *Rotations) Serve() { r.served.Store(true) }

// Served reports whether the driver's API is served and watched.
func (r *Rotations) Served() bool { return r != nil && r.served.Load() }

// Observe records a change shown by an SPCPS.
func (r *Rotations) Observe(obj client.Object) {
	name, sum := ClassOf(obj)
	if name == "" || sum == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.latest == nil {
		r.latest = map[types.NamespacedName]string{}
	}
	r.latest[types.NamespacedName{Namespace: obj.GetNamespace(), Name: name}] = sum
}

// Latest returns the digest of the latest change seen of SPC name in ns,
// or "" when none was seen since start.
func (r *Rotations) Latest(ns, name string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.latest[types.NamespacedName{Namespace: ns, Name: name}]
}
