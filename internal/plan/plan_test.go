package plan

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/ripple-dev/ripple/internal/annotation"
	"github.com/ripple-dev/ripple/internal/decide"
	"github.com/ripple-dev/ripple/internal/digest"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/strategy"
)

var (
	keys    = annotation.DefaultKeys(annotation.DefaultPrefix)
	now     = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	started = now.Add(-time.Hour)
	cmApp   = refs.Ref{Kind: refs.ConfigMap, Name: "app"}
	secDB   = refs.Ref{Kind: refs.Secret, Name: "db"}
)

// in is an auto-reloading Deployment-like workload, created before Ripple
// started, that references ConfigMap "app" and Secret "db" from env, with
// the settle window off.
func in(opts ...func(*Input)) Input {
	i := Input{
		Settings: Settings{
			Keys: keys, Strategy: strategy.EnvVars{}, SourceKinds: []refs.Kind{refs.ConfigMap, refs.Secret},
			Started: started,
		},
		Workload: Workload{
			Namespace:   "shop",
			Annotations: map[string]string{keys.Auto: "true"},
			Created:     started.Add(-time.Hour),
			Template: &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "web",
				EnvFrom: []corev1.EnvFromSource{
					{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "app"}}},
					{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "db"}}},
				},
			}}}},
		},
		Sources: []Source{
			{Ref: cmApp, Found: true, Digest: "cm1", Created: started.Add(-2 * time.Hour)},
			{Ref: secDB, Found: true, Digest: "s1", Created: started.Add(-2 * time.Hour)},
		},
		Now: now,
	}
	for _, o := range opts {
		o(&i)
	}
	return i
}

func annotate(k, v string) func(*Input) {
	return func(i *Input) { i.Workload.Annotations[k] = v }
}

func recorded(rec map[string]string) func(*Input) {
	b, _ := json.Marshal(rec)
	return annotate(keys.Applied, string(b))
}

func digestOf(ref refs.Ref, sum string) func(*Input) {
	return func(i *Input) {
		for j := range i.Sources {
			if i.Sources[j].Ref == ref {
				i.Sources[j].Digest = sum
			}
		}
	}
}

// before says that ref's data was sum until a change seen at seen.
func before(ref refs.Ref, sum string, seen time.Time) func(*Input) {
	return func(i *Input) {
		for j := range i.Sources {
			if i.Sources[j].Ref == ref {
				i.Sources[j].Before = &Before{Digest: sum, Seen: seen}
			}
		}
	}
}

func envVar(ref refs.Ref, sum string) func(*Input) {
	return func(i *Input) {
		c := &i.Workload.Template.Spec.Containers[0]
		c.Env = append(c.Env, corev1.EnvVar{Name: strategy.EnvVarName(ref), Value: sum})
	}
}

// both is the record of a workload that has seen both sources at their
// first digests.
var both = recorded(map[string]string{"ConfigMap/app": "cm1", "Secret/db": "s1"})

func states(p Plan) map[refs.Ref]State {
	out := map[refs.Ref]State{}
	for _, sp := range p.Sources {
		out[sp.Ref] = sp.State
	}
	return out
}

func changed(p Plan) []string {
	var out []string
	for _, c := range p.Changes {
		out = append(out, c.Ref.String()+"="+c.Hash)
	}
	return out
}

func recordOf(t *testing.T, p Plan) map[string]string {
	t.Helper()
	v, ok := p.Update.Annotations[keys.Applied]
	if !ok || v == nil {
		return nil
	}
	rec := map[string]string{}
	if err := json.Unmarshal([]byte(*v), &rec); err != nil {
		t.Fatalf("record %q: %v", *v, err)
	}
	return rec
}

func envOf(p Plan, ref refs.Ref) (string, bool) {
	return strategy.EnvVars{}.Applied(p.Update.Template, ref)
}

