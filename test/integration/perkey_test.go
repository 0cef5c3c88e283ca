package integration

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/hack/kit"
	"github.com/ripple-dev/ripple/internal/digest"
	"github.com/ripple-dev/ripple/internal/digestkey"
	"github.com/ripple-dev/ripple/internal/refs"
)

const reloadOnKeysKey = "ripple.dev/reload-on-keys"

// valueFromKey is a Deployment whose container reads key a of ConfigMap cm
// through an env var's valueFrom.
func (e *env) valueFromKey(t *testing.T, name string, meta map[string]string, cm string) client.Object {
	t.Helper()
	spec := podSpec()
	spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{
		ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: cm}, Key: "a"},
	}}}
	w := kit.Deployment.New(metav1.ObjectMeta{Name: name, Namespace: e.ns, Annotations: meta}, corev1.PodTemplateSpec{Spec: spec})
	if err := e.c.Create(t.Context(), w); err != nil {
		t.Fatal(err)
	}
	return w
}

// updateConfigMap replaces the data of ConfigMap r.
func (e *env) updateConfigMap(t *testing.T, r refs.Ref, data map[string]string) {
	t.Helper()
	cm := &corev1.ConfigMap{}
	if err := e.c.Get(t.Context(), client.ObjectKey{Namespace: e.ns, Name: r.Name}, cm); err != nil {
		t.Fatal(err)
	}
	cm.Data = data
	if err := e.c.Update(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
}

// A workload that reads key a of a ConfigMap with keys a and b, opted in to
// per-key reloads, rolls once when a changes and not when b does; without
// the opt-in it rolls on b, as with Reloader, and so it does with an
// invalid opt-in, which is a Warning event naming the annotation.
func TestPerKeyReloadRollsOnTheKeysUsed(t *testing.T) {
	e := startRipple(t)
	app := refs.Ref{Kind: refs.ConfigMap, Name: "app"}
	data := map[string]string{"a": "1", "b": "1"}
	if err := e.c.Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: app.Name, Namespace: e.ns}, Data: data}); err != nil {
		t.Fatal(err)
	}
	opted := e.valueFromKey(t, "opted", ann(autoKey, "true", reloadOnKeysKey, "true"), app.Name)
	plain := e.valueFromKey(t, "plain", ann(autoKey, "true"), app.Name)
	invalid := e.valueFromKey(t, "invalid", ann(autoKey, "true", reloadOnKeysKey, "app[a"), app.Name)
	for _, w := range []client.Object{opted, plain, invalid} {
		e.waitFor(t, w, "the baseline record", tracks(app))
	}

	// b changes: only the workloads without a valid opt-in roll.
	optedRolls, plainRolls, invalidRolls := e.templateChanges(t, opted), e.templateChanges(t, plain), e.templateChanges(t, invalid)
	data["b"] = "2"
	e.updateConfigMap(t, app, data)
	e.waitApplied(t, kit.Deployment, plain, app, digest.ConfigMap(&corev1.ConfigMap{Data: data}))
	e.waitApplied(t, kit.Deployment, invalid, app, digest.ConfigMap(&corev1.ConfigMap{Data: data}))
	if o, p, i := optedRolls(), plainRolls(), invalidRolls(); o != 0 || p != 1 || i != 1 {
		t.Fatalf("a change of b: %d rollouts of the opted-in workload (want 0), %d of the other (want 1), %d with an invalid opt-in (want 1)", o, p, i)
	}
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		w, _ := kit.EventNotes(ctx, e.cs, e.ns, kit.EventMatch{Name: "invalid", Reason: "InvalidAnnotation", Type: corev1.EventTypeWarning})
		return len(w) > 0 && strings.Contains(w[0], reloadOnKeysKey), nil
	})
	if err != nil {
		t.Fatalf("no InvalidAnnotation Warning naming %s on the workload with an invalid value", reloadOnKeysKey)
	}
	if w, _ := kit.EventNotes(t.Context(), e.cs, e.ns, kit.EventMatch{Name: "opted", Reason: "InvalidAnnotation", Type: corev1.EventTypeWarning}); len(w) > 0 {
		t.Errorf("warnings on the valid workload: %q", w)
	}

	// a changes: both roll once; the opted-in one carries the digest of a.
	optedRolls, plainRolls = e.templateChanges(t, opted), e.templateChanges(t, plain)
	data["a"] = "2"
	e.updateConfigMap(t, app, data)
	perKey := e.keyedConfigMap(t, app.Name, data).Keys.Of(func(k string) bool { return k == "a" })
	e.waitApplied(t, kit.Deployment, opted, app, perKey)
	e.waitApplied(t, kit.Deployment, plain, app, digest.ConfigMap(&corev1.ConfigMap{Data: data}))
	if o, p := optedRolls(), plainRolls(); o != 1 || p != 1 {
		t.Fatalf("a change of a: %d and %d rollouts, want one each", o, p)
	}
}

