package plan

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// templateRolls makes the workload one whose template changes roll it (a
// Deployment).
func templateRolls(i *Input) { i.Workload.RollsWithTemplate = true }

// newImage sets a new image on the workload's container: someone else's
// change of the pod template (a helm upgrade).
func newImage(i *Input) { i.Workload.Template.Spec.Containers[0].Image = "web:2" }

// seenAt opens the settle schedule of change set cm2, first and last seen
// a window ago, and remembers the pod template as the options give it, as
// last seen before the change.
func seenAt(opts ...func(*Input)) func(*Input) {
	return func(i *Input) {
		first := now.Add(-2 * time.Second)
		i.Pending = Pending{ID: "ConfigMap/app=cm2;", First: first, Last: first}
		i.Template = TemplateSeen{Hash: TemplateHash(in(opts...).Workload.Template)}
	}
}

// templateChanged says Ripple saw the template change d before now.
func templateChanged(d time.Duration) func(*Input) {
	return func(i *Input) {
		i.Template = TemplateSeen{Hash: TemplateHash(i.Workload.Template), Changed: now.Add(-d)}
	}
}

// versions sets the resourceVersions of the template change Ripple saw
// and of the change set's last source event.
func versions(template, source string) func(*Input) {
	return func(i *Input) { i.Template.Version, i.Pending.Version = template, source }
}

// wrote is the workload after p's write: its annotations and template.
func wrote(p Plan) func(*Input) {
	return func(i *Input) {
		for k, v := range p.Update.Annotations {
			if v == nil {
				delete(i.Workload.Annotations, k)
			} else {
				i.Workload.Annotations[k] = *v
			}
		}
		if p.Update.Template != nil {
			i.Workload.Template = p.Update.Template
		}
		i.Pending, i.Template = p.Pending, p.Template
	}
}

