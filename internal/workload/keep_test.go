package workload

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/ripple-dev/ripple/internal/declared"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/strategy"
)

// storedTemplateJSON is a pod template as a newer cluster or a CRD stores
// it: fields Ripple's copy of the Kubernetes types does not know on the
// pod, on each container and on an env entry, beside Ripple's env vars
// (one with a valueFrom someone else left) and an annotation.
const storedTemplateJSON = `{
  "metadata": {"annotations": {"team": "shop"}},
  "spec": {
    "futurePodField": "pod",
    "containers": [
      {"name": "app", "image": "app:1", "futureField": {"depth": 1, "on": true},
       "env": [
         {"name": "LOG_LEVEL", "value": "info", "futureEnv": "kept"},
         {"name": "STAKATER_OLD_CONFIGMAP", "value": "o1"},
         {"name": "STAKATER_APP_CONFIGMAP", "valueFrom": {"configMapKeyRef": {"name": "x", "key": "y"}}, "futureEnv": "mine"}
       ]},
      {"name": "side", "image": "side:1", "sidecarFuture": true}
    ]
  }
}`

// unknownFields are the fields of storedTemplateJSON that no reload may
// remove, by their path under the template.
var unknownFields = [][]any{
	{"spec", "futurePodField"},
	{"spec", "containers", 0, "futureField"},
	{"spec", "containers", 0, "env", 0, "futureEnv"},
	{"spec", "containers", 1, "sidecarFuture"},
}

func storedTemplate(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(storedTemplateJSON), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// at is the value at path (map keys and list indexes) in m.
func at(m any, path []any) (any, bool) {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			mm, ok := m.(map[string]any)
			if !ok {
				return nil, false
			}
			if m, ok = mm[k]; !ok {
				return nil, false
			}
		case int:
			l, ok := m.([]any)
			if !ok || k >= len(l) {
				return nil, false
			}
			m = l[k]
		}
	}
	return m, true
}

// reloads are the template changes the strategies make: the env-vars
// strategy setting one config's env var (taking over the one with a
// valueFrom) and removing a deleted config's, and the annotations strategy.
var reloads = []struct {
	name    string
	s       strategy.Strategy
	changes []strategy.Change
}{
	{"env-vars", strategy.EnvVars{}, []strategy.Change{
		{Ref: refs.Ref{Kind: refs.ConfigMap, Name: "app"}, Hash: "h2", Container: "app"},
		{Ref: refs.Ref{Kind: refs.ConfigMap, Name: "new"}, Hash: "n1", Container: "app"},
		{Ref: refs.Ref{Kind: refs.ConfigMap, Name: "old"}, Hash: "d", Container: "app", Deleted: true},
	}},
	{"annotations", strategy.Annotations{}, []strategy.Change{
		{Ref: refs.Ref{Kind: refs.ConfigMap, Name: "app"}, Hash: "h2", Container: "app"},
	}},
}

