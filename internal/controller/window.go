package controller

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/internal/notify"
	"github.com/ripple-dev/ripple/internal/plan"
)

// ReasonReloadDeferred is the Event of a reload that waits for the
// workload's reload window.
const ReasonReloadDeferred = "ReloadDeferred"

// reportDeferred tells of a reload deferred by the workload's reload
// window (plan.Deferred): an Event, a log line and an alert, once per
// change set (Began), not per requeue. The gauge is the store's.
func (r *Reconciler) reportDeferred(ctx context.Context, obj client.Object, p plan.Plan) {
	d := p.Deferred
	if d == nil || !d.Began {
		return
	}
	names := changeNames(p.Changes)
	why := DeferredText(d)
	ctrl.LoggerFrom(ctx).Info("reload deferred by the reload window", "workload", klog.KObj(obj), "kind", r.Kind.Name(),
		"configs", names, "window", d.Window, "from", d.From, "next", d.Next)
	r.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, ReasonReloadDeferred, "Reload",
		"Reload for changes in %s deferred: %s", strings.Join(names, ", "), why)
	if r.Alert != nil {
		alert := notify.Reload{Namespace: obj.GetNamespace(), Kind: r.Kind.Name(), Workload: obj.GetName(), Deferred: why}
		for _, c := range p.Changes {
			alert.Sources = append(alert.Sources, notify.Source{Type: c.Ref.Kind.Type(), Name: c.Ref.Name})
		}
		r.Alert(alert)
	}
}

// DeferredText says why and until when a reload is deferred, e.g. `the
// reload window "Mon-Fri 02:00-04:00 Europe/Berlin" (from the namespace)
// is closed; it rolls once, with the latest data, at its next opening,
// 2026-11-24 02:00 CET (2026-11-24T01:00:00Z)`. Explain shows it too.
func DeferredText(d *plan.Deferred) string {
	if d.Invalid != "" {
		return fmt.Sprintf("the reload window is invalid (%s); it waits until the window is fixed", d.Invalid)
	}
	closed := "is closed"
	if d.Closed {
		closed = "closed before its rollout started"
	}
	return fmt.Sprintf("the reload window %q (from the %s) %s; it rolls once, with the latest data, at its next opening, %s",
		d.Window, d.From, closed, OpeningText(d.Next))
}

// OpeningText is an opening as an absolute time in the window's zone and
// in UTC.
func OpeningText(t time.Time) string {
	return fmt.Sprintf("%s (%s)", t.Format("Mon 2006-01-02 15:04 MST"), t.UTC().Format(time.RFC3339))
}