func TestSourcesAndRecord(t *testing.T) {
	for _, tc := range []struct {
		name       string
		in         Input
		states     map[refs.Ref]State
		changes    []string
		record     map[string]string // nil: no record written
		reloads    bool
		warnings   int
		messageHas string
	}{
		{
			name:   "not opted in: nothing",
			in:     in(func(i *Input) { delete(i.Workload.Annotations, keys.Auto) }),
			states: map[refs.Ref]State{cmApp: NotReloading, secDB: NotReloading},
		},
		{
			name:   "first sight is a baseline, recorded on the metadata",
			in:     in(),
			states: map[refs.Ref]State{cmApp: Baseline, secDB: Baseline},
			record: map[string]string{"ConfigMap/app": "cm1", "Secret/db": "s1"},
		},
		{
			name:    "no baseline yet, changed since start: the data before the change counts as applied",
			in:      in(digestOf(cmApp, "cm2"), before(cmApp, "cm1", now.Add(-time.Minute))),
			states:  map[refs.Ref]State{cmApp: Changed, secDB: Baseline},
			changes: []string{"ConfigMap/app=cm2"},
			reloads: true,
			record:  map[string]string{"ConfigMap/app": "cm2", "Secret/db": "s1"},
		},
		{
			name:   "no baseline yet, changed and changed back: nothing to roll",
			in:     in(before(cmApp, "cm1", now.Add(-time.Minute))),
			states: map[refs.Ref]State{cmApp: Unchanged, secDB: Baseline},
			record: map[string]string{"ConfigMap/app": "cm1", "Secret/db": "s1"},
		},
		{
			name: "created in the second of the change: a baseline, never a rollout on creation",
			in: in(digestOf(cmApp, "cm2"), before(cmApp, "cm1", now.Add(-time.Minute)),
				func(i *Input) { i.Workload.Created = now.Add(-time.Minute).Truncate(time.Second) }),
			states: map[refs.Ref]State{cmApp: Baseline, secDB: Baseline},
			record: map[string]string{"ConfigMap/app": "cm2", "Secret/db": "s1"},
		},
		{
			name:   "a baseline written wins over the data before a change",
			in:     in(both, digestOf(cmApp, "cm2"), before(cmApp, "cm0", now.Add(-time.Minute)), envVar(cmApp, "cm2")),
			states: map[refs.Ref]State{cmApp: Unchanged, secDB: Unchanged},
			record: map[string]string{"ConfigMap/app": "cm2", "Secret/db": "s1"},
		},
		{
			name:   "recorded and unchanged: no write",
			in:     in(both),
			states: map[refs.Ref]State{cmApp: Unchanged, secDB: Unchanged},
		},
		{
			name:    "a change since the record rolls, one change per source",
			in:      in(both, digestOf(cmApp, "cm2")),
			states:  map[refs.Ref]State{cmApp: Changed, secDB: Unchanged},
			changes: []string{"ConfigMap/app=cm2"},
			reloads: true,
			record:  map[string]string{"ConfigMap/app": "cm2", "Secret/db": "s1"},
		},
		{
			name:    "the env var is the applied state and wins over the record",
			in:      in(both, envVar(cmApp, "cm2"), digestOf(cmApp, "cm2")),
			states:  map[refs.Ref]State{cmApp: Unchanged, secDB: Unchanged},
			changes: nil,
			record:  map[string]string{"ConfigMap/app": "cm2", "Secret/db": "s1"},
		},
		{
			name:    "both sources changed: one change set",
			in:      in(both, digestOf(cmApp, "cm2"), digestOf(secDB, "s2")),
			changes: []string{"ConfigMap/app=cm2", "Secret/db=s2"},
			reloads: true,
			record:  map[string]string{"ConfigMap/app": "cm2", "Secret/db": "s2"},
		},
		{
			name:       "excluded source: not reloading, reason Excluded",
			in:         in(both, digestOf(secDB, "s2"), annotate(keys.SecretExclude, "db")),
			states:     map[refs.Ref]State{cmApp: Unchanged, secDB: NotReloading},
			messageHas: keys.SecretExclude,
			record:     map[string]string{"ConfigMap/app": "cm1"},
		},
		{
			name:   "a deleted source keeps its last digest in the record",
			in:     in(both, func(i *Input) { i.Sources[0] = Source{Ref: cmApp} }),
			states: map[refs.Ref]State{cmApp: Missing, secDB: Unchanged},
		},
		{
			name: "re-created with other data: a change",
			in: in(recorded(map[string]string{"ConfigMap/app": "cm1", "Secret/db": "s1"}), digestOf(cmApp, "cm9"),
				func(i *Input) { i.Sources[0].Created = now.Add(-time.Second) }),
			states:  map[refs.Ref]State{cmApp: Changed, secDB: Unchanged},
			changes: []string{"ConfigMap/app=cm9"},
			reloads: true,
			record:  map[string]string{"ConfigMap/app": "cm9", "Secret/db": "s1"},
		},
		{
			name:   "re-created with the same data: nothing",
			in:     in(both, func(i *Input) { i.Sources[0].Created = now.Add(-time.Second) }),
			states: map[refs.Ref]State{cmApp: Unchanged, secDB: Unchanged},
		},
		{
			name: "deleted with --reload-on-delete: the env var is removed",
			in: in(both, envVar(cmApp, "cm1"), func(i *Input) {
				i.ReloadOnDelete = true
				i.Sources[0] = Source{Ref: cmApp}
			}),
			states:  map[refs.Ref]State{cmApp: Deleted, secDB: Unchanged},
			changes: []string{"ConfigMap/app=" + digest.DeleteMarker},
			reloads: true,
			record:  map[string]string{"Secret/db": "s1"},
		},
		{
			name: "deleted with --reload-on-delete but never rolled: nothing to remove",
			in: in(both, func(i *Input) {
				i.ReloadOnDelete = true
				i.Sources[0] = Source{Ref: cmApp}
			}),
			states:  map[refs.Ref]State{cmApp: Deleted, secDB: Unchanged},
			changes: []string{"ConfigMap/app=" + digest.DeleteMarker},
			record:  map[string]string{"Secret/db": "s1"},
		},
		{
			name: "--reload-on-create: created after the workload and after start",
			in: in(func(i *Input) {
				i.ReloadOnCreate = true
				i.Sources[0].Created = now.Add(-time.Minute)
			}),
			states:  map[refs.Ref]State{cmApp: Created, secDB: Baseline},
			changes: []string{"ConfigMap/app=cm1"},
			reloads: true,
			record:  map[string]string{"ConfigMap/app": "cm1", "Secret/db": "s1"},
		},
		{
			name: "--reload-on-create: created before start is a baseline",
			in: in(func(i *Input) {
				i.ReloadOnCreate = true
				i.Sources[0].Created = started.Add(-time.Minute)
			}),
			states: map[refs.Ref]State{cmApp: Baseline, secDB: Baseline},
			record: map[string]string{"ConfigMap/app": "cm1", "Secret/db": "s1"},
		},
		{
			name: "--reload-on-create with --sync-after-restart: created while down",
			in: in(func(i *Input) {
				i.ReloadOnCreate, i.SyncAfterRestart = true, true
				i.Sources[0].Created = started.Add(-time.Minute)
			}),
			states:  map[refs.Ref]State{cmApp: Created, secDB: Baseline},
			changes: []string{"ConfigMap/app=cm1"},
			reloads: true,
			record:  map[string]string{"ConfigMap/app": "cm1", "Secret/db": "s1"},
		},
		{
			name: "an invalid pattern warns; the rest still applies",
			in: in(both, digestOf(cmApp, "cm2"), func(i *Input) {
				delete(i.Workload.Annotations, keys.Auto)
				i.Workload.Annotations[keys.ConfigMapReload] = "app,[bad"
			}),
			states:   map[refs.Ref]State{cmApp: Changed, secDB: NotReloading},
			changes:  []string{"ConfigMap/app=cm2"},
			reloads:  true,
			warnings: 1,
			record:   map[string]string{"ConfigMap/app": "cm2"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := For(tc.in)
			if tc.states != nil {
				if got := states(p); !mapsEqual(got, tc.states) {
					t.Errorf("states %v, want %v", got, tc.states)
				}
			}
			if got := changed(p); !slices.Equal(got, tc.changes) {
				t.Errorf("changes %v, want %v", got, tc.changes)
			}
			if got := recordOf(t, p); !mapsEqual(got, tc.record) {
				t.Errorf("record %v, want %v", got, tc.record)
			}
			if p.Reloads() != tc.reloads {
				t.Errorf("reloads %v, want %v", p.Reloads(), tc.reloads)
			}
			if len(p.Warnings) != tc.warnings {
				t.Errorf("warnings %q, want %d", p.Warnings, tc.warnings)
			}
			if tc.messageHas != "" && !slices.ContainsFunc(p.Sources, func(sp SourcePlan) bool { return strings.Contains(sp.Decision.Message, tc.messageHas) }) {
				t.Errorf("no decision message names %q: %+v", tc.messageHas, p.Sources)
			}
		})
	}
}

