package integration

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/internal/declared"
	"github.com/ripple-dev/ripple/internal/reason"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/strategy"
)

// conformKind is one declared kind of the conformance suite: a preset's,
// on its project's real CRD, or the made-up Widget of a kinds file.
type conformKind struct {
	// name is the kind as Ripple names it; explainAs as explain is given it.
	name, explainAs string
	gvk             schema.GroupVersionKind
	// template is the field path of the pod template; nil for a kind
	// reloaded by its restart annotation.
	template []string
	restart  string
	// spec is the object's spec around its pod template tpl (nil for a
	// restart kind, which names its config in an annotation).
	spec func(name string, tpl map[string]any) map[string]any
	// status is what the kind's controller writes once a rollout of
	// generation gen is done; nil for a kind without a ready rule.
	status func(gen int64) map[string]any
}

// conformKinds are every preset's kinds and the Widget of a kinds file.
var conformKinds = []conformKind{
	{name: "CloneSet", explainAs: "clonesets", gvk: cloneSetGVK, template: []string{"spec", "template"}, spec: replicated,
		status: func(gen int64) map[string]any {
			return map[string]any{"observedGeneration": gen, "replicas": int64(1), "readyReplicas": int64(1), "availableReplicas": int64(1),
				"updatedReplicas": int64(1), "updatedReadyReplicas": int64(1)}
		}},
	{name: "StatefulSet.apps.kruise.io", explainAs: "statefulsets.apps.kruise.io", template: []string{"spec", "template"}, spec: replicated,
		gvk: schema.GroupVersionKind{Group: "apps.kruise.io", Version: "v1beta1", Kind: "StatefulSet"},
		status: func(gen int64) map[string]any {
			return map[string]any{"observedGeneration": gen, "replicas": int64(1), "readyReplicas": int64(1), "availableReplicas": int64(1),
				"currentReplicas": int64(1), "updatedReplicas": int64(1), "updatedReadyReplicas": int64(1), "updatedAvailableReplicas": int64(1)}
		}},
	{name: "DaemonSet.apps.kruise.io", explainAs: "daemonset.apps.kruise.io", template: []string{"spec", "template"}, spec: replicated,
		gvk: schema.GroupVersionKind{Group: "apps.kruise.io", Version: "v1alpha1", Kind: "DaemonSet"},
		status: func(gen int64) map[string]any {
			return map[string]any{"observedGeneration": gen, "daemonSetHash": "h", "currentNumberScheduled": int64(2), "desiredNumberScheduled": int64(2),
				"numberMisscheduled": int64(0), "numberReady": int64(2), "numberAvailable": int64(2), "updatedNumberScheduled": int64(2)}
		}},
	{name: "Service", explainAs: "service", template: []string{"spec", "template"},
		gvk:    schema.GroupVersionKind{Group: "serving.knative.dev", Version: "v1", Kind: "Service"},
		spec:   func(_ string, tpl map[string]any) map[string]any { return map[string]any{"template": tpl} },
		status: conditionStatus("Ready")},
	{name: "ScaledJob", explainAs: "scaledjobs", template: []string{"spec", "jobTargetRef", "template"},
		gvk: schema.GroupVersionKind{Group: "keda.sh", Version: "v1alpha1", Kind: "ScaledJob"},
		spec: func(_ string, tpl map[string]any) map[string]any {
			tpl["spec"].(map[string]any)["restartPolicy"] = "Never"
			return map[string]any{"jobTargetRef": map[string]any{"template": tpl},
				"triggers": []any{map[string]any{"type": "cron", "metadata": map[string]any{"timezone": "UTC", "start": "0 * * * *", "end": "5 * * * *", "desiredReplicas": "1"}}}}
		}},
	{name: "ExternalSecret", explainAs: "externalsecret", gvk: externalSecretGVK, restart: "force-sync"},
	{name: "Widget", explainAs: "widgets", template: []string{"spec", "pod", "template"},
		gvk: schema.GroupVersionKind{Group: "test.ripple.dev", Version: "v1", Kind: "Widget"},
		spec: func(_ string, tpl map[string]any) map[string]any {
			return map[string]any{"pod": map[string]any{"template": tpl}}
		},
		status: conditionStatus("Available")},
}

