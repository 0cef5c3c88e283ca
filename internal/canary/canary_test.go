package canary

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/rollout"
	"github.com/ripple-dev/ripple/internal/workload"
)

var (
	now   = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	cmApp = refs.Ref{Kind: refs.ConfigMap, Name: "app"}
)

func dep(name string) workload.Ref {
	return workload.Ref{Kind: "Deployment", Namespace: "shop", Name: name}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		v       string
		want    Spec
		wantErr string
	}{
		{"1", Spec{Count: 1}, ""},
		{" 3 ", Spec{Count: 3}, ""},
		{"0", Spec{}, ""},
		{"10%", Spec{Percent: 10}, ""},
		{"100%", Spec{Percent: 100}, ""},
		{"0%", Spec{}, "not a percentage"},
		{"101%", Spec{}, "not a percentage"},
		{"-1", Spec{}, "not a number of workloads"},
		{"one", Spec{}, "not a number of workloads"},
	} {
		got, err := Parse(tc.v)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Parse(%q) error %v, want one with %q", tc.v, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", tc.v, got, err, tc.want)
		}
	}
	for n, want := range map[int]int{1: 1, 9: 1, 10: 1, 11: 2, 50: 5} {
		if got := (Spec{Percent: 10}).Of(n); got != want {
			t.Errorf("10%% of %d = %d, want %d", n, got, want)
		}
	}
	if got := (Spec{Count: 3}).Of(2); got != 2 {
		t.Errorf("3 of 2 = %d, want 2", got)
	}
}

// The canaries are the first of the workloads the change rolls: those
// marked canary-first, then by name and kind.
func TestStart(t *testing.T) {
	ask := Ask{Config: cmApp, Digest: "cm2", Spec: Spec{Count: 2, Bake: time.Minute}}
	c := Start("shop", ask, []Candidate{
		{Ref: dep("c")}, {Ref: dep("a")}, {Ref: workload.Ref{Kind: "DaemonSet", Namespace: "shop", Name: "a"}}, {Ref: dep("z"), First: true},
	}, now)
	var got []string
	for _, m := range c.Members {
		got = append(got, m.Ref.Kind+"/"+m.Ref.Name)
	}
	if strings.Join(got, ",") != "Deployment/z,DaemonSet/a" || c.Phase != Rolling || !c.Since.Equal(now) {
		t.Errorf("canaries %q, phase %s; want Deployment/z (marked), DaemonSet/a, rolling since now", got, c.Phase)
	}
	if none := Start("shop", ask, nil, now); none.Phase != Passed {
		t.Errorf("with no workload to roll the phase is %s, want Passed", none.Phase)
	}
	// A workload without pods passes at once: while another runs pods, it
	// is not a canary, even marked canary-first.
	c = Start("shop", Ask{Config: cmApp, Digest: "cm2", Spec: Spec{Count: 1}},
		[]Candidate{{Ref: dep("a")}, {Ref: dep("idle"), First: true, Idle: true}}, now)
	if len(c.Members) != 1 || c.Members[0].Ref != dep("a") {
		t.Errorf("canaries %+v, want a (idle runs no pods)", c.Members)
	}
	if c = Start("shop", ask, []Candidate{{Ref: dep("idle"), Idle: true}}, now); c.Phase != Rolling || len(c.Members) != 1 {
		t.Errorf("with only idle workloads: %+v, want one of them, rolling: the bake still spaces the change", c)
	}
	c = Start("shop", Ask{Config: cmApp, Digest: "cm2", Spec: Spec{Percent: 100}},
		[]Candidate{{Ref: dep("b"), Idle: true}, {Ref: dep("c")}, {Ref: dep("a"), Idle: true, First: true}}, now)
	if got := c.MemberNames(); got != `Deployment "c", Deployment "a", Deployment "b"` {
		t.Errorf("100%% of a fleet with idle workloads: canaries %s, want all (no rest to protect), those that run pods first", got)
	}
	c = Start("shop", Ask{Config: cmApp, Digest: "cm2", Spec: Spec{Count: 3}},
		[]Candidate{{Ref: dep("zero"), Idle: true}, {Ref: dep("d")}, {Ref: dep("c")}, {Ref: dep("a"), Idle: true, First: true}}, now)
	if got := c.MemberNames(); got != `Deployment "c", Deployment "d"` {
		t.Errorf("3 canaries, 2 workloads run pods: canaries %s, want those 2 only (a workload at 0 replicas is never a canary while others run pods)", got)
	}
	c = Start("shop", Ask{Config: cmApp, Digest: "cm2", Spec: Spec{Count: 2}},
		[]Candidate{{Ref: dep("b"), Idle: true}, {Ref: dep("a"), Idle: true}, {Ref: dep("c"), Idle: true}}, now)
	if got := c.MemberNames(); got != `Deployment "a", Deployment "b"` {
		t.Errorf("none runs pods: canaries %s, want 2 of them, by name", got)
	}
}

