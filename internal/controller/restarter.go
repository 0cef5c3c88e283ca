package controller

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/ripple-dev/ripple/internal/podrestart"
	"github.com/ripple-dev/ripple/internal/workload"
)

// restarter is the pod restart loop (restart.go, inplace.go,
// reloadaction.go), a controller of its own, keyed by workload: a
// workload reconcile that writes or finds a restart in progress feeds it
// (feed), and it takes the restart's steps, requeueing itself by each
// step, until the pods are done. So the workload reconcile never lists
// pods, and a restart's pace is not the reconciles'. The restart it
// follows is kept in the Store (podrestart.Memory.Restart); after a
// Ripple restart the first reconcile of each workload feeds it again from
// the restarted-at annotation, and the pods show how far it got.
type restarter struct {
	*Deps
	mu sync.Mutex
	// recs are the workload reconcilers by kind, whose pod restart steps
	// it takes.
	recs  map[string]*Reconciler
	queue atomic.Pointer[workqueue.TypedRateLimitingInterface[workload.Ref]]
}

// newRestarter registers the restarter's controller with mgr: a
// priority queue, as the workloads', with Ripple's queue metrics.
func newRestarter(mgr manager.Manager, d *Deps, workers int) (*restarter, error) {
	p := &restarter{Deps: d, recs: map[string]*Reconciler{}}
	newQueue := func(name string, rl workqueue.TypedRateLimiter[workload.Ref]) workqueue.TypedRateLimitingInterface[workload.Ref] {
		return priorityqueue.New(name, func(o *priorityqueue.Opts[workload.Ref]) {
			o.RateLimiter, o.MetricProvider = rl, d.Metrics.QueueMetrics()
			o.Log = mgr.GetLogger().WithValues("controller", name)
		})
	}
	c, err := controller.NewTyped("pod-restarter", mgr, controller.TypedOptions[workload.Ref]{
		Reconciler: p, MaxConcurrentReconciles: workers, NewQueue: newQueue})
	if err != nil {
		return nil, err
	}
	return p, c.Watch(source.TypedFunc[workload.Ref](p.start))
}

// add makes r's kind the restarter's.
func (p *restarter) add(r *Reconciler) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.recs[r.Kind.Name()] = r
}

func (p *restarter) start(_ context.Context, q workqueue.TypedRateLimitingInterface[workload.Ref]) error {
	p.queue.Store(&q)
	return nil
}

// feed gives the restarter the restart rst of workload k, in progress:
// written on the resourceVersion stale, or read (stale empty).
func (p *restarter) feed(k workload.Ref, rst workload.Restart, stale string) {
	if p == nil {
		return
	}
	p.Memory.KeepRestart(k, rst, stale)
	p.enqueue(k, 0)
}

// enqueue queues k's next step after d.
func (p *restarter) enqueue(k workload.Ref, d time.Duration) {
	if p == nil {
		return
	}
	if q := p.queue.Load(); q != nil {
		(*q).AddAfter(k, d)
	}
}

// Reconcile takes the next step of k's pod restart, if it still has one
// at the time fed: a workload gone, or whose restarted-at annotation no
// longer holds that time (done, or a newer reload's, which its reconcile
// feeds), is forgotten or left. A cached copy that does not show the
// restart's write yet is looked at again: it is no sign of an end.
func (p *restarter) Reconcile(ctx context.Context, k workload.Ref) (reconcile.Result, error) {
	p.mu.Lock()
	r := p.recs[k.Kind]
	p.mu.Unlock()
	rst, stale, ok := p.Memory.Restart(k)
	if r == nil || !ok {
		return reconcile.Result{}, nil
	}
	obj := r.Kind.New()
	err := r.Client.Get(ctx, k.Key(), obj)
	if apierrors.IsNotFound(err) || (err == nil && obj.GetDeletionTimestamp() != nil) {
		p.Memory.ForgetPods(k)
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	at, err := time.Parse(time.RFC3339, obj.GetAnnotations()[r.Settings.Keys.RestartedAt])
	switch {
	case (err != nil || !at.Equal(rst.At)) && obj.GetResourceVersion() == stale:
		// Not in the cache yet. (A write that changed nothing leaves the
		// version as it was, but then the time is there.)
		return reconcile.Result{RequeueAfter: podrestart.Poll}, nil
	case err != nil:
		p.Memory.ForgetRestart(k, rst.At) // its restart is over
		return reconcile.Result{}, nil
	case !at.Equal(rst.At):
		return reconcile.Result{}, nil // another reload's, fed by its reconcile
	}
	return r.restart(ctx, obj, rst)
}
