package integration

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/hack/kit"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/strategy"
)

// newWorkload creates a workload of kind k named name using uses, with
// metadata annotations meta.
func (e *env) newWorkload(t *testing.T, k *kit.WorkloadKind, name string, meta map[string]string, uses ...use) client.Object {
	t.Helper()
	w := k.New(metav1.ObjectMeta{Name: name, Namespace: e.ns, Annotations: meta}, corev1.PodTemplateSpec{Spec: podSpec(uses...)})
	if err := e.c.Create(t.Context(), w); err != nil {
		t.Fatal(err)
	}
	return w
}

func (e *env) newConfig(t *testing.T, r refs.Ref) {
	t.Helper()
	if err := e.c.Create(t.Context(), configObject(e.ns, r, nil, "v1")); err != nil {
		t.Fatal(err)
	}
}

// setConfig replaces the data of config r with k=value and returns the
// config's new digest.
func (e *env) setConfig(t *testing.T, r refs.Ref, value string) string {
	t.Helper()
	cfg := configObject(e.ns, r, nil, value)
	if err := e.c.Get(t.Context(), client.ObjectKeyFromObject(cfg), cfg); err != nil {
		t.Fatal(err)
	}
	setData(cfg, value)
	if err := e.c.Update(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	return configDigest(configObject(e.ns, r, nil, value))
}

func (e *env) waitApplied(t *testing.T, k *kit.WorkloadKind, w client.Object, r refs.Ref, sum string) {
	t.Helper()
	st := strategy.EnvVars{}
	e.waitFor(t, w, fmt.Sprintf("%s = %s on the template", r, sum), func(o client.Object) bool {
		got, ok := st.Applied(k.Template(o), r)
		return ok && got == sum
	})
}

func hasBaseline(o client.Object) bool { return o.GetAnnotations()[appliedKey] != "" }

// appliedRecord reads a workload's ripple.dev/applied record.
func appliedRecord(o client.Object) map[string]string {
	rec := map[string]string{}
	_ = json.Unmarshal([]byte(o.GetAnnotations()[appliedKey]), &rec)
	return rec
}

// tracks reports whether the workload's applied record holds r: its
// baseline is taken. A change made before that may be taken as the
// baseline itself (a config first seen already changed is no change).
func tracks(r refs.Ref) func(client.Object) bool {
	return func(o client.Object) bool {
		_, ok := appliedRecord(o)[r.String()]
		return ok
	}
}

// An invalid pattern in a named annotation is reported on that workload and
// blocks nothing: its valid items and other workloads still reload.
func TestInvalidPatternWarnsAndBlocksNothing(t *testing.T) {
	e := startRipple(t)
	deploy := kit.Deployment
	app := refs.Ref{Kind: refs.ConfigMap, Name: "app"}
	e.newConfig(t, app)
	bad := e.newWorkload(t, deploy, "bad", ann(cmReloadKey, "app, ("), envFrom(refs.ConfigMap, "app"))
	good := e.newWorkload(t, deploy, "good", ann(autoKey, "true"), envFrom(refs.ConfigMap, "app"))
	e.waitFor(t, bad, "the baseline record", hasBaseline)
	e.waitFor(t, good, "the baseline record", hasBaseline)

	sum := e.setConfig(t, app, "v2")
	e.waitApplied(t, deploy, good, app, sum)
	e.waitApplied(t, deploy, bad, app, sum)

	var warnings []string
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		warnings = e.warningEvents(ctx, "bad", "InvalidAnnotation")
		return len(warnings) > 0, nil
	})
	if err != nil {
		t.Fatal("no InvalidAnnotation Warning event on the workload with the bad pattern")
	}
	if !strings.Contains(warnings[0], cmReloadKey) || !strings.Contains(warnings[0], `"("`) {
		t.Errorf("warning %q should name the annotation and the bad item", warnings[0])
	}
	if w := e.warningEvents(t.Context(), "good", "InvalidAnnotation"); len(w) > 0 {
		t.Errorf("unexpected warnings on the good workload: %v", w)
	}
}

// C16: every data change rolls again, each carrying its own digest.
func TestSequentialChangesEachRoll(t *testing.T) {
	e := startRipple(t)
	for _, k := range kit.TemplateKinds {
		t.Run(k.Name, func(t *testing.T) {
			t.Parallel()
			r := refs.Ref{Kind: refs.ConfigMap, Name: "seq-" + strings.ToLower(k.Name)}
			e.newConfig(t, r)
			w := e.newWorkload(t, k, r.Name, ann(autoKey, "true"), envFrom(r.Kind, r.Name))
			e.waitFor(t, w, "the baseline record", hasBaseline)
			first := e.setConfig(t, r, "v2")
			e.waitApplied(t, k, w, r, first)
			second := e.setConfig(t, r, "v3")
			e.waitApplied(t, k, w, r, second)
			if first == second {
				t.Fatal("the two changes have the same digest")
			}
		})
	}
}

