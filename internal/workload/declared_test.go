package workload

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/ripple-dev/ripple/internal/declared"
	"github.com/ripple-dev/ripple/internal/refs"
	rstatus "github.com/ripple-dev/ripple/internal/rollout"
)

// widget is a declared kind with its pod template at spec.pod.template
// and a paused field.
var widget = declared.Kind{Group: "example.com", Version: "v1", Kind: "Widget", Resource: "widgets",
	Template: "spec.pod.template", Paused: "spec.rollout.paused",
	Ready: &declared.Ready{ObservedGeneration: "status.observedGeneration", Condition: "Ready"}}

var secretSync = declared.Kind{Group: "example.com", Version: "v1", Kind: "SecretSync", Resource: "secretsyncs",
	Restart: &declared.Restart{Annotation: "example.com/force-sync"}}

func declaredObj(t *testing.T, k declared.Kind, name string, fields map[string]any) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{Object: fields}
	u.SetGroupVersionKind(k.GVK())
	u.SetNamespace("ns")
	u.SetName(name)
	return u
}

func templateAt(t *testing.T, tpl corev1.PodTemplateSpec) map[string]any {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&tpl)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestDeclaredTemplateKind(t *testing.T) {
	kind := NewDeclared(widget)
	tpl := corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:1"}}}}
	obj := declaredObj(t, widget, "w", map[string]any{"spec": map[string]any{
		"pod": map[string]any{"template": templateAt(t, tpl)}, "replicas": int64(2),
	}})
	got, err := kind.PodTemplate(obj)
	if err != nil || got == nil || !equality.Semantic.DeepEqual(*got, tpl) {
		t.Fatalf("PodTemplate = %+v, %v; want %+v", got, err, tpl)
	}
	if pz, ok := kind.(Pauser); !ok || pz.Paused(obj) {
		t.Fatalf("a Widget with spec.rollout.paused unset: Pauser %v, want a Pauser that is not paused", ok)
	}
	c := fake.NewClientBuilder().WithObjects(obj).Build()
	cur := kind.New()
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(obj), cur); err != nil {
		t.Fatal(err)
	}
	next := tpl.DeepCopy()
	next.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "STAKATER_APP_CONFIGMAP", Value: "abc"}}
	stale, _ := cur.DeepCopyObject().(client.Object)
	paused, rec := true, "record"
	if _, err := kind.Write(t.Context(), c, cur, Update{Template: next, Paused: &paused, Annotations: map[string]*string{"ripple.dev/applied": &rec}}); err != nil {
		t.Fatal(err)
	}
	after := readTemplate(t, kind, c, obj, next)
	u, _ := after.(*unstructured.Unstructured)
	if r, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas"); r != 2 || !kind.(Pauser).Paused(after) || after.GetAnnotations()["ripple.dev/applied"] != rec {
		t.Fatalf("after the write: replicas %d (want 2 kept), paused %v, annotations %v", r, kind.(Pauser).Paused(after), after.GetAnnotations())
	}
	// A write on a stale copy fails rather than applying twice.
	if _, err := kind.Write(t.Context(), c, stale, Update{Template: next}); err == nil {
		t.Fatal("a write on a stale object succeeded")
	}
}

// A write from the object as the cache keeps it (the template as JSON)
// writes the same patch as from the whole object: the template's other
// fields stay, and the cache's own key is never sent.
func TestDeclaredWriteFromTheCache(t *testing.T) {
	kind := NewDeclared(widget)
	tpl := corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:1", Args: []string{"--serve"}}}}}
	obj := declaredObj(t, widget, "w", map[string]any{"spec": map[string]any{"pod": map[string]any{"template": templateAt(t, tpl)}}})
	var sent []string
	c := fake.NewClientBuilder().WithObjects(obj).WithInterceptorFuncs(interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, o client.Object, p client.Patch, opts ...client.PatchOption) error {
			b, err := p.Data(o)
			sent = append(sent, string(b))
			if err != nil {
				return err
			}
			return c.Patch(ctx, o, p, opts...)
		}}).Build()
	whole := kind.New()
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(obj), whole); err != nil {
		t.Fatal(err)
	}
	cached, err := TrimDeclared([]declared.Kind{widget})(whole.DeepCopyObject())
	if err != nil {
		t.Fatal(err)
	}
	next := tpl.DeepCopy()
	next.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "STAKATER_APP_CONFIGMAP", Value: "abc"}}
	if _, err := kind.Write(t.Context(), c, cached.(client.Object), Update{Template: next}); err != nil {
		t.Fatal(err)
	}
	readTemplate(t, kind, c, obj, next)
	if len(sent) != 1 || strings.Contains(sent[0], cachedTemplate) || !strings.Contains(sent[0], `"--serve"`) {
		t.Fatalf("patches sent %q, want one with the whole containers list and no %s", sent, cachedTemplate)
	}
}