// Turning the opt-in on, and off again, rolls nothing by itself; under it
// a change of b rolls nothing, and after it a change of b rolls again.
func TestPerKeyOptInSwitchRollsNothing(t *testing.T) {
	e := startRipple(t)
	app := refs.Ref{Kind: refs.ConfigMap, Name: "app"}
	data := map[string]string{"a": "1", "b": "1"}
	if err := e.c.Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: app.Name, Namespace: e.ns}, Data: data}); err != nil {
		t.Fatal(err)
	}
	w := e.valueFromKey(t, "web", ann(autoKey, "true"), app.Name)
	e.waitFor(t, w, "the baseline record", tracks(app))
	data["b"] = "2"
	e.updateConfigMap(t, app, data)
	e.waitApplied(t, kit.Deployment, w, app, digest.ConfigMap(&corev1.ConfigMap{Data: data}))
	alias := func(shown string) func(client.Object) bool {
		return func(o client.Object) bool {
			return strings.Contains(o.GetAnnotations()["ripple.dev/applied-alias"], `"shown":"`+shown+`"`)
		}
	}

	// On: Reloader's digest on the template stands for the digest of a.
	rolls := e.templateChanges(t, w)
	e.setAnnotation(t, w, reloadOnKeysKey, "true")
	e.waitFor(t, w, "an alias of Reloader's digest", alias(digest.ConfigMap(&corev1.ConfigMap{Data: data})))
	data["b"] = "3"
	e.updateConfigMap(t, app, data)
	if n := rolls(); n != 0 {
		t.Fatalf("switching the opt-in on and changing b: %d rollouts, want 0", n)
	}
	rolls = e.templateChanges(t, w)
	data["a"] = "2"
	e.updateConfigMap(t, app, data)
	perKey := e.keyedConfigMap(t, app.Name, data).Keys.Of(func(k string) bool { return k == "a" })
	e.waitApplied(t, kit.Deployment, w, app, perKey)
	if n := rolls(); n != 1 {
		t.Fatalf("a change of a: %d rollouts, want 1", n)
	}

	// Off: the digest of a on the template stands for Reloader's digest.
	rolls = e.templateChanges(t, w)
	e.setAnnotation(t, w, reloadOnKeysKey, "")
	e.waitFor(t, w, "an alias of the digest of a", alias(perKey))
	if n := rolls(); n != 0 {
		t.Fatalf("switching the opt-in off: %d rollouts, want 0", n)
	}
	rolls = e.templateChanges(t, w)
	data["b"] = "4"
	e.updateConfigMap(t, app, data)
	e.waitApplied(t, kit.Deployment, w, app, digest.ConfigMap(&corev1.ConfigMap{Data: data}))
	if n := rolls(); n != 1 {
		t.Fatalf("a change of b after the opt-in is off: %d rollouts, want 1", n)
	}
}