// conditionStatus is the status of a kind ready by a condition of type typ.
func conditionStatus(typ string) func(int64) map[string]any {
	return func(gen int64) map[string]any {
		return map[string]any{"observedGeneration": gen, "conditions": []any{map[string]any{"type": typ, "status": "True"}}}
	}
}

// presetPaused are the paused field paths of the presets' kinds, by name.
func presetPaused(t *testing.T) map[string][]string {
	t.Helper()
	srcs, err := declared.Presets(declared.PresetNames())
	if err != nil {
		t.Fatal(err)
	}
	kinds, err := declared.Merge(srcs...)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, k := range kinds {
		if k.Paused != "" {
			out[k.Name()] = declared.Path(k.Paused)
		}
	}
	return out
}

// replicated is the spec of a kind with a selector and a pod template.
func replicated(name string, tpl map[string]any) map[string]any {
	tpl["metadata"] = map[string]any{"labels": map[string]any{"app": name}}
	return map[string]any{"replicas": int64(1), "selector": map[string]any{"matchLabels": map[string]any{"app": name}}, "template": tpl}
}

// conformObject is one object of a conformKind and the config it uses.
type conformObject struct {
	conformKind
	obj *unstructured.Unstructured
	cm  refs.Ref
}

func (c *conformObject) create(t *testing.T, e *env) {
	t.Helper()
	name := strings.ToLower(c.gvk.Kind) + "-" + strings.ReplaceAll(c.gvk.Group, ".", "-")
	c.cm = refs.Ref{Kind: refs.ConfigMap, Name: name}
	e.newConfig(t, c.cm)
	u := &unstructured.Unstructured{Object: map[string]any{}}
	if c.template != nil {
		tpl := corev1.PodTemplateSpec{Spec: podSpec(envFrom(c.cm.Kind, c.cm.Name))}
		u.Object["spec"] = c.spec(name, toUnstructured(t, &tpl))
		u.SetAnnotations(ann(autoKey, "true"))
	} else {
		u.Object["spec"] = map[string]any{"secretStoreRef": map[string]any{"name": "vault", "kind": "SecretStore"}, "target": map[string]any{"name": name}}
		u.SetAnnotations(ann(cmReloadKey, c.cm.Name))
	}
	u.SetGroupVersionKind(c.gvk)
	u.SetNamespace(e.ns)
	u.SetName(name)
	if err := e.c.Create(t.Context(), u); err != nil {
		t.Fatalf("creating %s: %v", c.name, err)
	}
	c.obj = u
}

// applied reports whether u carries the reload of sum: on its pod
// template, or in its record with its restart annotation set.
func (c *conformObject) applied(sum string) func(*unstructured.Unstructured) bool {
	return func(u *unstructured.Unstructured) bool {
		if c.template == nil {
			return u.GetAnnotations()[c.restart] != "" && appliedRecord(u)[c.cm.String()] == sum
		}
		m, _, _ := unstructured.NestedMap(u.Object, c.template...)
		tpl := &corev1.PodTemplateSpec{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, tpl); err != nil {
			return false
		}
		v, _ := (strategy.EnvVars{}).Applied(tpl, c.cm)
		return v == sum
	}
}

// change changes each object's config and checks it is written once: the
// reload (for a template kind, generation +1) and nothing more.
func change(t *testing.T, e *env, objs []*conformObject, value, what string) []*unstructured.Unstructured {
	t.Helper()
	sums := make([]string, len(objs))
	for i, o := range objs {
		sums[i] = e.setConfig(t, o.cm, value)
	}
	written := make([]*unstructured.Unstructured, len(objs))
	for i, o := range objs {
		before := o.obj
		written[i] = e.waitDeclared(t, o.obj, what, o.applied(sums[i]))
		if o.template != nil && written[i].GetGeneration() != before.GetGeneration()+1 {
			t.Errorf("%s: generation %d -> %d; want one template write", o.name, before.GetGeneration(), written[i].GetGeneration())
		}
		o.obj = written[i]
	}
	expectNoWrites(t, e, written)
	return written
}

