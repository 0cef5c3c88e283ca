// Package standing says where a workload stands in a change of its
// configs: one word and a reason of the registry (internal/reason), read
// from its plan and its rollout. `ripple explain`, `ripple plan`, the
// admission warning and a ConfigRollout's consumers all ask Of, so they
// say the same word for the same state; the words are the ConfigRollout
// API's consumer states (api/v1alpha1), one for one.
//
// It decides nothing: plan.For decided, and this reads the decision. It
// is pure, below explain, impact and change and above plan.
package standing

import (
	"slices"

	"github.com/ripple-dev/ripple/internal/decide"
	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/reason"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/rollout"
)

// State is where a workload stands in a change: one of the words below.
type State string

// The states, as docs/config-rollouts.md ("Where a workload stands")
// tells them. The first six are of a workload Ripple rolls (managed).
const (
	// Complete: it runs the data and its rollout is complete.
	Complete = State("Complete")
	// Rolling: it applied the change; its rollout is in progress.
	Rolling = State("Rolling")
	// Stalled: it applied the change; its rollout stalled.
	Stalled = State("Stalled")
	// Pending: it has not applied the change, and nothing holds it on
	// purpose (the settle window, a rollout slot, or it rolls now).
	Pending = State("Pending")
	// Waiting: held on purpose: a reload window, an approval, a canary,
	// the storm breaker.
	Waiting = State("Waiting")
	// Halted: the change's canary failed.
	Halted = State("Halted")
	// Stale: it reads the config but Ripple does not roll it: it keeps
	// the old data until someone restarts it.
	Stale = State("Stale")
	// NotifyOnly: the notify policy or --dry-run: Ripple tells, never
	// rolls.
	NotifyOnly = State("NotifyOnly")
	// Excluded: it excludes the config, the config says ignore, or it was
	// rolled back to older data.
	Excluded = State("Excluded")
)

// States are the states, in the order a person looks at them: what needs
// a look first, what is done last.
func States() []State {
	return []State{Halted, Stalled, Rolling, Pending, Waiting, Stale, NotifyOnly, Excluded, Complete}
}

// Standing is where a workload stands, and why.
type Standing struct {
	State  State
	Reason reason.Reason
}

// Facts are what a workload's standing in the change of one config is
// read from.
type Facts struct {
	// Source is the workload's plan of the config.
	Source plan.SourcePlan
	// Verdict is why the plan does not roll the workload now
	// (canary.Verdict), or what holds it that the plan cannot see (ripple
	// explain reads the running Ripple's storm hold and rollout line from
	// its Events); empty when nothing does.
	Verdict reason.Reason
	// RollsNothing is set under the notify policy or --dry-run.
	RollsNothing bool
	// Rollout is how the workload's rollout stands; Rolling says why it
	// is in progress when not by its kind's status alone (a restart
	// method restarting its pods, a pause period).
	Rollout rollout.Status
	Rolling reason.Reason
	// Zero is set when the workload is scaled to zero and runs no pod
	// (rollout.ScaledToZero).
	Zero bool
}

// FactsOf are the facts that plan p of a workload, with --dry-run
// dryRun, gives of config, its rollout aside; false when p does not name
// config.
func FactsOf(p plan.Plan, config refs.Ref, dryRun bool) (Facts, bool) {
	i := slices.IndexFunc(p.Sources, func(s plan.SourcePlan) bool { return s.Ref == config })
	if i < 0 {
		return Facts{}, false
	}
	f := Facts{Source: p.Sources[i], RollsNothing: dryRun || p.Policy == plan.Notify}
	if n, ok := p.Verdict(); ok {
		f.Verdict = n.Reason
	}
	return f, true
}

// Of is where a workload stands in the change of a config, by f; false
// when it is no consumer of the config (a reload annotation names it, the
// pod template does not read it).
func Of(f Facts) (Standing, bool) {
	s, ok := of(f)
	if ok && f.Zero && slices.Contains(emptied, s.State) {
		return Standing{Complete, reason.ScaledToZero}, true
	}
	return s, ok
}

// emptied are the standings a workload scaled to zero is Complete in
// instead, whether it applied the change yet or not (a reload window, an
// approval, a canary may still hold its write): no pod of it runs the old
// data, and a pod it starts reads the new. Ripple still rolls it when its
// reload is due; a halted change stays Halted.
var emptied = []State{Pending, Waiting, Rolling, Stalled}

func of(f Facts) (Standing, bool) {
	if d := f.Source.Decision; !d.Reload {
		return decided(d.Reason)
	}
	switch f.Source.State {
	case plan.Changed, plan.Created, plan.Deleted:
		return due(f), true
	case plan.RolledBack:
		return Standing{Excluded, reason.RolledBack}, true
	case plan.NotReloading:
		// It reloads on the config, but no container reads it to write
		// the reload on.
		return Standing{Stale, reason.NotReferenced}, true
	}
	return applied(f), true
}

// decided is the standing of a workload that does not reload on the
// config, by the decision's reason.
func decided(r decide.Reason) (Standing, bool) {
	switch r {
	case decide.NotReferenced:
		return Standing{}, false
	case decide.Excluded:
		return Standing{Excluded, reason.Excluded}, true
	case decide.Ignored:
		return Standing{Excluded, reason.Ignored}, true
	}
	return Standing{Stale, reason.NotOptedIn}, true
}

// holds are the verdicts that hold a change on purpose: the workload
// stands Waiting.
var holds = []reason.Reason{reason.ReloadDeferred, reason.ReloadPending, reason.WaitingForCanary, reason.CanaryUnkept, reason.ReloadHeld}

// due is the standing of a workload whose change of the config is not
// applied yet.
func due(f Facts) Standing {
	switch {
	case f.RollsNothing:
		return Standing{NotifyOnly, reason.WouldReload}
	case f.Verdict == "":
		return Standing{Pending, reason.ReloadDue}
	case f.Verdict == reason.RolloutHalted:
		return Standing{Halted, f.Verdict}
	case slices.Contains(holds, f.Verdict):
		return Standing{Waiting, f.Verdict}
	}
	return Standing{Pending, f.Verdict} // the settle window, a rollout slot, ...
}

// applied is the standing of a workload that runs the config's data (or
// has nothing of it to roll: a baseline, a config deleted without
// --reload-on-delete): by its rollout.
func applied(f Facts) Standing {
	switch f.Rollout.State {
	case rollout.Stalled:
		return Standing{Stalled, reason.RolloutStalled}
	case rollout.Progressing:
		if f.Rolling != "" {
			return Standing{Rolling, f.Rolling}
		}
		return Standing{Rolling, reason.RolloutInProgress}
	}
	if f.Source.State == plan.TemplateApplied {
		return Standing{Complete, reason.ReloadSkipped} // its template applied the change
	}
	return Standing{Complete, reason.Applied}
}
