package change

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/api/v1alpha1"
	"github.com/ripple-dev/ripple/internal/canary"
	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/reason"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/rollout"
	"github.com/ripple-dev/ripple/internal/workload"
)

// A canaried change (canary.State) lives in its ConfigRollout's
// status.canary: the Keeper chooses its canaries when a consumer's plan
// first asks for them, marks each canary applied when it sees it run the
// change, reads their rollouts, continues a halted change an operator
// resumed, and tells the config's Events. Every workload's reconcile reads
// it from its cache (List and CanaryOf) and plans once with it: no lock,
// no API call and no callback in a reconcile.

// List is the ConfigRollouts of config ref in ns through r, newest first.
// With indexed, r is the cache with ConfigIndex; else a config whose name
// is a label value is listed by its label, another's by its namespace.
func List(ctx context.Context, r client.Reader, ns string, ref refs.Ref, indexed bool) ([]v1alpha1.ConfigRollout, error) {
	var l v1alpha1.ConfigRolloutList
	opts := []client.ListOption{client.InNamespace(ns)}
	switch {
	case indexed:
		opts = append(opts, client.MatchingFields{ConfigIndex: string(ref.Kind) + "/" + ref.Name})
	case labelValue(ref.Name):
		opts = append(opts, client.MatchingLabels{v1alpha1.LabelConfigKind: kindLabel(ref.Kind), v1alpha1.LabelConfigName: ref.Name})
	}
	if err := r.List(ctx, &l, opts...); err != nil {
		return nil, fmt.Errorf("listing the ConfigRollouts of %s %s/%s: %w", ref.Kind, ns, ref.Name, err)
	}
	items := slices.DeleteFunc(l.Items, func(cr v1alpha1.ConfigRollout) bool {
		return cr.Spec.Config.Kind != string(ref.Kind) || cr.Spec.Config.Name != ref.Name
	})
	newestFirst(items)
	return items, nil
}

// Latest is the newest of items (newest first) that is a change of the
// config uid to data named by one of revs; with no revs (a reader without
// the digest key), the newest change of the config.
func Latest(items []v1alpha1.ConfigRollout, uid types.UID, revs []string) (*v1alpha1.ConfigRollout, bool) {
	for i := range items {
		cr := &items[i]
		if cr.Spec.Config.UID == uid && (len(revs) == 0 || slices.Contains(revs, cr.Spec.Revision)) {
			return cr, true
		}
		if cr.Spec.Config.UID == uid {
			return nil, false // the newest change of the config is of other data
		}
	}
	return nil, false
}

// CanaryOf is the canaried change st records, of config ref in ns at data
// digest; false when st records none (or only a summary, as a Ripple
// before canaries lived here wrote). The canaries are in ns by
// construction: a status cannot name another namespace's workload.
func CanaryOf(st *v1alpha1.CanaryStatus, ns string, ref refs.Ref, digest string) (canary.State, bool) {
	if st == nil || st.Since.IsZero() {
		return canary.State{}, false
	}
	c := canary.State{Namespace: ns, Config: ref, Digest: digest, Bake: st.Bake.Duration, Phase: canary.Phase(st.Phase),
		Since: st.Since.Time, Why: st.Why, Gate: canary.Gate(st.Gate), Resumed: st.Resumed}
	switch c.Phase {
	case canary.Rolling, canary.Baking, canary.Passed, canary.Halted:
	default:
		return canary.State{}, false
	}
	for _, w := range st.Workloads {
		m := canary.Member{Ref: workload.Ref{Kind: w.Kind, Namespace: ns, Name: w.Name}}
		if w.AppliedAt != nil {
			m.Applied = w.AppliedAt.Time
		}
		c.Members = append(c.Members, m)
	}
	return c, true
}

// canaryStatus is c as a ConfigRollout records it, its times to the
// second (as the API server keeps them), so that a status read back
// equals the one written. They are rounded up: a bake or a timeout that
// starts at a time recorded early would end early.
func canaryStatus(c *canary.State) *v1alpha1.CanaryStatus {
	if c == nil {
		return nil
	}
	out := &v1alpha1.CanaryStatus{Phase: string(c.Phase), Since: seconds(c.Since), Bake: metav1.Duration{Duration: c.Bake},
		Why: truncate(c.Why, maxWhy), Gate: string(c.Gate), Resumed: c.Resumed}
	for _, m := range c.Members {
		w := v1alpha1.CanaryWorkload{Kind: m.Ref.Kind, Name: m.Ref.Name}
		if !m.Applied.IsZero() {
			t := seconds(m.Applied)
			w.AppliedAt = &t
		}
		out.Workloads = append(out.Workloads, w)
	}
	return out
}

func seconds(t time.Time) metav1.Time {
	if s := t.Truncate(time.Second); !s.Equal(t) {
		return metav1.NewTime(s.Add(time.Second))
	}
	return metav1.NewTime(t)
}

// maxWhy bounds status.canary.why (its schema's bound): a query's result
// may be long.
const maxWhy = 1024

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n-3], "") + "..."
}

// canaryStep is what one look did to a change's canary: the canary now
// (nil: the change is not canaried), the notice to tell on the config once
// it is written (a pass or a halt), and how soon to look again for it
// (0: no time of its own).
type canaryStep struct {
	canary  *canary.State
	outcome *plan.Notice
	carried bool
	wake    time.Duration
	// verdicts are the gates' verdicts of the look (the bake's end tells
	// them in the trace).
	verdicts []canary.Verdict
}

