package plan

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/strategy"
)

// aliased records that the template's value shown stands for means.
func aliased(shown, means string) func(*Input) {
	b, _ := json.Marshal(map[string]alias{cmApp.String(): {Shown: shown, Means: means}})
	return annotate(keys.AppliedAlias, string(b))
}

// remembered is the record Ripple's last rollout wrote, in its memory.
func remembered(rec map[string]string) func(*Input) {
	b, _ := json.Marshal(rec)
	return func(i *Input) { i.Applied = string(b) }
}

// restored marks the record as written by another manager than Ripple:
// a Deployment's undo put it back with the template.
func restored(i *Input) { i.Workload.RecordRestored = true }

// restoredBy says another manager last wrote the workload at t.
func restoredBy(t time.Time) func(*Input) { return func(i *Input) { i.Workload.RestoredBy = t } }

// writtenAt says ref's data was last written at t.
func writtenAt(ref refs.Ref, t time.Time) func(*Input) {
	return func(i *Input) {
		for j := range i.Sources {
			if i.Sources[j].Ref == ref {
				i.Sources[j].Written = t
			}
		}
	}
}

func annotationsStrategy(sum string) func(*Input) {
	return func(i *Input) {
		i.Strategy = strategy.Annotations{}
		strategy.Annotations{}.Apply(i.Workload.Template, []strategy.Change{{Ref: cmApp, Namespace: "shop", Container: "web", Hash: sum}}, now)
	}
}

func aliasOf(t *testing.T, p Plan) map[string]alias {
	t.Helper()
	v, ok := p.Update.Annotations[keys.AppliedAlias]
	if !ok || v == nil {
		return nil
	}
	out := map[string]alias{}
	if err := json.Unmarshal([]byte(*v), &out); err != nil {
		t.Fatalf("alias %q: %v", *v, err)
	}
	return out
}