func mapsEqual[K, V comparable](a, b map[K]V) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestReloadWritesTheChangeOnTheTemplate(t *testing.T) {
	p := For(in(both, digestOf(cmApp, "cm2")))
	if v, ok := envOf(p, cmApp); !ok || v != "cm2" {
		t.Errorf("env var %q (%v), want cm2", v, ok)
	}
	if _, ok := envOf(p, secDB); ok {
		t.Error("the unchanged Secret got an env var")
	}
	if p.Update.Paused != nil {
		t.Error("a workload without a pause period was paused")
	}
}

// Colliding env var names (app-config and app.config both map to
// STAKATER_APP_CONFIG_CONFIGMAP): their state comes from the record only,
// or the workload would roll forever, the env var flipping between them.
func TestCollidingEnvVarNames(t *testing.T) {
	dash, dot := refs.Ref{Kind: refs.ConfigMap, Name: "app-config"}, refs.Ref{Kind: refs.ConfigMap, Name: "app.config"}
	collide := func(i *Input) {
		i.SourceKinds = []refs.Kind{refs.ConfigMap}
		i.Workload.Template.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{
			{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: dash.Name}}},
			{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: dot.Name}}},
		}
		i.Sources = []Source{{Ref: dash, Found: true, Digest: "a1"}, {Ref: dot, Found: true, Digest: "b1"}}
	}
	rec := recorded(map[string]string{dash.String(): "a1", dot.String(): "b1"})

	// The env var shows the dot's digest; the dash is not "changed" by it.
	p := For(in(collide, rec, envVar(dot, "b1")))
	if len(p.Changes) != 0 || p.Writes() {
		t.Fatalf("changes %v, writes %v: want none", changed(p), p.Writes())
	}
	// A real change of one of them rolls once, and both stay recorded.
	p = For(in(collide, rec, envVar(dot, "b1"), func(i *Input) { i.Sources[0].Digest = "a2" }))
	if got := changed(p); !slices.Equal(got, []string{"ConfigMap/app-config=a2"}) {
		t.Fatalf("changes %v", got)
	}
	if got := recordOf(t, p); got[dash.String()] != "a2" || got[dot.String()] != "b1" {
		t.Errorf("record %v, want both, the dash at a2", got)
	}
}

