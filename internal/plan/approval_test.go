package plan

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/strategy"
)

func approve(changes ...Approved) func(*Input) {
	b, _ := json.Marshal(Approval{Changes: changes, By: "alice", At: now.Add(-time.Minute)})
	return annotate(keys.Approval, string(b))
}

func manual(i *Input) { i.Workload.Annotations[keys.ReloadPolicy] = "manual" }

func awaitingOf(p Plan) []string {
	if p.Awaiting == nil {
		return nil
	}
	var out []string
	for _, c := range p.Awaiting.Changes {
		out = append(out, c.Ref.String()+"="+c.Hash)
	}
	return out
}

func TestPolicyPrecedence(t *testing.T) {
	for _, tc := range []struct {
		name            string
		opts            []func(*Input)
		policy          Policy
		from, warning   string
		rolls, wouldRun bool
	}{
		{name: "default is auto: rolls as Reloader does", policy: Auto, from: FromFlag, rolls: true},
		{name: "the flag", opts: []func(*Input){func(i *Input) { i.ReloadPolicy = "notify" }}, policy: Notify, from: FromFlag, wouldRun: true},
		{name: "the namespace over the flag", opts: []func(*Input){func(i *Input) {
			i.ReloadPolicy = "notify"
			i.Workload.NamespaceAnnotations = map[string]string{keys.ReloadPolicy: "manual"}
		}}, policy: Manual, from: FromNamespace},
		{name: "the pod template over the namespace", opts: []func(*Input){func(i *Input) {
			i.Workload.NamespaceAnnotations = map[string]string{keys.ReloadPolicy: "manual"}
			i.Workload.Template.Annotations = map[string]string{keys.ReloadPolicy: "notify"}
		}}, policy: Notify, from: FromTemplate, wouldRun: true},
		{name: "the workload over all; empty is auto", opts: []func(*Input){annotate(keys.ReloadPolicy, ""), func(i *Input) {
			i.Workload.NamespaceAnnotations = map[string]string{keys.ReloadPolicy: "manual"}
		}}, policy: Auto, from: FromWorkload, rolls: true},
		{name: "invalid on the workload: a warning, and it waits (manual)", opts: []func(*Input){annotate(keys.ReloadPolicy, "sometimes")},
			policy: Manual, from: FromWorkload, warning: `annotation "ripple.dev/reload-policy": "sometimes" is not a reload policy`},
		{name: "invalid on the namespace: the warning says so", opts: []func(*Input){func(i *Input) {
			i.Workload.NamespaceAnnotations = map[string]string{keys.ReloadPolicy: "yes"}
		}}, policy: Manual, from: FromNamespace, warning: `annotation "ripple.dev/reload-policy" on the namespace`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := For(in(append([]func(*Input){both, digestOf(cmApp, "cm2")}, tc.opts...)...))
			if p.Policy != tc.policy || p.PolicyFrom != tc.from {
				t.Errorf("policy %q from %q, want %q from %q", p.Policy, p.PolicyFrom, tc.policy, tc.from)
			}
			if p.Reloads() != tc.rolls || p.WouldReload != tc.wouldRun {
				t.Errorf("reloads %v, would %v; want %v, %v", p.Reloads(), p.WouldReload, tc.rolls, tc.wouldRun)
			}
			if got := strings.Join(p.Warnings, "\n"); (tc.warning == "") != (got == "") || !strings.Contains(got, tc.warning) {
				t.Errorf("warnings %q, want %q", got, tc.warning)
			}
			if waits := p.Awaiting != nil; waits != (tc.policy == Manual) {
				t.Errorf("awaiting %v, want it only under manual", p.Awaiting)
			}
		})
	}
}