// readTemplate reads obj back through c and fails unless its pod template
// is want.
func readTemplate(t *testing.T, kind Kind, c client.Client, obj client.Object, want *corev1.PodTemplateSpec) client.Object {
	t.Helper()
	after := kind.New()
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(obj), after); err != nil {
		t.Fatal(err)
	}
	if got, _ := kind.PodTemplate(after); got == nil || !equality.Semantic.DeepEqual(*got, *want) {
		t.Fatalf("written template %+v, want %+v", got, want)
	}
	return after
}

func TestDeclaredTemplateKindWithoutTemplate(t *testing.T) {
	kind := NewDeclared(widget)
	obj := declaredObj(t, widget, "w", map[string]any{"spec": map[string]any{}})
	if tpl, err := kind.PodTemplate(obj); tpl != nil || err != nil {
		t.Fatalf("PodTemplate = %v, %v; want none (nothing to plan)", tpl, err)
	}
	bad := declaredObj(t, widget, "w", map[string]any{"spec": map[string]any{"pod": map[string]any{"template": "x"}}})
	if _, err := kind.PodTemplate(bad); err == nil {
		t.Fatal("a string at spec.pod.template converted")
	}
	if _, err := kind.PodTemplate(declaredObj(t, secretSync, "s", map[string]any{})); err == nil {
		t.Fatal("an object of another kind converted")
	}
}

func TestDeclaredRestartKind(t *testing.T) {
	kind := NewDeclared(secretSync)
	obj := declaredObj(t, secretSync, "s", map[string]any{"spec": map[string]any{"refreshInterval": "1h"}})
	tpl, err := kind.PodTemplate(obj)
	if err != nil || tpl == nil || len(tpl.Spec.Containers) != 1 {
		t.Fatalf("PodTemplate = %+v, %v; want one container to write a reload on", tpl, err)
	}
	if !kind.KeepsTemplate(obj) {
		t.Fatal("a restart kind keeps no template: what was applied is in its record")
	}
	if _, ok := kind.(Pauser); ok {
		t.Fatal("a restart kind is a Pauser")
	}
	c := fake.NewClientBuilder().WithObjects(obj).Build()
	write := func(value string) string {
		t.Helper()
		cur := kind.New()
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(obj), cur); err != nil {
			t.Fatal(err)
		}
		next := tpl.DeepCopy()
		next.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "STAKATER_APP_CONFIGMAP", Value: value}}
		if _, err := kind.Write(t.Context(), c, cur, Update{Template: next}); err != nil {
			t.Fatal(err)
		}
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(obj), cur); err != nil {
			t.Fatal(err)
		}
		return cur.GetAnnotations()["example.com/force-sync"]
	}
	first, again, other := write("abc"), write("abc"), write("def")
	if first == "" || again != first || other == first {
		t.Fatalf("force-sync values %q, %q, %q: want one per change set, the same for the same change set", first, again, other)
	}
}

func TestDeclaredRolloutStatus(t *testing.T) {
	kind, ok := NewDeclared(widget).(StatusReader)
	if !ok {
		t.Fatal("a declared kind is not a StatusReader")
	}
	obj := declaredObj(t, widget, "w", map[string]any{"status": map[string]any{
		"observedGeneration": int64(3), "conditions": []any{map[string]any{"type": "Ready", "status": "True"}},
	}})
	obj.SetGeneration(3)
	if st := kind.RolloutStatus(obj); st.State != rstatus.Complete {
		t.Fatalf("status %v, want complete", st)
	}
	restart, _ := NewDeclared(secretSync).(StatusReader)
	if st := restart.RolloutStatus(declaredObj(t, secretSync, "s", map[string]any{})); st.State != rstatus.Complete {
		t.Fatalf("a kind without ready: status %v, want complete once written", st)
	}
}

