package standing

import (
	"slices"

	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/reason"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/rollout"
)

// Whole is what a workload's standing over all its configs is read from,
// with no change to ask about (`ripple explain` of a workload): its plan,
// and what explain knows that the plan does not.
type Whole struct {
	Plan   plan.Plan
	DryRun bool
	// Rollout and Rolling are as in Facts.
	Rollout rollout.Status
	Rolling reason.Reason
	// Held is what holds the workload that the plan cannot see: the
	// running Ripple's storm hold (ReloadHeld) or its place in line for a
	// rollout slot (RolloutQueued); empty when none does.
	Held reason.Reason
	// NotSelected are its configs outside --resource-label-selector,
	// which Ripple does not see.
	NotSelected []refs.Ref
	// Unmanaged says why Ripple does not reload the workload at all
	// (WebhookMode, KindIgnored, NamespaceOutOfScope, NoTemplate); empty
	// when it does.
	Unmanaged reason.Reason
	// Zero is as in Facts.
	Zero bool
}

// first is the order in which the standings of a workload's configs
// headline it: a change held or due first, then its rollout, then what it
// does not reload on.
var first = []State{Halted, Waiting, Pending, NotifyOnly, Stalled, Rolling, Complete, Excluded, Stale}

// Workload is where a workload stands over all its configs: the standing
// (Of) of the config that headlines it. A workload that reads no config it
// reloads on has nothing to roll: Complete.
func Workload(w Whole) Standing {
	if w.Unmanaged != "" {
		return Standing{Stale, w.Unmanaged}
	}
	best, found := Standing{Complete, reason.NoSources}, false
	for _, sp := range w.Plan.Sources {
		f, _ := FactsOf(w.Plan, sp.Ref, w.DryRun)
		f.Rollout, f.Rolling, f.Zero = w.Rollout, w.Rolling, w.Zero
		if f.Verdict == "" {
			f.Verdict = w.Held
		}
		s, ok := Of(f)
		if slices.Contains(w.NotSelected, sp.Ref) {
			s, ok = Standing{Stale, reason.NotSelected}, true
		}
		if ok && (!found || slices.Index(first, s.State) < slices.Index(first, best.State)) {
			best, found = s, true
		}
	}
	if !found && len(w.Plan.Sources) > 0 {
		return Standing{Complete, reason.NotReferenced}
	}
	return best
}
