package controller

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/internal/notify"
	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/workload"
)

// ReasonReloadReverted is the Warning of a reload another manager undid
// (plan/revert.go).
const ReasonReloadReverted = "ReloadReverted"

// revertAdvice is what to do about an owner that rewrites the template.
const revertAdvice = "let the owner carry the change, or use the restart method evict " +
	"(ripple.dev/restart-method), which restarts the pods without touching the template; `ripple explain` shows the workload"

// reportRevert tells, once, of a reload another manager undid (plan
// p's Reverted), or of a rollout held after plan.MaxAttempts: a Warning
// naming the manager that wrote the workload last, a log line, the
// metric and an alert.
func (r *Reconciler) reportRevert(ctx context.Context, obj client.Object, p plan.Plan) {
	var what string
	var sources []notify.Source
	who := LastWriter(obj)
	switch {
	case len(p.Reverted) > 0:
		names := make([]string, len(p.Reverted))
		for i, sp := range p.Reverted {
			names[i] = fmt.Sprintf("%s %q %s", sp.Ref.Kind, sp.Ref.Name, shortDigest(sp.Digest))
			sources = append(sources, notify.Source{Type: sp.Ref.Kind.Type(), Name: sp.Ref.Name})
		}
		what = fmt.Sprintf("Reload reverted by %s: the pod template no longer carries %s. Its rewrite restarted the pods, which read the current data; Ripple does not write it again and rolls on the next config change; %s",
			who, strings.Join(names, ", "), revertAdvice)
	case p.RevertHeld && p.HeldNoticed:
		names := changeNames(p.Changes)
		for _, c := range p.Changes {
			sources = append(sources, notify.Source{Type: c.Ref.Kind.Type(), Name: c.Ref.Name})
		}
		what = fmt.Sprintf("Reload reverted by %s: Ripple rolled %s %d times and the workload does not keep it. Ripple holds it until the next config change; %s",
			who, strings.Join(names, ", "), plan.MaxAttempts, revertAdvice)
	default:
		return
	}
	ctrl.LoggerFrom(ctx).Info("reload reverted", "workload", klog.KObj(obj), "kind", r.Kind.Name(), "by", who, "held", p.RevertHeld)
	r.Recorder.Eventf(obj, nil, corev1.EventTypeWarning, ReasonReloadReverted, "Reload", "%s", what)
	r.Metrics.Reverted(r.Kind.Name())
	if r.Alert != nil {
		r.Alert(notify.Reload{Namespace: obj.GetNamespace(), Kind: r.Kind.Name(), Workload: obj.GetName(), Sources: sources, Held: what})
	}
}

// LastWriter is the manager that wrote obj last, other than Ripple and
// the status writers: the one that undid Ripple's write. It reads the
// managers' names and times the cache keeps (workload.TrimManagedFields).
func LastWriter(obj client.Object) string {
	var last *metav1.ManagedFieldsEntry
	for i, e := range obj.GetManagedFields() {
		if e.Manager == workload.FieldManager || e.Subresource != "" || e.Time == nil {
			continue
		}
		if last == nil || !e.Time.Before(last.Time) {
			last = &obj.GetManagedFields()[i]
		}
	}
	if last == nil {
		return "another manager"
	}
	return fmt.Sprintf("%q (%s)", last.Manager, strings.ToLower(string(last.Operation)))
}
