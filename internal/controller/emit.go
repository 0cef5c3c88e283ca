package controller

import (
	"context"
	"fmt"

	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/internal/notify"
	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/reason"
	"github.com/ripple-dev/ripple/internal/refs"
)

// emit tells notices about obj, a workload of kind: for each, a log line,
// an Event, the metric the reason counts in and an alert, as the registry
// (package reason) and the notice say. It is the one place Ripple tells
// anything about a workload; the notices come from the plan (plan.Notice)
// or, for what only acting shows (a rollout's end, a restart forbidden),
// from the code that saw it. extra are key/value pairs for the log lines.
func (d *Deps) emit(ctx context.Context, kind string, obj client.Object, notices []plan.Notice, extra ...any) {
	log := ctrl.LoggerFrom(ctx)
	for _, n := range notices {
		info := reason.Of(n.Reason)
		kv := append([]any{"workload", klog.KObj(obj), "kind", kind, "reason", n.Reason, "configs", names(n.Configs), "message", n.Message}, extra...)
		if info.Debug {
			log.V(1).Info(info.Log, kv...)
		} else {
			log.Info(info.Log, kv...)
		}
		if info.Event {
			d.Recorder.Eventf(obj, nil, info.Type(), string(n.Reason), "Reload", "%s", n.Message)
		}
		d.count(kind, n.Reason)
		if d.Alert != nil && n.Alert != reason.None {
			d.Alert(alertOf(kind, obj, n)) // queued: a slow endpoint never holds a reload up
		}
	}
}

// count adds a notice to the metric its reason counts in, if any; the
// metrics with durations (reloads, rollouts) are kept where they are
// measured.
func (d *Deps) count(kind string, r reason.Reason) {
	switch r {
	case reason.ReloadReverted:
		d.Metrics.Reverted(kind)
	case reason.WouldReload:
		d.Metrics.WouldReload(kind)
	}
}

// alertOf is the alert of notice n: Reloader's sentence for a rollout,
// else the notice's message.
func alertOf(kind string, obj client.Object, n plan.Notice) notify.Alert {
	a := notify.Alert{Level: n.Alert, Namespace: obj.GetNamespace(), Kind: kind, Workload: obj.GetName()}
	for _, c := range n.Configs {
		a.Sources = append(a.Sources, notify.Source{Type: c.Kind.Type(), Name: c.Name})
	}
	if n.Reason == reason.Reloaded {
		a.Headline = notify.ReloadedHeadline(a.Namespace, kind, a.Workload, a.Sources)
	} else {
		a.Headline = notify.Headline(a.Namespace, kind, a.Workload, n.Message)
	}
	return a
}

// names names configs for a log line, e.g. `ConfigMap "app"`.
func names(configs []refs.Ref) []string {
	out := make([]string, len(configs))
	for i, c := range configs {
		out[i] = fmt.Sprintf("%s %q", c.Kind, c.Name)
	}
	return out
}
