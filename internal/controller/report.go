package controller

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/internal/metrics"
	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/workload"
)

// outcome is how a reconcile ended, for the metrics.
type outcome struct {
	result, skip string
	retry        bool
}

var (
	skipped    = outcome{result: metrics.ResultSkipped}
	outOfScope = outcome{result: metrics.ResultSkipped, skip: metrics.SkipIgnoredNotSelected}
	notUpdated = outcome{result: metrics.ResultSkipped, skip: metrics.SkipStrategyNotUpdated}
	reloaded   = outcome{result: metrics.ResultSuccess}
)

// report tells of the write of plan p: the notices of what the write did
// (emit), the reload metrics, and the outcome. It changes nothing: what
// the write did is already in the memory.
func (r *Reconciler) report(ctx context.Context, obj client.Object, p plan.Plan, res workload.Result, err error) (ctrl.Result, outcome, error) {
	log := ctrl.LoggerFrom(ctx)
	if apierrors.IsConflict(err) {
		log.V(1).Info("workload changed since it was read; retrying")
		return ctrl.Result{RequeueAfter: conflictRetry}, outcome{result: metrics.ResultSkipped, retry: true}, nil
	}
	if p.Reloads() && res.Skipped == "" {
		r.Metrics.Reloaded(r.Kind.Name(), obj.GetNamespace(), err, r.Clock.Since(metrics.Start(ctx, p.Seen)), r.Clock.Since(p.Seen), len(p.Changes))
	}
	if err == nil {
		r.emit(ctx, r.Kind.Name(), obj, p.Untold(true))
	}
	if n, ok := p.Written(r.reloadedHow(p.Update), res.Skipped, err); ok {
		r.emit(ctx, r.Kind.Name(), obj, []plan.Notice{n}, "strategy", r.Settings.Strategy.Name())
	}
	switch {
	case err != nil:
		return ctrl.Result{}, outcome{}, fmt.Errorf("writing %s %s: %w", r.Kind.Name(), client.ObjectKeyFromObject(obj), err)
	case p.Update.Paused != nil:
		log.Info(map[bool]string{true: "paused", false: "resumed"}[*p.Update.Paused], "workload", klog.KObj(obj), "kind", r.Kind.Name())
	}
	switch {
	case !p.Reloads():
		if p.Writes() {
			log.V(1).Info("recorded the applied configs", "configs", len(p.Sources))
		}
		return ctrl.Result{RequeueAfter: p.Requeue}, notUpdated, nil
	case res.Skipped != "":
		return ctrl.Result{}, notUpdated, nil
	}
	return ctrl.Result{RequeueAfter: p.Requeue}, reloaded, nil
}
