package integration

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/ripple-dev/ripple/hack/cluster"
	"github.com/ripple-dev/ripple/hack/kit"
	"github.com/ripple-dev/ripple/internal/reason"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/strategy"
)

// The presets' kinds, as their projects' CRDs serve them
// (hack/build-tools.sh copies the CRDs from each project's Go module).
var (
	cloneSetGVK       = schema.GroupVersionKind{Group: "apps.kruise.io", Version: "v1alpha1", Kind: "CloneSet"}
	externalSecretGVK = schema.GroupVersionKind{Group: "external-secrets.io", Version: "v1", Kind: "ExternalSecret"}
)

// getDeclared reads w afresh from the API server.
func (e *env) getDeclared(ctx context.Context, w *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(w.GroupVersionKind())
	return u, e.c.Get(ctx, client.ObjectKeyFromObject(w), u)
}

// waitDeclared polls w until cond holds and returns it.
func (e *env) waitDeclared(t *testing.T, w *unstructured.Unstructured, what string, cond func(*unstructured.Unstructured) bool) *unstructured.Unstructured {
	t.Helper()
	var last *unstructured.Unstructured
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 15*time.Second, true, func(ctx context.Context) (bool, error) {
		u, err := e.getDeclared(ctx, w)
		if err != nil {
			return false, err
		}
		last = u
		return cond(u), nil
	})
	if err != nil {
		t.Fatalf("waiting for %s on %s %s: %v\nlast: %v", what, w.GetKind(), w.GetName(), err, last)
	}
	return last
}

// expectNoWrite waits a second and a half and fails if w was written
// since before (a restart kind's value has no time in it, so a write
// shows as a new resourceVersion).
func (e *env) expectNoWrite(t *testing.T, before *unstructured.Unstructured) {
	t.Helper()
	time.Sleep(1500 * time.Millisecond)
	after, err := e.getDeclared(t.Context(), before)
	if err != nil {
		t.Fatal(err)
	}
	if after.GetResourceVersion() != before.GetResourceVersion() {
		t.Fatalf("%s %s was written again without a change: generation %d -> %d, annotations %v -> %v", before.GetKind(), before.GetName(),
			before.GetGeneration(), after.GetGeneration(), before.GetAnnotations(), after.GetAnnotations())
	}
}

// newCloneSet creates a CloneSet with one replica of tpl.
func (e *env) newCloneSet(t *testing.T, name string, meta map[string]string, tpl corev1.PodTemplateSpec) *unstructured.Unstructured {
	t.Helper()
	tpl.Labels = map[string]string{"app": name}
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"replicas": int64(1),
		"selector": map[string]any{"matchLabels": map[string]any{"app": name}},
		"template": toUnstructured(t, &tpl),
	}}}
	u.SetGroupVersionKind(cloneSetGVK)
	u.SetNamespace(e.ns)
	u.SetName(name)
	u.SetAnnotations(meta)
	if err := e.c.Create(t.Context(), u); err != nil {
		t.Fatal(err)
	}
	return u
}

func cloneSetTemplate(t *testing.T, u *unstructured.Unstructured) *corev1.PodTemplateSpec {
	t.Helper()
	m, _, err := unstructured.NestedMap(u.Object, "spec", "template")
	if err != nil {
		t.Fatal(err)
	}
	tpl := &corev1.PodTemplateSpec{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, tpl); err != nil {
		t.Fatal(err)
	}
	return tpl
}

