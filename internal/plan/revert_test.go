package plan

import (
	"slices"
	"testing"

	"github.com/ripple-dev/ripple/internal/strategy"
)

// wroteOnTemplate is what Ripple's last rollout wrote on the template, in
// its memory.
func wroteOnTemplate(v string) func(*Input) {
	return func(i *Input) { i.OnTemplate = v }
}

// Ripple's last rollout wrote cm3 for ConfigMap "app" on the template (and
// cm3 in the record); the rows start from what the owner, a rollback or a
// later change leave.
func TestReverted(t *testing.T) {
	rec3 := recorded(map[string]string{"ConfigMap/app": "cm3", "Secret/db": "s1"})
	wrote := wroteOnTemplate("ConfigMap/app=cm3;")
	for _, tc := range []struct {
		name     string
		in       Input
		state    State
		reverted bool // the source is reverted
		noticed  bool // reported now
		changes  []string
		record   map[string]string // nil: no record written
	}{
		{
			name:     "the owner rewrote the template without Ripple's env var, the record kept: reverted, nothing rolls",
			in:       in(rec3, digestOf(cmApp, "cm3"), wrote),
			state:    Unchanged,
			reverted: true,
			noticed:  true,
		},
		{
			name:     "reported already: nothing to report or roll",
			in:       in(rec3, digestOf(cmApp, "cm3"), wrote, func(i *Input) { i.RevertSeen = "ConfigMap/app=cm3;" }),
			state:    Unchanged,
			reverted: true,
		},
		{
			name:     "the owner replaced the whole object, the record gone too: reverted, nothing written back, nothing rolls",
			in:       in(digestOf(cmApp, "cm3"), wrote),
			state:    Unchanged,
			reverted: true,
			noticed:  true,
			record:   map[string]string{"Secret/db": "s1"},
		},
		{
			name:  "the template shows an older value: a rollback, not a revert",
			in:    in(rec3, envVar(cmApp, "cm2"), digestOf(cmApp, "cm3"), wrote, remembered(map[string]string{"ConfigMap/app": "cm3", "Secret/db": "s1"})),
			state: RolledBack,
		},
		{
			name: "a Deployment's undo to before Ripple's first rollout (the older record back): a rollback",
			in: in(recorded(map[string]string{"ConfigMap/app": "cm1", "Secret/db": "s1"}), digestOf(cmApp, "cm3"), wrote,
				remembered(map[string]string{"ConfigMap/app": "cm3", "Secret/db": "s1"})),
			state:  RolledBack,
			record: map[string]string{"ConfigMap/app": "cm3", "Secret/db": "s1"},
		},
		{
			name:    "the config changed since: the change rolls, as usual",
			in:      in(rec3, digestOf(cmApp, "cm4"), wrote),
			state:   Changed,
			changes: []string{"ConfigMap/app=cm4"},
			record:  map[string]string{"ConfigMap/app": "cm4", "Secret/db": "s1"},
		},
		{
			name:  "Ripple's value still on the template: unchanged, no revert",
			in:    in(rec3, envVar(cmApp, "cm3"), digestOf(cmApp, "cm3"), wrote),
			state: Unchanged,
		},
		{
			name:  "a source Ripple never wrote on the template (a baseline in the record): no revert",
			in:    in(rec3, digestOf(cmApp, "cm3")),
			state: Unchanged,
		},
		{
			name:     "the annotations strategy: last-reloaded-from removed",
			in:       in(rec3, digestOf(cmApp, "cm3"), wrote, func(i *Input) { i.Strategy = strategy.Annotations{} }),
			state:    Unchanged,
			reverted: true,
			noticed:  true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := For(tc.in)
			var sp SourcePlan
			for _, s := range p.Sources {
				if s.Ref == cmApp {
					sp = s
				}
			}
			if sp.State != tc.state || sp.Reverted != tc.reverted {
				t.Errorf("state %s reverted %v, want %s %v", sp.State, sp.Reverted, tc.state, tc.reverted)
			}
			if got := len(p.Reverted) > 0; got != tc.noticed {
				t.Errorf("reported %v, want %v", p.Reverted, tc.noticed)
			}
			if got := changed(p); !slices.Equal(got, tc.changes) {
				t.Errorf("changes %v, want %v", got, tc.changes)
			}
			if p.Reloads() != (len(tc.changes) > 0) {
				t.Errorf("reloads %v with changes %v", p.Reloads(), tc.changes)
			}
			if got := recordOf(t, p); !mapsEqual(got, tc.record) {
				t.Errorf("record %v, want %v", got, tc.record)
			}
		})
	}
}

// A reported revert is not reported again until Ripple rolls the workload
// again.
func TestRevertReportedOnce(t *testing.T) {
	input := in(recorded(map[string]string{"ConfigMap/app": "cm3", "Secret/db": "s1"}), digestOf(cmApp, "cm3"), wroteOnTemplate("ConfigMap/app=cm3;"))
	mem := input.Memory // what the reconciler loads from the store
	m := mem.Planned(For(input))
	if m.RevertSeen != "ConfigMap/app=cm3;" {
		t.Fatalf("the revert is not remembered: %+v", m)
	}
	input.Memory = m
	if p := For(input); len(p.Reverted) != 0 {
		t.Errorf("reported twice: %v", p.Reverted)
	}
	next := For(in(recorded(map[string]string{"ConfigMap/app": "cm3", "Secret/db": "s1"}), digestOf(cmApp, "cm4")))
	if m = m.Wrote(next, Write{}, now); m.OnTemplate != "ConfigMap/app=cm4;" || m.RevertSeen == m.OnTemplate {
		t.Errorf("after the next rollout: %+v", m)
	}
}

// Whatever undoes Ripple's writes in a way neither the rollback nor the
// revert rule reads (here the owner puts back its template with an older
// value and an unrelated record after each rollout), a workload is rolled
// at most MaxAttempts times for one change set, then held until the next
// change.
func TestRolloutsOfOneChangeSetAreBounded(t *testing.T) {
	owners := func(sum string) Input {
		return in(recorded(map[string]string{"ConfigMap/app": "cm1", "Secret/db": "s1"}), envVar(cmApp, "cm2"), digestOf(cmApp, sum))
	}
	input := owners("cm3")
	var m Memory
	rollouts, noticed := 0, 0
	for range 5 {
		input.Memory = m
		p := For(input)
		m = m.Planned(p)
		if p.Reloads() {
			rollouts++
			m = m.Wrote(p, Write{}, now)
			continue
		}
		if !p.RevertHeld {
			t.Fatalf("neither rolls nor held: %+v", p)
		}
		if p.HeldNoticed {
			noticed++
		}
	}
	if rollouts != MaxAttempts || noticed != 1 {
		t.Errorf("%d rollouts of one change set, the hold reported %d times; want %d and once", rollouts, noticed, MaxAttempts)
	}
	input = owners("cm4")
	input.Memory = m
	if p := For(input); !p.Reloads() {
		t.Error("the next change set is held too")
	}
}
