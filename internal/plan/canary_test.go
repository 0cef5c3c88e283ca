package plan

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ripple-dev/ripple/internal/reason"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/rollout"
	"github.com/ripple-dev/ripple/internal/workload"
)

func TestParseCanary(t *testing.T) {
	for _, tc := range []struct {
		v       string
		want    CanarySpec
		wantErr string
	}{
		{"1", CanarySpec{Count: 1}, ""},
		{" 3 ", CanarySpec{Count: 3}, ""},
		{"0", CanarySpec{}, ""},
		{"10%", CanarySpec{Percent: 10}, ""},
		{"100%", CanarySpec{Percent: 100}, ""},
		{"0%", CanarySpec{}, "not a percentage"},
		{"101%", CanarySpec{}, "not a percentage"},
		{"-1", CanarySpec{}, "not a number of workloads"},
		{"one", CanarySpec{}, "not a number of workloads"},
	} {
		got, err := ParseCanary(tc.v)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseCanary(%q) error %v, want one with %q", tc.v, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseCanary(%q) = %+v, %v; want %+v", tc.v, got, err, tc.want)
		}
	}
	for n, want := range map[int]int{1: 1, 9: 1, 10: 1, 11: 2, 50: 5} {
		if got := (CanarySpec{Percent: 10}).Of(n); got != want {
			t.Errorf("10%% of %d = %d, want %d", n, got, want)
		}
	}
	if got := (CanarySpec{Count: 3}).Of(2); got != 2 {
		t.Errorf("3 of 2 = %d, want 2", got)
	}
}

// The config's annotation beats its Namespace's, which beats the flag's;
// an invalid value is named and the next level applies.
func TestCanaryOf(t *testing.T) {
	s := Settings{Keys: keys, Canary: CanarySpec{Count: 2, Bake: DefaultCanaryBake}}
	src := Source{Ref: cmApp, Annotations: map[string]string{keys.Canary: "10%", keys.CanaryBake: "soon"}}
	got, problems := CanaryOf(src, map[string]string{keys.Canary: "1", keys.CanaryBake: "1m"}, s)
	if got != (CanarySpec{Percent: 10, Bake: time.Minute}) {
		t.Errorf("CanaryOf = %+v, want 10%% from the config and the Namespace's 1m bake", got)
	}
	if len(problems) != 1 || !strings.Contains(problems[0], `annotation "ripple.dev/canary-bake" on ConfigMap/app`) {
		t.Errorf("problems %q, want one naming the config's canary-bake", problems)
	}
	if got, _ := CanaryOf(Source{Ref: cmApp}, nil, s); got != s.Canary {
		t.Errorf("CanaryOf without annotations = %+v, want the flag's %+v", got, s.Canary)
	}
	if got, _ := CanaryOf(Source{Ref: cmApp, Annotations: map[string]string{keys.Canary: "0"}}, nil, s); got.On() {
		t.Errorf("canary \"0\" on the config = %+v, want none", got)
	}
}

func dep(name string) workload.Ref {
	return workload.Ref{Kind: "Deployment", Namespace: "shop", Name: name}
}

