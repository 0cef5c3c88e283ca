package change

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"

	"github.com/ripple-dev/ripple/api/v1alpha1"
	"github.com/ripple-dev/ripple/internal/canary"
	"github.com/ripple-dev/ripple/internal/decide"
	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/reason"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/rollout"
	"github.com/ripple-dev/ripple/internal/standing"
	"github.com/ripple-dev/ripple/internal/workload"
)

var (
	t0     = time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	config = refs.Ref{Kind: refs.ConfigMap, Name: "db"}
)

// managed is a consumer Ripple rolls, its source in state s, its rollout
// in st.
func managed(name string, s plan.State, st rollout.State) Consumer {
	return Consumer{
		Ref: workload.Ref{Kind: "Deployment", Namespace: "shop", Name: name}, Found: true,
		Facts: standing.Facts{
			Source:  plan.SourcePlan{Ref: config, State: s, Decision: decide.Decision{Reload: true, Reason: decide.AutoMatch}},
			Rollout: rollout.Status{State: st},
		},
		Since: t0.Add(-time.Hour),
	}
}

func TestState(t *testing.T) {
	notOptedIn := managed("legacy", plan.NotReloading, rollout.Complete)
	notOptedIn.Source.Decision = decide.Decision{Reason: decide.NotOptedIn}
	startedAfter := notOptedIn
	startedAfter.Since = t0.Add(time.Minute)
	excluded := notOptedIn
	excluded.Source.Decision.Reason = decide.Excluded
	notReferenced := notOptedIn
	notReferenced.Source.Decision.Reason = decide.NotReferenced
	notify := managed("notify", plan.Changed, rollout.Complete)
	notify.RollsNothing = true
	deferred := managed("night", plan.Changed, rollout.Complete)
	deferred.Verdict = reason.ReloadDeferred
	halted := managed("held", plan.Changed, rollout.Complete)
	halted.Verdict = reason.RolloutHalted
	notifyApplied := managed("notify", plan.Unchanged, rollout.Complete)
	notifyApplied.RollsNothing = true
	noContainer := managed("sidecar", plan.NotReloading, rollout.Complete)
	zero := func(c Consumer) Consumer { c.Zero = true; return c }
	for _, tc := range []struct {
		name string
		c    Consumer
		want v1alpha1.ConsumerState
		why  string
		ok   bool
	}{
		{"applied and complete", managed("a", plan.Unchanged, rollout.Complete), v1alpha1.ConsumerComplete, "Applied", true},
		{"applied, rolling", managed("a", plan.Unchanged, rollout.Progressing), v1alpha1.ConsumerRolling, "RolloutInProgress", true},
		{"applied, stalled", managed("a", plan.Unchanged, rollout.Stalled), v1alpha1.ConsumerStalled, "RolloutStalled", true},
		{"not applied yet: its old rollout's completion counts for nothing", managed("a", plan.Changed, rollout.Complete), v1alpha1.ConsumerPending, "ReloadDue", true},
		{"a baseline runs the data", managed("a", plan.Baseline, rollout.Complete), v1alpha1.ConsumerComplete, "Applied", true},
		{"the template applied it", managed("a", plan.TemplateApplied, rollout.Complete), v1alpha1.ConsumerComplete, "ReloadSkipped", true},
		{"rolled back", managed("a", plan.RolledBack, rollout.Complete), v1alpha1.ConsumerExcluded, "RolledBack", true},
		{"notify, running the data already: nothing to tell", notifyApplied, v1alpha1.ConsumerComplete, "Applied", true},
		{"no container to write the reload on", noContainer, v1alpha1.ConsumerStale, "NotReferenced", true},
		{"deferred", deferred, v1alpha1.ConsumerWaiting, "ReloadDeferred", true},
		{"halted", halted, v1alpha1.ConsumerHalted, "RolloutHalted", true},
		{"not opted in", notOptedIn, v1alpha1.ConsumerStale, "NotOptedIn", true},
		{"not opted in, started after the change", startedAfter, "", "", false},
		{"excluded", excluded, v1alpha1.ConsumerExcluded, "Excluded", true},
		{"not referenced: no consumer", notReferenced, "", "", false},
		{"notify", notify, v1alpha1.ConsumerNotifyOnly, "WouldReload", true},
		{"not in the plan", Consumer{}, "", "", false},
		{"scaled to zero, not applied yet: no pod runs the old data", zero(managed("a", plan.Changed, rollout.Complete)), v1alpha1.ConsumerComplete, "ScaledToZero", true},
		{"scaled to zero, deferred", zero(deferred), v1alpha1.ConsumerComplete, "ScaledToZero", true},
		{"scaled to zero, applied, rolling", zero(managed("a", plan.Unchanged, rollout.Progressing)), v1alpha1.ConsumerComplete, "ScaledToZero", true},
		{"scaled to zero, applied and complete", zero(managed("a", plan.Unchanged, rollout.Complete)), v1alpha1.ConsumerComplete, "Applied", true},
		{"scaled to zero, halted: the change is", zero(halted), v1alpha1.ConsumerHalted, "RolloutHalted", true},
		{"scaled to zero, excluded", zero(excluded), v1alpha1.ConsumerExcluded, "Excluded", true},
		{"scaled to zero, not opted in: no pod keeps the old data", zero(notOptedIn), "", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, why, ok := State(tc.c, t0)
			if s != tc.want || why != tc.why || ok != tc.ok {
				t.Errorf("State = %q, %q, %v; want %q, %q, %v", s, why, ok, tc.want, tc.why, tc.ok)
			}
		})
	}
}