// Resumes reports whether value, the config's canary-resume annotation,
// continues the change cr: it names cr, so that a resume never continues
// another change, not even a later one of the same data.
func Resumes(value string, cr *v1alpha1.ConfigRollout) bool {
	return cr.Name != "" && strings.TrimSpace(value) == cr.Name
}

// step moves the canary of key's change (as its status recorded it, at
// data digest) on from its consumers at now. A change none of whose
// consumers asks for a canary is not canaried. The first ask chooses the
// canaries among the consumers it would roll (or takes those a record of
// an earlier Ripple kept, carry). resume is set when the config's resume
// annotation names the change (Resumes); timeout is --rollout-timeout;
// verdicts are those of the gates beside the status during the bake.
func step(st *v1alpha1.CanaryStatus, key Key, digest string, cs []Consumer, resume bool, timeout time.Duration, now time.Time,
	verdicts []canary.Verdict, carry func() (canary.State, bool)) canaryStep {
	c, ok := CanaryOf(st, key.Namespace, key.Config, digest)
	out := canaryStep{verdicts: verdicts}
	if !ok {
		i := slices.IndexFunc(cs, func(c Consumer) bool { return c.Ask != nil })
		if i < 0 {
			return out
		}
		if c, out.carried = carry(); !out.carried {
			c = canary.Start(key.Namespace, *cs[i].Ask, candidates(cs), now)
		}
	}
	before := c.Phase
	switch c.Phase {
	case canary.Rolling:
		c = applied(c, cs, now)
		c, _ = c.Check(health(c, cs), timeout, now)
	case canary.Baking:
		var held bool
		if c, held = c.Judged(verdicts, timeout, now); c.Phase == canary.Baking {
			next, _ := c.Check(health(c, cs), timeout, now)
			if next.Phase != canary.Passed || !held {
				c = next // a gate that cannot tell yet keeps the bake from passing
			}
		}
	case canary.Halted:
		if resume {
			c, _ = c.Resume(now)
		}
	}
	out.canary = &c
	if c.Phase != before {
		if n, told := plan.CanaryOutcome(c, held(cs)); told {
			out.outcome = &n
		}
	}
	out.wake = wake(c, timeout, now)
	return out
}

// candidates are the consumers a change would roll now, as the canaries
// are chosen among (canary.Start).
func candidates(cs []Consumer) []canary.Candidate {
	var out []canary.Candidate
	for _, c := range cs {
		if c.Candidate {
			out = append(out, canary.Candidate{Ref: c.Ref, First: c.First, Idle: c.Idle != ""})
		}
	}
	return out
}

// applied marks the canaries that run the change's data (their plan finds
// the config unchanged) applied at now.
func applied(c canary.State, cs []Consumer, now time.Time) canary.State {
	for _, cons := range cs {
		if cons.Found && cons.Source.State == plan.Unchanged {
			c, _ = c.Applied(cons.Ref, now)
		}
	}
	return c
}

// health is the rollouts of c's canaries that applied its change, and
// why the others have not. A canary gone meanwhile has stalled: the change
// does not pass on a workload that is not there; so have canaries none of
// which runs pods while a workload the change rolls does (scaled to zero
// after they were chosen): the change does not pass on no pods.
func health(c canary.State, cs []Consumer) map[workload.Ref]rollout.Status {
	out := map[workload.Ref]rollout.Status{}
	noPods := !slices.ContainsFunc(c.Members, func(m canary.Member) bool {
		i := slices.IndexFunc(cs, func(cons Consumer) bool { return cons.Ref == m.Ref })
		return i >= 0 && cs[i].Idle == ""
	}) && slices.ContainsFunc(cs, func(cons Consumer) bool { return cons.Candidate && cons.Idle == "" })
	for _, m := range c.Members {
		i := slices.IndexFunc(cs, func(cons Consumer) bool { return cons.Ref == m.Ref })
		switch {
		case i < 0 || !cs[i].Found:
			out[m.Ref] = rollout.Status{State: rollout.Stalled, Reason: "the workload was deleted or reads the config no more"}
		case cs[i].Idle != "" && noPods:
			out[m.Ref] = rollout.Status{State: rollout.Stalled, Reason: cs[i].Idle + ": a canary must run pods"}
		case !m.Applied.IsZero():
			out[m.Ref] = cs[i].Rollout
		case cs[i].Verdict != "":
			out[m.Ref] = rollout.Status{State: rollout.Progressing, Reason: "its reload waits (" + string(cs[i].Verdict) + ")"}
		}
	}
	return out
}

// held is how many consumers wait for the change's canary.
func held(cs []Consumer) int {
	n := 0
	for _, c := range cs {
		if c.Verdict == reason.WaitingForCanary || c.Verdict == reason.RolloutHalted {
			n++
		}
	}
	return n
}

// wake is how soon c must be looked at without an event: when its bake
// ends, or when a canary's rollout passes the timeout.
func wake(c canary.State, timeout time.Duration, now time.Time) time.Duration {
	switch c.Phase {
	case canary.Baking:
		return max(c.BakeUntil().Sub(now), time.Millisecond)
	case canary.Rolling:
		var at time.Time
		for _, m := range c.Members {
			due := m.Applied.Add(timeout)
			if m.Applied.IsZero() {
				due = c.Since.Add(timeout) // the canary must apply it by then
			}
			if timeout > 0 && (at.IsZero() || due.Before(at)) {
				at = due
			}
		}
		if !at.IsZero() {
			return max(at.Sub(now)+time.Second, time.Millisecond) // the timeout is passed, not met
		}
	}
	return 0
}