// The canaries are the first of the workloads the change rolls: those
// marked canary-first, then by name and kind.
func TestStartCanary(t *testing.T) {
	ask := CanaryAsk{Config: cmApp, Digest: "cm2", Spec: CanarySpec{Count: 2, Bake: time.Minute}}
	c := StartCanary("shop", ask, []CanaryCandidate{
		{Ref: dep("c")}, {Ref: dep("a")}, {Ref: workload.Ref{Kind: "DaemonSet", Namespace: "shop", Name: "a"}}, {Ref: dep("z"), First: true},
	}, now)
	var got []string
	for _, m := range c.Members {
		got = append(got, m.Ref.Kind+"/"+m.Ref.Name)
	}
	if strings.Join(got, ",") != "Deployment/z,DaemonSet/a" || c.Phase != CanaryRolling || !c.Since.Equal(now) {
		t.Errorf("canaries %q, phase %s; want Deployment/z (marked), DaemonSet/a, rolling since now", got, c.Phase)
	}
	if none := StartCanary("shop", ask, nil, now); none.Phase != CanaryPassed {
		t.Errorf("with no workload to roll the phase is %s, want Passed", none.Phase)
	}
	// A workload without pods passes at once: while another runs pods, it
	// is not a canary, even marked canary-first.
	c = StartCanary("shop", CanaryAsk{Config: cmApp, Digest: "cm2", Spec: CanarySpec{Count: 1}},
		[]CanaryCandidate{{Ref: dep("a")}, {Ref: dep("idle"), First: true, Idle: true}}, now)
	if len(c.Members) != 1 || c.Members[0].Ref != dep("a") {
		t.Errorf("canaries %+v, want a (idle runs no pods)", c.Members)
	}
	if c = StartCanary("shop", ask, []CanaryCandidate{{Ref: dep("idle"), Idle: true}}, now); c.Phase != CanaryRolling || len(c.Members) != 1 {
		t.Errorf("with only idle workloads: %+v, want one of them, rolling: the bake still spaces the change", c)
	}
	c = StartCanary("shop", CanaryAsk{Config: cmApp, Digest: "cm2", Spec: CanarySpec{Percent: 100}},
		[]CanaryCandidate{{Ref: dep("b"), Idle: true}, {Ref: dep("c")}, {Ref: dep("a"), Idle: true, First: true}}, now)
	if got := memberNames(c.Members); got != `Deployment "c", Deployment "a", Deployment "b"` {
		t.Errorf("100%% of a fleet with idle workloads: canaries %s, want those that run pods first, then canary-first", got)
	}
}

// With --tighten-only, a config may only tighten the canary its floor (its
// Namespace's, else the flags') sets: not turn it off, not shorten the
// bake; the larger canary of the two is taken. Without it, the config's
// own values win.
func TestCanaryOfTightenOnly(t *testing.T) {
	s := Settings{Keys: keys, TightenOnly: true, Canary: CanarySpec{Count: 1, Bake: time.Minute}}
	for _, tc := range []struct {
		name      string
		ns, cfg   map[string]string
		want      CanarySpec
		problems  []string
		withoutIt CanarySpec
	}{
		{"turned off: the flag's", nil, map[string]string{keys.Canary: "0", keys.CanaryBake: "0s"},
			CanarySpec{Count: 1, Bake: time.Minute}, []string{`"0" would turn off the canary 1`, `"0s" would shorten the bake 1m0s`}, CanarySpec{}},
		{"turned off: the Namespace's", map[string]string{keys.Canary: "20%", keys.CanaryBake: "5m"}, map[string]string{keys.Canary: "0"},
			CanarySpec{Percent: 20, Bake: 5 * time.Minute}, []string{`"0" would turn off the canary 20%`}, CanarySpec{Bake: 5 * time.Minute}},
		{"a count against a percentage: the larger", map[string]string{keys.Canary: "20%"}, map[string]string{keys.Canary: "2", keys.CanaryBake: "2m"},
			CanarySpec{Count: 2, Percent: 20, Bake: 2 * time.Minute}, nil, CanarySpec{Count: 2, Bake: 2 * time.Minute}},
		{"no floor: the config's", map[string]string{keys.Canary: "0"}, map[string]string{keys.Canary: "3"},
			CanarySpec{Count: 3, Bake: time.Minute}, nil, CanarySpec{Count: 3, Bake: time.Minute}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, problems := CanaryOf(Source{Ref: cmApp, Annotations: tc.cfg}, tc.ns, s)
			if got != tc.want || len(problems) != len(tc.problems) {
				t.Fatalf("CanaryOf = %+v, %q; want %+v with %d problems", got, problems, tc.want, len(tc.problems))
			}
			for i, p := range tc.problems {
				if !strings.Contains(problems[i], p) || !strings.Contains(problems[i], "--tighten-only") {
					t.Errorf("problem %q, want it to say %q and name --tighten-only", problems[i], p)
				}
			}
			loose := s
			loose.TightenOnly = false
			if got, _ := CanaryOf(Source{Ref: cmApp, Annotations: tc.cfg}, tc.ns, loose); got != tc.withoutIt {
				t.Errorf("without --tighten-only CanaryOf = %+v, want %+v", got, tc.withoutIt)
			}
		})
	}
	if n := (CanarySpec{Count: 2, Percent: 20}).Of(30); n != 6 {
		t.Errorf("the larger of 2 and 20%% of 30 = %d, want 6", n)
	}
	if n := (CanarySpec{Count: 2, Percent: 20}).Of(5); n != 2 {
		t.Errorf("the larger of 2 and 20%% of 5 = %d, want 2", n)
	}
}

