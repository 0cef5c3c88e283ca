package controller

import (
	"context"
	"maps"
	"slices"
	"time"

	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ripple-dev/ripple/internal/annotation"
	"github.com/ripple-dev/ripple/internal/gather"
	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/source"
	"github.com/ripple-dev/ripple/internal/workload"
)

// sourceChanged passes source events that can change a reload decision:
// creates, deletes, data changes, changes of the ignore, match and
// shared-with annotations, and changes of the labels, which label selectors read
// (selectionChanged). Other metadata-only updates and relists pass
// nothing, so they cost no reconcile.
func sourceChanged(keys annotation.Keys) predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			return changed(keys, e.ObjectOld, e.ObjectNew) || !maps.Equal(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels())
		},
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// relabelled reports whether an update of a source changed its labels and
// nothing else sourceChanged passes.
func relabelled(keys annotation.Keys, old, cur client.Object) bool {
	return !changed(keys, old, cur) && !maps.Equal(old.GetLabels(), cur.GetLabels())
}

// changed reports whether an update of a source changed its data or its
// ignore, match or shared-with annotations: a change for the workloads
// using it (a grant's for those of the namespaces it names).
func changed(keys annotation.Keys, old, cur client.Object) bool {
	o, n := old.GetAnnotations(), cur.GetAnnotations()
	return source.Digest(old) != source.Digest(cur) || o[keys.Ignore] != n[keys.Ignore] || o[keys.Match] != n[keys.Match] ||
		o[keys.SharedWith] != n[keys.SharedWith]
}

type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

// sourceHandler enqueues the workloads of r.Kind that may depend on the
// source of an event.
func (r *Reconciler) sourceHandler(kind refs.Kind) handler.EventHandler {
	enqueue := func(ctx context.Context, src client.Object, q queue, change bool, was ...client.Object) {
		sets := []map[string]string{src.GetLabels()}
		for _, o := range was {
			sets = append(sets, o.GetLabels())
		}
		r.enqueueDependentsAt(ctx, src.GetNamespace(), refs.Ref{Kind: kind, Name: src.GetName()}, src.GetResourceVersion(), q, change, sets)
		r.enqueueShared(ctx, kind, q, change, append(was, src)...)
	}
	return handler.Funcs{
		// The initial list at start is no change: its reconciles catch up
		// as the workloads' own events do, at low priority (handler.Funcs
		// queues the initial list so), behind the changes that arrive.
		// A source that changed since Ripple started, between the caches'
		// sync and this controller's start, is in the initial list with its
		// change: it is a change all the same.
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q queue) {
			_, changed := r.Priors.Of(e.Object.GetNamespace(), refs.Ref{Kind: kind, Name: e.Object.GetName()})
			enqueue(ctx, e.Object, q, !e.IsInInitialList || changed)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q queue) {
			if relabelled(r.Settings.Keys, e.ObjectOld, e.ObjectNew) {
				r.enqueueReselected(ctx, kind, e.ObjectOld, e.ObjectNew, q)
				return
			}
			enqueue(ctx, e.ObjectNew, q, true, e.ObjectOld)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q queue) { enqueue(ctx, e.Object, q, true) },
	}
}

// enqueueDependents enqueues the workloads of r.Kind in ns that may depend
// on src, found through the index. An event that may be a change is when
// the change is first seen: it starts the workload's settle window, and the
// workload is queued for when that window closes, so that its first
// reconcile acts instead of only learning that it must wait.
func (r *Reconciler) enqueueDependents(ctx context.Context, ns string, src refs.Ref, q queue, change bool) {
	r.enqueueDependentsAt(ctx, ns, src, "", q, change, nil)
}

// enqueueDependentsAt is enqueueDependents of an event that brought src at
// resourceVersion version, which orders it against a change of a
// workload's pod template (plan's TemplateApplied); empty when not known.
// The workloads whose label selector matches one of the label sets are
// among its dependents (all of them for nil: not known).
func (r *Reconciler) enqueueDependentsAt(ctx context.Context, ns string, src refs.Ref, version string, q queue, change bool, sets []map[string]string) {
	objs, err := r.Finder.OfLabelled(ctx, r.Kind, ns, src, sets)
	if err != nil {
		log.FromContext(ctx).Error(err, "finding the workloads of a source", "kind", r.Kind.Name())
	}
	r.enqueueFound(ctx, objs, version, q, change)
}