// A kind whose reload leaves its template alone (a CronJob starting a
// Job) shows nothing there: the record says what was applied.
func TestKeepsTemplateTracksByRecord(t *testing.T) {
	keeps := func(i *Input) { i.Workload.KeepsTemplate = true }
	p := For(in(keeps, both, envVar(cmApp, "cm2"), digestOf(cmApp, "cm2")))
	if got := changed(p); !slices.Equal(got, []string{"ConfigMap/app=cm2"}) {
		t.Fatalf("changes %v: the record, not the template, is the applied state", got)
	}
	if got := recordOf(t, p); got["ConfigMap/app"] != "cm2" {
		t.Errorf("record %v, want the new digest recorded", got)
	}
}

func TestSettleWindow(t *testing.T) {
	window := func(d time.Duration) func(*Input) { return func(i *Input) { i.SettleWindow = d } }
	change := []func(*Input){both, digestOf(cmApp, "cm2"), window(time.Second)}
	id := "ConfigMap/app=cm2;"

	t.Run("the first sight of a change waits a window", func(t *testing.T) {
		p := For(in(change...))
		if p.Wait != time.Second || p.Writes() {
			t.Fatalf("wait %v, writes %v: want 1s and nothing written", p.Wait, p.Writes())
		}
		if p.Pending != (Pending{ID: id, First: now, Last: now}) {
			t.Errorf("pending %+v", p.Pending)
		}
	})
	t.Run("the same change set after the window acts, seen at the first sight", func(t *testing.T) {
		first := now.Add(-1500 * time.Millisecond)
		p := For(in(append(change, func(i *Input) { i.Pending = Pending{ID: id, First: first, Last: first} })...))
		if p.Wait != 0 || !p.Reloads() || !p.Seen.Equal(first) {
			t.Fatalf("wait %v, reloads %v, seen %v", p.Wait, p.Reloads(), p.Seen)
		}
	})
	t.Run("a new change set restarts the window", func(t *testing.T) {
		first := now.Add(-1500 * time.Millisecond)
		p := For(in(append(change, func(i *Input) { i.Pending = Pending{ID: "other", First: first, Last: first} })...))
		if p.Wait != time.Second || !p.Pending.First.Equal(first) || !p.Pending.Last.Equal(now) {
			t.Fatalf("wait %v, pending %+v", p.Wait, p.Pending)
		}
	})
	t.Run("no longer than ten windows after the first change", func(t *testing.T) {
		first := now.Add(-10 * time.Second)
		p := For(in(append(change, func(i *Input) { i.Pending = Pending{ID: "other", First: first, Last: now.Add(-time.Millisecond)} })...))
		if p.Wait != 0 || !p.Reloads() {
			t.Fatalf("wait %v, reloads %v: want the capped window closed", p.Wait, p.Reloads())
		}
	})
	t.Run("the annotation overrides the default; 0 acts at once", func(t *testing.T) {
		p := For(in(append(change, annotate(keys.SettleWindow, "0"))...))
		if p.Wait != 0 || !p.Reloads() || p.Pending != (Pending{}) {
			t.Fatalf("wait %v, reloads %v, pending %+v", p.Wait, p.Reloads(), p.Pending)
		}
	})
	t.Run("an invalid annotation warns and uses the default", func(t *testing.T) {
		p := For(in(append(change, annotate(keys.SettleWindow, "soon"))...))
		if p.Wait != time.Second || len(p.Warnings) != 1 || !strings.Contains(p.Warnings[0], keys.SettleWindow) {
			t.Fatalf("wait %v, warnings %q", p.Wait, p.Warnings)
		}
	})
	t.Run("a change noticed at its event acts a window after the event", func(t *testing.T) {
		event := now.Add(-time.Second)
		p := For(in(append(change, func(i *Input) { i.Pending = Pending{}.Notice(event) })...))
		if p.Wait != 0 || !p.Reloads() || !p.Seen.Equal(event) {
			t.Fatalf("wait %v, reloads %v, seen %v", p.Wait, p.Reloads(), p.Seen)
		}
		p = For(in(append(change, func(i *Input) { i.Pending = Pending{}.Notice(event).Notice(now.Add(-100 * time.Millisecond)) })...))
		if p.Wait != 900*time.Millisecond || p.Pending.ID != id || !p.Pending.First.Equal(event) {
			t.Fatalf("after a second event: wait %v, pending %+v", p.Wait, p.Pending)
		}
	})
	t.Run("no change forgets the settle state", func(t *testing.T) {
		p := For(in(both, window(time.Second), func(i *Input) { i.Pending = Pending{ID: id, First: now, Last: now} }))
		if p.Pending != (Pending{}) || p.Wait != 0 {
			t.Fatalf("pending %+v, wait %v", p.Pending, p.Wait)
		}
	})
}