// Ripple rolled ConfigMap "app" from cm2 to cm3 (the template shows cm3,
// the record says cm3); the rows below start from what a rollback, a later
// change or a restart leave.
func TestRolledBack(t *testing.T) {
	rec3 := recorded(map[string]string{"ConfigMap/app": "cm3", "Secret/db": "s1"})
	for _, tc := range []struct {
		name     string
		in       Input
		state    State
		changes  []string
		noticed  bool              // reported now: the plan is the first to see it
		record   map[string]string // nil: no record written
		alias    *alias            // the alias written for ConfigMap "app"; nil: none
		wouldNot bool              // dry-run: no WouldReload
	}{
		{
			name:    "template rolled back to cm2, record still cm3, the data cm3: nothing rolls, the rollback is recorded",
			in:      in(rec3, envVar(cmApp, "cm2"), digestOf(cmApp, "cm3")),
			state:   RolledBack,
			noticed: true,
			alias:   &alias{Shown: "cm2", Means: "cm3"},
		},
		{
			name:  "recorded already (or read again after a restart): nothing to write or report",
			in:    in(rec3, envVar(cmApp, "cm2"), digestOf(cmApp, "cm3"), aliased("cm2", "cm3")),
			state: RolledBack,
		},
		{
			name:    "a change after the recorded rollback rolls once",
			in:      in(rec3, envVar(cmApp, "cm2"), digestOf(cmApp, "cm4"), aliased("cm2", "cm3")),
			state:   Changed,
			changes: []string{"ConfigMap/app=cm4"},
			record:  map[string]string{"ConfigMap/app": "cm4", "Secret/db": "s1"},
		},
		{
			name:    "a change after the rollback, before Ripple saw it: rolls once",
			in:      in(rec3, envVar(cmApp, "cm2"), digestOf(cmApp, "cm4")),
			state:   Changed,
			changes: []string{"ConfigMap/app=cm4"},
			record:  map[string]string{"ConfigMap/app": "cm4", "Secret/db": "s1"},
		},
		{
			name:    "a template rolled back again to an older value than an earlier rollback's alias names",
			in:      in(rec3, envVar(cmApp, "cm1"), digestOf(cmApp, "cm3"), aliased("cm2", "cm3")),
			state:   RolledBack,
			noticed: true,
			alias:   &alias{Shown: "cm1", Means: "cm3"},
		},
		{
			name:  "migration: Reloader's value and no record of the config: read as before, and not recorded",
			in:    in(recorded(map[string]string{"Secret/db": "s1"}), envVar(cmApp, "cm2"), digestOf(cmApp, "cm2")),
			state: Unchanged,
		},
		{
			name:    "migration: Reloader's value, no record at all, then a change: rolls as before",
			in:      in(envVar(cmApp, "cm2"), digestOf(cmApp, "cm3")),
			state:   Changed,
			changes: []string{"ConfigMap/app=cm3"},
			record:  map[string]string{"ConfigMap/app": "cm3", "Secret/db": "s1"},
		},
		{
			name:    "a record that is not the current data (changed since): the template's value rolls",
			in:      in(recorded(map[string]string{"ConfigMap/app": "cm1", "Secret/db": "s1"}), envVar(cmApp, "cm2"), digestOf(cmApp, "cm3")),
			state:   Changed,
			changes: []string{"ConfigMap/app=cm3"},
			record:  map[string]string{"ConfigMap/app": "cm3", "Secret/db": "s1"},
		},
		{
			name:    "the annotations strategy: last-reloaded-from rolled back",
			in:      in(rec3, annotationsStrategy("cm2"), digestOf(cmApp, "cm3")),
			state:   RolledBack,
			noticed: true,
			alias:   &alias{Shown: "cm2", Means: "cm3"},
		},
		{
			name: "a cached copy from before Ripple's own write (its resourceVersion the write's base): the change is still due, no rollback",
			in: in(recorded(map[string]string{"ConfigMap/app": "cm2", "Secret/db": "s1"}), envVar(cmApp, "cm2"), digestOf(cmApp, "cm3"),
				remembered(map[string]string{"ConfigMap/app": "cm3", "Secret/db": "s1"}), func(i *Input) {
					i.Workload.Version, i.Rollout.StaleVersion = "41", "41"
				}),
			state:   Changed,
			changes: []string{"ConfigMap/app=cm3"},
			record:  map[string]string{"ConfigMap/app": "cm3", "Secret/db": "s1"},
		},
		{
			name: "the same once a later copy shows an undo of that write: rolled back",
			in: in(recorded(map[string]string{"ConfigMap/app": "cm2", "Secret/db": "s1"}), envVar(cmApp, "cm2"), digestOf(cmApp, "cm3"),
				remembered(map[string]string{"ConfigMap/app": "cm3", "Secret/db": "s1"}), func(i *Input) {
					i.Workload.Version, i.Rollout.StaleVersion = "43", "41"
				}),
			state:   RolledBack,
			noticed: true,
			record:  map[string]string{"ConfigMap/app": "cm3", "Secret/db": "s1"},
			alias:   &alias{Shown: "cm2", Means: "cm3"},
		},
		{
			name: "a Deployment's undo restores the record with the template: the memory of the last rollout tells",
			in: in(recorded(map[string]string{"ConfigMap/app": "cm2", "Secret/db": "s1"}), envVar(cmApp, "cm2"), digestOf(cmApp, "cm3"),
				remembered(map[string]string{"ConfigMap/app": "cm3", "Secret/db": "s1"})),
			state:   RolledBack,
			noticed: true,
			record:  map[string]string{"ConfigMap/app": "cm3", "Secret/db": "s1"},
			alias:   &alias{Shown: "cm2", Means: "cm3"},
		},
		{
			name: "a Deployment's undo to a revision from before Ripple's first rollout (no env var, the baseline record back)",
			in: in(recorded(map[string]string{"ConfigMap/app": "cm1", "Secret/db": "s1"}), digestOf(cmApp, "cm3"),
				remembered(map[string]string{"ConfigMap/app": "cm3", "Secret/db": "s1"})),
			state:   RolledBack,
			noticed: true,
			record:  map[string]string{"ConfigMap/app": "cm3", "Secret/db": "s1"},
			alias:   &alias{Shown: "cm1", Means: "cm3"},
		},
		{
			name: "remembered, and the config changed since Ripple's rollout: rolls",
			in: in(rec3, envVar(cmApp, "cm3"), digestOf(cmApp, "cm4"),
				remembered(map[string]string{"ConfigMap/app": "cm3", "Secret/db": "s1"})),
			state:   Changed,
			changes: []string{"ConfigMap/app=cm4"},
			record:  map[string]string{"ConfigMap/app": "cm4", "Secret/db": "s1"},
		},
		{
			name:    "no memory (Ripple restarted before the undo's reconcile, or was down): the record came back with the template",
			in:      in(recorded(map[string]string{"ConfigMap/app": "cm2", "Secret/db": "s1"}), envVar(cmApp, "cm2"), digestOf(cmApp, "cm3"), restored),
			state:   RolledBack,
			noticed: true,
			record:  map[string]string{"ConfigMap/app": "cm3", "Secret/db": "s1"},
			alias:   &alias{Shown: "cm2", Means: "cm3"},
		},
		{
			name: "no memory: the undo to a revision from before Ripple's first rollout (no env var, the baseline record back)",
			in: in(recorded(map[string]string{"ConfigMap/app": "cm1", "Secret/db": "s1"}), digestOf(cmApp, "cm3"),
				restored),
			state:   RolledBack,
			noticed: true,
			record:  map[string]string{"ConfigMap/app": "cm3", "Secret/db": "s1"},
			alias:   &alias{Shown: "cm1", Means: "cm3"},
		},
		{
			name:    "no memory, the annotations strategy: last-reloaded-from and the record came back",
			in:      in(recorded(map[string]string{"ConfigMap/app": "cm2", "Secret/db": "s1"}), annotationsStrategy("cm2"), digestOf(cmApp, "cm3"), restored),
			state:   RolledBack,
			noticed: true,
			record:  map[string]string{"ConfigMap/app": "cm3", "Secret/db": "s1"},
			alias:   &alias{Shown: "cm2", Means: "cm3"},
		},
		{
			name:    "no memory: the record came back without the config, the template with Reloader's value",
			in:      in(recorded(map[string]string{"Secret/db": "s1"}), envVar(cmApp, "cm2"), digestOf(cmApp, "cm3"), restored),
			state:   RolledBack,
			noticed: true,
			record:  map[string]string{"ConfigMap/app": "cm3", "Secret/db": "s1"},
			alias:   &alias{Shown: "cm2", Means: "cm3"},
		},
		{
			name:  "no memory: an undo of a change that was no config's (an image): the record back shows the current data",
			in:    in(rec3, envVar(cmApp, "cm3"), digestOf(cmApp, "cm3"), restored),
			state: Unchanged,
		},
		{
			name:  "no memory (a restart right after Ripple's own write): Ripple's record and template show the current data",
			in:    in(rec3, envVar(cmApp, "cm3"), digestOf(cmApp, "cm3")),
			state: Unchanged,
		},
		{
			name:    "no memory, Ripple's own record (no undo): the config changed while Ripple was down rolls",
			in:      in(recorded(map[string]string{"ConfigMap/app": "cm2", "Secret/db": "s1"}), envVar(cmApp, "cm2"), digestOf(cmApp, "cm3")),
			state:   Changed,
			changes: []string{"ConfigMap/app=cm3"},
			record:  map[string]string{"ConfigMap/app": "cm3", "Secret/db": "s1"},
		},
		{
			name: "the record came back, and the memory says the config changed since Ripple's rollout: the memory decides, rolls",
			in: in(recorded(map[string]string{"ConfigMap/app": "cm2", "Secret/db": "s1"}), envVar(cmApp, "cm2"), digestOf(cmApp, "cm4"),
				remembered(map[string]string{"ConfigMap/app": "cm3", "Secret/db": "s1"}), restored),
			state:   Changed,
			changes: []string{"ConfigMap/app=cm4"},
			record:  map[string]string{"ConfigMap/app": "cm4", "Secret/db": "s1"},
		},
		{
			name: "no memory, the record came back, and the config changed after the undo while Ripple was down: " +
				"its data written after the last foreign write rolls",
			in: in(recorded(map[string]string{"ConfigMap/app": "cm2", "Secret/db": "s1"}), envVar(cmApp, "cm2"), digestOf(cmApp, "cm4"), restored,
				restoredBy(now.Add(-time.Minute)), writtenAt(cmApp, now.Add(-30*time.Second))),
			state:   Changed,
			changes: []string{"ConfigMap/app=cm4"},
			record:  map[string]string{"ConfigMap/app": "cm4", "Secret/db": "s1"},
		},
		{
			name: "no memory, the record came back, the data written in the same second as the undo: rolls (no change lost)",
			in: in(recorded(map[string]string{"ConfigMap/app": "cm2", "Secret/db": "s1"}), envVar(cmApp, "cm2"), digestOf(cmApp, "cm4"), restored,
				restoredBy(now.Add(-time.Minute)), writtenAt(cmApp, now.Add(-time.Minute))),
			state:   Changed,
			changes: []string{"ConfigMap/app=cm4"},
			record:  map[string]string{"ConfigMap/app": "cm4", "Secret/db": "s1"},
		},
		{
			name: "no memory, the record came back, the data written before the undo: rolled back",
			in: in(recorded(map[string]string{"ConfigMap/app": "cm2", "Secret/db": "s1"}), envVar(cmApp, "cm2"), digestOf(cmApp, "cm4"), restored,
				restoredBy(now.Add(-time.Minute)), writtenAt(cmApp, now.Add(-2*time.Minute))),
			state:   RolledBack,
			noticed: true,
			record:  map[string]string{"ConfigMap/app": "cm4", "Secret/db": "s1"},
			alias:   &alias{Shown: "cm2", Means: "cm4"},
		},
		{
			name:     "dry-run: recorded and reported the same, nothing would reload",
			in:       in(rec3, envVar(cmApp, "cm2"), digestOf(cmApp, "cm3"), func(i *Input) { i.DryRun = true }),
			state:    RolledBack,
			noticed:  true,
			alias:    &alias{Shown: "cm2", Means: "cm3"},
			wouldNot: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := For(tc.in)
			if got := states(p)[cmApp]; got != tc.state {
				t.Errorf("state %s, want %s", got, tc.state)
			}
			if got := changed(p); !slices.Equal(got, tc.changes) {
				t.Errorf("changes %v, want %v", got, tc.changes)
			}
			if p.Reloads() != (len(tc.changes) > 0) {
				t.Errorf("reloads %v with changes %v", p.Reloads(), tc.changes)
			}
			if got := len(p.RolledBack) > 0; got != tc.noticed {
				t.Errorf("reported %v, want %v", p.RolledBack, tc.noticed)
			}
			if tc.noticed && len(p.RolledBack) > 0 && (p.RolledBack[0].Ref != cmApp || p.RolledBack[0].Applied != tc.alias.Shown || p.RolledBack[0].Digest != tc.alias.Means) {
				t.Errorf("reported %+v", p.RolledBack)
			}
			if got := recordOf(t, p); !mapsEqual(got, tc.record) {
				t.Errorf("record %v, want %v", got, tc.record)
			}
			got, ok := aliasOf(t, p)[cmApp.String()]
			if tc.alias == nil && ok || tc.alias != nil && got != *tc.alias {
				t.Errorf("alias %+v (%v), want %+v", got, ok, tc.alias)
			}
			if tc.wouldNot && (p.WouldReload || p.Update.Template != nil) {
				t.Errorf("dry-run: would reload %v, template %v", p.WouldReload, p.Update.Template != nil)
			}
		})
	}
}

// The memory keeps the record a rollout wrote, and only a rollout's.
func TestWroteKeepsTheAppliedRecord(t *testing.T) {
	p := For(in(recorded(map[string]string{"ConfigMap/app": "cm1", "Secret/db": "s1"}), digestOf(cmApp, "cm2")))
	m := Memory{}.Wrote(p, Write{}, now)
	if want := `{"ConfigMap/app":"cm2","Secret/db":"s1"}`; m.Applied != want {
		t.Errorf("after a rollout: %q, want %q", m.Applied, want)
	}
	if m := m.Wrote(p, Write{Skipped: true}, now.Add(time.Minute)); m.Applied == "" {
		t.Error("a skipped write forgot the record")
	}
	baseline := For(in())
	if m := (Memory{}).Wrote(baseline, Write{}, now); m.Applied != "" || !m.Gone().IsZero() {
		t.Errorf("a baseline write is not a rollout: %q", m.Applied)
	}
}