// enqueueFound queues objs, the workloads of r.Kind found for an event of
// a source at resourceVersion version, as enqueueDependents says.
func (r *Reconciler) enqueueFound(ctx context.Context, objs []client.Object, version string, q queue, change bool) {
	r.Metrics.Scanned(r.Kind.Name(), len(objs))
	now := r.Clock.Now()
	for _, obj := range objs {
		name := client.ObjectKeyFromObject(obj)
		req := reconcile.Request{NamespacedName: name}
		window, _ := plan.SettleWindow(obj.GetAnnotations(), r.Settings.Keys, r.Settings.SettleWindow)
		if !change {
			q.Add(req)
			continue
		}
		// A change goes before the start-up backlog, even when it is found
		// in an initial list (whose queue defaults to low priority).
		addChange(q, req, window)
		if window > 0 {
			hash, at := r.templateHash(ctx, obj), gather.Version(r.Kind, obj)
			r.Memory.Update(r.key(name), func(m plan.Memory) plan.Memory {
				return m.Notice(now).SawTemplate(hash, now, at).SourceVersion(version)
			})
			log.FromContext(ctx).V(1).Info("waiting for the settle window", "workload", name, "kind", r.Kind.Name(), "wait", window)
		}
	}
}

// enqueueShared queues the workloads of r.Kind in other namespaces that
// follow a config by a cross-namespace reference: those of the namespaces
// its shared-with annotation grants in any of objs, its versions before
// and after the event, so that a grant removed reaches the workloads that
// lose it (their reconcile stops following the config and says why). A
// config that grants nothing costs no lookup.
func (r *Reconciler) enqueueShared(ctx context.Context, kind refs.Kind, q queue, change bool, objs ...client.Object) {
	granted := func(ns string) bool {
		return slices.ContainsFunc(objs, func(o client.Object) bool { return annotation.Granted(r.Settings.Keys, o.GetAnnotations(), ns) })
	}
	if !slices.ContainsFunc(objs, func(o client.Object) bool { _, ok := o.GetAnnotations()[r.Settings.Keys.SharedWith]; return ok }) {
		return
	}
	src := objs[len(objs)-1]
	found, err := r.Finder.Shared(ctx, r.Kind, src.GetNamespace(), refs.Ref{Kind: kind, Name: src.GetName()}, granted)
	if err != nil {
		log.FromContext(ctx).Error(err, "finding the workloads of a shared source", "kind", r.Kind.Name())
	}
	r.enqueueFound(ctx, found, src.GetResourceVersion(), q, change)
}

// templateHash is the hash of obj's pod template as the cache holds it
// when a source event arrives (plan.TemplateHash); empty when it has none.
func (r *Reconciler) templateHash(ctx context.Context, obj client.Object) string {
	tpl, err := workload.Template(ctx, r.Client, r.Kind, obj)
	if err != nil {
		log.FromContext(ctx).V(1).Info("reading the pod template at a source event", "error", err.Error())
		return ""
	}
	return plan.TemplateHash(tpl)
}

// addChange queues req at normal priority after window.
func addChange(q queue, req reconcile.Request, window time.Duration) {
	if pq, ok := q.(priorityqueue.PriorityQueue[reconcile.Request]); ok {
		pq.AddWithOpts(priorityqueue.AddOpts{After: max(window, 0), Priority: ptr.To(0)}, req)
		return
	}
	q.AddAfter(req, window)
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
	enqueue := func(ctx context.Context, obj client.Object, q queue, change bool) {
		if name, _ := source.ClassOf(obj); name != "" {
			r.enqueueDependents(ctx, obj.GetNamespace(), refs.Ref{Kind: refs.SecretProviderClass, Name: name}, q, change)
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q queue) {
			if !e.IsInInitialList {
				r.Rotations.Observe(e.Object)
			}
			enqueue(ctx, e.Object, q, !e.IsInInitialList)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q queue) {
			_, old := source.ClassOf(e.ObjectOld)
			if _, cur := source.ClassOf(e.ObjectNew); cur != old {
				r.Rotations.Observe(e.ObjectNew)
				enqueue(ctx, e.ObjectNew, q, true)
			}
		},
	}
}

// enqueueReselected queues the workloads of r.Kind whose label selector
// selects the source before or after an update that changed only its
// labels: a config that joined or left a selection. It is no change of
// data, so it starts no settle window: the reconcile records a config
// that joined as a baseline and drops one that left from the record.
func (r *Reconciler) enqueueReselected(ctx context.Context, kind refs.Kind, old, cur client.Object, q queue) {
	before, err := r.Finder.Selecting(ctx, r.Kind, cur.GetNamespace(), kind, []map[string]string{old.GetLabels()})
	if err != nil {
		log.FromContext(ctx).Error(err, "finding the workloads selecting a source", "kind", r.Kind.Name())
		return
	}
	after, err := r.Finder.Selecting(ctx, r.Kind, cur.GetNamespace(), kind, []map[string]string{cur.GetLabels()})
	if err != nil {
		log.FromContext(ctx).Error(err, "finding the workloads selecting a source", "kind", r.Kind.Name())
		return
	}
	for _, obj := range append(before, after...) {
		q.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(obj)})
	}
}
