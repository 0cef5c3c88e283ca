package plan

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/ripple-dev/ripple/internal/annotation"
	"github.com/ripple-dev/ripple/internal/digest"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/strategy"
)

// world is a workload and its ConfigMap "app" across reconciles: each
// reconcile plans and applies the plan's write, as the reconciler does.
type world struct {
	t     *testing.T
	in    Input
	rolls int
	// d digests app's data; the zero Digester makes unkeyed tables.
	d    digest.Digester
	data map[string]string
}

// newWorld is an auto workload whose one container uses ConfigMap "app" as
// use says, with app's data data; its first reconcile takes the baseline.
func newWorld(t *testing.T, use func(*corev1.PodSpec), data map[string]string, annotations ...string) *world {
	t.Helper()
	w := &world{t: t, in: in(func(i *Input) {
		i.SourceKinds = []refs.Kind{refs.ConfigMap}
		i.Workload.Template.Spec.Containers[0].EnvFrom = nil
		use(&i.Workload.Template.Spec)
		for j := 0; j+1 < len(annotations); j += 2 {
			i.Workload.Annotations[annotations[j]] = annotations[j+1]
		}
	})}
	w.set(data)
	if p := w.reconcile(); p.Sources[0].State != Baseline {
		t.Fatalf("first reconcile: %s, want a baseline", p.Sources[0].State)
	}
	return w
}

// set replaces app's data.
func (w *world) set(data map[string]string) {
	w.data = data
	sums := w.d.ConfigMap(&corev1.ConfigMap{Data: data})
	w.in.Sources = []Source{{Ref: cmApp, Found: true, Digest: sums.Digest, Keys: sums.Keys, Others: sums.Others, Created: started.Add(-2 * time.Hour)}}
}

// digestWith digests app's data with d from now on, as a Ripple started
// with another --digest or key ring does.
func (w *world) digestWith(d digest.Digester) {
	w.d = d
	w.set(w.data)
}

// annotate sets (or with "" removes) a workload annotation.
func (w *world) annotate(key, v string) {
	if v == "" {
		delete(w.in.Workload.Annotations, key)
		return
	}
	w.in.Workload.Annotations[key] = v
}

// reconcile plans and applies the plan, counting rollouts.
func (w *world) reconcile() Plan {
	w.t.Helper()
	p := For(w.in)
	if p.Reloads() {
		w.rolls++
		w.in.Workload.Template = p.Update.Template
	}
	for k, v := range p.Update.Annotations {
		w.annotate(k, "")
		if v != nil {
			w.annotate(k, *v)
		}
	}
	if again := For(w.in); again.Writes() {
		w.t.Fatalf("the plan after a write writes again: %+v", again.Update)
	}
	return p
}

// expect reconciles and checks the source's state and the rollouts so far.
func (w *world) expect(state State, rolls int) {
	w.t.Helper()
	p := w.reconcile()
	if got := p.Sources[0].State; got != state || w.rolls != rolls {
		w.t.Fatalf("state %s after %d rollouts, want %s after %d", got, w.rolls, state, rolls)
	}
}

// shown is the digest of app the template shows.
func (w *world) shown() string {
	v, _ := strategy.EnvVars{}.Applied(w.in.Workload.Template, cmApp)
	return v
}

func envKey(key string) func(*corev1.PodSpec) {
	return func(s *corev1.PodSpec) {
		s.Containers[0].Env = append(s.Containers[0].Env, corev1.EnvVar{Name: "A", ValueFrom: &corev1.EnvVarSource{
			ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "app"}, Key: key},
		}})
	}
}

func wholeEnv(s *corev1.PodSpec) {
	s.Containers[0].EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "app"}}}}
}

func volumeItems(keys ...string) func(*corev1.PodSpec) {
	return func(s *corev1.PodSpec) {
		vs := &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "app"}}
		for _, k := range keys {
			vs.Items = append(vs.Items, corev1.KeyToPath{Key: k, Path: k})
		}
		s.Volumes = []corev1.Volume{{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: vs}}}
		s.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "cfg", MountPath: "/cfg"}}
	}
}