// A reload of a kind read as an unstructured object (a declared kind, read
// whole or as the cache keeps it, an Argo Rollout, a DeploymentConfig)
// writes the strategy's change and keeps every field of the template as
// stored, those Ripple's types do not know included.
func TestReloadKeepsFieldsTheTypesDoNotKnow(t *testing.T) {
	trim := TrimDeclared([]declared.Kind{widget})
	rollout := NewRollout(RolloutOptions{StrategyKey: "strategy", Now: time.Now})
	for _, tc := range []struct {
		name   string
		kind   Kind
		path   []string
		cached bool
	}{
		{"declared", NewDeclared(widget), []string{"spec", "pod", "template"}, false},
		{"declared from the cache", NewDeclared(widget), []string{"spec", "pod", "template"}, true},
		{"DeploymentConfig", DeploymentConfig, []string{"spec", "template"}, false},
		{"Rollout", rollout, []string{"spec", "template"}, false},
	} {
		for _, r := range reloads {
			t.Run(tc.name+"/"+r.name, func(t *testing.T) {
				obj, ok := tc.kind.New().(*unstructured.Unstructured)
				if !ok {
					t.Fatalf("%s.New is not unstructured", tc.kind.Name())
				}
				obj.SetNamespace("ns")
				obj.SetName("w")
				if err := unstructured.SetNestedField(obj.Object, storedTemplate(t), tc.path...); err != nil {
					t.Fatal(err)
				}
				if err := unstructured.SetNestedField(obj.Object, int64(3), "spec", "replicas"); err != nil {
					t.Fatal(err)
				}
				c := fake.NewClientBuilder().WithScheme(customScheme(t)).WithObjects(obj).Build()
				cur := tc.kind.New()
				if err := c.Get(t.Context(), client.ObjectKeyFromObject(obj), cur); err != nil {
					t.Fatal(err)
				}
				if tc.cached {
					o, err := trim(cur)
					if err != nil {
						t.Fatal(err)
					}
					cur = o.(client.Object)
				}
				tpl, err := tc.kind.PodTemplate(cur)
				if err != nil || tpl == nil {
					t.Fatalf("PodTemplate = %v, %v", tpl, err)
				}
				next := tpl.DeepCopy()
				r.s.Apply(next, r.changes, time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC))
				if _, err := tc.kind.Write(t.Context(), c, cur, Update{Template: next, Annotations: map[string]*string{"ripple.dev/applied": ptr.To("rec")}}); err != nil {
					t.Fatalf("Write: %v", err)
				}

				after := readTemplate(t, tc.kind, c, obj, next) // the reload was written, exactly
				u := after.(*unstructured.Unstructured)
				stored, _, _ := unstructured.NestedFieldNoCopy(u.Object, tc.path...)
				want := storedTemplate(t)
				for _, p := range unknownFields {
					got, ok := at(stored, p)
					if w, _ := at(want, p); !ok || jsonOf(t, got) != jsonOf(t, w) {
						t.Errorf("%v after the reload: %v (there: %v), want %v kept", p, got, ok, w)
					}
				}
				if r.s.Name() == "env-vars" {
					// The env var Ripple took over keeps the field it does not know.
					if got, _ := at(stored, []any{"spec", "containers", 0, "env", 1}); !strings.Contains(jsonOf(t, got), `"futureEnv":"mine"`) {
						t.Errorf("the env var Ripple set is %s, want its futureEnv kept", jsonOf(t, got))
					}
				}
				if n, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas"); n != 3 || u.GetAnnotations()["ripple.dev/applied"] != "rec" {
					t.Errorf("after the reload: replicas %d, annotations %v", n, u.GetAnnotations())
				}
			})
		}
	}
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The merge patch of a reload names, of the template, only the list it
// changes (containers, whole, as stored) and the annotations it changes;
// it is locked on the resourceVersion read.
func TestReloadPatchIsTheStoredTemplateChanged(t *testing.T) {
	obj := declaredObj(t, widget, "w", map[string]any{"spec": map[string]any{"pod": map[string]any{"template": storedTemplate(t)}}})
	obj.SetResourceVersion("41")
	var sent []string
	c := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
		Patch: func(_ context.Context, _ client.WithWatch, o client.Object, p client.Patch, _ ...client.PatchOption) error {
			b, err := p.Data(o)
			sent = append(sent, string(b))
			return err
		}}).Build()
	kind := NewDeclared(widget)
	tpl, err := kind.PodTemplate(obj)
	if err != nil {
		t.Fatal(err)
	}
	next := tpl.DeepCopy()
	strategy.EnvVars{}.Apply(next, reloads[0].changes, time.Time{})
	if _, err := kind.Write(t.Context(), c, obj, Update{Template: next}); err != nil {
		t.Fatal(err)
	}
	if len(sent) != 1 {
		t.Fatalf("patches sent: %q, want one", sent)
	}
	var body map[string]any
	if err := json.Unmarshal([]byte(sent[0]), &body); err != nil {
		t.Fatal(err)
	}
	want := storedTemplate(t)
	env := []any{
		map[string]any{"name": "LOG_LEVEL", "value": "info", "futureEnv": "kept"},
		map[string]any{"name": "STAKATER_APP_CONFIGMAP", "value": "h2", "futureEnv": "mine"},
		map[string]any{"name": "STAKATER_NEW_CONFIGMAP", "value": "n1"},
	}
	containers := want["spec"].(map[string]any)["containers"].([]any)
	containers[0].(map[string]any)["env"] = env
	wantBody := map[string]any{
		"metadata": map[string]any{"resourceVersion": "41"},
		"spec":     map[string]any{"pod": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": containers}}}},
	}
	if jsonOf(t, body) != jsonOf(t, wantBody) {
		t.Fatalf("patch\n%s\nwant\n%s", sent[0], jsonOf(t, wantBody))
	}
}

