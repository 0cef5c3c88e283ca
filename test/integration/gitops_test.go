package integration

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/hack/kit"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/strategy"
)

// lastApplied is kubectl's client-side apply record.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// gitManifest is a Deployment as a GitOps repository holds it: it names
// its own env var, and no Ripple field.
func gitManifest(ns, name string, uses refs.Ref) *appsv1.Deployment {
	spec := podSpec(envFrom(uses.Kind, uses.Name))
	spec.Containers[0].Env = []corev1.EnvVar{{Name: "LOG_LEVEL", Value: "info"}}
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: ann(autoKey, "true")},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}}, Spec: spec},
		},
	}
}

// serverSideApply applies m as manager, forcing, as Argo CD's server-side
// apply does.
func (e *env) serverSideApply(t *testing.T, m *appsv1.Deployment, manager string) {
	t.Helper()
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(m)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: obj}
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(u.Object, "spec", "template", "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(u.Object, "status")
	if err := e.c.Apply(t.Context(), client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(manager), client.ForceOwnership); err != nil {
		t.Fatalf("server-side apply as %s: %v", manager, err)
	}
}

// clientSideApply applies m as `kubectl apply` does without
// --server-side: a three-way strategic merge of the last applied
// manifest, m and the live object, recorded in the last-applied
// annotation. It creates m when it does not exist.
func (e *env) clientSideApply(t *testing.T, m *appsv1.Deployment) {
	t.Helper()
	m = m.DeepCopy()
	raw, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	m.Annotations[lastApplied] = string(raw)
	const manager = "kubectl-client-side-apply"
	live := &appsv1.Deployment{}
	err = e.c.Get(t.Context(), client.ObjectKeyFromObject(m), live)
	if client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
	if err != nil {
		if err := e.c.Create(t.Context(), m, client.FieldOwner(manager)); err != nil {
			t.Fatal(err)
		}
		return
	}
	modified, _ := json.Marshal(m)
	current, _ := json.Marshal(live)
	meta, err := strategicpatch.NewPatchMetaFromStruct(appsv1.Deployment{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := strategicpatch.CreateThreeWayMergePatch([]byte(live.Annotations[lastApplied]), modified, current, meta, true)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.c.Patch(t.Context(), live, client.RawPatch(types.StrategicMergePatchType, p), client.FieldOwner(manager)); err != nil {
		t.Fatalf("client-side apply: %v", err)
	}
}

// owners returns the managers (with their operation) whose managed fields
// name the env var on container app.
func owners(d *appsv1.Deployment, env string) []string {
	key := fmt.Sprintf(`"k:{\"name\":\"%s\"}"`, env)
	var out []string
	for _, mf := range d.ManagedFields {
		if mf.FieldsV1 != nil && strings.Contains(mf.FieldsV1.GetRawString(), key) {
			out = append(out, mf.Manager+"/"+string(mf.Operation))
		}
	}
	return out
}

// A GitOps tool re-applying the manifest it holds, server-side as Argo CD
// (forcing) or client-side as `kubectl apply`, neither removes the env var
// Ripple wrote nor takes it over: it stays Ripple's, by server-side apply,
// and the pod template does not change (no second rollout).
func TestGitOpsReapplyKeepsRipplesField(t *testing.T) {
	e := startRipple(t)
	app := refs.Ref{Kind: refs.ConfigMap, Name: "app"}
	e.newConfig(t, app)
	env := strategy.EnvVarName(app)
	appliers := map[string]func(*appsv1.Deployment){
		"argocd":  func(m *appsv1.Deployment) { e.serverSideApply(t, m, "argocd-controller") },
		"kubectl": func(m *appsv1.Deployment) { e.clientSideApply(t, m) },
	}
	manifests := map[string]*appsv1.Deployment{}
	for name, apply := range appliers {
		manifests[name] = gitManifest(e.ns, name, app)
		apply(manifests[name])
		e.waitFor(t, &appsv1.Deployment{ObjectMeta: manifests[name].ObjectMeta}, "the baseline record", hasBaseline)
	}
	sum := e.setConfig(t, app, "v2")
	for name, apply := range appliers {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns}}
		e.waitApplied(t, kit.Deployment, d, app, sum)
		rolled := d.Spec.Template.DeepCopy()
		for i := range 3 {
			apply(manifests[name])
			if err := e.c.Get(t.Context(), client.ObjectKeyFromObject(d), d); err != nil {
				t.Fatal(err)
			}
			if !equality.Semantic.DeepEqual(&d.Spec.Template, rolled) {
				t.Fatalf("%s: re-apply %d changed the pod template (a rollout): %v, want %v", name, i, d.Spec.Template.Spec.Containers, rolled.Spec.Containers)
			}
			if got := owners(d, env); len(got) != 1 || got[0] != "ripple/Apply" {
				t.Errorf("%s: after re-apply %d, %s is managed by %v, want by ripple/Apply only", name, i, env, got)
			}
			if got := owners(d, "LOG_LEVEL"); len(got) != 1 || strings.HasPrefix(got[0], "ripple") {
				t.Errorf("%s: after re-apply %d, the manifest's own LOG_LEVEL is managed by %v, want by its applier only", name, i, got)
			}
			if appliedRecord(d)[app.String()] != sum {
				t.Errorf("%s: after re-apply %d, the applied record is %v, want %s", name, i, appliedRecord(d), sum)
			}
		}
	}
	for name := range appliers {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns}}
		if err := e.c.Get(t.Context(), client.ObjectKeyFromObject(d), d); err != nil {
			t.Fatal(err)
		}
		e.expectNoRollout(t, d, kit.Deployment, d.Spec.Template.DeepCopy())
	}
}

// A Deployment whose container repeats an env var name (the API server
// accepts it, with a warning; the last one wins) reloads, twice, and keeps
// both entries in their order: an apply to that list would keep only the
// first, so Ripple patches such a template (its env var is then Ripple's
// by update).
func TestReloadBesideRepeatedEnvNames(t *testing.T) {
	e := startRipple(t)
	app := refs.Ref{Kind: refs.ConfigMap, Name: "app"}
	e.newConfig(t, app)
	m := gitManifest(e.ns, "web", app)
	m.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "LOG_LEVEL", Value: "info"}, {Name: "LOG_LEVEL", Value: "debug"}}
	if err := e.c.Create(t.Context(), m); err != nil {
		t.Fatal(err)
	}
	d := &appsv1.Deployment{ObjectMeta: m.ObjectMeta}
	e.waitFor(t, d, "the baseline record", hasBaseline)
	for _, v := range []string{"v2", "v3"} {
		sum := e.setConfig(t, app, v)
		e.waitApplied(t, kit.Deployment, d, app, sum)
		if got := owners(d, strategy.EnvVarName(app)); len(got) != 1 || got[0] != "ripple/Update" {
			t.Errorf("after %s, %s is managed by %v, want by ripple/Update only", v, strategy.EnvVarName(app), got)
		}
		var levels []string
		for _, ev := range d.Spec.Template.Spec.Containers[0].Env {
			if ev.Name == "LOG_LEVEL" {
				levels = append(levels, ev.Value)
			}
		}
		if !slices.Equal(levels, []string{"info", "debug"}) {
			t.Errorf("after %s, LOG_LEVEL is %v, want [info debug]", v, levels)
		}
	}
}
