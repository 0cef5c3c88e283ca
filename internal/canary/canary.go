// Package canary is the state machine of a canaried change, pure: a
// config marked with the canary annotation (or its Namespace, or
// --canary) changes; of the workloads the change rolls, the canaries roll
// first (State.Members, chosen by Start), and the others wait until every
// canary's rollout completed and stayed healthy for the bake time. A
// canary that stalls or turns unhealthy halts the change: nothing else of
// it rolls until the config changes again or an operator resumes it.
//
//	Rolling ──every canary complete──> Baking ──healthy for the bake──> Passed
//	   │                                  │
//	   └──stalled, timed out──> Halted <──┘ unhealthy
//	                              └──resumed──> Passed
//
// The change controller keeps a State per config (its ConfigRollout, and
// the records of an earlier Ripple, survive restarts) and drives it with
// Applied, Check, Judged and Resume; the planner's canary stage reads it.
// It is a package of its own, below the planner, so that the loops that
// drive it need not go through plan.
package canary

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/rollout"
	"github.com/ripple-dev/ripple/internal/workload"
)

// Phase is where a canaried change stands.
type Phase string

// The phases of a canaried change.
const (
	Rolling = Phase("Rolling")
	Baking  = Phase("Baking")
	Passed  = Phase("Passed")
	Halted  = Phase("Halted")
)

// Member is one canary of a change, and when Ripple saw it apply
// the change (zero: not yet).
type Member struct {
	Ref     workload.Ref `json:"ref"`
	Applied time.Time    `json:"applied,omitzero"`
}

// State is a canaried change of one config: which data (Digest), its
// canaries, its phase since when, and why it halted.
type State struct {
	Namespace string        `json:"namespace"`
	Config    refs.Ref      `json:"config"`
	Digest    string        `json:"digest"`
	Members   []Member      `json:"canaries"`
	Bake      time.Duration `json:"bake"`
	Phase     Phase         `json:"phase"`
	Since     time.Time     `json:"since"`
	Why       string        `json:"why,omitempty"`
	// Gate is the gate that halted it (GateStatus when empty).
	Gate Gate `json:"gate,omitempty"`
	// Resumed is set on a halted change an operator continued.
	Resumed bool `json:"resumed,omitempty"`
}

// Gate is one of the judges of a canaried change's canaries: their
// rollout status (Check, always) and their pods during the bake
// (Verdict). Another gate is one more entry.
type Gate string

// The gates.
const (
	GateStatus = Gate("status")
	GatePods   = Gate("pods")
	GateQuery  = Gate("query")
)

// Verdict is what a gate other than the status says of a baking change's
// canaries now: Fail says why they failed it (the change halts), Hold why
// it cannot tell yet (the bake may not pass).
type Verdict struct {
	Gate       Gate
	Fail, Hold string
}

// Judged is c, baking, after the verdicts of its gates at now: the first
// that fails halts it, naming the gate; a hold keeps it from passing at
// the bake's end (held reports one), and one that lasts longer than
// timeout past the bake's end halts it too. It does not read the status:
// Check does.
func (c State) Judged(verdicts []Verdict, timeout time.Duration, now time.Time) (next State, held bool) {
	if c.Phase != Baking {
		return c, false
	}
	for _, v := range verdicts {
		if v.Fail != "" {
			return c.gateHalt(now, v.Gate, "%s", v.Fail), false
		}
	}
	for _, v := range verdicts {
		if v.Hold == "" {
			continue
		}
		if timeout > 0 && now.Sub(c.BakeUntil()) > timeout {
			return c.gateHalt(now, v.Gate, "could not tell for %s past the bake (--rollout-timeout): %s", timeout, v.Hold), false
		}
		return c, true
	}
	return c, false
}

func (c State) gateHalt(now time.Time, g Gate, format string, args ...any) State {
	c = c.halt(now, "the %s gate: "+format, append([]any{g}, args...)...)
	c.Gate = g
	return c
}

// Candidate is a workload the change would roll, whether it is
// marked to go first (the canary-first annotation), and whether it runs no
// pods that its health could be judged on (Idle: scaled to zero, a
// CronJob).
type Candidate struct {
	Ref         workload.Ref
	First, Idle bool
}

// Ask is a canaried change the plan needs the state of: the
// controller starts or reads it (Start) and plans again.
type Ask struct {
	Config refs.Ref
	Digest string
	Spec   Spec
}

// Start is a canaried change of config in ns to the data digest,
// seen at now, among the workloads it rolls: the canaries are the first
// spec.Of(n) of them, those marked canary-first first, then by name and
// kind; while one of them runs pods, those that run none (Idle: scaled to
// zero, a CronJob) are never canaries of some, as they would pass at once
// (the canaries are then fewer when too few run pods); a canary of all
// (100%, or a count of as many) takes every workload; when none runs
// pods, they are chosen among all. With no workload to roll, it has passed.
func Start(ns string, ask Ask, cands []Candidate, now time.Time) State {
	c := State{Namespace: ns, Config: ask.Config, Digest: ask.Digest, Bake: ask.Spec.Bake, Phase: Rolling, Since: now}
	if len(cands) == 0 {
		c.Phase = Passed
		return c
	}
	cands = slices.Clone(cands)
	first := func(yes bool) int {
		if yes {
			return 0
		}
		return 1
	}
	slices.SortFunc(cands, func(a, b Candidate) int {
		return cmp.Or(cmp.Compare(first(!a.Idle), first(!b.Idle)), cmp.Compare(first(a.First), first(b.First)),
			cmp.Compare(a.Ref.Name, b.Ref.Name), cmp.Compare(a.Ref.Kind, b.Ref.Kind))
	})
	n := ask.Spec.Of(len(cands))
	// While one runs pods, no idle workload is a canary of some: it would
	// pass at once and let the rest roll unjudged. A canary of all leaves
	// no rest to protect, so every workload is one.
	if running := slices.IndexFunc(cands, func(w Candidate) bool { return w.Idle }); running > 0 && n < len(cands) {
		n = min(n, running)
	}
	for _, w := range cands[:n] {
		c.Members = append(c.Members, Member{Ref: w.Ref})
	}
	return c
}