// Check moves a change on from its canaries' rollouts.
func TestCanaryCheck(t *testing.T) {
	rolling := Canary{Config: cmApp, Digest: "cm2", Bake: 30 * time.Second, Phase: CanaryRolling, Since: now,
		Members: []CanaryMember{{Ref: dep("a")}}}
	applied, _ := rolling.Applied(dep("a"), now)
	baking := Canary{Config: cmApp, Digest: "cm2", Bake: 30 * time.Second, Phase: CanaryBaking, Since: now, Members: applied.Members}
	complete := map[workload.Ref]rollout.Status{dep("a"): {State: rollout.Complete}}
	progressing := map[workload.Ref]rollout.Status{dep("a"): {State: rollout.Progressing, Reason: "0 of 1 updated replicas available"}}
	stalled := map[workload.Ref]rollout.Status{dep("a"): {State: rollout.Stalled, Reason: "progress deadline exceeded"}}
	for _, tc := range []struct {
		name    string
		c       Canary
		health  map[workload.Ref]rollout.Status
		at      time.Time
		timeout time.Duration
		want    CanaryPhase
		why     string
	}{
		{"not applied yet: rolling", rolling, nil, now.Add(time.Minute), 0, CanaryRolling, ""},
		{"not applied within the timeout: halted", rolling, map[workload.Ref]rollout.Status{dep("a"): {State: rollout.Progressing, Reason: "its reload waits (ReloadDeferred)"}},
			now.Add(2 * time.Minute), time.Minute, CanaryHalted, `Deployment "a" did not apply the change within 1m0s (--rollout-timeout): its reload waits (ReloadDeferred)`},
		{"not applied, within the timeout: rolling", rolling, nil, now.Add(time.Minute), time.Minute, CanaryRolling, ""},
		{"deleted before it applied: halted", rolling, map[workload.Ref]rollout.Status{dep("a"): {State: rollout.Stalled, Reason: "the workload was deleted"}},
			now.Add(time.Second), 0, CanaryHalted, "the workload was deleted"},
		{"progressing: rolling", applied, progressing, now.Add(time.Minute), 0, CanaryRolling, ""},
		{"complete: the bake starts", applied, complete, now.Add(time.Second), 0, CanaryBaking, ""},
		{"stalled: halted", applied, stalled, now.Add(time.Second), 0, CanaryHalted, `Deployment "a" stalled: progress deadline exceeded`},
		{"too long: halted", applied, progressing, now.Add(2 * time.Minute), time.Minute, CanaryHalted, "within 1m0s (--rollout-timeout)"},
		{"healthy in the bake: baking", baking, complete, now.Add(29 * time.Second), 0, CanaryBaking, ""},
		{"unhealthy in the bake: halted", baking, progressing, now.Add(10 * time.Second), 0, CanaryHalted, "turned unhealthy during the bake"},
		{"the bake ends healthy: passed", baking, complete, now.Add(30 * time.Second), 0, CanaryPassed, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, changed := tc.c.Check(tc.health, tc.timeout, tc.at)
			if got.Phase != tc.want || changed != (tc.want != tc.c.Phase) || !strings.Contains(got.Why, tc.why) {
				t.Errorf("Check = %s (changed %v, why %q), want %s with %q", got.Phase, changed, got.Why, tc.want, tc.why)
			}
		})
	}
	halted, _ := applied.Check(stalled, 0, now)
	if r, ok := halted.Resume(now); !ok || r.Phase != CanaryPassed || !r.Resumed {
		t.Errorf("Resume = %+v, want passed, resumed", r)
	}
}