func TestTemplateChangedWithTheConfig(t *testing.T) {
	const window = time.Second
	base := []func(*Input){templateRolls, both, digestOf(cmApp, "cm2"), func(i *Input) { i.SettleWindow = window }}
	withTemplate := func(t *testing.T, p Plan) {
		t.Helper()
		if p.Reloads() || len(p.Changes) != 0 {
			t.Fatalf("reloads %v, changes %v: the template change applied the data", p.Reloads(), changed(p))
		}
		if got := states(p)[cmApp]; got != TemplateApplied {
			t.Errorf("state %s, want TemplateApplied", got)
		}
		if len(p.WithTemplate) != 1 || p.WithTemplate[0].Ref != cmApp || p.WithTemplate[0].Digest != "cm2" {
			t.Errorf("WithTemplate %+v, want ConfigMap app at cm2", p.WithTemplate)
		}
		if m := (Memory{Pending: p.Pending}).Wrote(p, Write{}, now); m.Pending != (Pending{}) {
			t.Errorf("pending %+v after the write, want the change set done", m.Pending)
		}
	}
	rolled := func(t *testing.T, p Plan) {
		t.Helper()
		if got := changed(p); !slices.Equal(got, []string{"ConfigMap/app=cm2"}) || !p.Reloads() || len(p.WithTemplate) != 0 {
			t.Fatalf("changes %v, reloads %v, with template %d: want a rollout as before", got, p.Reloads(), len(p.WithTemplate))
		}
	}
	for _, tc := range []struct {
		name  string
		opts  []func(*Input)
		check func(*testing.T, Plan)
	}{
		{"template changed after the config, seen by this plan: recorded as applied, env-vars",
			[]func(*Input){envVar(cmApp, "cm1"), seenAt(envVar(cmApp, "cm1")), newImage}, withTemplate},
		{"template changed after the config, seen by this plan: recorded as applied, annotations",
			[]func(*Input){annotationsStrategy("cm1"), seenAt(annotationsStrategy("cm1")), newImage}, withTemplate},
		{"template changed after the config, nothing on the template yet (record only)",
			[]func(*Input){seenAt(), newImage}, withTemplate},
		{"template change seen after the config event (the workload's own event)",
			[]func(*Input){envVar(cmApp, "cm1"), seenAt(), newImage, templateChanged(time.Second)}, withTemplate},
		{"template change seen with the config event",
			[]func(*Input){envVar(cmApp, "cm1"), seenAt(), newImage, templateChanged(2 * time.Second)}, withTemplate},
		{"by resourceVersion: the template written after the config, its event delivered first",
			[]func(*Input){envVar(cmApp, "cm1"), seenAt(), newImage, templateChanged(5 * time.Second), versions("20", "10")}, withTemplate},
		{"by resourceVersion: the template written before the config, seen with its event",
			[]func(*Input){envVar(cmApp, "cm1"), seenAt(), newImage, templateChanged(2 * time.Second), versions("10", "20")},
			func(t *testing.T, p Plan) {
				rolled(t, p)
				if !p.TemplateFirst {
					t.Error("TemplateFirst unset: the Reloaded event must say the template changed first")
				}
			}},
		{"template as last seen: rolls",
			[]func(*Input){envVar(cmApp, "cm1"), seenAt(envVar(cmApp, "cm1"))}, rolled},
		{"only a reloader's value on the template differs: rolls",
			[]func(*Input){envVar(cmApp, "cm1"), seenAt(envVar(cmApp, "cm0"))}, rolled},
		{"template changed before the change set: rolls",
			[]func(*Input){envVar(cmApp, "cm1"), seenAt(), newImage, templateChanged(5 * time.Second)},
			func(t *testing.T, p Plan) {
				rolled(t, p)
				if p.TemplateFirst {
					t.Error("TemplateFirst set for a template change older than the change set")
				}
			}},
		{"a config event came after the template changed: rolls and says so",
			[]func(*Input){envVar(cmApp, "cm1"), seenAt(), newImage, templateChanged(1500 * time.Millisecond),
				func(i *Input) { i.Pending.Last = now.Add(-time.Second) }},
			func(t *testing.T, p Plan) {
				rolled(t, p)
				if !p.TemplateFirst {
					t.Error("TemplateFirst unset: the Reloaded event must say the template changed first")
				}
			}},
		{"a kind whose template starts no pods (CronJob): rolls",
			[]func(*Input){envVar(cmApp, "cm1"), seenAt(envVar(cmApp, "cm1")), newImage, func(i *Input) { i.Workload.RollsWithTemplate = false }}, rolled},
		{"the template never seen before (a restart): rolls, and is remembered",
			[]func(*Input){envVar(cmApp, "cm1"), seenAt(envVar(cmApp, "cm1")), newImage, func(i *Input) { i.Template = TemplateSeen{} }},
			func(t *testing.T, p Plan) {
				rolled(t, p)
				if p.Template.Hash == "" || !p.Template.Changed.IsZero() {
					t.Errorf("template %+v, want its hash, with no change seen", p.Template)
				}
			}},
		{"a created config in the change set: rolls",
			[]func(*Input){envVar(cmApp, "cm1"), seenAt(envVar(cmApp, "cm1")), newImage, recorded(map[string]string{"ConfigMap/app": "cm1"}),
				func(i *Input) {
					i.ReloadOnCreate, i.Sources[1].Created = true, now.Add(-time.Minute)
					i.Pending.ID = "ConfigMap/app=cm2;Secret/db=s1;"
				}},
			func(t *testing.T, p Plan) {
				if !p.Reloads() || len(p.WithTemplate) != 0 || len(p.Changes) != 2 {
					t.Fatalf("reloads %v, with template %d: a created config rolls as before", p.Reloads(), len(p.WithTemplate))
				}
			}},
		{"the settle window still open: waits, and remembers the change",
			[]func(*Input){envVar(cmApp, "cm1"), seenAt(envVar(cmApp, "cm1")), newImage, func(i *Input) { i.Pending.Last = now }},
			func(t *testing.T, p Plan) {
				if p.Wait != window || p.Writes() || !p.Template.Changed.Equal(now) {
					t.Fatalf("wait %v, writes %v, template %+v: want the window and the change seen now", p.Wait, p.Writes(), p.Template)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.check(t, For(in(append(slices.Clone(base), tc.opts...)...)))
		})
	}
}

// The record the rule writes keeps the data applied once: the next plans
// roll nothing and report nothing again, dry-run or not, a Deployment's
// memory of Ripple's last record reads no rollback into it, and the
// next change of the config rolls once.
func TestTemplateAppliedIsRecordedOnce(t *testing.T) {
	base := []func(*Input){templateRolls, both, digestOf(cmApp, "cm2"), envVar(cmApp, "cm1"), seenAt(envVar(cmApp, "cm1")), newImage,
		func(i *Input) { i.Applied, i.SettleWindow = `{"ConfigMap/app":"cm1","Secret/db":"s1"}`, time.Second }}
	p := For(in(base...))
	if a := aliasOf(t, p)["ConfigMap/app"]; a != (alias{Shown: "cm1", Means: "cm2", Template: true}) {
		t.Fatalf("alias %+v, want cm1 standing for cm2, by the template", a)
	}
	if got := recordOf(t, p); got != nil && got["ConfigMap/app"] != "cm1" {
		t.Errorf("record %v: the template still shows cm1", got)
	}
	for _, dry := range []bool{false, true} {
		next := For(in(append(slices.Clone(base), wrote(p), func(i *Input) { i.DryRun = dry })...))
		if next.Writes() || next.WouldReload || len(next.WithTemplate) != 0 || len(next.RolledBack) != 0 {
			t.Errorf("dry-run %v: next plan writes %v, would reload %v, reports %d/%d: want nothing", dry, next.Writes(), next.WouldReload,
				len(next.WithTemplate), len(next.RolledBack))
		}
		if got := states(next)[cmApp]; got != TemplateApplied {
			t.Errorf("dry-run %v: state %s, want TemplateApplied kept for explain", dry, got)
		}
	}
	later := For(in(append(slices.Clone(base), wrote(p), digestOf(cmApp, "cm3"), func(i *Input) {
		first := now.Add(-2 * time.Second) // a window after the template change
		i.Pending, i.Template.Changed = Pending{ID: "ConfigMap/app=cm3;", First: first, Last: first}, first.Add(-time.Minute)
	})...))
	if got := changed(later); !slices.Equal(got, []string{"ConfigMap/app=cm3"}) || !later.Reloads() {
		t.Errorf("a later change: changes %v, reloads %v, want one rollout to cm3", got, later.Reloads())
	}
}

func TestSawTemplate(t *testing.T) {
	later := now.Add(time.Second)
	for _, tc := range []struct {
		name string
		seen TemplateSeen
		hash string
		want TemplateSeen
	}{
		{"first sight: no change seen", TemplateSeen{}, "a", TemplateSeen{Hash: "a"}},
		{"the same template", TemplateSeen{Hash: "a", Changed: now}, "a", TemplateSeen{Hash: "a", Changed: now}},
		{"a changed template", TemplateSeen{Hash: "a"}, "b", TemplateSeen{Hash: "b", Changed: later, Version: "7"}},
		{"changed again", TemplateSeen{Hash: "b", Changed: now, Version: "7"}, "c", TemplateSeen{Hash: "c", Changed: later, Version: "9"}},
		{"no template read", TemplateSeen{Hash: "a", Changed: now}, "", TemplateSeen{Hash: "a", Changed: now}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := (Memory{Template: tc.seen}).SawTemplate(tc.hash, later, tc.want.Version).Template; got != tc.want {
				t.Errorf("template %+v, want %+v", got, tc.want)
			}
		})
	}
	if m := (Memory{}).SawTemplate("a", now, "1"); m.IsZero() {
		t.Error("a memory that keeps a template is zero: the store would drop it")
	}
	if m := (Memory{}).Planned(Plan{Template: TemplateSeen{Hash: "a"}}); m.Template.Hash != "a" {
		t.Errorf("Planned kept template %+v", m.Template)
	}
}