// Check moves a change on from its canaries' rollouts.
func TestCanaryCheck(t *testing.T) {
	rolling := State{Config: cmApp, Digest: "cm2", Bake: 30 * time.Second, Phase: Rolling, Since: now,
		Members: []Member{{Ref: dep("a")}}}
	applied, _ := rolling.Applied(dep("a"), now)
	baking := State{Config: cmApp, Digest: "cm2", Bake: 30 * time.Second, Phase: Baking, Since: now, Members: applied.Members}
	complete := map[workload.Ref]rollout.Status{dep("a"): {State: rollout.Complete}}
	progressing := map[workload.Ref]rollout.Status{dep("a"): {State: rollout.Progressing, Reason: "0 of 1 updated replicas available"}}
	stalled := map[workload.Ref]rollout.Status{dep("a"): {State: rollout.Stalled, Reason: "progress deadline exceeded"}}
	for _, tc := range []struct {
		name    string
		c       State
		health  map[workload.Ref]rollout.Status
		at      time.Time
		timeout time.Duration
		want    Phase
		why     string
	}{
		{"not applied yet: rolling", rolling, nil, now.Add(time.Minute), 0, Rolling, ""},
		{"not applied within the timeout: halted", rolling, map[workload.Ref]rollout.Status{dep("a"): {State: rollout.Progressing, Reason: "its reload waits (ReloadDeferred)"}},
			now.Add(2 * time.Minute), time.Minute, Halted, `Deployment "a" did not apply the change within 1m0s (--rollout-timeout): its reload waits (ReloadDeferred)`},
		{"not applied, within the timeout: rolling", rolling, nil, now.Add(time.Minute), time.Minute, Rolling, ""},
		{"deleted before it applied: halted", rolling, map[workload.Ref]rollout.Status{dep("a"): {State: rollout.Stalled, Reason: "the workload was deleted"}},
			now.Add(time.Second), 0, Halted, "the workload was deleted"},
		{"progressing: rolling", applied, progressing, now.Add(time.Minute), 0, Rolling, ""},
		{"complete: the bake starts", applied, complete, now.Add(time.Second), 0, Baking, ""},
		{"stalled: halted", applied, stalled, now.Add(time.Second), 0, Halted, `Deployment "a" stalled: progress deadline exceeded`},
		{"too long: halted", applied, progressing, now.Add(2 * time.Minute), time.Minute, Halted, "within 1m0s (--rollout-timeout)"},
		{"healthy in the bake: baking", baking, complete, now.Add(29 * time.Second), 0, Baking, ""},
		{"unhealthy in the bake: halted", baking, progressing, now.Add(10 * time.Second), 0, Halted, "turned unhealthy during the bake"},
		{"the bake ends healthy: passed", baking, complete, now.Add(30 * time.Second), 0, Passed, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, changed := tc.c.Check(tc.health, tc.timeout, tc.at)
			if got.Phase != tc.want || changed != (tc.want != tc.c.Phase) || !strings.Contains(got.Why, tc.why) {
				t.Errorf("Check = %s (changed %v, why %q), want %s with %q", got.Phase, changed, got.Why, tc.want, tc.why)
			}
		})
	}
	halted, _ := applied.Check(stalled, 0, now)
	if r, ok := halted.Resume(now); !ok || r.Phase != Passed || !r.Resumed {
		t.Errorf("Resume = %+v, want passed, resumed", r)
	}
}

// The gates beside the status judge a baking change: the first that fails
// halts it naming the gate; one that cannot tell holds the pass, and
// halts it once it has not told for the timeout past the bake.
func TestCanaryJudged(t *testing.T) {
	baking := State{Config: cmApp, Digest: "cm2", Bake: 30 * time.Second, Phase: Baking, Since: now}
	c, held := baking.Judged([]Verdict{{Gate: GateStatus}, {Gate: GatePods, Hold: "cannot watch"}}, time.Minute, now.Add(31*time.Second))
	if c.Phase != Baking || !held {
		t.Errorf("a hold: %s, held %v; want baking, held", c.Phase, held)
	}
	c, _ = baking.Judged([]Verdict{{Gate: GatePods, Fail: `Deployment "a": pod a-1 container app restarted`}, {Gate: GateStatus, Fail: "later"}}, time.Minute, now.Add(time.Second))
	if c.Phase != Halted || c.Gate != GatePods || c.Why != `the pods gate: Deployment "a": pod a-1 container app restarted` {
		t.Errorf("a failure: %+v, want halted by the pods gate", c)
	}
	c, _ = baking.Judged([]Verdict{{Gate: GatePods, Hold: "cannot watch"}}, time.Minute, now.Add(91*time.Second))
	if c.Phase != Halted || c.Gate != GatePods || !strings.Contains(c.Why, "could not tell for 1m0s past the bake") {
		t.Errorf("a hold past the timeout: %+v, want halted by the pods gate", c)
	}
	if c, _ := (State{Phase: Rolling}).Judged([]Verdict{{Gate: GatePods, Fail: "x"}}, 0, now); c.Phase != Rolling {
		t.Errorf("a rolling change judged: %s, want the gates to judge only the bake", c.Phase)
	}
	if stalled, _ := baking.Check(map[workload.Ref]rollout.Status{}, 0, now); stalled.Gate != "" {
		t.Errorf("no halt, gate %q", stalled.Gate)
	}
}

// A record of an earlier Ripple is acted on only when it is the config's
// and its canaries are workloads of the config's namespace.
func TestParseRecordChecksItsCanaries(t *testing.T) {
	rec := func(members ...Member) string {
		b, _ := json.Marshal(State{Namespace: "shop", Config: cmApp, Digest: "cm2", Phase: Halted, Since: now, Members: members})
		return string(b)
	}
	if _, err := ParseRecord(rec(Member{Ref: dep("a")}), "shop", cmApp); err != nil {
		t.Errorf("a record of the config: %v", err)
	}
	for name, data := range map[string]string{
		"a canary of another namespace": rec(Member{Ref: workload.Ref{Kind: "Deployment", Namespace: "bank", Name: "a"}}),
		"a canary without a kind":       rec(Member{Ref: workload.Ref{Namespace: "shop", Name: "a"}}),
		"another config":                strings.Replace(rec(), `"app"`, `"other"`, 1),
	} {
		if _, err := ParseRecord(data, "shop", cmApp); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
