package plan

import (
	"strings"
	"testing"
	"time"

	"github.com/ripple-dev/ripple/internal/canary"
	"github.com/ripple-dev/ripple/internal/reason"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/workload"
)

// The config's annotation beats its Namespace's, which beats the flag's;
// an invalid value is named and the next level applies.
func TestCanaryOf(t *testing.T) {
	s := Settings{Keys: keys, Canary: canary.Spec{Count: 2, Bake: canary.DefaultBake}}
	src := Source{Ref: cmApp, Annotations: map[string]string{keys.Canary: "10%", keys.CanaryBake: "soon"}}
	got, problems := CanaryOf(src, map[string]string{keys.Canary: "1", keys.CanaryBake: "1m"}, s)
	if got != (canary.Spec{Percent: 10, Bake: time.Minute}) {
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
	// A config of another namespace is not canaried for the workload,
	// whatever the config, its Namespace or the flag say.
	shared := Source{Ref: refs.Ref{Kind: refs.ConfigMap, Name: "mesh/ca"}, Annotations: map[string]string{keys.Canary: "1"}}
	if got, problems := CanaryOf(shared, map[string]string{keys.Canary: "1"}, s); got.On() || problems != nil {
		t.Errorf("CanaryOf a shared config = %+v, %q, want none", got, problems)
	}
}

func dep(name string) workload.Ref {
	return workload.Ref{Kind: "Deployment", Namespace: "shop", Name: name}
}

// With --tighten-only, a config may only tighten the canary its floor (its
// Namespace's, else the flags') sets: not turn it off, not shorten the
// bake; the larger canary of the two is taken. Without it, the config's
// own values win.
func TestCanaryOfTightenOnly(t *testing.T) {
	s := Settings{Keys: keys, TightenOnly: true, Canary: canary.Spec{Count: 1, Bake: time.Minute}}
	for _, tc := range []struct {
		name      string
		ns, cfg   map[string]string
		want      canary.Spec
		problems  []string
		withoutIt canary.Spec
	}{
		{"turned off: the flag's", nil, map[string]string{keys.Canary: "0", keys.CanaryBake: "0s"},
			canary.Spec{Count: 1, Bake: time.Minute}, []string{`"0" would turn off the canary 1`, `"0s" would shorten the bake 1m0s`}, canary.Spec{}},
		{"turned off: the Namespace's", map[string]string{keys.Canary: "20%", keys.CanaryBake: "5m"}, map[string]string{keys.Canary: "0"},
			canary.Spec{Percent: 20, Bake: 5 * time.Minute}, []string{`"0" would turn off the canary 20%`}, canary.Spec{Bake: 5 * time.Minute}},
		{"a count against a percentage: the larger", map[string]string{keys.Canary: "20%"}, map[string]string{keys.Canary: "2", keys.CanaryBake: "2m"},
			canary.Spec{Count: 2, Percent: 20, Bake: 2 * time.Minute}, nil, canary.Spec{Count: 2, Bake: 2 * time.Minute}},
		{"no floor: the config's", map[string]string{keys.Canary: "0"}, map[string]string{keys.Canary: "3"},
			canary.Spec{Count: 3, Bake: time.Minute}, nil, canary.Spec{Count: 3, Bake: time.Minute}},
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
	if n := (canary.Spec{Count: 2, Percent: 20}).Of(30); n != 6 {
		t.Errorf("the larger of 2 and 20%% of 30 = %d, want 6", n)
	}
	if n := (canary.Spec{Count: 2, Percent: 20}).Of(5); n != 2 {
		t.Errorf("the larger of 2 and 20%% of 5 = %d, want 2", n)
	}
}

// The canary stage: a change without its state is asked for and held; a
// canary rolls; the others wait, told once; a halt holds them, with no
// alert of their own; a passed change rolls; --dry-run waits for nothing.
func TestCanaryStage(t *testing.T) {
	self := func(i *Input) { i.Workload.Kind, i.Workload.Name = "Deployment", "web" }
	canaried := func(i *Input) { i.Sources[0].Annotations = map[string]string{keys.Canary: "1"} }
	state := func(phase canary.Phase, member string) func(*Input) {
		return func(i *Input) {
			i.Canaries = map[refs.Ref]canary.State{cmApp: {Namespace: "shop", Config: cmApp, Digest: "cm2", Phase: phase, Since: now,
				Bake: time.Minute, Members: []canary.Member{{Ref: dep(member)}}, Why: `Deployment "other" stalled: progress deadline exceeded`}}
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
		{"the state of older data: asked for", append(changed, state(canary.Halted, "other"), digestOf(cmApp, "cm3")), false, true,
			[]string{"WaitingForCanary told"}, `ConfigMap "app" cm3`},
		{"a canary rolls", append(changed, state(canary.Rolling, "web")), true, false, nil, ""},
		{"the others wait", append(changed, state(canary.Baking, "other")), false, false, []string{"WaitingForCanary"},
			`Reload for ConfigMap "app" cm2 waits for its canary Deployment "other": baking until 2026-11-23T12:01:00Z`},
		{"told once", append(changed, state(canary.Rolling, "other"), func(i *Input) { i.Memory.Canary = "WaitingForCanary/ConfigMap/app=cm2" }),
			false, false, []string{"WaitingForCanary told"}, ""},
		{"halted: held, told", append(changed, state(canary.Halted, "other")), false, false, []string{"RolloutHalted"},
			"ripple resume configmap/app -n shop"},
		{"halted canary: held too", append(changed, state(canary.Halted, "web")), false, false, []string{"RolloutHalted"}, ""},
		{"passed: rolls", append(changed, state(canary.Passed, "other")), true, false, nil, ""},
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
	c := canary.State{Namespace: "shop", Config: cmApp, Digest: "cm2", Phase: canary.Halted, Why: `Deployment "a" stalled`, Members: []canary.Member{{Ref: dep("a")}}}
	n, ok := CanaryOutcome(c, 49)
	if !ok || n.Reason != reason.RolloutHalted || n.Alert != reason.Danger || !strings.Contains(n.Message, `49 other workloads hold it`) {
		t.Errorf("halted: %+v, want a RolloutHalted that alerts and counts the held workloads", n)
	}
	c.Phase, c.Bake = canary.Passed, time.Minute
	if n, ok := CanaryOutcome(c, 49); !ok || n.Reason != reason.CanaryPassed || n.Alert != reason.None {
		t.Errorf("passed: %+v", n)
	}
	c.Phase = canary.Baking
	if _, ok := CanaryOutcome(c, 49); ok {
		t.Error("a baking change tells nothing")
	}
}
