package standing

import (
	"testing"

	"github.com/ripple-dev/ripple/internal/decide"
	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/reason"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/rollout"
)

var (
	app = refs.Ref{Kind: refs.ConfigMap, Name: "app"}
	db  = refs.Ref{Kind: refs.Secret, Name: "db"}
)

func source(ref refs.Ref, s plan.State, d decide.Reason) plan.SourcePlan {
	reload := d == decide.AutoMatch
	return plan.SourcePlan{Ref: ref, State: s, Decision: decide.Decision{Reload: reload, Reason: d}}
}

// Whatever its facts, a standing's reason is one the registry declares:
// no reporter gives a reason of its own.
func TestEveryReasonIsDeclared(t *testing.T) {
	states := []plan.State{plan.NotReloading, plan.Baseline, plan.Unchanged, plan.Changed, plan.Created, plan.Deleted,
		plan.Missing, plan.Untracked, plan.RolledBack, plan.TemplateApplied}
	decisions := []decide.Reason{decide.AutoMatch, decide.NotOptedIn, decide.Excluded, decide.Ignored, decide.NotReferenced}
	verdicts := []reason.Reason{""}
	for _, i := range reason.All() {
		verdicts = append(verdicts, i.Reason)
	}
	n := 0
	for _, s := range states {
		for _, d := range decisions {
			for _, v := range verdicts {
				for _, r := range []rollout.State{rollout.Progressing, rollout.Complete, rollout.Stalled} {
					for _, nothing := range []bool{false, true} {
						f := Facts{Source: source(app, s, d), Verdict: v, RollsNothing: nothing, Rollout: rollout.Status{State: r}}
						st, ok := Of(f)
						if !ok {
							continue
						}
						n++
						if _, declared := reason.Lookup(st.Reason); !declared {
							t.Fatalf("Of(%+v) = %+v: the reason is not in the registry", f, st)
						}
					}
				}
			}
		}
	}
	if n == 0 {
		t.Fatal("no standing at all")
	}
}

func TestOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    Facts
		want Standing
		ok   bool
	}{
		{"applied, complete", Facts{Source: source(app, plan.Unchanged, decide.AutoMatch), Rollout: rollout.Status{State: rollout.Complete}},
			Standing{Complete, reason.Applied}, true},
		{"a restart method restarting its pods", Facts{Source: source(app, plan.Unchanged, decide.AutoMatch), Rolling: reason.RestartInProgress},
			Standing{Rolling, reason.RestartInProgress}, true},
		{"the template applied it", Facts{Source: source(app, plan.TemplateApplied, decide.AutoMatch), Rollout: rollout.Status{State: rollout.Complete}},
			Standing{Complete, reason.ReloadSkipped}, true},
		{"due, nothing holds it", Facts{Source: source(app, plan.Changed, decide.AutoMatch)}, Standing{Pending, reason.ReloadDue}, true},
		{"due, a rollout slot", Facts{Source: source(app, plan.Changed, decide.AutoMatch), Verdict: reason.RolloutQueued}, Standing{Pending, reason.RolloutQueued}, true},
		{"due, held by its window", Facts{Source: source(app, plan.Created, decide.AutoMatch), Verdict: reason.ReloadDeferred}, Standing{Waiting, reason.ReloadDeferred}, true},
		{"due, the notify policy", Facts{Source: source(app, plan.Deleted, decide.AutoMatch), Verdict: reason.ReloadPending, RollsNothing: true},
			Standing{NotifyOnly, reason.WouldReload}, true},
		{"not referenced: no consumer", Facts{Source: source(app, plan.NotReloading, decide.NotReferenced)}, Standing{}, false},
		{"no container to write on", Facts{Source: source(app, plan.NotReloading, decide.AutoMatch)}, Standing{Stale, reason.NotReferenced}, true},
		// Scaled to zero: no pod runs the old data, whatever holds the write.
		{"scaled to zero, held by its window", Facts{Source: source(app, plan.Created, decide.AutoMatch), Verdict: reason.ReloadDeferred, Zero: true},
			Standing{Complete, reason.ScaledToZero}, true},
		{"scaled to zero, due", Facts{Source: source(app, plan.Changed, decide.AutoMatch), Zero: true}, Standing{Complete, reason.ScaledToZero}, true},
		{"scaled to zero, rolling", Facts{Source: source(app, plan.Unchanged, decide.AutoMatch), Rolling: reason.RestartInProgress, Zero: true},
			Standing{Complete, reason.ScaledToZero}, true},
		{"scaled to zero, halted: the change is", Facts{Source: source(app, plan.Changed, decide.AutoMatch), Verdict: reason.RolloutHalted, Zero: true},
			Standing{Halted, reason.RolloutHalted}, true},
		{"scaled to zero, the notify policy", Facts{Source: source(app, plan.Deleted, decide.AutoMatch), Verdict: reason.ReloadPending, RollsNothing: true, Zero: true},
			Standing{NotifyOnly, reason.WouldReload}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, ok := Of(tc.f); got != tc.want || ok != tc.ok {
				t.Errorf("Of = %+v, %v; want %+v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

// A workload over its configs stands as the config that says most: a
// change held or due before a rollout, a rollout before what it does not
// reload on.
func TestWorkload(t *testing.T) {
	done := rollout.Status{State: rollout.Complete}
	for _, tc := range []struct {
		name string
		w    Whole
		want Standing
	}{
		{"no config", Whole{Rollout: done}, Standing{Complete, reason.NoSources}},
		{"named only", Whole{Plan: plan.Plan{Sources: []plan.SourcePlan{source(app, plan.NotReloading, decide.NotReferenced)}}, Rollout: done},
			Standing{Complete, reason.NotReferenced}},
		{"one applied, one not opted in", Whole{Plan: plan.Plan{Sources: []plan.SourcePlan{
			source(app, plan.NotReloading, decide.NotOptedIn), source(db, plan.Unchanged, decide.AutoMatch)}}, Rollout: done},
			Standing{Complete, reason.Applied}},
		{"one due, one applied", Whole{Plan: plan.Plan{Sources: []plan.SourcePlan{
			source(app, plan.Unchanged, decide.AutoMatch), source(db, plan.Changed, decide.AutoMatch)}}, Rollout: done},
			Standing{Pending, reason.ReloadDue}},
		{"held by the storm breaker, as Ripple's Events tell", Whole{Plan: plan.Plan{Sources: []plan.SourcePlan{source(app, plan.Changed, decide.AutoMatch)}},
			Rollout: done, Held: reason.ReloadHeld}, Standing{Waiting, reason.ReloadHeld}},
		{"the plan's verdict before what explain reads", Whole{Plan: plan.Plan{Sources: []plan.SourcePlan{source(app, plan.Changed, decide.AutoMatch)},
			Notices: []plan.Notice{{Reason: reason.ReloadDeferred}}}, Rollout: done, Held: reason.ReloadHeld}, Standing{Waiting, reason.ReloadDeferred}},
		{"excluded before stale", Whole{Plan: plan.Plan{Sources: []plan.SourcePlan{
			source(app, plan.NotReloading, decide.NotOptedIn), source(db, plan.NotReloading, decide.Excluded)}}, Rollout: done},
			Standing{Excluded, reason.Excluded}},
		{"outside the label selector", Whole{Plan: plan.Plan{Sources: []plan.SourcePlan{source(app, plan.Untracked, decide.AutoMatch)}},
			Rollout: done, NotSelected: []refs.Ref{app}}, Standing{Stale, reason.NotSelected}},
		{"not managed at all", Whole{Plan: plan.Plan{Sources: []plan.SourcePlan{source(app, plan.Changed, decide.AutoMatch)}},
			Rollout: done, Unmanaged: reason.KindIgnored}, Standing{Stale, reason.KindIgnored}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Workload(tc.w); got != tc.want {
				t.Errorf("Workload = %+v; want %+v", got, tc.want)
			}
		})
	}
}