// The kruise preset on OpenKruise's CloneSet CRD: a config change is one
// write of its pod template (generation +1) and no more; the rollout is
// followed by the preset's ready rule (updated and ready replicas), so it
// is complete only once the CloneSet's status says so.
func TestDeclaredCloneSetReloadsOnce(t *testing.T) {
	e := startRipple(t, "--workload-kinds-preset=kruise")
	e.waitWatching(t, "CloneSet")
	cm := refs.Ref{Kind: refs.ConfigMap, Name: "app"}
	e.newConfig(t, cm)
	w := e.newCloneSet(t, "clone", ann(autoKey, "true"), corev1.PodTemplateSpec{Spec: podSpec(envFrom(cm.Kind, cm.Name))})
	before := e.waitDeclared(t, w, "the baseline record", func(u *unstructured.Unstructured) bool { return hasBaseline(u) })

	sum := e.setConfig(t, cm, "v2")
	reloaded := e.waitDeclared(t, w, "the reload", func(u *unstructured.Unstructured) bool {
		got, _ := (strategy.EnvVars{}).Applied(cloneSetTemplate(t, u), cm)
		return got == sum
	})
	if reloaded.GetGeneration() != before.GetGeneration()+1 {
		t.Fatalf("generation %d -> %d; want one template write", before.GetGeneration(), reloaded.GetGeneration())
	}
	e.expectNoWrite(t, reloaded)
	if notes := e.events(t.Context(), w.GetName(), string(reason.RolloutComplete)); len(notes) > 0 {
		t.Fatalf("RolloutComplete %q before the CloneSet's status showed its replicas updated", notes)
	}

	// What OpenKruise's controller writes once the new template runs.
	st := map[string]any{"observedGeneration": reloaded.GetGeneration(), "replicas": int64(1), "readyReplicas": int64(1), "availableReplicas": int64(1),
		"updatedReplicas": int64(1), "updatedReadyReplicas": int64(1)}
	if err := unstructured.SetNestedMap(reloaded.Object, st, "status"); err != nil {
		t.Fatal(err)
	}
	if err := e.c.Status().Update(t.Context(), reloaded); err != nil {
		t.Fatal(err)
	}
	e.waitRolloutEvent(t, w.GetName(), string(reason.RolloutComplete), corev1.EventTypeNormal)
}

// reconciles is how many reconciles the controllers named controller have
// run in this process (controller-runtime counts them in its global
// registry, whichever Ripple ran them).
func reconciles(t *testing.T, controller string) float64 {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var n float64
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == controller {
					n += m.GetCounter().GetValue()
				}
			}
		}
	}
	return n
}

// events are the notes of the Events of reason on the workload name.
func (e *env) events(ctx context.Context, name, reason string) []string {
	notes, _ := kit.EventNotes(ctx, e.cs, e.ns, kit.EventMatch{Name: name, Reason: reason})
	return notes
}

// The external-secrets preset, against an API server that does not serve
// ExternalSecrets when Ripple starts: Ripple says so, picks the kind up
// once the real CRD is installed, and then a change of the ConfigMap an
// ExternalSecret names refreshes it once (a new force-sync value), a
// restart of Ripple refreshes nothing, and the next change refreshes it
// again.
func TestDeclaredExternalSecretRefreshesOnce(t *testing.T) {
	t.Parallel()
	own, e := ownAPI(t)
	stop := e.run(t, "--workload-kinds-preset=external-secrets")
	e.waitLog(t, 5*time.Second, "enabled, but the API server does not serve it", `"kind": "ExternalSecret"`)
	if err := own.InstallCRDs(t.Context(), cluster.ExternalSecretCRD); err != nil {
		t.Fatal(err)
	}
	e.waitWatching(t, "ExternalSecret")

	cm := refs.Ref{Kind: refs.ConfigMap, Name: "secret-template"}
	e.newConfig(t, cm)
	es := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"secretStoreRef": map[string]any{"name": "vault", "kind": "SecretStore"},
		"target":         map[string]any{"name": "creds", "template": map[string]any{"templateFrom": []any{map[string]any{"configMap": map[string]any{"name": cm.Name, "items": []any{map[string]any{"key": "v"}}}}}}},
	}}}
	es.SetGroupVersionKind(externalSecretGVK)
	es.SetNamespace(e.ns)
	es.SetName("creds")
	es.SetAnnotations(ann(cmReloadKey, cm.Name))
	if err := e.c.Create(t.Context(), es); err != nil {
		t.Fatal(err)
	}
	base := e.waitDeclared(t, es, "the baseline record", func(u *unstructured.Unstructured) bool { return hasBaseline(u) })
	if v := base.GetAnnotations()["force-sync"]; v != "" {
		t.Fatalf("force-sync %q set before any change", v)
	}

	sum := e.setConfig(t, cm, "v2")
	first := e.waitDeclared(t, es, "a refresh", func(u *unstructured.Unstructured) bool {
		return u.GetAnnotations()["force-sync"] != "" && appliedRecord(u)[cm.String()] == sum
	})
	e.expectNoWrite(t, first)

	stop()
	reconciled := reconciles(t, "ExternalSecret")
	e.run(t, "--workload-kinds-preset=external-secrets")
	e.waitReconciled(t, "ExternalSecret", reconciled) // before it is judged
	e.expectNoWrite(t, first)

	sum = e.setConfig(t, cm, "v3")
	second := e.waitDeclared(t, es, "a second refresh", func(u *unstructured.Unstructured) bool { return appliedRecord(u)[cm.String()] == sum })
	if a, b := first.GetAnnotations()["force-sync"], second.GetAnnotations()["force-sync"]; a == b {
		t.Fatalf("force-sync stayed %q after a second change", a)
	}
}