func TestPausePeriod(t *testing.T) {
	pausable := func(paused bool) func(*Input) {
		return func(i *Input) { i.Workload.Pausable, i.Workload.Paused = true, paused }
	}
	period := annotate(keys.PausePeriod, "30s")
	pausedAt := func(t time.Time) func(*Input) { return annotate(keys.PausedAt, t.Format(time.RFC3339)) }

	t.Run("a reload pauses the workload and records when", func(t *testing.T) {
		p := For(in(both, digestOf(cmApp, "cm2"), pausable(false), period))
		if !p.Reloads() || p.Update.Paused == nil || !*p.Update.Paused || p.Requeue != 30*time.Second {
			t.Fatalf("reloads %v, paused %v, requeue %v", p.Reloads(), p.Update.Paused, p.Requeue)
		}
		if v := p.Update.Annotations[keys.PausedAt]; v == nil || *v != now.Format(time.RFC3339) {
			t.Errorf("paused-at %v", v)
		}
	})
	t.Run("within the period: look again when it ends, not extended by reloads", func(t *testing.T) {
		p := For(in(both, digestOf(cmApp, "cm2"), pausable(true), period, pausedAt(now.Add(-10*time.Second))))
		if p.Requeue != 20*time.Second || p.Update.Paused != nil || !p.Reloads() {
			t.Fatalf("requeue %v, paused %v, reloads %v", p.Requeue, p.Update.Paused, p.Reloads())
		}
		if _, ok := p.Update.Annotations[keys.PausedAt]; ok {
			t.Error("paused-at rewritten within the period")
		}
	})
	t.Run("after the period: resumed and the mark removed", func(t *testing.T) {
		p := For(in(both, pausable(true), period, pausedAt(now.Add(-31*time.Second))))
		if p.Update.Paused == nil || *p.Update.Paused || p.Requeue != 0 {
			t.Fatalf("paused %v, requeue %v", p.Update.Paused, p.Requeue)
		}
		if v, ok := p.Update.Annotations[keys.PausedAt]; !ok || v != nil {
			t.Errorf("paused-at %v (present %v), want removed", v, ok)
		}
	})
	t.Run("resumed by someone else: the stale mark is removed", func(t *testing.T) {
		p := For(in(both, pausable(false), period, pausedAt(now.Add(-5*time.Second))))
		if v, ok := p.Update.Annotations[keys.PausedAt]; !ok || v != nil || p.Update.Paused != nil {
			t.Fatalf("annotations %v, paused %v", p.Update.Annotations, p.Update.Paused)
		}
	})
	t.Run("paused by its owner: left alone", func(t *testing.T) {
		p := For(in(both, digestOf(cmApp, "cm2"), pausable(true), period))
		if p.Update.Paused != nil || p.Requeue != 0 || !p.Reloads() {
			t.Fatalf("paused %v, requeue %v, reloads %v", p.Update.Paused, p.Requeue, p.Reloads())
		}
	})
	t.Run("an invalid period warns and reloads without a pause", func(t *testing.T) {
		p := For(in(both, digestOf(cmApp, "cm2"), pausable(false), annotate(keys.PausePeriod, "a while")))
		if p.Update.Paused != nil || !p.Reloads() || len(p.Warnings) != 1 || !strings.Contains(p.Warnings[0], keys.PausePeriod) {
			t.Fatalf("paused %v, reloads %v, warnings %q", p.Update.Paused, p.Reloads(), p.Warnings)
		}
	})
	t.Run("a kind that cannot pause ignores the annotation", func(t *testing.T) {
		p := For(in(both, digestOf(cmApp, "cm2"), period))
		if p.Update.Paused != nil || len(p.Warnings) != 0 {
			t.Fatalf("paused %v, warnings %q", p.Update.Paused, p.Warnings)
		}
	})
}