// A template change other than env vars and annotations is not one a
// strategy makes; it is refused rather than written over fields the types
// do not know.
func TestReloadRefusesOtherTemplateChanges(t *testing.T) {
	obj := declaredObj(t, widget, "w", map[string]any{"spec": map[string]any{"pod": map[string]any{"template": storedTemplate(t)}}})
	c := fake.NewClientBuilder().WithObjects(obj).Build()
	kind := NewDeclared(widget)
	cur := kind.New()
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(obj), cur); err != nil {
		t.Fatal(err)
	}
	tpl, err := kind.PodTemplate(cur)
	if err != nil {
		t.Fatal(err)
	}
	next := tpl.DeepCopy()
	next.Spec.Containers[0].Image = "app:2"
	if _, err := kind.Write(t.Context(), c, cur, Update{Template: next}); err == nil || !strings.Contains(err.Error(), "spec.pod.template") {
		t.Fatalf("Write of an image change: %v, want an error naming the template", err)
	}
	readTemplate(t, kind, c, obj, tpl)
}

// A Deployment is written by server-side apply of Ripple's fields only, or
// by a strategic-merge patch of what changed (a container that names an
// env var twice): either way a field the types know but Ripple never sets
// keeps its value.
func TestDeploymentReloadKeepsFieldsRippleNeverSets(t *testing.T) {
	for _, repeated := range []bool{false, true} {
		d := web()
		d.ResourceVersion = ""
		app := &d.Spec.Template.Spec.Containers[0]
		app.TerminationMessagePolicy = corev1.TerminationMessageFallbackToLogsOnError
		app.ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.NotRequired}}
		app.Stdin = true
		d.Spec.Template.Spec.ShareProcessNamespace = ptr.To(true)
		if repeated {
			app.Env = append(app.Env, corev1.EnvVar{Name: "LOG_LEVEL", Value: "debug"})
		}
		c := newApplyClient(t, d)
		cur := get(t, c)
		if supports(&cur.Spec.Template, nil) == repeated {
			t.Fatalf("repeated env names %v: written by apply %v", repeated, !repeated)
		}
		next := cur.Spec.Template.DeepCopy()
		strategy.EnvVars{}.Apply(next, reloads[0].changes[:1], time.Time{})
		if _, err := Deployment.Write(t.Context(), c, cur, Update{Template: next}); err != nil {
			t.Fatal(err)
		}
		got := get(t, c).Spec.Template
		if v, _ := (strategy.EnvVars{}).Applied(&got, refs.Ref{Kind: refs.ConfigMap, Name: "app"}); v != "h2" {
			t.Errorf("repeated env names %v: the reload was not written: env %v", repeated, got.Spec.Containers[0].Env)
		}
		want := cur.Spec.Template.DeepCopy()
		want.Spec.Containers[0].Env = got.Spec.Containers[0].Env
		if !equality.Semantic.DeepEqual(&got, want) {
			t.Errorf("repeated env names %v: template after the reload\n%+v\nwant all but env kept\n%+v", repeated, got, *want)
		}
	}
}

