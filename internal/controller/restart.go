package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/podrestart"
	"github.com/ripple-dev/ripple/internal/reason"
	"github.com/ripple-dev/ripple/internal/rollout"
	"github.com/ripple-dev/ripple/internal/workload"
)

// forbiddenRetry is how soon a restart that lacked a permission is tried
// again: granting it takes a chart upgrade, not a second.
const forbiddenRetry = time.Minute

// podRestart is a workload's pod restart in progress, as read.
type podRestart struct {
	step podrestart.Step
	// pods are the workload's pods by name, for their UIDs.
	pods map[string]corev1.Pod
	// inPlace are, under the in-place method, how the pods created up to
	// the restart time stand, by name.
	inPlace map[string]podrestart.InPlacePod
	// refused are why each pod that cannot be restarted in place, or
	// reloaded by its action, cannot; calls are, under the reload-action
	// method, the URLs of the pods to call now; both by name.
	refused, calls map[string]string
}

// restarting returns the kind's pod scope when r, a workload's restart
// as the planner resolved it (or as the write asked for it), restarts
// pods and one is recorded; false when there is none.
func restarting(kind workload.Kind, r workload.Restart) (workload.Restarter, bool) {
	rs, ok := kind.(workload.Restarter)
	return rs, ok && r.Pods() && !r.At.IsZero()
}

// isRestarting reports whether r, a workload's restart as the planner
// resolved it, restarts pods and one is recorded.
func isRestarting(kind workload.Kind, r workload.Restart) bool {
	_, ok := restarting(kind, r)
	return ok
}

// readRestart lists obj's pods (workload k) (by its selector, owned by it) around the
// cache, Ripple does not watch pods, and decides the next step.
func (d *Deps) readRestart(ctx context.Context, k workload.Ref, rs workload.Restarter, r workload.Restart, obj client.Object) (podRestart, error) {
	scope, err := rs.Pods(obj)
	if err != nil {
		return podRestart{}, err
	}
	list := &corev1.PodList{}
	if err := d.Pods.List(ctx, list, client.InNamespace(obj.GetNamespace()), client.MatchingLabelsSelector{Selector: scope.Selector}); err != nil {
		return podRestart{}, fmt.Errorf("listing the pods: %w", err)
	}
	pr := podRestart{pods: map[string]corev1.Pod{}, inPlace: map[string]podrestart.InPlacePod{}, refused: map[string]string{}, calls: map[string]string{}}
	in := podrestart.Restart{At: r.At, Want: scope.Want, MaxUnavailable: r.MaxUnavailable, Delay: r.Delay}
	for _, p := range list.Items {
		if !scope.Owns(&p) {
			continue
		}
		pr.pods[p.Name] = p
		pp := podrestart.Pod{Name: p.Name, Created: p.CreationTimestamp.Time, Ready: rollout.PodReady(&p), Terminating: p.DeletionTimestamp != nil}
		switch old := !pp.Terminating && !pp.Created.After(r.At); {
		case old && r.Method == workload.RestartInPlace:
			st := d.inPlacePod(r, k, &p, &pp)
			pr.inPlace[p.Name] = st
			if st.Refused != "" {
				pr.refused[p.Name] = st.Refused
			}
		case old && r.Method == workload.RestartReloadAction:
			if url, why := d.actionPod(r, k, &p, &pp); why != "" {
				pr.refused[p.Name] = why
			} else if url != "" {
				pr.calls[p.Name] = url
			}
		}
		in.Pods = append(in.Pods, pp)
	}
	pr.step = podrestart.Next(in, d.Clock.Now(), d.Settings.Rollouts.Timeout)
	return pr, nil
}

// restartStatus is how obj's rollout stands: by its pods while the
// reload Ripple follows restarts them (the restart its write asked for,
// plan.Rollout.Restart), else by its own status.
func (d *Deps) restartStatus(ctx context.Context, kind workload.Kind, obj client.Object) (rollout.Status, time.Duration) {
	k := workload.RefTo(kind, obj)
	r := d.Memory.Load(k).Rollout.Restart
	rs, ok := restarting(kind, r)
	if !ok {
		if sr, is := kind.(workload.StatusReader); is {
			return sr.RolloutStatus(obj), 0 // a declared kind's ready rule
		}
		return rollout.Of(obj), 0
	}
	pr, err := d.readRestart(ctx, k, rs, r, obj)
	if err != nil {
		return rollout.Status{State: rollout.Progressing, Reason: err.Error()}, podrestart.Poll
	}
	return pr.step.Status, pr.step.Requeue
}