func TestSecretProviderClassDigest(t *testing.T) {
	spc := refs.Ref{Kind: refs.SecretProviderClass, Name: "vault"}
	mounting := func(latest string, mounts map[string]int) func(*Input) {
		return func(i *Input) {
			i.SourceKinds = []refs.Kind{refs.SecretProviderClass}
			i.Workload.Template.Spec.Volumes = []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{
				Driver: "secrets-store.csi.k8s.io", VolumeAttributes: map[string]string{"secretProviderClass": spc.Name},
			}}}}
			i.Workload.Template.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "v", MountPath: "/s"}}
			i.Sources = []Source{{Ref: spc, Found: true, Digest: latest, Mounts: mounts}}
		}
	}
	rec := recorded(map[string]string{spc.String(): "v1"})
	for _, tc := range []struct {
		name    string
		opt     func(*Input)
		state   State
		changes []string
	}{
		{"the latest change seen wins", mounting("v2", nil), Changed, []string{spc.String() + "=v2"}},
		{"after a restart, a pod still showing the applied digest: no change", mounting("", map[string]int{"v1": 1, "v2": 3}), Unchanged, nil},
		{"after a restart, else the digest most pods show", mounting("", map[string]int{"v2": 3, "v3": 1}), Changed, []string{spc.String() + "=v2"}},
		{"no pod mounts it: untracked", mounting("", map[string]int{}), Untracked, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := For(in(rec, tc.opt))
			if got := states(p)[spc]; got != tc.state {
				t.Errorf("state %s, want %s", got, tc.state)
			}
			if got := changed(p); !slices.Equal(got, tc.changes) {
				t.Errorf("changes %v, want %v", got, tc.changes)
			}
		})
	}
}

