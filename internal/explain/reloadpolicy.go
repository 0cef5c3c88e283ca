package explain

import (
	"fmt"
	"strings"
	"time"

	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/reason"
	"github.com/ripple-dev/ripple/internal/standing"
)

// ReloadPolicy is the workload's reload policy and what waits for an
// approval under it.
type ReloadPolicy struct {
	// Value is auto, manual or notify; an invalid value counts as manual
	// (Warnings say so).
	Value string `json:"value"`
	// From is where it was set: workload, pod template, namespace or flag.
	From string `json:"from"`
	// Pending is the change set waiting for an approval; nil when none.
	Pending *Pending `json:"pending,omitempty"`
}

// Pending is a change set waiting for an approval.
type Pending struct {
	Configs []PendingConfig `json:"configs"`
	// Since is when its configs were last written, as far as explain can
	// tell (their managedFields).
	Since *time.Time `json:"since,omitempty"`
	// Approve is the command that approves it.
	Approve string `json:"approve"`
}

// PendingConfig is one config of a pending change set, with the short
// digest an approval names.
type PendingConfig struct {
	Kind   string `json:"kind"`
	Name   string `json:"name"`
	Digest string `json:"digest"`
}

// reloadPolicy is the report's reload policy.
func reloadPolicy(f Facts) *ReloadPolicy {
	if f.Template == nil {
		return nil
	}
	rp := &ReloadPolicy{Value: string(f.Plan.Policy), From: f.Plan.PolicyFrom}
	if a := f.Plan.Awaiting; a != nil {
		p := &Pending{Approve: plan.ApproveCommand(f.Input.Workload)}
		for _, c := range a.Changes {
			p.Configs = append(p.Configs, PendingConfig{Kind: string(c.Ref.Kind), Name: c.Ref.Name, Digest: f.shown(c.Ref, c.Hash)})
		}
		if !a.Since.IsZero() {
			since := a.Since
			p.Since = &since
		}
		rp.Pending = p
	}
	return rp
}

// Awaits reports whether the report's workload waits for something
// beyond Ripple's own timing, as `explain --pending` lists them: an
// approval, or its reload window.
func Awaits(r Report) bool {
	return r.State == standing.Waiting && (r.Reason == reason.ReloadPending || r.Reason == reason.ReloadDeferred)
}

// Awaiting is the list of the workloads in l that wait (Awaits).
func (l List) Awaiting() List {
	out := List{Items: []Report{}, Findings: l.Findings, Unplanned: l.Unplanned}
	for _, r := range l.Items {
		if Awaits(r) {
			out.Items = append(out.Items, r)
		}
	}
	return out
}

// printReloadPolicy writes the reload policy header lines of a report.
func printReloadPolicy(tw *strings.Builder, rp *ReloadPolicy) {
	if rp == nil {
		return
	}
	// Short labels: the header's columns stay as wide as before.
	fmt.Fprintf(tw, "Policy:\t%s (reload policy, from the %s)\n", rp.Value, rp.From)
	if p := rp.Pending; p != nil {
		configs := make([]string, len(p.Configs))
		for i, c := range p.Configs {
			configs[i] = fmt.Sprintf("%s/%s %s", c.Kind, c.Name, c.Digest)
		}
		since := "-"
		if p.Since != nil {
			since = stamp(*p.Since)
		}
		fmt.Fprintf(tw, "Pending:\tapproval of %s, since %s; %s\n", strings.Join(configs, ", "), since, p.Approve)
	}
}
