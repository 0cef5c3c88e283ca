package controller

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/internal/notify"
	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/reason"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/source"
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
	a := notify.Alert{Level: n.Alert, Reason: n.Reason, Namespace: obj.GetNamespace(), Kind: kind, Workload: obj.GetName()}
	for _, c := range n.Configs {
		a.Sources = append(a.Sources, notify.Source{Kind: string(c.Kind), Type: c.Kind.Type(), Name: c.Name})
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

// tellConfigs tells the notices of a workload's plan that are about its
// configs' change rather than the workload (plan.ConfigNotice: a change
// held because no canary can be kept) on those configs, once per change
// however many workloads hold it. A config gone has nothing to be told.
func (d *Deps) tellConfigs(ctx context.Context, ns string, notices []plan.Notice) {
	for _, n := range notices {
		cn, ok := plan.ConfigNotice(n)
		if !ok || !d.configsTold.first(ns+"/"+n.Once) {
			continue
		}
		for _, ref := range n.Configs {
			obj := source.Object(ref.Kind)
			if obj == nil || d.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: ref.Name}, obj) != nil {
				continue
			}
			d.emit(ctx, string(ref.Kind), obj, []plan.Notice{cn})
		}
	}
}

// maxConfigsTold bounds the changes configsTold keeps: past it, it starts
// over, and a change still held is told on its config once more.
const maxConfigsTold = 10000

// configsTold are the changes told on their config by a workload's
// reconcile (tellConfigs). Such a change has no ConfigRollout to keep it
// (that is why it is told), nor is it a workload's: the memory of each
// workload keeps that the change was told on it, and this keeps that it
// was told on the config. Lost on restart: each is told once more.
type configsTold struct {
	mu   sync.Mutex
	keys map[string]struct{}
}

// first reports whether key was not told yet, and marks it told.
func (c *configsTold) first(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.keys[key]; ok {
		return false
	}
	if c.keys == nil || len(c.keys) >= maxConfigsTold {
		c.keys = map[string]struct{}{}
	}
	c.keys[key] = struct{}{}
	return true
}
