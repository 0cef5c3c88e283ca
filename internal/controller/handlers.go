package controller

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ripple-dev/ripple/internal/annotation"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/source"
)

// sourceChanged passes source events that can change a reload decision:
// creates, deletes, data changes, and changes of the ignore and match
// annotations. Label- and other metadata-only updates and relists pass
// nothing, so they cost no reconcile.
func sourceChanged(keys annotation.Keys) predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, n := e.ObjectOld.GetAnnotations(), e.ObjectNew.GetAnnotations()
			return source.Digest(e.ObjectOld) != source.Digest(e.ObjectNew) ||
				o[keys.Ignore] != n[keys.Ignore] ||
				o[keys.Match] != n[keys.Match]
		},
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// requestsForSource maps a source event to the workloads of r.Kind in the
// source's namespace that may depend on it, through the index.
func (r *Reconciler) requestsForSource(kind refs.Kind) handler.MapFunc {
	return func(ctx context.Context, src client.Object) []reconcile.Request {
		names, err := r.Finder.Of(ctx, r.Kind, src.GetNamespace(), refs.Ref{Kind: kind, Name: src.GetName()})
		if err != nil {
			log.FromContext(ctx).Error(err, "finding the workloads of a source", "kind", r.Kind.Name())
		}
		r.Metrics.Scanned(r.Kind.Name(), len(names))
		return requests(names)
	}
}

// requestsForNamespace maps a namespace that came into scope to all its
// workloads of r.Kind, from the cache.
func (r *Reconciler) requestsForNamespace(ctx context.Context, ns client.Object) []reconcile.Request {
	names, err := r.Finder.InNamespace(ctx, r.Kind, ns.GetName())
	if err != nil {
		log.FromContext(ctx).Error(err, "listing the workloads of a namespace", "kind", r.Kind.Name())
	}
	return requests(names)
}

// requestsForTemplateRef maps a Deployment to the workloads of r.Kind
// that take their template from it.
func (r *Reconciler) requestsForTemplateRef(ctx context.Context, dep client.Object) []reconcile.Request {
	names, err := r.Finder.UsingTemplateOf(ctx, r.Kind, dep.GetNamespace(), dep.GetName())
	if err != nil {
		log.FromContext(ctx).Error(err, "listing workloads by workloadRef", "kind", r.Kind.Name())
	}
	return requests(names)
}

// podStatusHandler maps CSI pod status events to the workloads that mount
// the SecretProviderClass. Creates (after the initial list) and digest
// changes are changes of the class; it records them before enqueueing, so a
// reconcile never sees the request before the digest.
func (r *Reconciler) podStatusHandler() handler.EventHandler {
	mapper := r.requestsForSource(refs.SecretProviderClass)
	enqueue := func(ctx context.Context, obj client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		name, _ := source.ClassOf(obj)
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
				r.Rotations.Observe(e.Object)
			}
			enqueue(ctx, e.Object, q)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			_, old := source.ClassOf(e.ObjectOld)
			if _, cur := source.ClassOf(e.ObjectNew); cur != old {
				r.Rotations.Observe(e.ObjectNew)
				enqueue(ctx, e.ObjectNew, q)
			}
		},
	}
}
