package change

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ripple-dev/ripple/api/v1alpha1"

	"github.com/ripple-dev/ripple/internal/canary"
	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/reason"
	"github.com/ripple-dev/ripple/internal/rollout"
)

var noRecord = func() (canary.State, bool) { return canary.State{}, false }

// asking is a managed consumer whose plan asks for the change's canary.
func asking(name string, first bool) Consumer {
	c := managed(name, plan.Changed, rollout.Complete)
	c.Ask = &canary.Ask{Config: config, Digest: "d1", Spec: canary.Spec{Count: 1, Bake: 10 * time.Second}}
	c.Candidate, c.First, c.Verdict = true, first, reason.WaitingForCanary
	return c
}

func TestCanaryStepChoosesOnTheFirstAsk(t *testing.T) {
	key := Key{Namespace: "shop", Config: config}
	if got := step(nil, key, "d1", []Consumer{managed("a", plan.Changed, rollout.Complete)}, false, 0, t0, nil, noRecord); got.canary != nil {
		t.Fatalf("a change nobody asks to canary got canary %+v", got.canary)
	}
	got := step(nil, key, "d1", []Consumer{asking("a", false), asking("b", true)}, false, 0, t0, nil, noRecord)
	if got.canary == nil || len(got.canary.Members) != 1 || got.canary.Members[0].Ref.Name != "b" || got.canary.Phase != canary.Rolling {
		t.Fatalf("canary %+v, want b (canary-first), rolling", got.canary)
	}
	if got.outcome != nil {
		t.Errorf("choosing told %+v", got.outcome)
	}
	carried := canary.State{Namespace: "shop", Config: config, Digest: "d1", Phase: canary.Halted, Since: t0, Why: "from the record"}
	got = step(nil, key, "d1", []Consumer{asking("a", false)}, false, 0, t0, nil, func() (canary.State, bool) { return carried, true })
	if !got.carried || got.canary.Phase != canary.Halted || got.canary.Why != "from the record" || got.outcome != nil {
		t.Errorf("carried over: %+v (carried %v, outcome %+v), want the record's halt, not told again", got.canary, got.carried, got.outcome)
	}
}

// A canary's journey through the status it is written to, read back as
// the API server keeps it (times to the second): applied, complete, bake,
// passed at the bake's end, told once.
func TestCanaryStepBakesAndPasses(t *testing.T) {
	key := Key{Namespace: "shop", Config: config}
	cs := []Consumer{asking("a", false), asking("b", false)}
	st := canaryStatus(step(nil, key, "d1", cs, false, time.Minute, t0, nil, noRecord).canary)

	cs[0] = managed("a", plan.Unchanged, rollout.Progressing)
	now := t0.Add(1500 * time.Millisecond)
	got := step(st, key, "d1", cs, false, time.Minute, now, nil, noRecord)
	if got.canary.Phase != canary.Rolling || got.canary.Members[0].Applied != now {
		t.Fatalf("a applied, in progress: %+v", got.canary)
	}
	if got.wake != time.Minute+time.Second {
		t.Errorf("wake %s, want the timeout of a's rollout and a second", got.wake)
	}
	st = canaryStatus(got.canary)
	if back, _ := CanaryOf(st, "shop", config, "d1"); !equality.Semantic.DeepEqual(canaryStatus(&back), st) {
		t.Errorf("a status read back differs: %+v, want %+v", canaryStatus(&back), st)
	}

	cs[0] = managed("a", plan.Unchanged, rollout.Complete)
	now = t0.Add(3 * time.Second)
	got = step(st, key, "d1", cs, false, time.Minute, now, nil, noRecord)
	if got.canary.Phase != canary.Baking || got.wake != 10*time.Second || got.outcome != nil {
		t.Fatalf("a complete: %+v, wake %s, outcome %+v; want baking for 10s, nothing told", got.canary, got.wake, got.outcome)
	}
	st = canaryStatus(got.canary)
	got = step(st, key, "d1", cs, false, time.Minute, now.Add(9*time.Second), nil, noRecord)
	if got.canary.Phase != canary.Baking {
		t.Fatalf("in the bake: %s", got.canary.Phase)
	}
	got = step(st, key, "d1", cs, false, time.Minute, now.Add(10*time.Second), nil, noRecord)
	if got.canary.Phase != canary.Passed || got.outcome == nil || got.outcome.Reason != reason.CanaryPassed {
		t.Fatalf("the bake's end: %+v, outcome %+v; want passed, told", got.canary, got.outcome)
	}
	got = step(canaryStatus(got.canary), key, "d1", cs, false, time.Minute, now.Add(11*time.Second), nil, noRecord)
	if got.outcome != nil {
		t.Errorf("passed told again: %+v", got.outcome)
	}
}