// restart takes the next step of obj's pod restart, if a reload asked for
// one (rst, as gathered for the plan): it evicts or deletes the pods the
// planner names, and once every pod is newer than the restart removes the
// restart time (locked on the resourceVersion read, so a newer reload's
// time is never removed). The restarter (restarter.go) calls it.
func (r *Reconciler) restart(ctx context.Context, obj client.Object, rst workload.Restart) (ctrl.Result, error) {
	rs, ok := restarting(r.Kind, rst)
	if !ok {
		return ctrl.Result{}, nil
	}
	pr, err := r.readRestart(ctx, workload.RefTo(r.Kind, obj), rs, rst, obj)
	if apierrors.IsForbidden(err) {
		r.forbidden(ctx, obj, rst.Method, "list pods", err)
		return ctrl.Result{RequeueAfter: forbiddenRetry}, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	log := ctrl.LoggerFrom(ctx).WithValues("workload", klog.KObj(obj), "kind", r.Kind.Name(), "method", rst.Method)
	r.tellSkipped(ctx, obj, rst, pr)
	if pr.step.Status.State == rollout.Complete {
		log.Info("restart complete")
		done, ok := obj.DeepCopyObject().(client.Object)
		if !ok {
			return ctrl.Result{}, fmt.Errorf("copying %T", obj)
		}
		ann := done.GetAnnotations()
		delete(ann, r.Settings.Keys.RestartedAt)
		done.SetAnnotations(ann)
		err := r.Client.Patch(ctx, done, client.MergeFromWithOptions(obj, client.MergeFromWithOptimisticLock{}), client.FieldOwner(workload.FieldManager))
		if apierrors.IsConflict(err) {
			return ctrl.Result{RequeueAfter: conflictRetry}, nil
		}
		if err == nil || apierrors.IsNotFound(err) {
			r.Memory.ForgetPods(workload.RefTo(r.Kind, obj)) // done, or gone
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	return r.restartPods(ctx, obj, rst, pr, log)
}

// restartPods restarts the pods the step of pr names, as rst's method
// says: a PodDisruptionBudget's refusal is waiting, a missing permission
// is told (forbidden) and tried again later.
func (r *Reconciler) restartPods(ctx context.Context, obj client.Object, rst workload.Restart, pr podRestart, log logr.Logger) (ctrl.Result, error) {
	defer acted(r.Pods, obj.GetNamespace())
	if rst.Method == workload.RestartReloadAction {
		return r.reloadPods(ctx, obj, rst, pr, log)
	}
	for _, name := range pr.step.Restart {
		p := pr.pods[name]
		method, how, err := rst.Method, "", error(nil)
		if method == workload.RestartInPlace {
			st := pr.inPlace[name]
			var evicted bool
			if evicted, err = r.restartInPlace(ctx, obj, rst, &p, st); evicted {
				method = workload.RestartEvict
			} else {
				how = resizeSummary(st)
			}
		} else {
			err = r.restartPod(ctx, method, &p)
		}
		switch {
		case apierrors.IsTooManyRequests(err):
			// A PodDisruptionBudget allows no disruption now: wait.
			log.V(1).Info("eviction refused by a PodDisruptionBudget; waiting", "pod", name)
			return ctrl.Result{RequeueAfter: pr.step.Requeue}, nil
		case apierrors.IsForbidden(err):
			r.forbidden(ctx, obj, method, verbOf(method), err)
			return ctrl.Result{RequeueAfter: forbiddenRetry}, nil
		case apierrors.IsNotFound(err), apierrors.IsConflict(err), errors.Is(err, errNotResized):
			// Gone or replaced since it was read, or its resize
			// refused: the next step sees it.
		case err != nil:
			return ctrl.Result{}, fmt.Errorf("restarting pod %s: %w", name, err)
		default:
			log.Info("restarted pod", "pod", name, "uid", p.UID, "left", pr.step.Left-1, "how", method, "resize", how)
		}
	}
	return ctrl.Result{RequeueAfter: pr.step.Requeue}, nil
}

// restartPod evicts or deletes p, only if it is still the pod that was
// read (a StatefulSet's replacement has the same name).
func (r *Reconciler) restartPod(ctx context.Context, method string, p *corev1.Pod) error {
	pre := &metav1.Preconditions{UID: &p.UID}
	if method == workload.RestartDelete {
		return r.Client.Delete(ctx, p, client.Preconditions(*pre))
	}
	ev := &policyv1.Eviction{
		ObjectMeta:    metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace},
		DeleteOptions: &metav1.DeleteOptions{Preconditions: pre},
	}
	return r.Client.SubResource("eviction").Create(ctx, p, ev)
}

// verbOf is the permission a restart method needs on pods.
func verbOf(method string) string {
	switch method {
	case workload.RestartDelete:
		return "delete pods"
	case workload.RestartInPlace:
		return "patch pods/resize"
	case workload.RestartReloadAction:
		return "list pods"
	}
	return "create pods/eviction"
}

// chartValue is the Helm chart value that grants a restart method's
// permissions: ripple.restartMethods.<method>, in-place as inPlace (a
// Helm value name takes no hyphen without quoting).
func chartValue(method string) string {
	switch method {
	case workload.RestartInPlace:
		return "ripple.restartMethods.inPlace"
	case workload.RestartReloadAction:
		return "ripple.restartMethods.reloadAction"
	}
	return "ripple.restartMethods." + method
}

// forbidden tells that a restart lacks a permission, naming it and the
// chart value that grants it.
func (r *Reconciler) forbidden(ctx context.Context, obj client.Object, method, verb string, err error) {
	n := plan.Notice{Reason: reason.RestartFailed, Message: fmt.Sprintf(
		"Cannot restart the pods (restart method %s): Ripple may not %s; grant it with the Helm chart value %s=true", method, verb, chartValue(method))}
	r.emit(ctx, r.Kind.Name(), obj, []plan.Notice{n}, "permission", verb, "error", err.Error())
}

// reloadedHow says how the reload of update u was carried out, for its
// Reloaded Event: the strategy written on the template, or the restart
// method.
func (r *Reconciler) reloadedHow(u workload.Update) string {
	if rst := u.Restart; rst != nil && rst.Action != nil {
		return fmt.Sprintf("reload action %s, %s after the change, up to %d pods at a time", rst.Action, rst.Delay, rst.MaxUnavailable)
	} else if rst != nil {
		return fmt.Sprintf("restart method %s, up to %d pods at a time", rst.Method, rst.MaxUnavailable)
	}
	return "strategy " + r.Settings.Strategy.Name()
}