func ab(a, b string) map[string]string { return map[string]string{"a": a, "b": b} }

func TestPerKeyReload(t *testing.T) {
	on := keys.ReloadOnKeys
	for _, tc := range []struct {
		name     string
		use      func(*corev1.PodSpec)
		value    string // the reload-on-keys annotation; "" for none
		keys     []string
		bRolls   bool // a change of b alone rolls
		warnings int
	}{
		{name: "valueFrom key a", use: envKey("a"), value: "true", keys: []string{"a"}},
		{name: "volume items", use: volumeItems("a"), value: "true", keys: []string{"a"}},
		{name: "envFrom counts every key", use: wholeEnv, value: "true", bRolls: true},
		{name: "a volume without items counts every key", use: volumeItems(), value: "true", bRolls: true},
		{name: "explicit list on a whole use", use: wholeEnv, value: "app[a]", keys: []string{"a"}},
		{name: "explicit list with its kind", use: wholeEnv, value: "configmap/app[a]", keys: []string{"a"}},
		{name: "explicit list of another kind leaves it whole", use: wholeEnv, value: "secret/app[a]", bRolls: true},
		{name: "explicit list beats the template's keys", use: envKey("b"), value: "true, app[a]", keys: []string{"a"}},
		{name: "a pattern", use: wholeEnv, value: "app[x, [a-c]]", keys: []string{"x", "[a-c]"}, bRolls: true},
		{name: "no opt-in: Reloader's behaviour", use: envKey("a"), bRolls: true},
		{name: "false: Reloader's behaviour", use: envKey("a"), value: "false", bRolls: true},
		{name: "invalid: a warning and Reloader's behaviour", use: envKey("a"), value: "app[a", bRolls: true, warnings: 1},
		{name: "invalid pattern", use: envKey("a"), value: "app[(]", bRolls: true, warnings: 1},
		{name: "neither true nor a list", use: envKey("a"), value: "yes", bRolls: true, warnings: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ann []string
			if tc.value != "" {
				ann = []string{on, tc.value}
			}
			w := newWorld(t, tc.use, ab("1", "1"), ann...)
			w.set(ab("1", "2"))
			p := w.reconcile()
			if got := p.Sources[0].Keys; !slices.Equal(got, tc.keys) {
				t.Errorf("keys %q, want %q", got, tc.keys)
			}
			if len(p.Warnings) != tc.warnings || tc.warnings > 0 && !strings.Contains(p.Warnings[0], on) {
				t.Errorf("warnings %q, want %d naming %s", p.Warnings, tc.warnings, on)
			}
			want := 0
			if !tc.bRolls && p.Sources[0].State != Unchanged {
				t.Errorf("a change of b: %s, want %s", p.Sources[0].State, Unchanged)
			}
			if tc.bRolls {
				want = 1
				if w.shown() != p.Sources[0].Digest {
					t.Errorf("shown %s, want %s", w.shown(), p.Sources[0].Digest)
				}
			}
			if w.rolls != want {
				t.Fatalf("a change of b: %d rollouts, want %d", w.rolls, want)
			}
			w.set(ab("2", "2"))
			w.expect(Changed, want+1)
			full := digest.ConfigMap(&corev1.ConfigMap{Data: ab("2", "2")})
			if (tc.keys == nil) != (w.shown() == full) {
				t.Errorf("shown %s; Reloader's digest is %s and keys %q", w.shown(), full, tc.keys)
			}
		})
	}
}

// A key that counts and is added or removed is a change; another is not.
func TestPerKeyAddedAndRemoved(t *testing.T) {
	w := newWorld(t, envKey("a"), map[string]string{"b": "1"}, keys.ReloadOnKeys, "true")
	w.set(map[string]string{"b": "1", "c": "1"})
	w.expect(Unchanged, 0)
	w.set(map[string]string{"a": "1", "b": "1", "c": "1"})
	w.expect(Changed, 1)
	w.set(map[string]string{"b": "1", "c": "1"})
	w.expect(Changed, 2)
}

// Turning the opt-in on or off changes the form of the digest, not the
// data: it rolls nothing by itself, and no change is missed after it.
func TestPerKeySwitching(t *testing.T) {
	on := keys.ReloadOnKeys
	t.Run("on, then changes", func(t *testing.T) {
		w := newWorld(t, envKey("a"), ab("1", "1"))
		w.set(ab("1", "2"))
		w.expect(Changed, 1) // Reloader's digest on the template
		w.annotate(on, "true")
		w.expect(Unchanged, 1)
		w.set(ab("1", "3"))
		w.expect(Unchanged, 1)
		w.set(ab("2", "3"))
		w.expect(Changed, 2)
	})
	t.Run("off, then changes", func(t *testing.T) {
		w := newWorld(t, envKey("a"), ab("1", "1"), on, "true")
		w.set(ab("2", "1"))
		w.expect(Changed, 1) // the per-key digest on the template
		w.annotate(on, "")
		w.expect(Unchanged, 1)
		w.set(ab("2", "2"))
		w.expect(Changed, 2)
	})
	t.Run("on and off again", func(t *testing.T) {
		w := newWorld(t, envKey("a"), ab("1", "1"))
		w.set(ab("1", "2"))
		w.expect(Changed, 1)
		w.annotate(on, "true")
		w.expect(Unchanged, 1)
		w.annotate(on, "")
		w.expect(Unchanged, 1)
		w.set(ab("1", "3"))
		w.expect(Changed, 2)
	})
	t.Run("an alias left by a later rollout matches nothing", func(t *testing.T) {
		w := newWorld(t, envKey("a"), ab("1", "1"))
		w.set(ab("1", "2"))
		w.expect(Changed, 1)
		w.annotate(on, "true")
		w.expect(Unchanged, 1) // an alias for Reloader's digest of a=1,b=2
		w.set(ab("2", "2"))
		w.expect(Changed, 2)
		w.set(ab("1", "2")) // back: the template shows a=2's digest
		w.expect(Changed, 3)
	})
}

// Upgrading to keyed per-key digests, switching --digest and rotating the
// key roll nothing: the value a workload shows in any earlier form of the
// current data is no change, and a change of the data after each still
// rolls.
func TestDigestFormsRollNothing(t *testing.T) {
	k1, k2, k3 := []byte("key one"), []byte("key two"), []byte("key three")
	steps := []digest.Digester{
		{Mode: digest.SHA1, Ring: digest.Ring{Current: k1}},                     // upgrade: keyed tables
		{Mode: digest.HMACSHA256, Ring: digest.Ring{Current: k1}},               // --digest=hmac-sha256
		{Mode: digest.HMACSHA256, Ring: digest.Ring{Current: k2, Previous: k1}}, // rotation
		{Mode: digest.SHA1, Ring: digest.Ring{Current: k2, Previous: k1}},       // back to sha1
		{Mode: digest.HMACSHA256, Ring: digest.Ring{Current: k3, Previous: k2}}, // another rotation
		{Mode: digest.HMACSHA256, Ring: digest.Ring{Current: k3, Previous: k2}}, // a restart
	}
	for _, tc := range []struct {
		name string
		use  func(*corev1.PodSpec)
		ann  []string
	}{
		{"per key", envKey("a"), []string{keys.ReloadOnKeys, "true"}},
		{"whole", wholeEnv, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, tc.use, ab("1", "1"), tc.ann...)
			w.set(ab("2", "1"))
			w.expect(Changed, 1) // unkeyed, as before keys existed
			for i, d := range steps {
				w.digestWith(d)
				w.expect(Unchanged, 1+i)
				w.set(ab(strconv.Itoa(i+3), "1"))
				w.expect(Changed, 2+i)
			}
		})
	}
}

// A key table under a key is not the unkeyed one, and the digest written
// in hmac-sha256 mode is no SHA1 of the data.
func TestKeyedFormsDiffer(t *testing.T) {
	w := newWorld(t, envKey("a"), ab("1", "1"), keys.ReloadOnKeys, "true")
	w.set(ab("2", "1"))
	w.expect(Changed, 1)
	unkeyed := w.shown()
	w.digestWith(digest.Digester{Mode: digest.HMACSHA256, Ring: digest.Ring{Current: []byte("k")}})
	w.set(ab("3", "1"))
	w.expect(Changed, 2)
	w.digestWith(digest.Digester{})
	w.set(ab("3", "1"))
	if keyed := w.shown(); keyed == unkeyed || keyed == w.in.Sources[0].Keys.Of(func(k string) bool { return k == "a" }) {
		t.Fatalf("the keyed per-key digest %q is an unkeyed one", keyed)
	}
}

// Under the opt-in, a SecretProviderClass keeps its digest: it has no keys.
func TestPerKeyLeavesSecretProviderClasses(t *testing.T) {
	s := keySelection(mustSpec(t, "true"), nil, refs.Ref{Kind: refs.SecretProviderClass, Name: "vault"})
	if s.counts != nil || s.names != nil {
		t.Fatalf("selection %q", s.names)
	}
}

func mustSpec(t *testing.T, v string) annotation.KeySpec {
	t.Helper()
	spec, err := annotation.ParseKeySpec(keys, map[string]string{keys.ReloadOnKeys: v}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// The annotations strategy records the per-key digest the same way.
func TestPerKeyAnnotationsStrategy(t *testing.T) {
	w := newWorld(t, envKey("a"), ab("1", "1"), keys.ReloadOnKeys, "true")
	w.in.Strategy = strategy.Annotations{}
	w.set(ab("1", "2"))
	w.expect(Unchanged, 0)
	w.set(ab("2", "2"))
	w.expect(Changed, 1)
	want := digest.ConfigMapKeys(&corev1.ConfigMap{Data: ab("2", "2")}).Of(func(k string) bool { return k == "a" })
	if got, _ := (strategy.Annotations{}).Applied(w.in.Workload.Template, cmApp); got != want {
		t.Fatalf("recorded %q, want the digest of a %q", got, want)
	}
	w.set(ab("2", "3"))
	w.expect(Unchanged, 1)
}

// A workload with no baseline yet compares the keys it uses with the data
// before the change seen since start: a change of another key rolls
// nothing, a change of its key rolls it.
func TestPerKeyBefore(t *testing.T) {
	for _, tc := range []struct {
		name   string
		before map[string]string
		state  State
	}{
		{name: "only b changed", before: ab("1", "1"), state: Unchanged},
		{name: "a changed", before: ab("0", "2"), state: Changed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			i := in(func(i *Input) {
				i.SourceKinds = []refs.Kind{refs.ConfigMap}
				i.Workload.Template.Spec.Containers[0].EnvFrom = nil
				envKey("a")(&i.Workload.Template.Spec)
				i.Workload.Annotations[keys.ReloadOnKeys] = "true"
			})
			cur, old := &corev1.ConfigMap{Data: ab("1", "2")}, &corev1.ConfigMap{Data: tc.before}
			i.Sources = []Source{{Ref: cmApp, Found: true, Digest: digest.ConfigMap(cur), Keys: digest.ConfigMapKeys(cur), Created: started.Add(-2 * time.Hour),
				Before: &Before{Digest: digest.ConfigMap(old), Keys: digest.ConfigMapKeys(old), Seen: now.Add(-time.Minute)}}}
			if p := For(i); p.Sources[0].State != tc.state || p.Reloads() != (tc.state == Changed) {
				t.Errorf("%s, reloads %v; want %s", p.Sources[0].State, p.Reloads(), tc.state)
			}
		})
	}
}