// A canary deleted, or that reads the config no more, halts the change
// (it does not pass on a workload that is not there); the resume of its
// data continues it, and one of other data does not.
func TestCanaryStepHaltsOnAGoneCanaryAndResumes(t *testing.T) {
	key := Key{Namespace: "shop", Config: config}
	cs := []Consumer{asking("a", false), asking("b", false)}
	st := canaryStatus(step(nil, key, "d1", cs, false, 0, t0, nil, noRecord).canary)
	got := step(st, key, "d1", cs[1:], false, 0, t0.Add(time.Second), nil, noRecord)
	if got.canary.Phase != canary.Halted || !strings.Contains(got.canary.Why, "deleted") {
		t.Fatalf("a gone: %+v, want halted", got.canary)
	}
	if got.outcome == nil || got.outcome.Reason != reason.RolloutHalted || !strings.Contains(got.outcome.Message, "1 other workloads hold it") {
		t.Fatalf("the halt told %+v", got.outcome)
	}
	st = canaryStatus(got.canary)
	if got = step(st, key, "d1", cs[1:], Resumes("cm-other", &v1alpha1.ConfigRollout{ObjectMeta: metav1.ObjectMeta{Name: "cm-d1"}}), 0, t0.Add(2*time.Second), nil, noRecord); got.canary.Phase != canary.Halted {
		t.Errorf("a resume of other data continued the change: %s", got.canary.Phase)
	}
	got = step(st, key, "d1", cs[1:], Resumes(" cm-d1 ", &v1alpha1.ConfigRollout{ObjectMeta: metav1.ObjectMeta{Name: "cm-d1"}}), 0, t0.Add(2*time.Second), nil, noRecord)
	if got.canary.Phase != canary.Passed || !got.canary.Resumed || got.outcome == nil {
		t.Errorf("resumed: %+v, outcome %+v; want passed, resumed, told", got.canary, got.outcome)
	}
}

// A canary scaled to zero after it was chosen halts the change (it would
// pass on no pods); one that never applies the change halts it once the
// rollout timeout has passed since the canaries were chosen, and the
// keeper wakes for that without an event.
func TestCanaryStepHaltsOnAnIdleOrNeverApplyingCanary(t *testing.T) {
	key := Key{Namespace: "shop", Config: config}
	cs := []Consumer{asking("a", false), asking("b", false)}
	chosen := step(nil, key, "d1", cs, false, time.Minute, t0, nil, noRecord)
	if chosen.wake != time.Minute+time.Second {
		t.Errorf("wake %s after choosing, want the timeout for a to apply the change and a second", chosen.wake)
	}
	st := canaryStatus(chosen.canary)

	idle := managed("a", plan.Unchanged, rollout.Complete)
	idle.Idle = "it is scaled to zero"
	got := step(st, key, "d1", []Consumer{idle, cs[1]}, false, time.Minute, t0.Add(time.Second), nil, noRecord)
	if got.canary.Phase != canary.Halted || !strings.Contains(got.canary.Why, "it is scaled to zero: a canary must run pods") {
		t.Errorf("a scaled to zero: %+v, want halted, saying why", got.canary)
	}
	idleToo := cs[1]
	idleToo.Idle = "it is scaled to zero"
	if got := step(st, key, "d1", []Consumer{idle, idleToo}, false, time.Minute, t0.Add(time.Second), nil, noRecord); got.canary.Phase == canary.Halted {
		t.Errorf("no workload of the change runs pods: %+v, want the canary judged by its status, not halted", got.canary)
	}

	waiting := asking("a", false)
	waiting.Verdict = reason.ReloadDeferred
	cs = []Consumer{waiting, cs[1]}
	if got = step(st, key, "d1", cs, false, time.Minute, t0.Add(time.Minute), nil, noRecord); got.canary.Phase != canary.Rolling {
		t.Fatalf("a waits, within the timeout: %s", got.canary.Phase)
	}
	got = step(st, key, "d1", cs, false, time.Minute, t0.Add(61*time.Second), nil, noRecord)
	if got.canary.Phase != canary.Halted || !strings.Contains(got.canary.Why, `Deployment "a" did not apply the change within 1m0s (--rollout-timeout): its reload waits (ReloadDeferred)`) ||
		got.outcome == nil || got.outcome.Reason != reason.RolloutHalted {
		t.Errorf("a never applied it: %+v, outcome %+v; want halted and told", got.canary, got.outcome)
	}
}

