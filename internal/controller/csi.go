package controller

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ripple-dev/ripple/internal/digest"
	"github.com/ripple-dev/ripple/internal/refs"
)

// The Secrets Store CSI driver's kinds. A SecretProviderClass (SPC) names
// what to mount; the driver writes one SecretProviderClassPodStatus
// (SPCPS) per pod, with the versions it mounted.
var (
	SecretProviderClassGVK          = schema.GroupVersionKind{Group: "secrets-store.csi.x-k8s.io", Version: "v1", Kind: "SecretProviderClass"}
	SecretProviderClassPodStatusGVK = SecretProviderClassGVK.GroupVersion().WithKind("SecretProviderClassPodStatus")
)

// spcpsObject is an SPCPS as the cache holds it: unstructured, its status
// objects replaced by their digest (TransformSPCPS).
func spcpsObject() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(SecretProviderClassPodStatusGVK)
	return u
}

func spcpsList() *unstructured.UnstructuredList {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(SecretProviderClassGVK.GroupVersion().WithKind("SecretProviderClassPodStatusList"))
	return l
}

// TransformSPCPS records an SPCPS's Reloader digest (of the "id=version"
// entries and the SPC name) and drops the entries. Other objects pass.
func TransformSPCPS(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || u.GroupVersionKind() != SecretProviderClassPodStatusGVK {
		return obj, nil
	}
	objects, found, _ := unstructured.NestedSlice(u.Object, "status", "objects")
	if !found {
		if _, done := u.GetAnnotations()[digestAnnotation]; done {
			return obj, nil
		}
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
	ann[digestAnnotation] = sum
	u.SetAnnotations(ann)
	u.SetManagedFields(nil)
	return u, nil
}

// spcOf returns the SPC name of a cached SPCPS and its digest.
func spcOf(obj client.Object) (name, sum string) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		name, _, _ = unstructured.NestedString(u.Object, "status", "secretProviderClassName")
	}
	return name, obj.GetAnnotations()[digestAnnotation]
}

// csiState is what Ripple knows of SecretProviderClasses. The pods of a
// workload each have an SPCPS, and during a rotation some show the new
// versions and some the old: the latest change seen wins, so a rotation
// rolls once and never back.
type csiState struct {
	// served is set once the driver's API is served and watched.
	served atomic.Bool
	mu     sync.Mutex
	latest map[types.NamespacedName]string // SPC -> digest of its latest change
}

func (s *csiState) observe(obj client.Object) {
	name, sum := spcOf(obj)
	if name == "" || sum == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.latest == nil {
		s.latest = map[types.NamespacedName]string{}
	}
	s.latest[types.NamespacedName{Namespace: obj.GetNamespace(), Name: name}] = sum
}

// digest returns the digest of SPC name in ns: the latest change seen, or
// after a restart, when none was seen, the applied digest if a pod still
// shows it (no change yet), else the one most pods show. ok is false when
// no pod mounts the SPC.
func (s *csiState) digest(ctx context.Context, c client.Reader, ns, name, applied string) (string, bool, error) {
	s.mu.Lock()
	sum, seen := s.latest[types.NamespacedName{Namespace: ns, Name: name}]
	s.mu.Unlock()
	if seen {
		return sum, true, nil
	}
	list := spcpsList()
	if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
		return "", false, err
	}
	counts := map[string]int{}
	for i := range list.Items {
		if spc, sum := spcOf(&list.Items[i]); spc == name && sum != "" {
			counts[sum]++
		}
	}
	if len(counts) == 0 {
		return "", false, nil
	}
	if counts[applied] > 0 {
		return applied, true, nil
	}
	sums := make([]string, 0, len(counts))
	for sum := range counts {
		sums = append(sums, sum)
	}
	slices.SortFunc(sums, func(a, b string) int {
		return cmp.Or(counts[b]-counts[a], strings.Compare(a, b))
	})
	return sums[0], true, nil
}

// spcpsHandler maps SPCPS events to the workloads that mount the SPC.
// Creates (after the initial list) and digest changes are changes of the
// SPC; it records them before enqueueing, so a reconcile never sees the
// request before the digest.
func (r *Reconciler) spcpsHandler() handler.EventHandler {
	mapper := r.requestsForConfig(refs.SecretProviderClass)
	enqueue := func(ctx context.Context, obj client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		name, _ := spcOf(obj)
		if name == "" {
			return
		}
		spc := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: obj.GetNamespace(), Name: name}}
		for _, req := range mapper(ctx, spc) {
			q.Add(req)
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if !e.IsInInitialList {
				r.csi.observe(e.Object)
			}
			enqueue(ctx, e.Object, q)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			_, old := spcOf(e.ObjectOld)
			if _, cur := spcOf(e.ObjectNew); cur != old {
				r.csi.observe(e.ObjectNew)
				enqueue(ctx, e.ObjectNew, q)
			}
		},
	}
}