// Changes to a workload's configs inside the settle window become one
// template change that carries all of them. A StatefulSet's generation
// counts template changes only, so it counts rollouts here.
func TestSettleWindowMakesOneRolloutPerChangeSet(t *testing.T) {
	e := startRipple(t, "--settle-window=1s")
	sts := kit.StatefulSet
	cm, sec := refs.Ref{Kind: refs.ConfigMap, Name: "cfg"}, refs.Ref{Kind: refs.Secret, Name: "creds"}
	e.newConfig(t, cm)
	e.newConfig(t, sec)
	w := e.newWorkload(t, sts, "db", ann(autoKey, "true"), envFrom(cm.Kind, cm.Name), envFrom(sec.Kind, sec.Name))
	e.waitFor(t, w, "the baseline record", hasBaseline)
	generation := w.GetGeneration()

	cmSum := e.setConfig(t, cm, "v2")
	time.Sleep(100 * time.Millisecond)
	secSum := e.setConfig(t, sec, "v2")

	e.waitApplied(t, sts, w, sec, secSum)
	if got, _ := (strategy.EnvVars{}).Applied(sts.Template(w), cm); got != cmSum {
		t.Fatalf("the rollout does not carry the ConfigMap change: %s, want %s", got, cmSum)
	}
	time.Sleep(1500 * time.Millisecond) // longer than the window: a late second rollout would show
	if err := e.c.Get(t.Context(), client.ObjectKeyFromObject(w), w); err != nil {
		t.Fatal(err)
	}
	if got := w.GetGeneration() - generation; got != 1 {
		t.Fatalf("%d template changes for one change set, want 1", got)
	}
}

// The settle-window annotation overrides the flag per workload, and an
// invalid value is a Warning event that falls back to the flag.
func TestSettleWindowAnnotation(t *testing.T) {
	e := startRipple(t, "--settle-window=1h")
	deploy := kit.Deployment
	r := refs.Ref{Kind: refs.ConfigMap, Name: "fast"}
	e.newConfig(t, r)
	fast := e.newWorkload(t, deploy, "fast", ann(autoKey, "true", "ripple.dev/settle-window", "0s"), envFrom(r.Kind, r.Name))
	bogus := e.newWorkload(t, deploy, "bogus", ann(autoKey, "true", "ripple.dev/settle-window", "soon"), envFrom(r.Kind, r.Name))
	e.waitFor(t, fast, "the baseline record", hasBaseline)
	e.waitFor(t, bogus, "the baseline record", hasBaseline)

	sum := e.setConfig(t, r, "v2")
	// With the flag's one hour, only the annotation can make this quick.
	e.waitApplied(t, deploy, fast, r, sum)

	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		w := e.warningEvents(ctx, "bogus", "InvalidAnnotation")
		return len(w) > 0 && strings.Contains(w[0], "ripple.dev/settle-window"), nil
	})
	if err != nil {
		t.Fatal("no InvalidAnnotation Warning naming ripple.dev/settle-window on the workload with a bad value")
	}
	if err := e.c.Get(t.Context(), client.ObjectKeyFromObject(bogus), bogus); err != nil {
		t.Fatal(err)
	}
	if _, ok := (strategy.EnvVars{}).Applied(deploy.Template(bogus), r); ok {
		t.Fatal("the workload with an invalid window rolled at once; it should wait the flag's window")
	}
}

// Ripple's cache keeps a digest of each Secret, not its data: with 100
// Secrets of 500 KiB its heap stays within a few MiB of the heap with 100
// empty Secrets.
func TestCacheMemoryDoesNotFollowSecretSize(t *testing.T) {
	const size = 500 << 10
	secret := func(payload int) func(ns string, i int) *corev1.Secret {
		buf := make([]byte, payload)
		return func(ns string, i int) *corev1.Secret {
			_, _ = rand.Read(buf)
			s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("s%03d", i), Namespace: ns}}
			if payload > 0 {
				s.Data = map[string][]byte{"k": buf}
			}
			return s
		}
	}
	empty := cacheGrowth(t, secret(0), nil)
	full := cacheGrowth(t, secret(size), nil)
	t.Logf("heap growth of a Ripple caching %d Secrets: %.1f MiB when empty, %.1f MiB at %d KiB each", cachedSecrets, mib(empty), mib(full), size>>10)
	if full > empty+4<<20 {
		t.Fatalf("caching %d Secrets of %d KiB grew the heap by %.1f MiB, vs %.1f MiB for empty ones: the cache keeps secret data",
			cachedSecrets, size>>10, mib(full), mib(empty))
	}
}

// cachedSecrets is how many Secrets the memory tests cache.
const cachedSecrets = 100

// cacheGrowth creates cachedSecrets Secrets made by secret in a new
// namespace and returns how much a Ripple caching them grows the heap in
// the steady state; inspect, if set, looks at that Ripple before it stops.
func cacheGrowth(t *testing.T, secret func(ns string, i int) *corev1.Secret, inspect func(*env)) uint64 {
	t.Helper()
	e := newEnv(t)
	for i := range cachedSecrets {
		if err := e.c.Create(t.Context(), secret(e.ns, i)); err != nil {
			t.Fatal(err)
		}
	}
	before := heapInUse()
	stop := e.run(t) // returns once the cache holds every Secret
	defer stop()
	// The steady state, not the initial list still being decoded: the
	// least growth seen over a few seconds. A cache that kept the data
	// would keep it the whole time.
	least := heapInUse() - min(before, heapInUse())
	for range 10 {
		time.Sleep(500 * time.Millisecond)
		least = min(least, heapInUse()-min(before, heapInUse()))
	}
	if inspect != nil {
		inspect(e)
	}
	return least
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }
