// Package controller connects Ripple's pure planner to controller-runtime.
// The reconciled object is the workload: source events are mapped to the
// workloads that use them (package dependents), and each reconcile reads
// the world and converges:
//
//	load, gather (cache reads) -> plan.For (pure) -> act (one write) -> report (events, metrics, alerts, logs)
//
// What has been applied is read back from the workload itself (the
// strategy's env var or annotation on the pod template, and the applied
// record on the workload metadata for sources that were never rolled), so
// restarts, failovers and relists roll nothing, and changes made while
// Ripple was down are applied once when it returns.
package controller

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/internal/dependents"
	"github.com/ripple-dev/ripple/internal/gather"
	"github.com/ripple-dev/ripple/internal/metrics"
	"github.com/ripple-dev/ripple/internal/notify"
	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/source"
	"github.com/ripple-dev/ripple/internal/workload"
)

// Reconciler reconciles one workload kind.
type Reconciler struct {
	Client   client.Client
	Kind     workload.Kind
	Settings plan.Settings
	// Finder tells which namespaces are in scope.
	Finder   *dependents.Finder
	Recorder events.EventRecorder
	Metrics  *metrics.Metrics
	// Alert, when set, is told of every rollout.
	Alert func(notify.Reload)
	Clock clock.PassiveClock
	// Rotations is shared by the reconcilers of every kind; nil without
	// --enable-csi-integration.
	Rotations *source.Rotations
	// Priors are shared by the reconcilers of every kind.
	Priors *source.Priors
	// Tracker follows the rollouts Ripple started and hands out rollout
	// slots; shared by the reconcilers of every kind.
	Tracker *Tracker

	mu sync.Mutex
	// pending holds, per workload, the settle state of its last plan.
	pending map[types.NamespacedName]plan.Pending
	// storms holds, per workload, the storm-breaker state of its last plan.
	storms map[types.NamespacedName]plan.Storm
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
	if obj == nil {
		return ctrl.Result{}, out, err
	}
	left := r.follow(ctx, obj) // a rollout is followed to its end, in scope or not
	var res ctrl.Result
	if out == outOfScope {
		res, out, err = r.resume(ctx, obj, tpl)
	} else {
		res, out, err = r.converge(ctx, req.NamespacedName, obj, tpl)
	}
	if left > 0 && (res.RequeueAfter <= 0 || left < res.RequeueAfter) {
		// A rollout that never reports again still times out.
		res.RequeueAfter = left
	}
	return res, out, err
}

// converge plans the workload and writes the plan, once a rollout slot is
// free for a reload.
func (r *Reconciler) converge(ctx context.Context, key types.NamespacedName, obj client.Object, tpl *corev1.PodTemplateSpec) (ctrl.Result, outcome, error) {
	g := gather.Gatherer{Reader: r.Client, Settings: r.Settings, Rotations: r.Rotations, Priors: r.Priors}
	in, err := g.Input(ctx, r.Kind, obj, tpl)
	if err != nil {
		return ctrl.Result{}, outcome{}, err
	}
	in.Pending, in.Now = r.pendingOf(key), r.Clock.Now()
	in.Storm = r.stormOf(key)
	p := plan.For(in)
	r.remember(key, p.Pending)
	r.keepStorm(key, p.Storm)
	r.warn(obj, p.Warnings)
	r.reportHold(ctx, obj, p)
	if p.Wait > 0 {
		ctrl.LoggerFrom(ctx).V(1).Info(waitMessage(p), "configs", changeNames(p.Changes), "wait", p.Wait)
		return ctrl.Result{RequeueAfter: p.Wait}, skipped, nil
	}
	if !p.Reloads() {
		r.Tracker.Leave(r.Kind.Name(), key)
	} else if a := r.Tracker.Admit(r.Kind.Name(), key, p.Seen); !a.OK {
		r.logWaiting(ctx, obj, p, a)
		return ctrl.Result{RequeueAfter: waitPoll}, skipped, nil
	}
	if !p.Writes() && !p.WouldReload {
		return ctrl.Result{RequeueAfter: p.Requeue}, notUpdated, nil
	}
	var res workload.Result
	if p.Writes() {
		staleVersion := obj.GetResourceVersion() // a custom kind's write updates obj
		res, err = r.Kind.Write(ctx, r.Client, obj, p.Update)
		if err == nil && p.Reloads() && res.Skipped == "" {
			r.Tracker.Start(r.Kind.Name(), obj, staleVersion)
		} else if err == nil {
			r.Tracker.Leave(r.Kind.Name(), key)
		}
	}
	return r.report(ctx, obj, p, res, err)
}

// load reads the workload and its pod template from the cache. It returns
// a nil object when there is nothing to plan: an interrupted multi-step
// reload was finished first (its own write brings the next reconcile), or
// the workload is gone or being deleted, or has no template (yet), and then
// its settle state is forgotten. A workload out of scope is returned with
// the outOfScope outcome, its settle state forgotten: only a pause of
// Ripple's is ended on it.
func (r *Reconciler) load(ctx context.Context, key types.NamespacedName) (client.Object, *corev1.PodTemplateSpec, outcome, error) {
	obj := r.Kind.New()
	fin, finishes := r.finisher(key.Namespace)
	err := r.Client.Get(ctx, key, obj)
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
				r.forget(key)
				return obj, tpl, outOfScope, nil
			}
		}
	}
	r.forget(key)
	r.Tracker.Forget(r.Kind.Name(), key)
	r.keepStorm(key, plan.Storm{})
	return nil, nil, out, err
}

// finisher is the kind's Finisher if it has one and this shard owns
// namespace ns: another shard's workload is its to finish, and two would
// each start a CronJob's pending Job.
func (r *Reconciler) finisher(ns string) (workload.Finisher, bool) {
	fin, ok := r.Kind.(workload.Finisher)
	return fin, ok && r.Finder.Owns(ns)
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

// remember keeps the settle state of a plan; a zero state forgets it.
func (r *Reconciler) remember(key types.NamespacedName, p plan.Pending) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p == (plan.Pending{}) {
		delete(r.pending, key)
		return
	}
	if r.pending == nil {
		r.pending = map[types.NamespacedName]plan.Pending{}
	}
	r.pending[key] = p
}

func (r *Reconciler) forget(key types.NamespacedName) { r.remember(key, plan.Pending{}) }

func (r *Reconciler) pendingOf(key types.NamespacedName) plan.Pending {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pending[key]
}

// conflictRetry is how soon a reconcile whose write met a newer object
// runs again; the cache is then usually current.
const conflictRetry = 100 * time.Millisecond