// storedDiff carries every shape of change a strategy makes: an env list
// or annotations the template does not have yet, an env var named twice,
// the last env var removed, an annotation removed. Applied to the stored
// template, the patch gives the reload and keeps the unknown fields.
func TestStoredDiffShapes(t *testing.T) {
	app := func(env string) string {
		return `{"spec":{"containers":[{"name":"app","image":"app:1","x":1` + env + `}]}}`
	}
	cases := []struct {
		name string
		raw  string
		edit func(*corev1.PodTemplateSpec)
		// keptY is how many env entries the patched template has with their unknown field y.
		keptY int
	}{
		{"no env yet", app(""), func(tpl *corev1.PodTemplateSpec) {
			strategy.EnvVars{}.Apply(tpl, reloads[0].changes[:1], time.Time{})
		}, 0},
		{"no metadata yet", app(""), func(tpl *corev1.PodTemplateSpec) {
			strategy.Annotations{}.Apply(tpl, reloads[1].changes, time.Time{})
		}, 0},
		{"named twice", app(`,"env":[{"name":"STAKATER_APP_CONFIGMAP","value":"a","y":1},{"name":"L","value":"1"},{"name":"STAKATER_APP_CONFIGMAP","value":"b","y":2}]`), func(tpl *corev1.PodTemplateSpec) {
			strategy.EnvVars{}.Apply(tpl, reloads[0].changes[:1], time.Time{})
		}, 2},
		{"the last removed", app(`,"env":[{"name":"STAKATER_OLD_CONFIGMAP","value":"o","y":1}]`), func(tpl *corev1.PodTemplateSpec) {
			strategy.EnvVars{}.Apply(tpl, reloads[0].changes[2:], time.Time{})
		}, 0},
		{"removed twice, one kept", app(`,"env":[{"name":"STAKATER_OLD_CONFIGMAP","value":"o"},{"name":"L","value":"1","y":1},{"name":"STAKATER_OLD_CONFIGMAP","value":"p"}]`), func(tpl *corev1.PodTemplateSpec) {
			strategy.EnvVars{}.Apply(tpl, reloads[0].changes, time.Time{})
		}, 1},
		{"an annotation removed", `{"metadata":{"annotations":{"a":"1","b":"2"},"x":1},"spec":{"containers":[{"name":"app","x":1}]}}`, func(tpl *corev1.PodTemplateSpec) {
			delete(tpl.Annotations, "a")
		}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := &corev1.PodTemplateSpec{}
			if err := json.Unmarshal([]byte(tc.raw), old); err != nil {
				t.Fatal(err)
			}
			next := old.DeepCopy()
			tc.edit(next)
			diff, err := storedDiff([]byte(tc.raw), old, next)
			if err != nil {
				t.Fatalf("storedDiff: %v", err)
			}
			patched, err := jsonpatch.MergePatch([]byte(tc.raw), diff)
			if err != nil {
				t.Fatal(err)
			}
			got := &corev1.PodTemplateSpec{}
			if err := json.Unmarshal(patched, got); err != nil || !equality.Semantic.DeepEqual(got, next) {
				t.Fatalf("patched template %s (%v), want %+v", patched, err, next)
			}
			var before, after map[string]any
			_ = json.Unmarshal([]byte(tc.raw), &before)
			_ = json.Unmarshal(patched, &after)
			for _, p := range [][]any{{"spec", "containers", 0, "x"}, {"metadata", "x"}} {
				if w, ok := at(before, p); ok {
					if g, _ := at(after, p); jsonOf(t, g) != jsonOf(t, w) {
						t.Errorf("%v: %v after the patch, want %v", p, g, w)
					}
				}
			}
			// Each env entry Ripple kept or rewrote keeps its unknown field.
			if n := strings.Count(string(patched), `"y":`); n != tc.keptY {
				t.Errorf("%d env entries keep their unknown field, want %d: %s", n, tc.keptY, patched)
			}
		})
	}
}
