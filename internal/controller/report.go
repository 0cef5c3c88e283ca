package controller

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/internal/metrics"
	"github.com/ripple-dev/ripple/internal/notify"
	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/strategy"
	"github.com/ripple-dev/ripple/internal/workload"
)

// Event reasons.
const (
	ReasonReloaded          = "Reloaded"
	ReasonReloadFailed      = "ReloadFail"
	ReasonInvalidAnnotation = "InvalidAnnotation"
	ReasonReloadSkipped     = "ReloadSkipped"
	ReasonWouldReload       = "WouldReload"
	ReasonRolloutComplete   = "RolloutComplete"
	ReasonRolloutStalled    = "RolloutStalled"
	ReasonRolloutQueued     = "RolloutQueued"
	ReasonRolledBack        = "RolledBack"
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

// warn emits a Warning event per invalid annotation.
func (r *Reconciler) warn(obj client.Object, warnings []string) {
	for _, w := range warnings {
		r.Recorder.Eventf(obj, nil, corev1.EventTypeWarning, ReasonInvalidAnnotation, "Reload", "%s", w)
	}
}

// report tells of the write of plan p: events, metrics, alerts and logs.
// It changes nothing: what the write did is already in the memory.
func (r *Reconciler) report(ctx context.Context, obj client.Object, p plan.Plan, res workload.Result, err error) (ctrl.Result, outcome, error) {
	log := ctrl.LoggerFrom(ctx)
	if apierrors.IsConflict(err) {
		log.V(1).Info("workload changed since it was read; retrying")
		return ctrl.Result{RequeueAfter: conflictRetry}, outcome{result: metrics.ResultSkipped, retry: true}, nil
	}
	names := changeNames(p.Changes)
	list := strings.Join(names, ", ")
	if p.Reloads() && res.Skipped == "" {
		r.Metrics.Reloaded(r.Kind.Name(), obj.GetNamespace(), err, r.Clock.Since(metrics.Start(ctx, p.Seen)), r.Clock.Since(p.Seen), len(p.Changes))
	}
	if err != nil {
		if p.Reloads() {
			r.Recorder.Eventf(obj, nil, corev1.EventTypeWarning, ReasonReloadFailed, "Reload", "Reload for changes in %s failed: %v", list, err)
		}
		return ctrl.Result{}, outcome{}, fmt.Errorf("writing %s %s: %w", r.Kind.Name(), client.ObjectKeyFromObject(obj), err)
	}
	r.reportRollback(ctx, obj, p)
	approved := r.reportApproval(ctx, obj, p)
	r.reportWithTemplate(ctx, obj, p)
	if p.Update.Paused != nil {
		log.Info(map[bool]string{true: "paused", false: "resumed"}[*p.Update.Paused], "workload", klog.KObj(obj), "kind", r.Kind.Name())
	}
	r.reportWouldReload(ctx, obj, p)
	if !p.Reloads() {
		if p.Writes() {
			log.V(1).Info("recorded the applied configs", "configs", len(p.Sources))
		}
		return ctrl.Result{RequeueAfter: p.Requeue}, notUpdated, nil
	}
	if res.Skipped != "" {
		log.Info("reload skipped", "workload", klog.KObj(obj), "kind", r.Kind.Name(), "configs", names, "reason", res.Skipped)
		r.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, ReasonReloadSkipped, "Reload", "Changes in %s not reloaded: %s", list, res.Skipped)
		return ctrl.Result{}, notUpdated, nil
	}
	how := r.reloadedHow(p.Update)
	log.Info("reloaded", "workload", klog.KObj(obj), "kind", r.Kind.Name(), "configs", names, "strategy", r.Settings.Strategy.Name(), "how", how)
	note := ""
	if p.TemplateFirst {
		note = templateFirstNote
	}
	r.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, ReasonReloaded, "Reload", "Reloaded for changes in %s (%s%s)%s", list, how, approved, note)
	if r.Alert != nil {
		r.Alert(notify.Reload{Namespace: obj.GetNamespace(), Kind: r.Kind.Name(), Workload: obj.GetName(), Sources: alertSources(p.Changes)}) // queued: a slow endpoint never holds a reload up
	}
	return ctrl.Result{RequeueAfter: p.Requeue}, reloaded, nil
}

// reportWouldReload tells of the rollout a plan would have started but for
// --dry-run or the notify reload policy.
func (r *Reconciler) reportWouldReload(ctx context.Context, obj client.Object, p plan.Plan) {
	if !p.WouldReload {
		return
	}
	names := changeNames(p.Changes)
	r.Metrics.WouldReload(r.Kind.Name())
	by := wouldReloadBy(r.Settings)
	ctrl.LoggerFrom(ctx).Info("would reload", "workload", klog.KObj(obj), "kind", r.Kind.Name(), "configs", names, "by", by)
	r.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, ReasonWouldReload, "Reload", "Would reload for changes in %s (%s)", strings.Join(names, ", "), by)
	if r.Alert != nil && !r.Settings.DryRun {
		r.Alert(notify.Reload{Namespace: obj.GetNamespace(), Kind: r.Kind.Name(), Workload: obj.GetName(), Sources: alertSources(p.Changes), Notify: true})
	}
}

// reportRollback tells of a rollback of the pod template that plan p is
// the first to see (plan.RolledBack): which data the restored revision was
// built for, and which the pods read now. Its write recorded the rollback,
// so it is told once.
func (r *Reconciler) reportRollback(ctx context.Context, obj client.Object, p plan.Plan) {
	if len(p.RolledBack) == 0 {
		return
	}
	built := make([]string, len(p.RolledBack))
	read := make([]string, len(p.RolledBack))
	for i, sp := range p.RolledBack {
		built[i] = fmt.Sprintf("%s %q %s", sp.Ref.Kind, sp.Ref.Name, shortDigest(sp.Applied))
		read[i] = fmt.Sprintf("%s %q %s (changed since)", sp.Ref.Kind, sp.Ref.Name, shortDigest(sp.Digest))
	}
	ctrl.LoggerFrom(ctx).Info("rolled back", "workload", klog.KObj(obj), "kind", r.Kind.Name(), "builtFor", built, "reads", read)
	r.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, ReasonRolledBack, "Reload",
		"Pod template rolled back to a revision built for %s; its pods read the current data: %s. Ripple keeps the rollback and rolls again on the next config change",
		strings.Join(built, ", "), strings.Join(read, ", "))
}

// shortDigest is the first 12 hex digits of a digest, as explain and
// history show it.
func shortDigest(sum string) string {
	return sum[:min(len(sum), 12)]
}

// changeNames names the changed sources, e.g. `ConfigMap "app"`.
func changeNames(changes []strategy.Change) []string {
	names := make([]string, len(changes))
	for i, c := range changes {
		names[i] = fmt.Sprintf("%s %q", c.Ref.Kind, c.Ref.Name)
		if c.Deleted {
			names[i] += " (deleted)"
		}
	}
	return names
}

// logWaiting logs a reload that waits for a rollout slot: at info level
// when it joins the line, then at debug level on each poll.
func (r *Reconciler) logWaiting(ctx context.Context, obj client.Object, p plan.Plan, a plan.Admission) {
	log := ctrl.LoggerFrom(ctx)
	if !a.First {
		log.V(1).Info(a.Why, "workload", klog.KObj(obj), "kind", r.Kind.Name(), "configs", changeNames(p.Changes))
		return
	}
	log.Info(a.Why, "workload", klog.KObj(obj), "kind", r.Kind.Name(), "configs", changeNames(p.Changes))
	// Once per wait: the line is in memory, and this is how explain and
	// kubectl describe tell it.
	r.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, ReasonRolloutQueued, "Reload", "Changes in %s wait: %s",
		strings.Join(changeNames(p.Changes), ", "), a.Why)
}
