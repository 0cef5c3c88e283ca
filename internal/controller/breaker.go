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

// Storm-breaker event reasons.
const (
	ReasonReloadHeld    = "ReloadHeld"
	ReasonReloadResumed = "ReloadResumed"
)

// reportHold tells of a hold when it begins (a Warning event, a log line
// and an alert: once per hold, not per reconcile) and when it ends.
func (r *Reconciler) reportHold(ctx context.Context, obj client.Object, p plan.Plan) {
	log := ctrl.LoggerFrom(ctx)
	if p.Resumed {
		rolls := p.Reloads() || p.WouldReload
		log.Info("resumed after a hold", "workload", klog.KObj(obj), "kind", r.Kind.Name(), "rolls", rolls)
		next := "the latest data rolls out"
		switch {
		case !rolls && len(p.Changes) > 0:
			next = "the latest data rolls out when the minimum rollout interval has passed"
		case !rolls:
			next = "nothing to roll, the configs are back to what the workload runs"
		}
		r.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, ReasonReloadResumed, "Reload", "The hold ends: %s", next)
	}
	if p.Hold == nil || !p.Hold.Began {
		return
	}
	names := changeNames(p.Changes)
	why := fmt.Sprintf("changed %d times within %s", p.Hold.Changes, p.Hold.Window)
	until := fmt.Sprintf("rolls once, with the latest data, when they have not changed for %s (%s at the earliest)",
		p.Hold.Quiet, p.Hold.Until.UTC().Format(time.RFC3339))
	log.Info("reload held: its configs keep changing", "workload", klog.KObj(obj), "kind", r.Kind.Name(),
		"configs", names, "changes", p.Hold.Changes, "window", p.Hold.Window.String(), "until", p.Hold.Until)
	r.Recorder.Eventf(obj, nil, corev1.EventTypeWarning, ReasonReloadHeld, "Reload",
		"Reload held: its configs (%s) %s; it %s", strings.Join(names, ", "), why, until)
	if r.Alert != nil {
		alert := notify.Reload{Namespace: obj.GetNamespace(), Kind: r.Kind.Name(), Workload: obj.GetName(), Held: why + "; it " + until}
		for _, c := range p.Changes {
			alert.Sources = append(alert.Sources, notify.Source{Type: c.Ref.Kind.Type(), Name: c.Ref.Name})
		}
		r.Alert(alert)
	}
}

// waitMessage says what a plan waits for.
func waitMessage(p plan.Plan) string {
	switch {
	case p.Hold != nil:
		return "reload held by the flap breaker"
	case p.Spaced:
		return "waiting for the minimum rollout interval"
	}
	return "waiting for the settle window"
}