func TestNotifyIsADryRunOfOneWorkload(t *testing.T) {
	notify := annotate(keys.ReloadPolicy, "notify")
	p := For(in(notify, recorded(map[string]string{"ConfigMap/app": "cm1"}), digestOf(cmApp, "cm2")))
	if !p.WouldReload || p.Reloads() {
		t.Fatalf("would %v, reloads %v: want a WouldReload only", p.WouldReload, p.Reloads())
	}
	if got := recordOf(t, p); !mapsEqual(got, map[string]string{"ConfigMap/app": "cm1", "Secret/db": "s1"}) {
		t.Errorf("record %v: want the baseline only, the ConfigMap at its applied digest", got)
	}
	// Switched to auto: the held-back change rolls once.
	if p := For(in(recorded(map[string]string{"ConfigMap/app": "cm1", "Secret/db": "s1"}), digestOf(cmApp, "cm2"))); !p.Reloads() {
		t.Fatal("after notify, the held-back change does not roll")
	}
}

func TestManualApproval(t *testing.T) {
	seen := now.Add(-10 * time.Minute)
	for _, tc := range []struct {
		name string
		opts []func(*Input)
		// rolled are the changes written on the template; waiting those
		// still awaiting an approval; stale the approved configs dropped.
		rolled, waiting, stale []string
		record                 map[string]string // nil: none written
		dropped, began         bool
		warning                string
	}{
		{
			name:    "a change waits for an approval: no template write, reported once",
			opts:    []func(*Input){both, digestOf(cmApp, "cm2")},
			waiting: []string{"ConfigMap/app=cm2"}, began: true,
		},
		{
			name:    "still waiting: not reported again, since kept",
			opts:    []func(*Input){both, digestOf(cmApp, "cm2"), remember(AwaitingState{ID: "ConfigMap/app=cm2;", Since: seen})},
			waiting: []string{"ConfigMap/app=cm2"},
		},
		{
			name:   "an approval of the current change set rolls it, records it and drops the approval",
			opts:   []func(*Input){both, digestOf(cmApp, "cm2"), approve(Approved{Config: "ConfigMap/app", Digest: "cm2"})},
			rolled: []string{"ConfigMap/app=cm2"}, dropped: true,
			record: map[string]string{"ConfigMap/app": "cm2", "Secret/db": "s1"},
		},
		{
			name: "a superseded approval is not applied, still waits, and is dropped",
			opts: []func(*Input){both, digestOf(cmApp, "cm3"), approve(Approved{Config: "ConfigMap/app", Digest: "cm2"}),
				remember(AwaitingState{ID: "ConfigMap/app=cm2;", Since: seen})},
			waiting: []string{"ConfigMap/app=cm3"}, stale: []string{"ConfigMap/app=cm2"}, dropped: true, began: true,
		},
		{
			name: "a partial approval rolls exactly the approved configs; the rest waits",
			opts: []func(*Input){both, digestOf(cmApp, "cm2"), digestOf(secDB, "s2"), approve(Approved{Config: "ConfigMap/app", Digest: "cm2"}),
				remember(AwaitingState{ID: "ConfigMap/app=cm2;", Since: seen})},
			rolled: []string{"ConfigMap/app=cm2"}, waiting: []string{"Secret/db=s2"}, dropped: true, began: true,
			record: map[string]string{"ConfigMap/app": "cm2", "Secret/db": "s1"},
		},
		{
			name:  "an approval of nothing pending is dropped and reported",
			opts:  []func(*Input){both, approve(Approved{Config: "ConfigMap/app", Digest: "cm1"})},
			stale: []string{"ConfigMap/app=cm1"}, dropped: true,
		},
		{
			name:    "a malformed approval: a warning naming the annotation; nothing rolls, it stays",
			opts:    []func(*Input){both, digestOf(cmApp, "cm2"), annotate(keys.Approval, "yes please")},
			waiting: []string{"ConfigMap/app=cm2"}, began: true,
			warning: `annotation "ripple.dev/approval": not an approval`,
		},
		{
			name:    "a new config's baseline is recorded while the change waits",
			opts:    []func(*Input){recorded(map[string]string{"ConfigMap/app": "cm1"}), digestOf(cmApp, "cm2")},
			waiting: []string{"ConfigMap/app=cm2"}, began: true,
			record: map[string]string{"ConfigMap/app": "cm1", "Secret/db": "s1"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			i := in(append([]func(*Input){manual}, tc.opts...)...)
			p := For(i)
			if got := changed(p); !slices.Equal(got, tc.rolled) {
				t.Errorf("changes %v, want %v", got, tc.rolled)
			}
			var written []string
			for _, c := range tc.rolled {
				ref, sum, _ := strings.Cut(c, "=")
				if got, _ := envOf(p, refOf(ref)); got != sum {
					t.Errorf("template shows %s=%q, want %q", ref, got, sum)
				}
				written = append(written, ref)
			}
			if (p.Update.Template != nil) != (len(written) > 0) {
				t.Errorf("template written %v, want %v", p.Update.Template != nil, len(written) > 0)
			}
			if got := awaitingOf(p); !slices.Equal(got, tc.waiting) {
				t.Errorf("awaiting %v, want %v", got, tc.waiting)
			}
			if p.Awaiting != nil && p.Awaiting.Began != tc.began {
				t.Errorf("began %v, want %v", p.Awaiting.Began, tc.began)
			}
			if p.Awaiting != nil && !tc.began && !p.Awaiting.Since.Equal(seen) {
				t.Errorf("since %v, want %v", p.Awaiting.Since, seen)
			}
			var stale []string
			if p.Approving != nil {
				for _, a := range p.Approving.Stale {
					stale = append(stale, a.Config+"="+a.Digest)
				}
			}
			if !slices.Equal(stale, tc.stale) {
				t.Errorf("stale %v, want %v", stale, tc.stale)
			}
			v, ok := p.Update.Annotations[keys.Approval]
			if dropped := ok && v == nil; dropped != tc.dropped {
				t.Errorf("approval dropped %v, want %v", dropped, tc.dropped)
			}
			if got := recordOf(t, p); !mapsEqual(got, tc.record) {
				t.Errorf("record %v, want %v", got, tc.record)
			}
			if got := strings.Join(p.Warnings, "\n"); (tc.warning == "") != (got == "") || !strings.Contains(got, tc.warning) {
				t.Errorf("warnings %q, want %q", got, tc.warning)
			}
		})
	}
}