// A source event keeps the latest resourceVersion of its change set.
func TestSourceVersion(t *testing.T) {
	opened := Memory{}.Notice(now)
	for _, tc := range []struct {
		name    string
		m       Memory
		version string
		want    string
	}{
		{"the first event of a set", opened, "10", "10"},
		{"a later one", opened.SourceVersion("10"), "12", "12"},
		{"an older one delivered late", opened.SourceVersion("12"), "10", "12"},
		{"no version", opened.SourceVersion("12"), "", "12"},
		{"not a number", opened, "x1", ""},
		{"no change set open", Memory{}, "10", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.m.SourceVersion(tc.version).Pending.Version; got != tc.want {
				t.Errorf("version %q, want %q", got, tc.want)
			}
		})
	}
}

// Only someone else's change of the pod template moves its hash.
func TestTemplateHash(t *testing.T) {
	tpl := func(opts ...func(*Input)) *corev1.PodTemplateSpec { return in(opts...).Workload.Template }
	plain := TemplateHash(tpl())
	if plain == "" || plain != TemplateHash(tpl()) {
		t.Fatalf("hash %q: want a stable, non-empty hash", plain)
	}
	for name, opts := range map[string][]func(*Input){
		"an env var of the env-vars strategy":         {envVar(cmApp, "cm9")},
		"an annotation of the annotations strategy":   {annotationsStrategy("cm9")},
		"both strategies' values of several configs ": {envVar(cmApp, "cm9"), envVar(secDB, "s9"), annotationsStrategy("cm9")},
	} {
		if got := TemplateHash(tpl(opts...)); got != plain {
			t.Errorf("%s moves the hash", name)
		}
	}
	for name, opts := range map[string][]func(*Input){
		"an image": {newImage},
		"a pod annotation": {func(i *Input) {
			i.Workload.Template.Annotations = map[string]string{"kubectl.kubernetes.io/restartedAt": "now"}
		}},
		"an env var of one's": {func(i *Input) {
			i.Workload.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "STAKATER_MODE", Value: "x"}}
		}},
	} {
		if got := TemplateHash(tpl(opts...)); got == plain {
			t.Errorf("%s does not move the hash", name)
		}
	}
	if TemplateHash(nil) != "" {
		t.Error("no template has a hash")
	}
}