// The cache keeps of a declared kind's object its metadata and what its
// declaration reads (template, as JSON; paused; ready), nothing else;
// objects of other kinds pass as they are.
func TestTrimDeclared(t *testing.T) {
	tpl := corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:1"}}}}
	obj := declaredObj(t, widget, "w", map[string]any{
		"spec": map[string]any{"pod": map[string]any{"template": templateAt(t, tpl)}, "replicas": int64(2),
			"rollout": map[string]any{"paused": true, "maxSurge": "25%"}},
		"status": map[string]any{"observedGeneration": int64(3), "conditions": []any{map[string]any{"type": "Ready", "status": "True"}}, "replicas": int64(2)},
	})
	obj.SetAnnotations(map[string]string{"a": "b"})
	trim := TrimDeclared([]declared.Kind{widget, secretSync})
	got, err := trim(obj.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	u, _ := got.(*unstructured.Unstructured)
	want := map[string]any{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": obj.Object["metadata"],
		cachedTemplate: `{"metadata":{},"spec":{"containers":[{"image":"app:1","name":"app","resources":{}}]}}`,
		"spec":         map[string]any{"rollout": map[string]any{"paused": true}},
		"status":       map[string]any{"observedGeneration": int64(3), "conditions": []any{map[string]any{"type": "Ready", "status": "True"}}},
	}
	if !equality.Semantic.DeepEqual(u.Object, want) {
		t.Fatalf("trimmed\n%v\nwant\n%v", u.Object, want)
	}
	if again, err := trim(u.DeepCopy()); err != nil || !equality.Semantic.DeepEqual(again.(*unstructured.Unstructured).Object, want) {
		t.Fatalf("trimmed twice (client-go may transform an object again): %v (%v), want it unchanged", again, err)
	}
	kind := NewDeclared(widget)
	if p, err := kind.PodTemplate(u); err != nil || !equality.Semantic.DeepEqual(*p, tpl) || !kind.(Pauser).Paused(u) {
		t.Fatalf("the trimmed Widget reads differently: template %v (%v), paused %v", p, err, kind.(Pauser).Paused(u))
	}
	if a, b := kind.(StatusReader).RolloutStatus(u), kind.(StatusReader).RolloutStatus(obj); !equality.Semantic.DeepEqual(a, b) {
		t.Fatalf("the trimmed Widget's rollout %+v, the whole one's %+v", a, b)
	}
	other := declaredObj(t, declared.Kind{Group: "other.io", Version: "v1", Kind: "Thing"}, "x", map[string]any{"spec": map[string]any{"a": "b"}})
	if got, _ := trim(other.DeepCopy()); !equality.Semantic.DeepEqual(got.(*unstructured.Unstructured).Object, other.Object) {
		t.Fatalf("an object of an undeclared kind was trimmed: %v", got)
	}
}

// A declared kind's refs are read from the whole object (explain, from
// the API server) and from the cache's trimmed copy alike; the cache
// keeps them, not the fields they are read from.
func TestDeclaredFieldRefs(t *testing.T) {
	k := secretSync
	k.Refs = []declared.Ref{{Path: "spec.from[].configMap.name", Kind: "ConfigMap"}, {Path: "spec.credentials", Kind: "Secret"}}
	kind := NewDeclared(k)
	obj := declaredObj(t, k, "s", map[string]any{"spec": map[string]any{
		"from":        []any{map[string]any{"configMap": map[string]any{"name": "tpl"}}, map[string]any{"literal": "x"}},
		"credentials": "creds", "refreshInterval": "1h",
	}})
	want := []refs.FieldRef{
		{Ref: refs.Ref{Kind: refs.ConfigMap, Name: "tpl"}, Path: "spec.from[].configMap.name"},
		{Ref: refs.Ref{Kind: refs.Secret, Name: "creds"}, Path: "spec.credentials"},
	}
	fr, ok := kind.(FieldReferrer)
	if !ok {
		t.Fatal("a declared kind is no FieldReferrer")
	}
	if got, over := fr.FieldRefs(obj); over || !equality.Semantic.DeepEqual(got, want) {
		t.Fatalf("FieldRefs of the whole object = %v, over %v; want %v", got, over, want)
	}
	trimmed, err := TrimDeclared([]declared.Kind{k})(obj.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	u := trimmed.(*unstructured.Unstructured)
	if _, ok := u.Object["spec"]; ok {
		t.Fatalf("the cache keeps the spec: %v", u.Object)
	}
	if got, over := fr.FieldRefs(u); over || !equality.Semantic.DeepEqual(got, want) {
		t.Fatalf("FieldRefs of the cached object = %v, over %v; want %v", got, over, want)
	}

	many := make([]any, declared.MaxRefValues+1)
	for i := range many {
		many[i] = map[string]any{"configMap": map[string]any{"name": "tpl"}}
	}
	big := declaredObj(t, k, "big", map[string]any{"spec": map[string]any{"from": many}})
	trimmed, err = TrimDeclared([]declared.Kind{k})(big)
	if err != nil {
		t.Fatal(err)
	}
	if got, over := fr.FieldRefs(trimmed.(*unstructured.Unstructured)); !over || len(got) != 1 {
		t.Fatalf("FieldRefs of %d values, cached = %v, over %v; want the one name, over", len(many), got, over)
	}
	if got, over := NewDeclared(secretSync).(FieldReferrer).FieldRefs(obj); got != nil || over {
		t.Fatalf("a kind without refs: %v, %v", got, over)
	}
}