// A baking change: a gate's failure halts it and is told, naming the gate
// on the status; a gate that cannot tell keeps the bake from passing.
func TestCanaryStepGates(t *testing.T) {
	key := Key{Namespace: "shop", Config: config}
	cs := []Consumer{managed("a", plan.Unchanged, rollout.Complete), asking("b", false)}
	baking := &v1alpha1.CanaryStatus{Phase: string(canary.Baking), Since: metav1.NewTime(t0), Bake: metav1.Duration{Duration: 10 * time.Second},
		Workloads: []v1alpha1.CanaryWorkload{{Kind: "Deployment", Name: "a", AppliedAt: &metav1.Time{Time: t0}}}}
	hold := []canary.Verdict{{Gate: canary.GatePods, Hold: "cannot watch the pods yet"}}
	if got := step(baking, key, "d1", cs, false, time.Minute, t0.Add(11*time.Second), hold, noRecord); got.canary.Phase != canary.Baking || got.outcome != nil {
		t.Errorf("a hold at the bake's end: %s, outcome %+v; want still baking", got.canary.Phase, got.outcome)
	}
	if got := step(baking, key, "d1", cs, false, time.Minute, t0.Add(11*time.Second), nil, noRecord); got.canary.Phase != canary.Passed {
		t.Errorf("no gate holds at the bake's end: %s, want passed", got.canary.Phase)
	}
	fail := []canary.Verdict{{Gate: canary.GatePods, Fail: `Deployment "a": pod a-1 container app restarted (OOMKilled, exit code 137)`}}
	got := step(baking, key, "d1", cs, false, time.Minute, t0.Add(2*time.Second), fail, noRecord)
	if got.canary.Phase != canary.Halted || got.outcome == nil || !strings.Contains(got.outcome.Message, "the pods gate: Deployment \"a\": pod a-1 container app restarted (OOMKilled") {
		t.Fatalf("a pod restarted: %+v, outcome %+v; want halted and told, naming the pod", got.canary, got.outcome)
	}
	if st := canaryStatus(got.canary); st.Gate != "pods" {
		t.Errorf("status.canary.gate = %q, want pods", st.Gate)
	}
}

// The status keeps times to the second: a bake that started within a
// second is recorded as starting at its end, never earlier, so a bake
// read back from the status is never shorter than its bake time.
func TestCanaryBakeNeverShortenedByTheStatus(t *testing.T) {
	key := Key{Namespace: "shop", Config: config}
	cs := []Consumer{asking("a", false), asking("b", false)}
	st := canaryStatus(step(nil, key, "d1", cs, false, time.Minute, t0, nil, noRecord).canary)
	cs[0] = managed("a", plan.Unchanged, rollout.Progressing)
	st = canaryStatus(step(st, key, "d1", cs, false, time.Minute, t0.Add(1500*time.Millisecond), nil, noRecord).canary)
	cs[0] = managed("a", plan.Unchanged, rollout.Complete)
	completed := t0.Add(3500 * time.Millisecond)
	got := step(st, key, "d1", cs, false, time.Minute, completed, nil, noRecord)
	if got.canary.Phase != canary.Baking {
		t.Fatalf("a complete: %s, want baking", got.canary.Phase)
	}
	st = canaryStatus(got.canary)
	if got := step(st, key, "d1", cs, false, time.Minute, completed.Add(9800*time.Millisecond), nil, noRecord); got.canary.Phase != canary.Baking {
		t.Errorf("%s into a 10s bake, read back from the status: %s, want still baking", 9800*time.Millisecond, got.canary.Phase)
	}
}