// The canary stage: a change without its state is asked for and held; a
// canary rolls; the others wait, told once; a halt holds them, with no
// alert of their own; a passed change rolls; --dry-run waits for nothing.
func TestCanaryStage(t *testing.T) {
	self := func(i *Input) { i.Workload.Kind, i.Workload.Name = "Deployment", "web" }
	canaried := func(i *Input) { i.Sources[0].Annotations = map[string]string{keys.Canary: "1"} }
	state := func(phase CanaryPhase, canary string) func(*Input) {
		return func(i *Input) {
			i.Canaries = map[refs.Ref]Canary{cmApp: {Namespace: "shop", Config: cmApp, Digest: "cm2", Phase: phase, Since: now,
				Bake: time.Minute, Members: []CanaryMember{{Ref: dep(canary)}}, Why: `Deployment "other" stalled: progress deadline exceeded`}}
		}
	}
	changed := []func(*Input){both, self, canaried, digestOf(cmApp, "cm2")}
	for _, tc := range []struct {
		name    string
		opts    []func(*Input)
		rolls   bool
		asks    bool
		notices []string
		message string
	}{
		{"no state: asked for, held", changed, false, true, []string{"WaitingForCanary told"}, "waits for its canaries: Ripple chooses them"},
		{"the state of older data: asked for", append(changed, state(CanaryHalted, "other"), digestOf(cmApp, "cm3")), false, true,
			[]string{"WaitingForCanary told"}, `ConfigMap "app" cm3`},
		{"a canary rolls", append(changed, state(CanaryRolling, "web")), true, false, nil, ""},
		{"the others wait", append(changed, state(CanaryBaking, "other")), false, false, []string{"WaitingForCanary"},
			`Reload for ConfigMap "app" cm2 waits for its canary Deployment "other": baking until 2026-11-23T12:01:00Z`},
		{"told once", append(changed, state(CanaryRolling, "other"), func(i *Input) { i.Memory.Canary = "WaitingForCanary/ConfigMap/app=cm2" }),
			false, false, []string{"WaitingForCanary told"}, ""},
		{"halted: held, told", append(changed, state(CanaryHalted, "other")), false, false, []string{"RolloutHalted"},
			"ripple resume configmap/app -n shop"},
		{"halted canary: held too", append(changed, state(CanaryHalted, "web")), false, false, []string{"RolloutHalted"}, ""},
		{"passed: rolls", append(changed, state(CanaryPassed, "other")), true, false, nil, ""},
		{"dry-run waits for no canary", append(changed, func(i *Input) { i.DryRun = true }), false, false, []string{"WouldReload after write"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := For(in(tc.opts...))
			if p.Reloads() != tc.rolls || (len(p.CanaryAsks) > 0) != tc.asks {
				t.Fatalf("reloads %v, asks %+v; want %v, asks %v", p.Reloads(), p.CanaryAsks, tc.rolls, tc.asks)
			}
			if got := noticesOf(p); strings.Join(got, ",") != strings.Join(tc.notices, ",") {
				t.Fatalf("notices %q, want %q", got, tc.notices)
			}
			if len(p.Notices) > 0 {
				n := p.Notices[0]
				if !strings.Contains(n.Message, tc.message) || n.Alert != reason.None {
					t.Errorf("notice %+v, want a message with %q and no alert (the config's halt alerts)", n, tc.message)
				}
			}
		})
	}
}