// The API's consumer states are the standings' words, one for one.
func TestConsumerStatesAreTheStandings(t *testing.T) {
	api := []v1alpha1.ConsumerState{v1alpha1.ConsumerComplete, v1alpha1.ConsumerRolling, v1alpha1.ConsumerStalled, v1alpha1.ConsumerPending,
		v1alpha1.ConsumerWaiting, v1alpha1.ConsumerHalted, v1alpha1.ConsumerStale, v1alpha1.ConsumerNotifyOnly, v1alpha1.ConsumerExcluded}
	seen := map[v1alpha1.ConsumerState]bool{}
	for _, s := range standing.States() {
		c, ok := consumerStates[s]
		if !ok || string(c) != string(s) || seen[c] {
			t.Errorf("standing %s is the API's %q (mapped: %v, twice: %v); want the same word, once", s, c, ok, seen[c])
		}
		seen[c] = true
	}
	for _, c := range api {
		if !seen[c] {
			t.Errorf("the API's consumer state %s is no standing", c)
		}
	}
}

// A consumer scaled to zero counts propagated: a change whose other
// consumers run it is Propagated while that one waits for its reload
// window.
func TestStatusScaledToZeroPropagates(t *testing.T) {
	night := managed("night", plan.Changed, rollout.Complete)
	night.Verdict, night.Zero = reason.ReloadDeferred, true
	cs := []Consumer{managed("a", plan.Unchanged, rollout.Complete), night}
	st := Status(v1alpha1.ConfigRolloutStatus{SeenAt: metaTime(t0)}, cs, nil, false, t0.Add(time.Second))
	want := v1alpha1.Counts{Consumers: 2, Managed: 2, Complete: 2}
	if st.Counts != want || st.Phase != v1alpha1.PhasePropagated || !apimeta.IsStatusConditionTrue(st.Conditions, v1alpha1.Propagated) {
		t.Errorf("counts %+v, phase %s; want %+v, Propagated", st.Counts, st.Phase, want)
	}
	night.Zero = false // scaled up before its window opened: it runs old pods
	if st := Status(v1alpha1.ConfigRolloutStatus{SeenAt: metaTime(t0)}, []Consumer{cs[0], night}, nil, false, t0.Add(time.Second)); st.Phase != v1alpha1.PhaseWaiting {
		t.Errorf("running pods, deferred: phase %s, want Waiting", st.Phase)
	}
}

func TestStatusCountsAndConditions(t *testing.T) {
	legacy := managed("legacy", plan.NotReloading, rollout.Complete)
	legacy.Source.Decision = decide.Decision{Reason: decide.NotOptedIn}
	cs := []Consumer{managed("a", plan.Unchanged, rollout.Complete), managed("b", plan.Changed, rollout.Complete), legacy}
	st := Status(v1alpha1.ConfigRolloutStatus{SeenAt: metaTime(t0)}, cs, nil, false, t0.Add(time.Second))
	want := v1alpha1.Counts{Consumers: 3, Managed: 2, Complete: 1, Pending: 1, Stale: 1}
	if st.Counts != want {
		t.Errorf("counts %+v, want %+v", st.Counts, want)
	}
	if st.Phase != v1alpha1.PhaseRolling || apimeta.IsStatusConditionTrue(st.Conditions, v1alpha1.Propagated) || st.PropagatedAt != nil {
		t.Errorf("phase %s, Propagated %v: want Rolling, not propagated", st.Phase, apimeta.IsStatusConditionTrue(st.Conditions, v1alpha1.Propagated))
	}
	if st.Consumers[0].Name != "b" || st.Consumers[len(st.Consumers)-1].Name != "a" {
		t.Errorf("consumers %+v: want the pending one first, the complete one last", st.Consumers)
	}
	cs[1] = managed("b", plan.Unchanged, rollout.Complete)
	done := Status(st, cs, nil, false, t0.Add(2*time.Second))
	c := apimeta.FindStatusCondition(done.Conditions, v1alpha1.Propagated)
	if done.Phase != v1alpha1.PhasePropagated || c == nil || c.Status != "True" || done.PropagatedAt == nil || !done.PropagatedAt.Time.Equal(t0.Add(2*time.Second)) {
		t.Fatalf("after the last rollout: phase %s, condition %+v, at %v; want Propagated at t0+2s", done.Phase, c, done.PropagatedAt)
	}
	if c.Message != "every managed consumer (2) runs the change; 1 stale consumers keep the old data until they are restarted" {
		t.Errorf("message %q", c.Message)
	}
	// Propagated stays: a consumer's later rollout does not undo it.
	cs[0] = managed("a", plan.Unchanged, rollout.Progressing)
	if again := Status(done, cs, nil, false, t0.Add(3*time.Second)); again.Phase != v1alpha1.PhasePropagated || !again.PropagatedAt.Equal(done.PropagatedAt) {
		t.Errorf("a propagated change became %s (%v)", again.Phase, again.PropagatedAt)
	}
}

// A look that finds none of the managed consumers the last look counted
// leaves the status as it was: it never propagates the change (a
// pipeline would revoke what pods still read). The next look that counts
// them goes on from there.
func TestStatusIgnoresALookWithoutItsConsumers(t *testing.T) {
	cs := []Consumer{managed("a", plan.Unchanged, rollout.Progressing), managed("b", plan.Unchanged, rollout.Progressing)}
	rolling := Status(v1alpha1.ConfigRolloutStatus{SeenAt: metaTime(t0)}, cs, nil, false, t0.Add(time.Second))
	if rolling.Phase != v1alpha1.PhaseRolling || rolling.Counts.Managed != 2 {
		t.Fatalf("phase %s, counts %+v; want Rolling with 2 managed", rolling.Phase, rolling.Counts)
	}
	for _, none := range [][]Consumer{nil, {}} {
		if st := Status(rolling, none, nil, false, t0.Add(2*time.Second)); st.Phase != v1alpha1.PhaseRolling || st.Counts != rolling.Counts || st.PropagatedAt != nil {
			t.Errorf("a look without consumers: phase %s, counts %+v; want the status unchanged (Rolling, %+v)", st.Phase, st.Counts, rolling.Counts)
		}
	}
	done := []Consumer{managed("a", plan.Unchanged, rollout.Complete), managed("b", plan.Unchanged, rollout.Complete)}
	if st := Status(rolling, done, nil, false, t0.Add(3*time.Second)); st.Phase != v1alpha1.PhasePropagated {
		t.Errorf("the next look counting them complete: phase %s, want Propagated", st.Phase)
	}
	if st := Status(rolling, nil, nil, true, t0.Add(3*time.Second)); st.Phase != v1alpha1.PhaseSuperseded {
		t.Errorf("superseded, with no consumer found: phase %s, want Superseded", st.Phase)
	}
}

func TestStatusListIsBounded(t *testing.T) {
	var cs []Consumer
	for i := range 3 * MaxListed {
		cs = append(cs, managed(string(rune('a'+i%26))+string(rune('a'+i/26)), plan.Changed, rollout.Complete))
	}
	st := Status(v1alpha1.ConfigRolloutStatus{}, cs, nil, false, t0)
	if len(st.Consumers) != MaxListed || int(st.Counts.Consumers) != len(cs) {
		t.Errorf("%d listed, %d counted; want %d listed, %d counted", len(st.Consumers), st.Counts.Consumers, MaxListed, len(cs))
	}
}

func TestHaltedCanary(t *testing.T) {
	held := managed("b", plan.Changed, rollout.Complete)
	held.Verdict = reason.WaitingForCanary
	c := canary.State{Config: config, Phase: canary.Halted, Why: `Deployment "a" stalled`,
		Members: []canary.Member{{Ref: workload.Ref{Kind: "Deployment", Namespace: "shop", Name: "a"}}}}
	st := Status(v1alpha1.ConfigRolloutStatus{}, []Consumer{managed("a", plan.Unchanged, rollout.Stalled), held}, &c, false, t0)
	if st.Phase != v1alpha1.PhaseHalted || !apimeta.IsStatusConditionTrue(st.Conditions, v1alpha1.Halted) ||
		apimeta.IsStatusConditionTrue(st.Conditions, v1alpha1.Propagated) || st.Counts.Halted != 1 {
		t.Fatalf("phase %s, counts %+v, conditions %+v: want Halted, one held, not Propagated", st.Phase, st.Counts, st.Conditions)
	}
	if cp := apimeta.FindStatusCondition(st.Conditions, v1alpha1.CanaryPassed); cp == nil || cp.Status != "False" {
		t.Errorf("CanaryPassed %+v, want False", cp)
	}
	if st.Canary == nil || st.Canary.Workloads[0].Name != "a" {
		t.Errorf("canary %+v", st.Canary)
	}
	// A why as long as a tenant's series can make it is bounded in the
	// condition as in status.canary.why: past the object's size, the halt
	// would never be written.
	c.Why = strings.Repeat("x", 64<<10)
	st = Status(v1alpha1.ConfigRolloutStatus{}, []Consumer{managed("a", plan.Unchanged, rollout.Stalled), held}, &c, false, t0)
	if h := apimeta.FindStatusCondition(st.Conditions, v1alpha1.Halted); h == nil || len(h.Message) > maxWhy+64 || len(st.Canary.Why) > maxWhy {
		t.Errorf("a 64 KiB why: Halted's message %d bytes, status.canary.why %d; want at most about %d", len(h.Message), len(st.Canary.Why), maxWhy)
	}
}

func TestSupersede(t *testing.T) {
	st := Status(v1alpha1.ConfigRolloutStatus{}, []Consumer{managed("a", plan.Changed, rollout.Complete)}, nil, false, t0)
	sup := Supersede(st, "db-next", t0)
	if sup.Phase != v1alpha1.PhaseSuperseded || apimeta.IsStatusConditionTrue(sup.Conditions, v1alpha1.Propagated) || !Done(sup) {
		t.Errorf("superseded: phase %s, conditions %+v", sup.Phase, sup.Conditions)
	}
	// Later looks keep it superseded, even once every consumer completed
	// (with the newer data).
	if later := Status(sup, []Consumer{managed("a", plan.Unchanged, rollout.Complete)}, nil, false, t0); later.Phase != v1alpha1.PhaseSuperseded {
		t.Errorf("a superseded change became %s", later.Phase)
	}
}