// A source event noticed while a plan ran is not lost when the plan's
// memory is kept: its settle schedule and version still order it.
func TestPlannedFrom(t *testing.T) {
	read := Memory{Template: TemplateSeen{Hash: "a"}}
	p := Plan{Template: TemplateSeen{Hash: "b", Changed: now, Version: "20"}, Storm: Storm{ID: "y"}}
	if m := read.PlannedFrom(read, p); m.Pending != (Pending{}) || m.Template != p.Template || m.Storm.ID != "y" {
		t.Errorf("nothing in between: %+v, want the plan's", m)
	}
	noticed := read.Notice(now).SourceVersion("10")
	m := noticed.PlannedFrom(read, p)
	if m.Pending != noticed.Pending || m.Template != p.Template || m.Storm.ID != "y" {
		t.Errorf("an event in between: %+v, want its settle schedule and the plan's template and storm", m)
	}
	seen := read.SawTemplate("b", now.Add(-time.Second), "15")
	if m := seen.PlannedFrom(read, p); m.Template != seen.Template {
		t.Errorf("the event saw the change first: template %+v, want %+v", m.Template, seen.Template)
	}
}

// The write that records a template change as applied often meets the
// workload controller's status write, which the template change itself
// set off (a conflict). The plan made again, 100 ms later on a newer
// version of the same workload, orders the template change against the
// same change set: still applied, no new settle window, no rollout.
func TestTemplateAppliedAfterAConflict(t *testing.T) {
	opts := []func(*Input){templateRolls, both, digestOf(cmApp, "cm2"), envVar(cmApp, "cm1"), seenAt(envVar(cmApp, "cm1")), newImage,
		templateChanged(time.Second), versions("20", "10"), func(i *Input) { i.SettleWindow = time.Second }}
	first := in(opts...)
	p := For(first)
	if len(p.WithTemplate) != 1 || p.Reloads() {
		t.Fatalf("with template %d, reloads %v: want the change applied by the template", len(p.WithTemplate), p.Reloads())
	}
	// The controller keeps the plan's memory, then its write fails: no Wrote.
	m := first.PlannedFrom(first.Memory, p)
	again := in(opts...)
	again.Memory, again.Now, again.Workload.Version = m, now.Add(100*time.Millisecond), "21"
	p = For(again)
	if p.Wait > 0 || p.Reloads() || len(p.WithTemplate) != 1 {
		t.Fatalf("wait %v, reloads %v, with template %d: want the change applied again, at once", p.Wait, p.Reloads(), len(p.WithTemplate))
	}
}
