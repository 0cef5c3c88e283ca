package plan

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ripple-dev/ripple/internal/canary"
	"github.com/ripple-dev/ripple/internal/reason"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/strategy"
)

// noticesOf are p's notices as "Reason told|untold[ after write]".
func noticesOf(p Plan) []string {
	var out []string
	for _, n := range p.Notices {
		s := string(n.Reason)
		if n.Told {
			s += " told"
		}
		if n.AfterWrite {
			s += " after write"
		}
		out = append(out, s)
	}
	return out
}

// Each stage tells what it decided, once: the notice, whether the memory
// says it was told, and whether it waits for the write.
func TestStagesTellTheirNotices(t *testing.T) {
	dry := func(i *Input) { i.DryRun = true }
	named := func(i *Input) { i.Workload.Kind, i.Workload.Name = "Deployment", "web" }
	changed := []func(*Input){both, named, digestOf(cmApp, "cm2")}
	for _, tc := range []struct {
		name string
		opts []func(*Input)
		want []string
		// message is a part of the first notice's message.
		message string
		alert   reason.Level
	}{
		{"a change rolls: nothing to tell before the write", changed, nil, "", reason.None},
		{"manual: pending once, with where the policy is set, since when and how to approve", append(changed, manual), []string{"ReloadPending"},
			`Reload pending approval (reload policy manual, from the workload): changes in ConfigMap "app" cm2, waiting since ` +
				now.UTC().Format(time.RFC3339) + "; approve with `ripple approve deployment/web -n shop`", reason.Warning},
		{"manual, already told", append(changed, manual, remember(AwaitingState{ID: "ConfigMap/app=cm2;", Since: now})), []string{"ReloadPending told"},
			`changes in ConfigMap "app" cm2`, reason.Warning},
		{"notify: would reload, alerted", append(changed, annotate(keys.ReloadPolicy, "notify")), []string{"WouldReload after write"},
			"(reload policy notify)", reason.Good},
		{"dry-run: would reload, not alerted", append(changed, dry), []string{"WouldReload after write"}, "(--dry-run)", reason.None},
		{"a closed window defers, once", append(changed, reloadWindow("Sat 00:00-01:00 UTC")), []string{"ReloadDeferred"},
			`Reload for changes in ConfigMap "app" deferred: the reload window "Sat 00:00-01:00 UTC" (from the workload) is closed`, reason.Warning},
		{"an invalid window defers and warns", append(changed, reloadWindow("Someday")), []string{"ReloadDeferred", "InvalidAnnotation"},
			"the reload window is invalid", reason.Warning},
		{"an invalid settle window warns on every plan", append(changed, annotate(keys.SettleWindow, "soon")), []string{"InvalidAnnotation"},
			`"soon"`, reason.None},
		{"the settle window of the annotation: told on every plan, naming it", append(changed, annotate(keys.SettleWindow, "1m")), []string{"SettleWindow"},
			`Changes in ConfigMap "app", last written at ` + now.UTC().Format(time.RFC3339) + `, wait for the settle window of 1m0s, set by annotation "ripple.dev/settle-window": "1m": Ripple reloads at ` +
				now.Add(time.Minute).UTC().Format(time.RFC3339), reason.None},
		{"the settle window of the flag", append(changed, func(i *Input) { i.SettleWindow = 5 * time.Second }), []string{"SettleWindow"},
			"wait for the settle window of 5s, set by --settle-window: Ripple reloads at " + now.Add(5*time.Second).UTC().Format(time.RFC3339), reason.None},
		{"an exclude of Secrets over the bounds warns, naming it, and the ConfigMap's change still rolls",
			append(changed, annotate(keys.SecretExclude, strings.Repeat("other,", 101))), []string{"InvalidAnnotation"},
			`annotation "secrets.exclude.reloader.stakater.com/reload": 101 items, more than 100`, reason.None},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := For(in(tc.opts...))
			// An invalid annotation never holds the change up by itself.
			if p.Reloads() != (tc.want == nil || tc.want[0] == "InvalidAnnotation") {
				t.Errorf("the plan rolls: %v", p.Reloads())
			}
			if got := noticesOf(p); strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Fatalf("notices %q, want %q", got, tc.want)
			}
			if len(p.Notices) > 0 && (!strings.Contains(p.Notices[0].Message, tc.message) || p.Notices[0].Alert != tc.alert) {
				t.Errorf("notice %+v, want a message with %q and alert %d", p.Notices[0], tc.message, tc.alert)
			}
		})
	}
}