// IsCanary reports whether k is one of c's canaries.
func (c State) IsCanary(k workload.Ref) bool {
	return slices.ContainsFunc(c.Members, func(m Member) bool { return m.Ref == k })
}

// Active reports whether c still holds workloads back or may: it rolls,
// bakes or halted.
func (c State) Active() bool { return c.Phase != Passed && c.Phase != "" }

// BakeUntil is when the bake of a baking change ends.
func (c State) BakeUntil() time.Time { return c.Since.Add(c.Bake) }

// Applied is c after canary k was seen applying the change at t; changed
// reports whether it recorded something new.
func (c State) Applied(k workload.Ref, t time.Time) (State, bool) {
	i := slices.IndexFunc(c.Members, func(m Member) bool { return m.Ref == k })
	if i < 0 || !c.Members[i].Applied.IsZero() || c.Phase != Rolling {
		return c, false
	}
	c.Members = slices.Clone(c.Members)
	c.Members[i].Applied = t
	return c, true
}

// Check is c after the canaries' rollouts were read at now (health, by
// canary; a canary missing from it is still progressing; one that has not
// applied the change yet has a status that says why, or that it is gone):
// a canary that stalled, or that took longer than timeout (0: no limit) to
// apply the change or to complete its rollout, halts a rolling change; every canary complete starts the bake; a canary that is not
// complete during the bake halts it; a bake that ends healthy passes.
// changed reports a new phase.
func (c State) Check(health map[workload.Ref]rollout.Status, timeout time.Duration, now time.Time) (State, bool) {
	switch c.Phase {
	case Rolling:
		return c.rolled(health, timeout, now)
	case Baking:
		for _, m := range c.Members {
			if st, ok := health[m.Ref]; ok && st.State != rollout.Complete {
				return c.halt(now, "%s %q turned unhealthy during the bake: %s", m.Ref.Kind, m.Ref.Name, st.Reason), true
			}
		}
		if !now.Before(c.BakeUntil()) {
			c.Phase, c.Since = Passed, now
			return c, true
		}
	}
	return c, false
}

// rolled is Check of a rolling change.
func (c State) rolled(health map[workload.Ref]rollout.Status, timeout time.Duration, now time.Time) (State, bool) {
	all := true
	for _, m := range c.Members {
		st, ok := health[m.Ref]
		switch {
		case ok && st.State == rollout.Stalled:
			return c.halt(now, "%s %q stalled: %s", m.Ref.Kind, m.Ref.Name, st.Reason), true
		case m.Applied.IsZero() && timeout > 0 && now.Sub(c.Since) > timeout:
			// A canary that never applies the change (a window that stays
			// closed, a status that cannot be read) must not hold it forever.
			return c.halt(now, "%s %q did not apply the change within %s (--rollout-timeout): %s", m.Ref.Kind, m.Ref.Name, timeout, cmp.Or(st.Reason, "its reload has not run")), true
		case m.Applied.IsZero() || !ok:
			all = false
		case st.State != rollout.Complete && timeout > 0 && now.Sub(m.Applied) > timeout:
			return c.halt(now, "%s %q did not complete its rollout within %s (--rollout-timeout): %s", m.Ref.Kind, m.Ref.Name, timeout, st.Reason), true
		case st.State != rollout.Complete:
			all = false
		}
	}
	if !all {
		return c, false
	}
	c.Phase, c.Since = Baking, now
	return c, true
}

func (c State) halt(now time.Time, format string, args ...any) State {
	c.Phase, c.Since, c.Why, c.Gate = Halted, now, fmt.Sprintf(format, args...), GateStatus
	return c
}

// Resume is a halted c continued by an operator at now: the rest roll.
func (c State) Resume(now time.Time) (State, bool) {
	if c.Phase != Halted {
		return c, false
	}
	c.Phase, c.Since, c.Resumed = Passed, now, true
	return c, true
}

// Stage says where a change waiting for its canaries stands, e.g.
// "baking until 10:31:05Z".
func Stage(c State) string {
	switch c.Phase {
	case Baking:
		return "baking until " + c.BakeUntil().UTC().Format(time.RFC3339)
	case Halted:
		return "halted: " + c.Why
	case Passed:
		return "passed"
	}
	return "rolling since " + c.Since.UTC().Format(time.RFC3339)
}

// MemberNames names c's canaries, e.g. `Deployment "a", Deployment "b"`.
func (c State) MemberNames() string {
	names := make([]string, len(c.Members))
	for i, m := range c.Members {
		names[i] = fmt.Sprintf("%s %q", m.Ref.Kind, m.Ref.Name)
	}
	return strings.Join(names, ", ")
}
