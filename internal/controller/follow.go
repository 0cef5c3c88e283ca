package controller

import (
	"context"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/rollout"
	"github.com/ripple-dev/ripple/internal/workload"
)

// follower is the rollout-follow loop of one kind. The status updates of
// the workloads whose rollout Ripple follows come here, and only here: it
// checks the rollout (plan.Memory.Follow), reports its end (a Normal
// RolloutComplete or a Warning RolloutStalled Event, the metrics, the
// alert) and so frees its slot, without gathering or planning anything.
// The status updates of every other workload cost nothing.
type follower struct {
	*Deps
	Kind workload.Kind
	// queue is the follower's work queue once it started.
	queue atomic.Pointer[queue]
}

// Reconcile implements reconcile.Reconciler.
func (f *follower) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	key := workload.RefFor(f.Kind.Name(), req.NamespacedName)
	if !f.Memory.Following(key) {
		return ctrl.Result{}, nil
	}
	obj := f.Kind.New()
	if err := f.Client.Get(ctx, req.NamespacedName, obj); err != nil || obj.GetDeletionTimestamp() != nil {
		// A workload gone or being deleted is the reload loop's to forget.
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	status, poll := f.restartStatus(ctx, f.Kind, obj)
	o := plan.Observed{ResourceVersion: obj.GetResourceVersion(), Status: status}
	now := f.Clock.Now()
	var p plan.Progress
	var ok bool
	f.Memory.Update(key, func(m plan.Memory) plan.Memory {
		m, p, ok = m.Follow(o, f.Settings.Rollouts.Timeout, now)
		return m
	})
	if !ok {
		return ctrl.Result{}, nil
	}
	f.report(ctx, obj, p)
	if p.State == rollout.Complete {
		f.adopt(ctx, obj)
	}
	// A rollout that never reports again still times out; pods being
	// restarted are read again, as no pod event brings the workload here.
	left := max(p.Left, 0)
	if p.State == rollout.Progressing && poll > 0 && (left == 0 || poll < left) {
		left = poll
	}
	return ctrl.Result{RequeueAfter: left}, nil
}

// report tells of the end of a rollout (plan.Progress.Notice): a Normal
// RolloutComplete Event with its duration, or a Warning RolloutStalled
// Event naming why, with their metrics.
func (f *follower) report(ctx context.Context, obj client.Object, p plan.Progress) {
	switch p.State {
	case rollout.Complete:
		f.Metrics.RolloutCompleted(f.Kind.Name(), p.Took)
	case rollout.Stalled:
		f.Metrics.RolloutStalled(f.Kind.Name())
	}
	n, ok := p.Notice()
	if !ok {
		ctrl.LoggerFrom(ctx).V(1).Info("rollout in progress", "workload", klog.KObj(obj), "kind", f.Kind.Name(), "status", p.Reason)
		return
	}
	f.emit(ctx, f.Kind.Name(), obj, []plan.Notice{n}, "took", p.Took.Round(time.Millisecond).String())
}

// adopt hands the pinned copies of obj, whose rollout completed, to its
// revisions (pin.Copier.Adopt), now that the revision of the template
// exists. A failure leaves them owned by the workload, which costs only
// their bytes until it is deleted or a later rollout hands them over: it
// is logged, not retried.
func (f *follower) adopt(ctx context.Context, obj client.Object) {
	if f.Pins == nil {
		return
	}
	tpl, err := workload.Template(ctx, f.Client, f.Kind, obj)
	if err != nil || tpl == nil || tpl.Annotations[f.Settings.Keys.Pinned] == "" {
		return
	}
	if err := f.Pins.Adopt(ctx, obj, f.Settings.Keys.Pinned); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "pinned copies stay owned by the workload; its revision history does not prune them", "workload", klog.KObj(obj), "kind", f.Kind.Name())
	}
}

// follow queues the workload named n, whose rollout Ripple just started:
// its write may reach the cache before the rollout was remembered, and
// a rollout that never reports again must still time out.
func (f *follower) follow(n types.NamespacedName) {
	if q := f.queue.Load(); q != nil {
		(*q).Add(reconcile.Request{NamespacedName: n})
	}
}

// start keeps the follower's work queue once its controller starts.
func (f *follower) start(_ context.Context, q queue) error {
	f.queue.Store(&q)
	return nil
}

// followed passes the creates and updates of the workloads of the kind
// whose rollout is followed, status updates included; a create is one
// that was followed before the follower started.
func (f *follower) followed() predicate.Predicate {
	is := func(obj client.Object) bool {
		return f.Memory.Following(workload.RefFor(f.Kind.Name(), client.ObjectKeyFromObject(obj)))
	}
	return predicate.Funcs{
		CreateFunc:  func(e event.CreateEvent) bool { return is(e.Object) },
		UpdateFunc:  func(e event.UpdateEvent) bool { return is(e.ObjectNew) },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}