// The write's notice says how it ended.
func TestWritten(t *testing.T) {
	p := For(in(both, digestOf(cmApp, "cm2")))
	if !p.Reloads() {
		t.Fatal("the plan does not roll")
	}
	for _, tc := range []struct {
		skipped string
		err     error
		want    reason.Reason
		message string
	}{
		{"", nil, reason.Reloaded, `Reloaded for changes in ConfigMap "app" (strategy env-vars)`},
		{"the CronJob is suspended", nil, reason.ReloadSkipped, `Changes in ConfigMap "app" not reloaded: the CronJob is suspended`},
		{"", errors.New("denied"), reason.ReloadFail, `Reload for changes in ConfigMap "app" failed: denied`},
	} {
		n, ok := p.Written("strategy env-vars", tc.skipped, tc.err)
		if !ok || n.Reason != tc.want || n.Message != tc.message {
			t.Errorf("Written(%q, %v) = %+v, want %s %q", tc.skipped, tc.err, n, tc.want, tc.message)
		}
	}
	if _, ok := For(in(both)).Written("", "", nil); ok {
		t.Error("a plan that does not roll has a write notice")
	}
}

// A hold is told when it begins; the hold's end when it ends.
func TestHoldNotices(t *testing.T) {
	flap := func(i *Input) { i.Flap = Flap{Threshold: 1, Window: time.Minute, Quiet: 10 * time.Second} }
	i := in(both, flap, digestOf(cmApp, "cm2"))
	i.Storm = Storm{ID: "ConfigMap/app=cm1;", Seen: []time.Time{now.Add(-time.Second)}}
	p := For(i)
	if got := noticesOf(p); strings.Join(got, ",") != "ReloadHeld" || !strings.Contains(p.Notices[0].Message, "changed 2 times within 1m0s") {
		t.Fatalf("notices %q %+v, want an untold ReloadHeld", got, p.Notices)
	}
	i.Memory = i.Planned(p)
	if got := noticesOf(For(i)); strings.Join(got, ",") != "ReloadHeld told" {
		t.Errorf("the hold again: notices %q, want it told", got)
	}
	i.Now = now.Add(time.Minute)
	if got := noticesOf(For(i)); strings.Join(got, ",") != "ReloadResumed" {
		t.Errorf("quiet: notices %q, want ReloadResumed", got)
	}
}

// A revert and a hold after MaxAttempts rollouts are the same reason, told
// apart by their messages, which their Events and alerts carry.
func TestRevertAndHeldReadApart(t *testing.T) {
	owner := func(i *Input) { i.Workload.LastWriter = `"shop-operator" (update)` }
	reverted := For(in(recorded(map[string]string{"ConfigMap/app": "cm3", "Secret/db": "s1"}), digestOf(cmApp, "cm3"),
		wroteOnTemplate("ConfigMap/app=cm3;"), owner))
	held := in(recorded(map[string]string{"ConfigMap/app": "cm1", "Secret/db": "s1"}), envVar(cmApp, "cm2"), digestOf(cmApp, "cm3"), owner)
	var p Plan
	for range MaxAttempts + 1 {
		p = For(held)
		held.Memory = held.Planned(p)
		if p.Reloads() {
			held.Memory = held.Wrote(p, Write{}, now)
		}
	}
	for _, tc := range []struct {
		p      Plan
		prefix string
	}{
		{reverted, `Reload reverted by "shop-operator" (update): the pod template no longer carries ConfigMap "app" cm3.`},
		{p, `Reload held: Ripple rolled ConfigMap "app" 2 times and "shop-operator" (update) did not keep it.`},
	} {
		n, ok := tc.p.Notice(reason.ReloadReverted)
		if !ok || n.Told || n.Alert != reason.Warning || !strings.HasPrefix(n.Message, tc.prefix) {
			t.Errorf("notice %+v, want an untold warning starting %q", n, tc.prefix)
		}
	}
}

// A paused workload's notice says who paused it and, when Ripple did,
// when it resumes it: its paused-at time plus the pause period, or now
// when either cannot be read.
func TestPauseNotice(t *testing.T) {
	pausable := func(paused bool) func(*Input) {
		return func(i *Input) { i.Workload.Pausable, i.Workload.Paused = true, paused }
	}
	at := now.Add(-10 * time.Minute).Format(time.RFC3339)
	for _, tc := range []struct {
		name    string
		opts    []func(*Input)
		ok      bool
		until   time.Time
		message string
	}{
		{"a kind that cannot pause", []func(*Input){annotate(keys.PausedAt, at)}, false, time.Time{}, ""},
		{"not paused", []func(*Input){pausable(false), annotate(keys.PausedAt, at)}, false, time.Time{}, ""},
		{"paused by its owner", []func(*Input){pausable(true)}, true, time.Time{}, "spec.paused is set, not by Ripple"},
		{"paused by Ripple for its period", []func(*Input){pausable(true), annotate(keys.PausedAt, at), annotate(keys.PausePeriod, "1h")},
			true, now.Add(50 * time.Minute), "paused by Ripple at " + at + ` for 1h0m0s ("` + keys.PausePeriod + `"): the reloads of the period roll out once when Ripple resumes it at 2026-11-23T12:50:00Z`},
		{"paused by Ripple, the period invalid", []func(*Input){pausable(true), annotate(keys.PausedAt, at), annotate(keys.PausePeriod, "-1h")},
			true, now, "without a valid"},
		{"paused by Ripple, its time unreadable", []func(*Input){pausable(true), annotate(keys.PausedAt, "noon"), annotate(keys.PausePeriod, "1h")},
			true, now, `("` + keys.PausedAt + `" is "noon"), without a valid`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, until, ok := PauseNotice(in(tc.opts...))
			if ok != tc.ok || !until.Equal(tc.until) || !strings.Contains(n.Message, tc.message) || (ok && n.Reason != reason.Paused) {
				t.Errorf("%v until %s: %+v; want %v until %s, saying %q", ok, until, n, tc.ok, tc.until, tc.message)
			}
		})
	}
}

// No notice shows a digest of a Secret's data (Events are readable with
// the built-in view role); a ConfigMap's still names its version.
func TestNoticesHoldNoSecretDigest(t *testing.T) {
	const sum = "0123456789abcdef0123456789abcdef01234567"
	secret, cm := refs.Ref{Kind: refs.Secret, Name: "db"}, refs.Ref{Kind: refs.ConfigMap, Name: "app"}
	got := withDigests([]strategy.Change{{Ref: secret, Hash: sum}, {Ref: cm, Hash: sum}})
	if got[0] != `Secret "db"` || got[1] != `ConfigMap "app" 0123456789ab` {
		t.Errorf("withDigests: %q", got)
	}
	for _, phase := range []canary.Phase{canary.Halted, canary.Passed} {
		c := canary.State{Namespace: "ns", Config: secret, Digest: sum, Phase: phase, Why: "stalled"}
		for _, n := range []Notice{canaryNotice(c, ""), choosingNotice(secret, sum)} {
			if strings.Contains(n.Message, sum[:8]) {
				t.Errorf("%s: %q holds the Secret's digest", n.Reason, n.Message)
			}
		}
		if n, ok := CanaryOutcome(c, 2); !ok || strings.Contains(n.Message, sum[:8]) {
			t.Errorf("CanaryOutcome %s: %q (%v) holds the Secret's digest", phase, n.Message, ok)
		}
		c.Config = cm
		if n, _ := CanaryOutcome(c, 2); !strings.Contains(n.Message, "Change 0123456789ab of ConfigMap") {
			t.Errorf("CanaryOutcome %s of a ConfigMap: %q, want its digest", phase, n.Message)
		}
	}
	n := supersededNotice(&Approving{Stale: []Approved{{Config: "Secret/db", Digest: sum}}})
	if strings.Contains(n.Message, sum[:8]) {
		t.Errorf("ApprovalSuperseded: %q holds the Secret's digest", n.Message)
	}
}
