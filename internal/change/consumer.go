package change

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ripple-dev/ripple/api/v1alpha1"
	"github.com/ripple-dev/ripple/internal/canary"
	"github.com/ripple-dev/ripple/internal/reason"
	"github.com/ripple-dev/ripple/internal/standing"
	"github.com/ripple-dev/ripple/internal/workload"
)

// Consumer is what the keeper knows of one workload that may read a
// changed config: its plan's view of the config and its rollout
// (standing.Facts: the source, the verdict, the rollout).
type Consumer struct {
	Ref workload.Ref
	standing.Facts
	// Found is false when the plan does not name the config (the
	// workload reads it no more).
	Found bool
	// Ask is set when the workload's plan asks for the canary of the
	// config's change: it is canaried and has none yet.
	Ask *canary.Ask
	// Candidate is set when the plan would roll the change now (a canary
	// may be chosen among them); First when the workload asks to be one.
	Candidate, First bool
	// Idle says why the workload runs no pods a canary's health could be
	// judged on (rollout.Idle); empty when it runs some.
	Idle string
	// Since is when the workload's pods last started together without
	// Ripple: its creation, or a `kubectl rollout restart`. A consumer
	// Ripple does not roll whose pods started after the change runs it.
	Since time.Time
}

// consumerStates are the API's words of the standings: the same words,
// one for one (TestConsumerStatesAreTheStandings).
var consumerStates = map[standing.State]v1alpha1.ConsumerState{
	standing.Complete: v1alpha1.ConsumerComplete, standing.Rolling: v1alpha1.ConsumerRolling,
	standing.Stalled: v1alpha1.ConsumerStalled, standing.Pending: v1alpha1.ConsumerPending,
	standing.Waiting: v1alpha1.ConsumerWaiting, standing.Halted: v1alpha1.ConsumerHalted,
	standing.Stale: v1alpha1.ConsumerStale, standing.NotifyOnly: v1alpha1.ConsumerNotifyOnly,
	standing.Excluded: v1alpha1.ConsumerExcluded,
}

// State is where consumer c stands in the change of its config seen at
// seen (standing.Of), with its reason; false when it is no consumer: it
// does not read the config, or Ripple does not roll it and its pods
// started after the change, so they run it, or it runs no pod at all.
// A consumer scaled to zero stands as standing.Of says (Complete,
// ScaledToZero, where it would wait or roll).
func State(c Consumer, seen time.Time) (v1alpha1.ConsumerState, string, bool) {
	if !c.Found {
		return "", "", false
	}
	s, ok := standing.Of(c.Facts)
	if !ok || (s.State == standing.Stale || s.State == standing.NotifyOnly) && (c.Zero || !c.Since.Before(seen)) {
		return "", "", false
	}
	return consumerStates[s.State], string(s.Reason), true
}

// MaxListed is how many consumers a ConfigRollout lists; its counts have
// them all.
const MaxListed = 50

// Status is the status of the change of cr's config whose consumers are
// cs, read at now, after the status it had (old): a change Propagated
// once stays so, and one Superseded (superseded: a newer change of the
// config exists) stays so unless it propagated first.
func Status(old v1alpha1.ConfigRolloutStatus, cs []Consumer, chosen *canary.State, superseded bool, now time.Time) v1alpha1.ConfigRolloutStatus {
	st := old
	st.Counts, st.Consumers = v1alpha1.Counts{}, nil
	seen := old.SeenAt.Time
	for _, c := range cs {
		s, why, ok := State(c, seen)
		if !ok {
			continue
		}
		if s == v1alpha1.ConsumerWaiting && why == string(reason.WaitingForCanary) && chosen != nil && chosen.Phase == canary.Halted {
			s, why = v1alpha1.ConsumerHalted, string(reason.RolloutHalted)
		}
		count(&st.Counts, s)
		st.Consumers = append(st.Consumers, v1alpha1.Consumer{Kind: c.Ref.Kind, Name: c.Ref.Name, State: s, Reason: why})
	}
	slices.SortFunc(st.Consumers, func(a, b v1alpha1.Consumer) int {
		return cmp.Or(cmp.Compare(rank(a.State), rank(b.State)), cmp.Compare(a.Name, b.Name), cmp.Compare(a.Kind, b.Kind))
	})
	if len(st.Consumers) > MaxListed {
		st.Consumers = st.Consumers[:MaxListed]
	}
	if st.Counts.Managed == 0 && old.Counts.Managed > 0 && !Done(old) && !superseded {
		// A look that finds none of the managed consumers an earlier look
		// counted is not trusted: propagating on it would tell a pipeline
		// to revoke what pods may still read. The status stays as it was
		// until a look counts them again; a wait that runs out is the
		// safe failure.
		return old
	}
	st.Canary = canaryStatus(chosen)
	st.Phase = phase(old, st.Counts, chosen, superseded)
	if st.Phase == v1alpha1.PhasePropagated && st.PropagatedAt == nil {
		st.PropagatedAt = &metav1.Time{Time: now}
	}
	st.Conditions = slices.Clone(old.Conditions)
	setConditions(&st, chosen, now)
	return st
}

// phase is the phase of a change whose status was old, with consumers
// counted in c: Propagated once every managed consumer completed and its
// canary, if it has one, passed (and for good), else Superseded for good
// once the config changed again. A change whose consumers are all canaries
// (or whose others run no pods) is judged by its bake like any other: a
// wait on it must not end before a gate could halt it.
func phase(old v1alpha1.ConfigRolloutStatus, c v1alpha1.Counts, chosen *canary.State, superseded bool) v1alpha1.Phase {
	superseded = superseded || old.Phase == v1alpha1.PhaseSuperseded
	judged := chosen == nil || chosen.Phase == canary.Passed
	switch {
	case old.PropagatedAt != nil, !superseded && c.Complete == c.Managed && judged:
		return v1alpha1.PhasePropagated
	case superseded:
		return v1alpha1.PhaseSuperseded
	case c.Halted > 0, chosen != nil && chosen.Phase == canary.Halted:
		return v1alpha1.PhaseHalted
	case c.Waiting+c.Complete == c.Managed:
		return v1alpha1.PhaseWaiting
	}
	return v1alpha1.PhaseRolling
}