// A change is Propagated only once every managed consumer applied it and
// completed its rollout, whatever order they do so in, with the keeper
// restarting (its status read back from the object alone) and canaries
// halting and resuming between looks.
func TestPropagatedNeverEarly(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2)) //nolint:gosec // a seeded sequence of test cases, to be repeatable.
	for run := range 2000 {
		n := 1 + rng.IntN(12)
		cs := make([]Consumer, n)
		for i := range cs {
			cs[i] = managed(string(rune('a'+i)), plan.Changed, rollout.Complete)
		}
		st := v1alpha1.ConfigRolloutStatus{SeenAt: metaTime(t0)}
		var halt *canary.State
		now := t0
		for step := 0; step < 60 && st.PropagatedAt == nil; step++ {
			now = now.Add(time.Second)
			i := rng.IntN(n)
			switch rng.IntN(6) {
			case 0, 1: // the workload's reconcile wrote the change: rolling
				cs[i].Source.State, cs[i].Rollout.State = plan.Unchanged, rollout.Progressing
			case 2: // a rollout moves on, or stalls
				if cs[i].Source.State == plan.Unchanged {
					cs[i].Rollout.State = []rollout.State{rollout.Complete, rollout.Progressing, rollout.Stalled}[rng.IntN(3)]
				}
			case 3: // a canary halts or resumes the change
				if halt == nil || halt.Phase == canary.Passed {
					halt = &canary.State{Config: config, Phase: canary.Halted}
				} else {
					halt.Phase = canary.Passed
				}
				cs[i].Verdict = reason.WaitingForCanary
			case 4: // the keeper restarts: only the object's status is left
				st = v1alpha1.ConfigRolloutStatus{SeenAt: st.SeenAt, Phase: st.Phase, PropagatedAt: st.PropagatedAt, Conditions: st.Conditions}
			}
			st = Status(st, cs, halt, false, now)
			all := halt == nil || halt.Phase == canary.Passed
			for _, c := range cs {
				all = all && c.Source.State == plan.Unchanged && c.Rollout.State == rollout.Complete
			}
			if st.PropagatedAt != nil && !all {
				t.Fatalf("run %d, step %d: Propagated with consumers %+v, canary %+v", run, step, cs, halt)
			}
			if all && st.PropagatedAt == nil {
				t.Fatalf("run %d, step %d: every consumer complete, not Propagated (phase %s)", run, step, st.Phase)
			}
			if got := apimeta.IsStatusConditionTrue(st.Conditions, v1alpha1.Propagated); got != (st.PropagatedAt != nil) {
				t.Fatalf("run %d: condition %v, PropagatedAt %v", run, got, st.PropagatedAt)
			}
		}
	}
}

// A change whose consumers are all its canaries is not Propagated once
// they rolled: its bake may still halt it, and a wait on it must say so.
func TestAllCanariesPropagateAfterTheBake(t *testing.T) {
	a := managed("a", plan.Unchanged, rollout.Complete)
	c := canary.State{Config: config, Phase: canary.Baking,
		Members: []canary.Member{{Ref: a.Ref, Applied: t0}}}
	st := Status(v1alpha1.ConfigRolloutStatus{SeenAt: metaTime(t0)}, []Consumer{a}, &c, false, t0.Add(time.Second))
	prop := apimeta.FindStatusCondition(st.Conditions, v1alpha1.Propagated)
	if st.Phase == v1alpha1.PhasePropagated || st.PropagatedAt != nil || prop == nil || prop.Status != "False" {
		t.Fatalf("baking: phase %s, Propagated %+v; want not propagated", st.Phase, prop)
	}
	if want := "every managed consumer (1) runs the change; its canary has not passed yet"; prop.Message != want {
		t.Errorf("message %q, want %q", prop.Message, want)
	}
	c.Phase, c.Why = canary.Halted, `Deployment "a": a pod restarted during the bake`
	if st := Status(st, []Consumer{a}, &c, false, t0.Add(2*time.Second)); st.Phase != v1alpha1.PhaseHalted || st.PropagatedAt != nil {
		t.Errorf("halted in its bake: phase %s, propagated at %v; want Halted", st.Phase, st.PropagatedAt)
	}
	c.Phase = canary.Passed
	if st := Status(st, []Consumer{a}, &c, false, t0.Add(3*time.Second)); st.Phase != v1alpha1.PhasePropagated {
		t.Errorf("passed: phase %s, want Propagated", st.Phase)
	}
}
