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
	"github.com/ripple-dev/ripple/internal/strategy"
)

// Reload-policy event reasons.
const (
	ReasonReloadPending      = "ReloadPending"
	ReasonApprovalSuperseded = "ApprovalSuperseded"
)

// approveHint is how a ReloadPending Event and alert say to approve.
const approveHint = "approve with `ripple approve %s/%s -n %s`"

// reportPending tells of a change set that starts waiting for an approval
// (the manual reload policy): an Event, a log line and an alert, once per
// change set (plan.Awaiting.Began).
func (r *Reconciler) reportPending(ctx context.Context, obj client.Object, p plan.Plan) {
	if p.Awaiting == nil || !p.Awaiting.Began {
		return
	}
	configs := withDigests(p.Awaiting.Changes)
	hint := fmt.Sprintf(approveHint, strings.ToLower(r.Kind.Name()), obj.GetName(), obj.GetNamespace())
	since := p.Awaiting.Since.UTC().Format(time.RFC3339)
	ctrl.LoggerFrom(ctx).Info("reload pending approval", "workload", klog.KObj(obj), "kind", r.Kind.Name(),
		"configs", changeNames(p.Awaiting.Changes), "since", p.Awaiting.Since)
	r.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, ReasonReloadPending, "Reload",
		"Reload pending approval (reload policy manual): changes in %s, waiting since %s; %s", strings.Join(configs, ", "), since, hint)
	if r.Alert != nil {
		alert := notify.Reload{Namespace: obj.GetNamespace(), Kind: r.Kind.Name(), Workload: obj.GetName(),
			Pending: "waiting since " + since + "; " + hint, Sources: alertSources(p.Awaiting.Changes)}
		r.Alert(alert)
	}
}

// reportApproval tells of the approval plan p's write spent: the configs
// it approved whose digest was not the current pending one are a Warning
// (superseded by a later change, or nothing pending), and it returns what
// the Reloaded Event adds about an applied approval.
func (r *Reconciler) reportApproval(ctx context.Context, obj client.Object, p plan.Plan) string {
	a := p.Approving
	if a == nil {
		return ""
	}
	by := ""
	if a.By != "" {
		by = " by " + a.By
	}
	if len(a.Stale) > 0 {
		stale := make([]string, len(a.Stale))
		for i, s := range a.Stale {
			kind, name, _ := strings.Cut(s.Config, "/")
			stale[i] = fmt.Sprintf("%s %q %s", kind, name, shortDigest(s.Digest))
		}
		ctrl.LoggerFrom(ctx).Info("approval not applied: superseded", "workload", klog.KObj(obj), "kind", r.Kind.Name(), "configs", stale)
		r.Recorder.Eventf(obj, nil, corev1.EventTypeWarning, ReasonApprovalSuperseded, "Reload",
			"Approval%s of %s not applied: the config changed again since, or nothing of it is pending; what is pending needs its own approval",
			by, strings.Join(stale, ", "))
	}
	if len(a.Applied) == 0 {
		return ""
	}
	return ", approved" + by
}

// withDigests names the changed configs with their short digests, e.g.
// `ConfigMap "app" 3f2a9c01b2d4`: the digest of the data (Reloader's SHA1,
// never the data) tells which version an approval names.
func withDigests(changes []strategy.Change) []string {
	names := changeNames(changes)
	for i, c := range changes {
		if !c.Deleted {
			names[i] += " " + shortDigest(c.Hash)
		}
	}
	return names
}

func alertSources(changes []strategy.Change) []notify.Source {
	out := make([]notify.Source, len(changes))
	for i, c := range changes {
		out[i] = notify.Source{Type: c.Ref.Kind.Type(), Name: c.Ref.Name}
	}
	return out
}

// wouldReloadBy says what held a rollout back: --dry-run, or the
// workload's notify policy.
func wouldReloadBy(s plan.Settings) string {
	if s.DryRun {
		return "--dry-run"
	}
	return "reload policy notify"
}