// Supersede is st once the config changed again to the change named by:
// a change in flight is Superseded, its consumers as they last stood.
func Supersede(st v1alpha1.ConfigRolloutStatus, by string, now time.Time) v1alpha1.ConfigRolloutStatus {
	if Done(st) {
		return st
	}
	st.Phase, st.SupersededBy = v1alpha1.PhaseSuperseded, by
	st.Conditions = slices.Clone(st.Conditions)
	setConditions(&st, nil, now)
	return st
}

// Overtaken is st, a superseded change, once its config's newest change,
// named newest, propagated: Propagated, as the data it replaced runs on no
// managed consumer, so that a wait on it returns with the newest change;
// false when st is no superseded change or says so already.
func Overtaken(st v1alpha1.ConfigRolloutStatus, newest string, now time.Time) (v1alpha1.ConfigRolloutStatus, bool) {
	if st.Phase != v1alpha1.PhaseSuperseded || apimeta.IsStatusConditionTrue(st.Conditions, v1alpha1.Propagated) {
		return st, false
	}
	st.Conditions = slices.Clone(st.Conditions)
	apimeta.SetStatusCondition(&st.Conditions, metav1.Condition{
		Type: v1alpha1.Propagated, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonSuperseded, LastTransitionTime: metav1.NewTime(now),
		Message: "superseded by " + newest + ", which every managed consumer runs",
	})
	return st, true
}

// Done reports whether a change stands where nothing will move it on.
func Done(st v1alpha1.ConfigRolloutStatus) bool {
	return st.Phase == v1alpha1.PhasePropagated || st.Phase == v1alpha1.PhaseSuperseded
}

func count(c *v1alpha1.Counts, s v1alpha1.ConsumerState) {
	c.Consumers++
	switch s {
	case v1alpha1.ConsumerStale:
		c.Stale++
		return
	case v1alpha1.ConsumerNotifyOnly:
		c.NotifyOnly++
		c.Stale++
		return
	case v1alpha1.ConsumerExcluded:
		c.Excluded++
		return
	}
	c.Managed++
	switch s {
	case v1alpha1.ConsumerComplete:
		c.Complete++
	case v1alpha1.ConsumerRolling:
		c.Rolling++
	case v1alpha1.ConsumerStalled:
		c.Stalled++
	case v1alpha1.ConsumerWaiting:
		c.Waiting++
	case v1alpha1.ConsumerHalted:
		c.Halted++
	default:
		c.Pending++
	}
}

// rank orders the listed consumers: those a person looks at first
// (standing.States).
func rank(s v1alpha1.ConsumerState) int {
	return slices.IndexFunc(standing.States(), func(st standing.State) bool { return consumerStates[st] == s })
}

// setConditions sets st's conditions from its phase and canary at now.
// Their times move only when their status does (apimeta.SetStatusCondition).
func setConditions(st *v1alpha1.ConfigRolloutStatus, chosen *canary.State, now time.Time) {
	at := metav1.NewTime(now)
	set := func(c metav1.Condition) {
		c.LastTransitionTime = at
		apimeta.SetStatusCondition(&st.Conditions, c)
	}
	c := st.Counts
	prop := metav1.Condition{Type: v1alpha1.Propagated, Status: metav1.ConditionFalse, Reason: string(st.Phase),
		Message: fmt.Sprintf("%d of %d managed consumers run the change", c.Complete, c.Managed)}
	switch st.Phase {
	case v1alpha1.PhasePropagated:
		prop.Status, prop.Reason = metav1.ConditionTrue, "AllConsumersUpdated"
		prop.Message = fmt.Sprintf("every managed consumer (%d) runs the change", c.Managed)
	case v1alpha1.PhaseSuperseded:
		prop.Message = "the config changed again before this change propagated; see the newer ConfigRollout"
	default:
		if c.Complete == c.Managed && chosen != nil && chosen.Phase != canary.Passed {
			prop.Message = fmt.Sprintf("every managed consumer (%d) runs the change; its canary has not passed yet", c.Managed)
		}
	}
	if c.Stale > 0 {
		prop.Message += fmt.Sprintf("; %d stale consumers keep the old data until they are restarted", c.Stale)
	}
	set(prop)
	halted := metav1.Condition{Type: v1alpha1.Halted, Status: metav1.ConditionFalse, Reason: "NotHalted", Message: "no canary holds the change"}
	if st.Phase == v1alpha1.PhaseHalted {
		halted.Status, halted.Reason, halted.Message = metav1.ConditionTrue, string(reason.RolloutHalted), "the change is halted"
		if chosen != nil && chosen.Why != "" {
			halted.Message = "the change failed on its canary: " + truncate(chosen.Why, maxWhy)
		}
	}
	set(halted)
	if chosen == nil {
		apimeta.RemoveStatusCondition(&st.Conditions, v1alpha1.CanaryPassed)
		return
	}
	passed := metav1.Condition{Type: v1alpha1.CanaryPassed, Status: metav1.ConditionFalse, Reason: string(chosen.Phase), Message: canary.Stage(*chosen)}
	if chosen.Phase == canary.Passed {
		passed.Status, passed.Reason = metav1.ConditionTrue, string(reason.CanaryPassed)
	}
	set(passed)
}