// A canaried change no canary can be kept for fails closed: every
// workload holds it, told once per change with no alert of its own, and
// the config's notice alerts; --canary-unkept=roll rolls it with a
// Warning, as before; a change that is not canaried rolls either way.
func TestCanaryUnkept(t *testing.T) {
	const why = "ConfigRollouts, which keep canaries, are off (--config-rollouts=false)"
	unkept := func(i *Input) { i.CanaryUnkept = why }
	canaried := func(i *Input) { i.Sources[0].Annotations = map[string]string{keys.Canary: "1"} }
	rolls := func(i *Input) { i.UnkeptRolls = true }
	changed := []func(*Input){both, unkept, digestOf(cmApp, "cm2")}

	held := in(append(changed, canaried)...)
	p := For(held)
	if p.Reloads() || len(p.CanaryAsks) > 0 || len(p.Warnings) > 0 {
		t.Fatalf("held change: reloads %v, asks %+v, warnings %q; want held, nothing asked, no warning", p.Reloads(), p.CanaryAsks, p.Warnings)
	}
	if got := noticesOf(p); strings.Join(got, ",") != "CanaryUnkept" {
		t.Fatalf("notices %q, want one untold CanaryUnkept", got)
	}
	n := p.Notices[0]
	for _, part := range []string{`the change of ConfigMap "app" cm2 is canaried (annotation "ripple.dev/canary", or --canary)`, why, "--canary-unkept=roll"} {
		if !strings.Contains(n.Message, part) {
			t.Errorf("notice %q does not say %q", n.Message, part)
		}
	}
	if n.Alert != reason.None || len(n.Configs) != 1 || n.Configs[0] != cmApp {
		t.Errorf("notice %+v, want no alert of the workload's, about ConfigMap app", n)
	}
	if v, ok := p.Verdict(); !ok || v.Reason != reason.CanaryUnkept {
		t.Errorf("verdict %+v, want the hold", v)
	}
	onConfig, ok := ConfigNotice(n)
	if !ok || onConfig.Alert != reason.Warning || onConfig.Told || onConfig.Message != n.Message || onConfig.Once != n.Once {
		t.Errorf("ConfigNotice = %+v, %v; want the same words and once-key, with the Warning alert", onConfig, ok)
	}
	if _, ok := ConfigNotice(Notice{Reason: reason.WaitingForCanary}); ok {
		t.Error("a workload's own notice is told on the config")
	}

	// Told once: the memory keeps it while the change is held, and a new
	// change is told again.
	held.Memory = held.Planned(p)
	if again := For(held); again.Reloads() || strings.Join(noticesOf(again), ",") != "CanaryUnkept told" {
		t.Errorf("the next plan: reloads %v, notices %q; want held, told already", again.Reloads(), noticesOf(again))
	}
	digestOf(cmApp, "cm3")(&held)
	if next := For(held); strings.Join(noticesOf(next), ",") != "CanaryUnkept" {
		t.Errorf("a newer change: notices %q, want it told", noticesOf(next))
	}

	p = For(in(append(changed, canaried, rolls)...))
	if !p.Reloads() || strings.Join(noticesOf(p), ",") != "InvalidAnnotation" || len(p.Warnings) != 1 ||
		!strings.Contains(p.Warnings[0], why+": it rolls without a canary (--canary-unkept=roll)") {
		t.Errorf("--canary-unkept=roll: reloads %v, notices %q, warnings %q; want a rollout with one Warning naming why", p.Reloads(), noticesOf(p), p.Warnings)
	}
	for _, opts := range [][]func(*Input){changed, append(changed, rolls)} {
		if p := For(in(opts...)); !p.Reloads() || len(p.Notices) > 0 || len(p.Warnings) > 0 {
			t.Errorf("a change that is not canaried: reloads %v, notices %q, warnings %q; want a plain rollout", p.Reloads(), noticesOf(p), p.Warnings)
		}
	}
}