func TestReloads(t *testing.T) {
	i := in()
	if !Reloads(i.Settings, i.Workload, Source{Ref: cmApp, Found: true}) {
		t.Error("an auto workload does not reload on a source it references")
	}
	if Reloads(i.Settings, i.Workload, Source{Ref: cmApp, Found: true, Annotations: map[string]string{keys.Ignore: "true"}}) {
		t.Error("an ignored source reloads")
	}
	if Reloads(i.Settings, i.Workload, Source{Ref: refs.Ref{Kind: refs.ConfigMap, Name: "other"}, Found: true}) {
		t.Error("an auto workload reloads on a source it does not reference")
	}
}

// Every source plan carries the decision's reason, for explain.
func TestEverySourceHasAReason(t *testing.T) {
	p := For(in(both, annotate(keys.SecretExclude, "db")))
	want := map[refs.Ref]decide.Reason{cmApp: decide.AutoMatch, secDB: decide.Excluded}
	for _, sp := range p.Sources {
		if sp.Decision.Reason != want[sp.Ref] || sp.Decision.Message == "" {
			t.Errorf("%s: reason %q message %q, want %q", sp.Ref, sp.Decision.Reason, sp.Decision.Message, want[sp.Ref])
		}
	}
}

// Dry-run decides as usual, writes no template, and keeps the record at
// what the workload shows, so turning it off rolls each change once.
func TestDryRun(t *testing.T) {
	dry := func(i *Input) { i.DryRun = true }
	t.Run("a change would reload; the record keeps the applied digest", func(t *testing.T) {
		p := For(in(dry, both, digestOf(cmApp, "cm2")))
		if !p.WouldReload || p.Reloads() || p.Writes() {
			t.Fatalf("would %v, reloads %v, writes %v: want only would", p.WouldReload, p.Reloads(), p.Writes())
		}
		// Off again: the same input rolls it.
		if p := For(in(both, digestOf(cmApp, "cm2"))); !p.Reloads() {
			t.Fatal("after dry-run, the held-back change does not roll")
		}
	})
	t.Run("first sight writes the baseline, rolls nothing", func(t *testing.T) {
		p := For(in(dry))
		if p.WouldReload || p.Reloads() {
			t.Fatalf("would %v, reloads %v", p.WouldReload, p.Reloads())
		}
		if got := recordOf(t, p); !mapsEqual(got, map[string]string{"ConfigMap/app": "cm1", "Secret/db": "s1"}) {
			t.Errorf("record %v", got)
		}
	})
	t.Run("a baseline written in dry-run keeps a changed source at its applied digest", func(t *testing.T) {
		p := For(in(dry, recorded(map[string]string{"ConfigMap/app": "cm1"}), digestOf(cmApp, "cm2")))
		if got := recordOf(t, p); !mapsEqual(got, map[string]string{"ConfigMap/app": "cm1", "Secret/db": "s1"}) {
			t.Errorf("record %v, want the Secret's baseline added and the ConfigMap left at cm1", got)
		}
		if !p.WouldReload {
			t.Error("the changed ConfigMap would not reload")
		}
	})
	t.Run("a created source is not recorded, so it still counts as created", func(t *testing.T) {
		p := For(in(dry, both, func(i *Input) {
			i.ReloadOnCreate = true
			i.Sources = append(i.Sources, Source{Ref: refs.Ref{Kind: refs.ConfigMap, Name: "new"}, Found: true, Digest: "n1", Created: now})
			i.Workload.Template.Spec.Containers[0].EnvFrom = append(i.Workload.Template.Spec.Containers[0].EnvFrom,
				corev1.EnvFromSource{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "new"}}})
		}))
		if !p.WouldReload || p.Writes() {
			t.Fatalf("would %v, writes %v", p.WouldReload, p.Writes())
		}
	})
	t.Run("no pause is taken", func(t *testing.T) {
		p := For(in(dry, both, digestOf(cmApp, "cm2"), annotate(keys.PausePeriod, "30s"), func(i *Input) { i.Workload.Pausable = true }))
		if p.Update.Paused != nil || p.Requeue != 0 {
			t.Fatalf("paused %v, requeue %v", p.Update.Paused, p.Requeue)
		}
	})
	t.Run("a pause taken before dry-run still ends", func(t *testing.T) {
		paused := func(at time.Time) func(*Input) {
			return func(i *Input) {
				i.Workload.Pausable, i.Workload.Paused = true, true
				annotate(keys.PausedAt, at.Format(time.RFC3339))(i)
			}
		}
		p := For(in(dry, both, annotate(keys.PausePeriod, "30s"), paused(now.Add(-10*time.Second))))
		if p.Update.Paused != nil || p.Requeue != 20*time.Second {
			t.Fatalf("within the period: paused %v, requeue %v; want untouched, look again in 20s", p.Update.Paused, p.Requeue)
		}
		p = For(in(dry, both, digestOf(cmApp, "cm2"), annotate(keys.PausePeriod, "30s"), paused(now.Add(-31*time.Second))))
		if p.Update.Paused == nil || *p.Update.Paused || p.Reloads() || !p.WouldReload {
			t.Fatalf("after the period: paused %v, reloads %v, would %v; want resumed, no rollout", p.Update.Paused, p.Reloads(), p.WouldReload)
		}
		if v, ok := p.Update.Annotations[keys.PausedAt]; !ok || v != nil {
			t.Errorf("paused-at %v (present %v), want removed", v, ok)
		}
	})
}