// expectNoWrites waits a second and a half once and fails for each object
// written since it was read.
func expectNoWrites(t *testing.T, e *env, objs []*unstructured.Unstructured) {
	t.Helper()
	time.Sleep(1500 * time.Millisecond)
	for _, before := range objs {
		after, err := e.getDeclared(t.Context(), before)
		if err != nil {
			t.Fatal(err)
		}
		if after.GetResourceVersion() != before.GetResourceVersion() {
			t.Errorf("%s %s was written again without a change: generation %d -> %d, annotations %v -> %v", before.GetKind(), before.GetName(),
				before.GetGeneration(), after.GetGeneration(), before.GetAnnotations(), after.GetAnnotations())
		}
	}
}

// conformanceKinds declares the made-up Widget only in a kinds file.
const conformanceKinds = `- group: test.ripple.dev
  version: v1
  kind: Widget
  template: spec.pod.template
  ready:
    condition: Available
`

// The conformance suite: the same guarantees for every preset's kind, each
// on its project's real CRD, and for a kind declared only in a kinds file,
// all served by one Ripple: one config change is one write (a template
// kind's generation +1); a restart of Ripple writes nothing; a change made
// while Ripple is down is written once after it starts; a reload another
// manager reverts is a ReloadReverted Warning and is not written again
// (a restart kind's annotation is not Ripple's record, so its removal is
// no revert and is left alone); explain names the kind and its reason.
func TestDeclaredConformance(t *testing.T) {
	file := filepath.Join(t.TempDir(), "kinds.yaml")
	if err := os.WriteFile(file, []byte(conformanceKinds), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"--workload-kinds-preset=kruise,knative,keda,external-secrets", "--workload-kinds=" + file}
	e := newEnv(t)
	stop := e.run(t, args...)
	objs := make([]*conformObject, len(conformKinds))
	var all []*unstructured.Unstructured
	for i, k := range conformKinds {
		e.waitWatching(t, k.gvk.Kind)
		objs[i] = &conformObject{conformKind: k}
		objs[i].create(t, e)
	}
	paused := presetPaused(t)
	for _, o := range objs {
		o.obj = e.waitDeclared(t, o.obj, "the baseline record", func(u *unstructured.Unstructured) bool { return hasBaseline(u) })
		// The preset's paused field is one the real CRD keeps: its schema
		// prunes a field it does not know.
		if p := paused[o.name]; p != nil {
			u := o.obj.DeepCopy()
			if err := unstructured.SetNestedField(u.Object, false, p...); err != nil {
				t.Fatal(err)
			}
			if err := e.c.Update(t.Context(), u); err != nil {
				t.Fatal(err)
			}
			if _, found, _ := unstructured.NestedBool(u.Object, p...); !found {
				t.Errorf("%s: the CRD dropped the preset's paused field %s", o.name, strings.Join(p, "."))
			}
			o.obj = u
		}
		all = append(all, o.obj)
	}
	expectNoWrites(t, e, all) // the baseline is one write

	change(t, e, objs, "v2", "the reload")

	t.Log("restarted: each kind is reconciled and nothing is written")
	stop()
	since := map[string]float64{}
	for _, k := range conformKinds {
		since[k.name] = reconciles(t, k.name)
	}
	stop = e.run(t, args...)
	all = all[:0]
	for _, o := range objs {
		e.waitReconciled(t, o.name, since[o.name])
		all = append(all, o.obj)
	}
	expectNoWrites(t, e, all)

	t.Log("changed while no Ripple runs: one write each once it starts")
	stop()
	sums := make([]string, len(objs))
	for i, o := range objs {
		sums[i] = e.setConfig(t, o.cm, "v3")
	}
	e.run(t, args...)
	all = all[:0]
	for i, o := range objs {
		u := e.waitDeclared(t, o.obj, "the reload of the change made while Ripple was down", o.applied(sums[i]))
		if o.template != nil && u.GetGeneration() != o.obj.GetGeneration()+1 {
			t.Errorf("%s: generation %d -> %d; want one template write", o.name, o.obj.GetGeneration(), u.GetGeneration())
		}
		o.obj = u
		all = append(all, u)
	}
	expectNoWrites(t, e, all)

	t.Log("each controller reports its rollout done: complete by the preset's ready rule")
	for _, o := range objs {
		if o.status == nil {
			continue
		}
		if notes := e.events(t.Context(), o.obj.GetName(), string(reason.RolloutComplete)); len(notes) > 0 {
			t.Errorf("%s: RolloutComplete %q before its status showed the rollout done", o.name, notes)
		}
		u := o.obj.DeepCopy()
		if err := unstructured.SetNestedMap(u.Object, o.status(u.GetGeneration()), "status"); err != nil {
			t.Fatal(err)
		}
		if err := e.c.Status().Update(t.Context(), u); err != nil {
			t.Fatalf("%s: writing its status: %v", o.name, err)
		}
		o.obj = u
	}
	for _, o := range objs {
		if o.status != nil {
			e.waitRolloutEvent(t, o.obj.GetName(), string(reason.RolloutComplete), corev1.EventTypeNormal)
		}
	}

	t.Log("another manager reverts each reload")
	all = all[:0]
	for _, o := range objs {
		all = append(all, o.revert(t, e))
	}
	for _, o := range objs {
		if o.template != nil {
			notes := e.waitEvent(t, o.obj.GetName(), corev1.EventTypeWarning, string(reason.ReloadReverted))
			if !strings.Contains(notes[0], "shop-operator") {
				t.Errorf("%s: ReloadReverted %q does not name the manager shop-operator", o.name, notes[0])
			}
		}
	}
	expectNoWrites(t, e, all)
	for _, o := range objs {
		if n := e.warningEvents(t.Context(), o.obj.GetName(), string(reason.ReloadReverted)); o.template != nil && len(n) != 1 {
			t.Errorf("%s: ReloadReverted %q, want one", o.name, n)
		}
	}

	t.Log("each controller reports the revert's rollout done")
	for i, o := range objs {
		if o.status == nil {
			continue
		}
		u := all[i].DeepCopy()
		if err := unstructured.SetNestedMap(u.Object, o.status(u.GetGeneration()), "status"); err != nil {
			t.Fatal(err)
		}
		if err := e.c.Status().Update(t.Context(), u); err != nil {
			t.Fatalf("%s: writing its status: %v", o.name, err)
		}
	}

	// explain names the kind as Ripple does, with its reason: up to date
	// (its rollout done), and for a template kind the revert and its
	// manager.
	for _, o := range objs {
		r := e.explainJSON(t, o.explainAs+"/"+o.obj.GetName(), args...)
		if r.Workload.Kind != o.name || r.Reason != "Applied" {
			t.Errorf("explain %s/%s: kind %q, reason %q (%s); want kind %s, reason Applied", o.explainAs, o.obj.GetName(), r.Workload.Kind, r.Reason, r.Verdict, o.name)
		}
		if reverted := slices.ContainsFunc(r.Ownership, func(s string) bool { return strings.Contains(s, `Reload reverted by "shop-operator"`) }); reverted != (o.template != nil) {
			t.Errorf("explain %s: ownership %q; want the revert by shop-operator told: %v", o.name, r.Ownership, o.template != nil)
		}
	}
}