// The config's own notice of a change that halted alerts; one that
// passed does not; a baking one tells nothing.
func TestCanaryOutcome(t *testing.T) {
	c := Canary{Namespace: "shop", Config: cmApp, Digest: "cm2", Phase: CanaryHalted, Why: `Deployment "a" stalled`, Members: []CanaryMember{{Ref: dep("a")}}}
	n, ok := CanaryOutcome(c, 49)
	if !ok || n.Reason != reason.RolloutHalted || n.Alert != reason.Danger || !strings.Contains(n.Message, `49 other workloads hold it`) {
		t.Errorf("halted: %+v, want a RolloutHalted that alerts and counts the held workloads", n)
	}
	c.Phase, c.Bake = CanaryPassed, time.Minute
	if n, ok := CanaryOutcome(c, 49); !ok || n.Reason != reason.CanaryPassed || n.Alert != reason.None {
		t.Errorf("passed: %+v", n)
	}
	c.Phase = CanaryBaking
	if _, ok := CanaryOutcome(c, 49); ok {
		t.Error("a baking change tells nothing")
	}
}

// The gates beside the status judge a baking change: the first that fails
// halts it naming the gate; one that cannot tell holds the pass, and
// halts it once it has not told for the timeout past the bake.
func TestCanaryJudged(t *testing.T) {
	baking := Canary{Config: cmApp, Digest: "cm2", Bake: 30 * time.Second, Phase: CanaryBaking, Since: now}
	c, held := baking.Judged([]Verdict{{Gate: GateStatus}, {Gate: GatePods, Hold: "cannot watch"}}, time.Minute, now.Add(31*time.Second))
	if c.Phase != CanaryBaking || !held {
		t.Errorf("a hold: %s, held %v; want baking, held", c.Phase, held)
	}
	c, _ = baking.Judged([]Verdict{{Gate: GatePods, Fail: `Deployment "a": pod a-1 container app restarted`}, {Gate: GateStatus, Fail: "later"}}, time.Minute, now.Add(time.Second))
	if c.Phase != CanaryHalted || c.Gate != GatePods || c.Why != `the pods gate: Deployment "a": pod a-1 container app restarted` {
		t.Errorf("a failure: %+v, want halted by the pods gate", c)
	}
	c, _ = baking.Judged([]Verdict{{Gate: GatePods, Hold: "cannot watch"}}, time.Minute, now.Add(91*time.Second))
	if c.Phase != CanaryHalted || c.Gate != GatePods || !strings.Contains(c.Why, "could not tell for 1m0s past the bake") {
		t.Errorf("a hold past the timeout: %+v, want halted by the pods gate", c)
	}
	if c, _ := (Canary{Phase: CanaryRolling}).Judged([]Verdict{{Gate: GatePods, Fail: "x"}}, 0, now); c.Phase != CanaryRolling {
		t.Errorf("a rolling change judged: %s, want the gates to judge only the bake", c.Phase)
	}
	if stalled, _ := baking.Check(map[workload.Ref]rollout.Status{}, 0, now); stalled.Gate != "" {
		t.Errorf("no halt, gate %q", stalled.Gate)
	}
}

// A record of an earlier Ripple is acted on only when it is the config's
// and its canaries are workloads of the config's namespace.
func TestParseCanaryRecordChecksItsCanaries(t *testing.T) {
	rec := func(members ...CanaryMember) string {
		b, _ := json.Marshal(Canary{Namespace: "shop", Config: cmApp, Digest: "cm2", Phase: CanaryHalted, Since: now, Members: members})
		return string(b)
	}
	if _, err := ParseCanaryRecord(rec(CanaryMember{Ref: dep("a")}), "shop", cmApp); err != nil {
		t.Errorf("a record of the config: %v", err)
	}
	for name, data := range map[string]string{
		"a canary of another namespace": rec(CanaryMember{Ref: workload.Ref{Kind: "Deployment", Namespace: "bank", Name: "a"}}),
		"a canary without a kind":       rec(CanaryMember{Ref: workload.Ref{Namespace: "shop", Name: "a"}}),
		"another config":                strings.Replace(rec(), `"app"`, `"other"`, 1),
	} {
		if _, err := ParseCanaryRecord(data, "shop", cmApp); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