// widgetKinds is a kinds file declaring the made-up Widget (its CRD is
// hack/cluster/crds/widget.yaml): a pod template at spec.pod.template and
// a ready condition.
const widgetKinds = `- group: test.ripple.dev
  version: v1
  kind: Widget
  template: spec.pod.template
  ready:
    condition: Available
`

// A kind declared only in a kinds file gets the guarantees of the built-in
// kinds: a config change is one write of its pod template at its path
// (generation +1), a restart of Ripple writes nothing, and a change made
// while Ripple is down is written once after it starts.
func TestDeclaredKindFromAFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "kinds.yaml")
	if err := os.WriteFile(file, []byte(widgetKinds), 0o600); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t)
	stop := e.run(t, "--workload-kinds="+file)
	e.waitWatching(t, "Widget")
	cm := refs.Ref{Kind: refs.ConfigMap, Name: "app"}
	e.newConfig(t, cm)
	tpl := corev1.PodTemplateSpec{Spec: podSpec(volume(cm.Kind, cm.Name))}
	w := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"pod": map[string]any{"template": toUnstructured(t, &tpl)}}}}
	w.SetGroupVersionKind(schema.GroupVersionKind{Group: "test.ripple.dev", Version: "v1", Kind: "Widget"})
	w.SetNamespace(e.ns)
	w.SetName("widget")
	w.SetAnnotations(ann(autoKey, "true"))
	if err := e.c.Create(t.Context(), w); err != nil {
		t.Fatal(err)
	}
	applied := func(sum string) func(*unstructured.Unstructured) bool {
		return func(u *unstructured.Unstructured) bool {
			m, _, _ := unstructured.NestedMap(u.Object, "spec", "pod", "template")
			got := &corev1.PodTemplateSpec{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, got); err != nil {
				return false
			}
			v, _ := (strategy.EnvVars{}).Applied(got, cm)
			return v == sum
		}
	}
	before := e.waitDeclared(t, w, "the baseline record", func(u *unstructured.Unstructured) bool { return hasBaseline(u) })
	sum := e.setConfig(t, cm, "v2")
	first := e.waitDeclared(t, w, "the reload", applied(sum))
	if first.GetGeneration() != before.GetGeneration()+1 {
		t.Fatalf("generation %d -> %d; want one template write", before.GetGeneration(), first.GetGeneration())
	}
	e.expectNoWrite(t, first)

	// Restarted: it reconciles the Widget and writes nothing.
	stop()
	reconciled := reconciles(t, "Widget")
	stop = e.run(t, "--workload-kinds="+file)
	e.waitReconciled(t, "Widget", reconciled)
	e.expectNoWrite(t, first)

	// Changed while no Ripple runs: one write once it starts.
	stop()
	sum = e.setConfig(t, cm, "v3")
	e.run(t, "--workload-kinds="+file)
	second := e.waitDeclared(t, w, "the reload of the change made while Ripple was down", applied(sum))
	if second.GetGeneration() != first.GetGeneration()+1 {
		t.Fatalf("generation %d -> %d; want one template write", first.GetGeneration(), second.GetGeneration())
	}
	e.expectNoWrite(t, second)
}

// waitReconciled waits until the controllers named controller have run
// more reconciles than since.
func (e *env) waitReconciled(t *testing.T, controller string, since float64) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 25*time.Second, true, func(context.Context) (bool, error) {
		return reconciles(t, controller) > since, nil
	})
	if err != nil {
		t.Fatalf("the restarted Ripple never reconciled a %s: %v", controller, err)
	}
}
