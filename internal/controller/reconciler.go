// Package controller connects Ripple's pure planner to controller-runtime.
// The reconciled object is the workload: source events are mapped to the
// workloads that use them (package dependents), and each reconcile reads
// the world and converges:
//
//	load, gather (cache reads) + memory -> plan.For (pure) -> admit (plan.Admit) -> act (one write) -> report (events, metrics, alerts, logs)
//
// What has been applied is read back from the workload itself (the
// strategy's env var or annotation on the pod template, and the applied
// record on the workload metadata for sources that were never rolled), so
// restarts, failovers and relists roll nothing, and changes made while
// Ripple was down are applied once when it returns. What Ripple remembers
// of a workload in memory besides (plan.Memory) is kept in one Store and
// changed only by plan's transitions. A rollout Ripple started is followed
// to its end by a small loop of its own (the follower), which takes the
// status updates of those workloads only; the pods a restart method
// restarts itself are restarted by another (the restarter), which a
// reconcile feeds.
package controller

import (
	"cmp"
	"context"
	"net/http"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ripple-dev/ripple/internal/change"
	"github.com/ripple-dev/ripple/internal/dependents"
	"github.com/ripple-dev/ripple/internal/gather"
	"github.com/ripple-dev/ripple/internal/metrics"
	"github.com/ripple-dev/ripple/internal/notify"
	"github.com/ripple-dev/ripple/internal/pin"
	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/rollout"
	"github.com/ripple-dev/ripple/internal/source"
	"github.com/ripple-dev/ripple/internal/workload"
)

// Deps are the dependencies of the reconcilers and rollout followers of
// every kind, declared once and shared: the caller of Setup sets Settings,
// Finder, Alert, Clock and Metrics; Setup adds the rest.
type Deps struct {
	Client   client.Client
	Settings plan.Settings
	// Finder tells which namespaces are in scope.
	Finder   *dependents.Finder
	Recorder events.EventRecorder
	Metrics  *metrics.Metrics
	// Alert, when set, is sent every notice that alerts (emit).
	Alert func(notify.Alert)
	Clock clock.PassiveClock
	// Rotations is nil without --enable-csi-integration.
	Rotations *source.Rotations
	Priors    *source.Priors
	// Memory holds what Ripple remembers of each workload.
	Memory *Store
	// Pods reads the pods of a workload whose reload restarts them, around
	// the cache: Ripple watches no pods (docs/restart-methods.md); Setup
	// makes it a podTicks, one list of a namespace per tick.
	Pods client.Reader
	// changes is the change controller; nil when it is off.
	changes *change.Controller
	// Calls makes the reload-action method's calls (ActionClient).
	Calls *http.Client
	// restarts is the pod restarter (restarter.go).
	restarts *restarter
	// configsTold are the changes told on their configs (tellConfigs).
	configsTold *configsTold
	// Pins makes the copies a pinned workload's reload names (--pinning);
	// nil when pinning is off.
	Pins *pin.Copier
}

// Reconciler reconciles one workload kind.
type Reconciler struct {
	*Deps
	Kind workload.Kind
	// follow asks the kind's rollout follower to look at a workload whose
	// rollout Ripple just started; nil for kinds whose rollout is the
	// write itself.
	follow func(types.NamespacedName)
	// queue is the controller's work queue once it started.
	queue atomic.Pointer[queue]
}

// start keeps the controller's work queue once it starts.
func (r *Reconciler) start(_ context.Context, q queue) error {
	r.queue.Store(&q)
	return nil
}

// enqueue queues the workload named n, as a change does.
func (r *Reconciler) enqueue(n types.NamespacedName) {
	if q := r.queue.Load(); q != nil {
		addChange(*q, reconcile.Request{NamespacedName: n}, 0)
	}
}

// key is the store's key of the workload named n.
func (r *Reconciler) key(n types.NamespacedName) workload.Ref {
	return workload.RefFor(r.Kind.Name(), n)
}

// Reconcile implements reconcile.Reconciler.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	began := r.Clock.Now()
	res, out, err := r.reconcile(metrics.WithStart(ctx, began), req)
	if err != nil {
		out.result = metrics.ResultError
	}
	if out.result == metrics.ResultError || out.retry {
		r.Metrics.Retried()
	}
	r.Metrics.Reconciled(out.result, out.skip, r.Clock.Since(began))
	return res, err
}

func (r *Reconciler) reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, outcome, error) {
	obj, tpl, out, err := r.load(ctx, req.NamespacedName)
	switch {
	case obj == nil:
		return ctrl.Result{}, out, err
	case out == outOfScope:
		return r.resume(ctx, obj, tpl)
	}
	in, err := r.input(ctx, obj, tpl)
	if err != nil {
		return ctrl.Result{}, outcome{}, err
	}
	if rst := in.Workload.Restart; isRestarting(r.Kind, rst) {
		r.restarts.feed(r.key(req.NamespacedName), rst, "") // its steps are the restarter's
	}
	return r.converge(ctx, r.key(req.NamespacedName), obj, in)
}

// input gathers the plan's input of obj, whose pod template is tpl, with
// what Ripple remembers of it.
func (r *Reconciler) input(ctx context.Context, obj client.Object, tpl *corev1.PodTemplateSpec) (plan.Input, error) {
	g := gather.Gatherer{Reader: r.Client, Settings: r.Settings, Rotations: r.Rotations, Priors: r.Priors, Canaries: r.changes, ReleasesIndexed: true}
	in, err := g.Input(ctx, r.Kind, obj, tpl)
	in.Memory, in.Now = r.Memory.Load(workload.RefTo(r.Kind, obj)), r.Clock.Now()
	return in, err
}

// converge plans the workload as gathered in in (with what Ripple
// remembers of it), keeps what the plan remembers, and writes the plan once
// a rollout slot is free for a reload.
func (r *Reconciler) converge(ctx context.Context, key workload.Ref, obj client.Object, in plan.Input) (ctrl.Result, outcome, error) {
	p := planFor(in)
	r.changes.Touch(key.Namespace, p)
	r.Memory.Update(key, func(m plan.Memory) plan.Memory { return m.PlannedFrom(in.Memory, p) })
	untold := p.Untold(false)
	r.emit(ctx, r.Kind.Name(), obj, untold)
	r.tellConfigs(ctx, key.Namespace, untold)
	if p.Wait > 0 {
		return ctrl.Result{RequeueAfter: p.Wait}, skipped, nil
	}
	if !p.Reloads() {
		r.Memory.Update(key, plan.Memory.LeaveLine)
	} else if a := r.admit(key, p); !a.OK {
		if n := a.Notice(p.Changes); !n.Told {
			r.emit(ctx, r.Kind.Name(), obj, []plan.Notice{n}) // once per wait: the line is in memory, and this is how explain tells it
		}
		return ctrl.Result{RequeueAfter: plan.WaitPoll}, skipped, nil
	}
	if !p.Writes() && !p.WouldReload {
		return ctrl.Result{RequeueAfter: p.Requeue}, notUpdated, nil
	}
	res, err := r.write(ctx, key, obj, p)
	return r.report(ctx, obj, p, res, err)
}

// admit asks for a rollout slot for the plan p of key (plan.Admit).
func (r *Reconciler) admit(key workload.Ref, p plan.Plan) plan.Admission {
	a := plan.Admission{OK: true}
	if l := r.Settings.Rollouts; l.Max <= 0 && l.MaxPerNamespace <= 0 {
		return a // no line to look at
	}
	now := r.Clock.Now()
	r.Memory.Admit(key, now, func(m plan.Memory, line plan.Line) plan.Memory {
		m, a = plan.Admit(key, m, line, r.Settings.Rollouts, p.Seen, now)
		return m
	})
	return a
}

// write makes the write of p, if it has one, and keeps what it did in the
// workload's memory; a rollout it started goes to the rollout follower.
func (r *Reconciler) write(ctx context.Context, key workload.Ref, obj client.Object, p plan.Plan) (workload.Result, error) {
	w := plan.Write{StaleVersion: obj.GetResourceVersion(), Instant: rollout.Instant(obj)} // a custom kind's write updates obj
	var res workload.Result
	if p.Writes() {
		if err := r.pin(ctx, obj, p); err != nil {
			return res, err
		}
		var err error
		if res, err = r.Kind.Write(ctx, r.Client, obj, p.Update); err != nil {
			return res, err
		}
	}
	w.Skipped = res.Skipped != ""
	if rst := p.Update.Restart; rst != nil && p.Writes() && !w.Skipped && isRestarting(r.Kind, *rst) {
		r.restarts.feed(key, *rst, w.StaleVersion)
	}
	now := r.Clock.Now()
	m := r.Memory.Update(key, func(m plan.Memory) plan.Memory { return m.Wrote(p, w, now) })
	if m.Rollout.Followed() && r.follow != nil && p.Reloads() && !w.Skipped {
		r.follow(key.Key())
	}
	return res, nil
}

// pin makes the copies the template of p names (a pinned workload:
// --pinning and ripple.dev/pin) before the template that names them is
// written: a pod must never be created naming a copy that is not there.
func (r *Reconciler) pin(ctx context.Context, obj client.Object, p plan.Plan) error {
	if r.Pins == nil || p.Update.Template == nil {
		return nil
	}
	pins, err := pin.Parse(p.Update.Template.Annotations[r.Settings.Keys.Pinned])
	if err != nil || len(pins) == 0 {
		return err
	}
	return r.Pins.Ensure(ctx, obj, pins)
}

// load reads the workload and its pod template from the cache. It returns
// a nil object when there is nothing to plan: an interrupted multi-step
// reload was finished first (its own write brings the next reconcile), or
// the workload is gone or being deleted, or has no template (yet), and then
// what Ripple remembers of it is forgotten. A workload out of scope is
// returned with the outOfScope outcome, its settle window closed: only a
// pause of Ripple's is ended on it.
func (r *Reconciler) load(ctx context.Context, key types.NamespacedName) (client.Object, *corev1.PodTemplateSpec, outcome, error) {
	obj := r.Kind.New()
	fin, finishes, scopeErr := r.finisher(ctx, key.Namespace)
	err := cmp.Or(scopeErr, r.Client.Get(ctx, key, obj)) // a scope error is returned below, finishing nothing
	if err == nil && finishes && obj.GetDeletionTimestamp() == nil {
		if did, err := fin.Finish(ctx, r.Client, key, obj); did || err != nil {
			return nil, nil, skipped, err
		}
	}
	var tpl *corev1.PodTemplateSpec
	out := skipped
	switch {
	case apierrors.IsNotFound(err) && finishes:
		_, err = fin.Finish(ctx, r.Client, key, nil)
	case err != nil:
		err = client.IgnoreNotFound(err)
	case obj.GetDeletionTimestamp() != nil:
	default:
		tpl, err = workload.Template(ctx, r.Client, r.Kind, obj)
		if err == nil && tpl != nil {
			var in bool
			in, err = r.Finder.InScope(ctx, key.Namespace)
			if err == nil && in {
				return obj, tpl, outcome{}, nil
			}
			if err == nil {
				r.Memory.Update(r.key(key), plan.Memory.LeftScope)
				return obj, tpl, outOfScope, nil
			}
		}
	}
	r.Memory.Update(r.key(key), plan.Memory.Gone)
	r.Memory.ForgetPods(r.key(key))
	return nil, nil, out, err
}

// finisher is the kind's Finisher if it has one and namespace ns is in
// this Ripple's scope (its shard's, its namespace selector's): another
// Ripple's workload is its to finish, and two would each start a CronJob's
// pending Job.
func (r *Reconciler) finisher(ctx context.Context, ns string) (workload.Finisher, bool, error) {
	fin, ok := r.Kind.(workload.Finisher)
	if !ok {
		return nil, false, nil
	}
	in, err := r.Finder.InScope(ctx, ns)
	return fin, in, err
}

// resume ends a pause of Ripple's on a workload whose namespace left the
// --namespace-selector scope during it, when its period is over: the pause
// is Ripple's to end, and nothing else is planned out of scope (no sources,
// so no reload and no record). Another shard's pause is its own to end.
func (r *Reconciler) resume(ctx context.Context, obj client.Object, tpl *corev1.PodTemplateSpec) (ctrl.Result, outcome, error) {
	pz, ok := r.Kind.(workload.Pauser)
	if _, marked := obj.GetAnnotations()[r.Settings.Keys.PausedAt]; !ok || !marked || !pz.Paused(obj) || !r.Finder.Owns(obj.GetNamespace()) {
		return ctrl.Result{}, outOfScope, nil
	}
	p := plan.For(plan.Input{Settings: r.Settings, Now: r.Clock.Now(), Workload: plan.Workload{
		Namespace: obj.GetNamespace(), Annotations: obj.GetAnnotations(), Created: obj.GetCreationTimestamp().Time,
		Template: tpl, Pausable: true, Paused: true,
	}})
	if !p.Writes() {
		return ctrl.Result{RequeueAfter: p.Requeue}, outOfScope, nil
	}
	res, err := r.Kind.Write(ctx, r.Client, obj, p.Update)
	return r.report(ctx, obj, p, res, err)
}

// planFor is plan.For; a test counts its calls (one per reconcile).
var planFor = plan.For

// conflictRetry is how soon a reconcile whose write met a newer object
// runs again; the cache is then usually current.
const conflictRetry = 100 * time.Millisecond