// digester is the Digester of e's Ripple: the key ring it keeps in its
// namespace (default, out of a cluster), in mode.
func (e *env) digester(t *testing.T, mode digest.Mode) digest.Digester {
	t.Helper()
	ns := e.environ["POD_NAMESPACE"]
	if ns == "" {
		ns = "default"
	}
	ring, err := digestkey.Read(t.Context(), e.c, ns)
	if err != nil {
		t.Fatal(err)
	}
	return digest.Digester{Mode: mode, Ring: ring}
}

// keyedConfigMap is what e's Ripple (in sha1 mode) writes for ConfigMap
// name holding data: Reloader's digest, and the key table under its key,
// bound to the ConfigMap.
func (e *env) keyedConfigMap(t *testing.T, name string, data map[string]string) digest.Digests {
	t.Helper()
	return e.digester(t, digest.SHA1).ConfigMap(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name}, Data: data})
}

// setAnnotation sets (or with "" removes) a workload metadata annotation.
func (e *env) setAnnotation(t *testing.T, w client.Object, key, v string) {
	t.Helper()
	if err := e.c.Get(t.Context(), client.ObjectKeyFromObject(w), w); err != nil {
		t.Fatal(err)
	}
	a := maps.Clone(w.GetAnnotations())
	if v == "" {
		delete(a, key)
	} else {
		a[key] = v
	}
	w.SetAnnotations(a)
	if err := e.c.Update(t.Context(), w); err != nil {
		t.Fatal(err)
	}
}

// The per-key table follows the keys, not the values: 100 Secrets of 8 keys
// with 64 KiB values grow Ripple's heap within a few MiB of 100 with 1-byte
// values, and each cached Secret keeps a table of the same size and no data.
func TestCacheMemoryDoesNotFollowKeyValueSize(t *testing.T) {
	const keys, size = 8, 64 << 10
	secret := func(ns string, i, size int) *corev1.Secret {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("s%03d", i), Namespace: ns}, Data: map[string][]byte{}}
		for k := range keys {
			s.Data[fmt.Sprintf("key-%d", k)] = bytes.Repeat([]byte{byte('a' + i%26)}, size)
		}
		return s
	}
	tables := map[int]int{}
	small := cacheGrowth(t, func(ns string, i int) *corev1.Secret { return secret(ns, i, 1) }, func(e *env) {
		tables[1] = e.cachedTableSize(t, "s000")
	})
	large := cacheGrowth(t, func(ns string, i int) *corev1.Secret { return secret(ns, i, size) }, func(e *env) {
		tables[size] = e.cachedTableSize(t, "s000")
	})
	t.Logf("heap growth of a Ripple caching %d Secrets of %d keys: %.1f MiB with 1-byte values, %.1f MiB at %d KiB each; per-key table %d bytes",
		cachedSecrets, keys, mib(small), mib(large), size>>10, tables[size])
	if tables[1] != tables[size] || tables[1] == 0 {
		t.Fatalf("the cached per-key table is %d bytes with 1-byte values and %d with %d KiB ones", tables[1], tables[size], size>>10)
	}
	if large > small+4<<20 {
		t.Fatalf("caching %d Secrets of %d keys of %d KiB grew the heap by %.1f MiB, vs %.1f MiB with 1-byte values: the cache follows value size",
			cachedSecrets, keys, size>>10, mib(large), mib(small))
	}
}

// cachedTableSize reads Secret name through Ripple's cache: it holds no
// data, and its per-key table is returned by size.
func (e *env) cachedTableSize(t *testing.T, name string) int {
	t.Helper()
	s := &corev1.Secret{}
	if err := e.cache.Get(t.Context(), client.ObjectKey{Namespace: e.ns, Name: name}, s); err != nil {
		t.Fatal(err)
	}
	if s.Data != nil {
		t.Fatalf("the cached Secret %s holds data", name)
	}
	return len(s.GetAnnotations()["internal.ripple.dev/keys"])
}