// TestApprovedThenLaterChange: after an approved rollout, a later change
// waits for an approval of its own.
func TestApprovedThenLaterChange(t *testing.T) {
	p := For(in(manual, both, digestOf(cmApp, "cm2"), approve(Approved{Config: "ConfigMap/app", Digest: "cm2"})))
	if !p.Reloads() {
		t.Fatal("the approved change does not roll")
	}
	m := Memory{}.Planned(p).Wrote(p, Write{}, now)
	// The write left the template at cm2, without the approval.
	next := in(manual, recorded(map[string]string{"ConfigMap/app": "cm2", "Secret/db": "s1"}), envVar(cmApp, "cm2"), digestOf(cmApp, "cm3"))
	next.Memory, next.Now = m, now.Add(time.Minute)
	p = For(next)
	if p.Reloads() || p.Awaiting == nil || !p.Awaiting.Began {
		t.Fatalf("reloads %v, awaiting %+v: want the later change waiting, reported", p.Reloads(), p.Awaiting)
	}
}

func TestApprovalNow(t *testing.T) {
	b, _ := json.Marshal(ApprovalOf(Awaiting{Changes: []strategy.Change{{Ref: cmApp, Hash: "cm2"}}}, "bob", now, true))
	p := For(in(manual, both, digestOf(cmApp, "cm2"), annotate(keys.Approval, string(b))))
	if p.Approving == nil || !p.Approving.Now || p.Approving.By != "bob" || !p.Reloads() {
		t.Fatalf("approving %+v, reloads %v: want bob's emergency approval applied", p.Approving, p.Reloads())
	}
}

func TestDryRunWinsOverManual(t *testing.T) {
	p := For(in(manual, both, digestOf(cmApp, "cm2"), approve(Approved{Config: "ConfigMap/app", Digest: "cm2"}), func(i *Input) { i.DryRun = true }))
	if p.Reloads() || !p.WouldReload || p.Awaiting != nil {
		t.Fatalf("reloads %v, would %v, awaiting %v: --dry-run rolls nothing and holds nothing", p.Reloads(), p.WouldReload, p.Awaiting)
	}
}

func TestAwaitingMemory(t *testing.T) {
	p := For(in(manual, both, digestOf(cmApp, "cm2")))
	m := Memory{}.Planned(p)
	if m.Awaiting.ID == "" || m.IsZero() {
		t.Fatalf("memory %+v: want the waiting change set kept", m)
	}
	if m.LeftScope().Awaiting != (AwaitingState{}) {
		t.Error("a workload out of scope still counts as waiting")
	}
	// A plan that waits for its settle window keeps what waits.
	if got := m.Planned(Plan{Wait: time.Second}); got.Awaiting != m.Awaiting {
		t.Errorf("settling forgot the waiting change set: %+v", got.Awaiting)
	}
	// Approved and rolled: nothing waits.
	p = For(in(manual, both, digestOf(cmApp, "cm2"), approve(Approved{Config: "ConfigMap/app", Digest: "cm2"})))
	if got := m.Planned(p); got.Awaiting != (AwaitingState{}) {
		t.Errorf("after the approval: %+v", got.Awaiting)
	}
}

func remember(a AwaitingState) func(*Input) {
	return func(i *Input) { i.Awaiting = a }
}

func refOf(s string) refs.Ref {
	kind, name, _ := strings.Cut(s, "/")
	return refs.Ref{Kind: refs.Kind(kind), Name: name}
}

// A change set waiting for an approval keeps no settle state, so a new
// change to the workload settles in a window of its own.
func TestWaitingChangeSetSettled(t *testing.T) {
	window := func(i *Input) { i.SettleWindow = time.Second }
	first := in(manual, window, both, digestOf(cmApp, "cm2"))
	first.Memory = Memory{}.Notice(now.Add(-time.Minute))
	p := For(first)
	if p.Wait > 0 || p.Awaiting == nil {
		t.Fatalf("wait %v, awaiting %v: want the settled change waiting for approval", p.Wait, p.Awaiting)
	}
	m := first.Planned(p)
	again := in(manual, window, both, digestOf(cmApp, "cm2"))
	again.Memory = m
	if p := For(again); p.Wait > 0 || p.Pending != (Pending{}) || p.Awaiting == nil || p.Awaiting.Began {
		t.Fatalf("the waiting change set again: wait %v, pending %+v, awaiting %+v", p.Wait, p.Pending, p.Awaiting)
	}
	later := in(manual, window, both, digestOf(cmApp, "cm3"))
	later.Memory = m.Planned(For(again)).Notice(now)
	if p := For(later); p.Wait != time.Second || p.Awaiting != nil {
		t.Fatalf("a new change: wait %v, awaiting %v; want a settle window of its own", p.Wait, p.Awaiting)
	}
}

// An approved change waits for a closed reload window like any other; an
// emergency approval (--now) rolls it at once.
func TestApprovalNowOverridesTheWindow(t *testing.T) {
	h := (now.UTC().Hour() + 12) % 24
	closed := annotate(keys.ReloadWindow, fmt.Sprintf("%02d:00-%02d:30 UTC", h, h))
	for _, emergency := range []bool{false, true} {
		b, _ := json.Marshal(ApprovalOf(Awaiting{Changes: []strategy.Change{{Ref: cmApp, Hash: "cm2"}}}, "bob", now, emergency))
		p := For(in(manual, both, digestOf(cmApp, "cm2"), annotate(keys.Approval, string(b)), closed))
		if deferred := p.Deferred != nil; deferred == emergency || p.Reloads() != emergency {
			t.Errorf("now=%v: deferred %v, reloads %v; want the window to hold it unless --now", emergency, deferred, p.Reloads())
		}
		if _, spent := p.Update.Annotations[keys.Approval]; !emergency && spent {
			t.Error("a deferred approval was spent before its rollout")
		}
	}
}