// revert is another manager (shop-operator) taking Ripple's env var off
// the object's pod template, or removing a restart kind's annotation; it
// returns the object as written.
func (c *conformObject) revert(t *testing.T, e *env) *unstructured.Unstructured {
	t.Helper()
	u := c.obj.DeepCopy()
	if c.template != nil {
		containers, _, _ := unstructured.NestedSlice(u.Object, append(slices.Clone(c.template), "spec", "containers")...)
		ripples := strategy.EnvVarName(c.cm)
		for _, ct := range containers {
			m, _ := ct.(map[string]any)
			env, _ := m["env"].([]any)
			m["env"] = slices.DeleteFunc(env, func(v any) bool { ev, _ := v.(map[string]any); return ev["name"] == ripples })
		}
		if err := unstructured.SetNestedSlice(u.Object, containers, append(slices.Clone(c.template), "spec", "containers")...); err != nil {
			t.Fatal(err)
		}
	}
	// The operator stamps what it reconciled, a field of its own.
	a := u.GetAnnotations()
	if c.restart != "" {
		delete(a, c.restart)
	}
	a["shop.example.com/reconciled"] = "1"
	u.SetAnnotations(a)
	if err := e.c.Update(t.Context(), u, client.FieldOwner("shop-operator")); err != nil {
		t.Fatalf("reverting %s: %v", c.name, err)
	}
	return u
}
