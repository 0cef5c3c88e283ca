package dependents

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/ripple-dev/ripple/internal/annotation"
	"github.com/ripple-dev/ripple/internal/declared"
	"github.com/ripple-dev/ripple/internal/dependents/dependentstest"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/workload"
)

var keys = annotation.DefaultKeys("")

func deployment(ns, name string, ann map[string]string, spec corev1.PodSpec) *appsv1.Deployment {
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: ann},
		Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: spec}}}
}

func envFrom(cm string) corev1.PodSpec {
	return corev1.PodSpec{Containers: []corev1.Container{{Name: "app", EnvFrom: []corev1.EnvFromSource{
		{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: cm}}},
	}}}}
}

var rolloutKind = workload.NewRollout(workload.RolloutOptions{})

func rollout(ns, name, ref string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(workload.RolloutGVK)
	u.SetNamespace(ns)
	u.SetName(name)
	_ = unstructured.SetNestedField(u.Object, map[string]any{"kind": "Deployment", "name": ref}, "spec", "workloadRef")
	return u
}

// newIndex returns an Index over objs with the indexes of kinds.
func newIndex(t *testing.T, objs []client.Object, kinds ...workload.Kind) *Index {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	scheme.AddKnownTypeWithName(workload.RolloutGVK, &unstructured.Unstructured{})
	scheme.AddKnownTypeWithName(workload.RolloutGVK.GroupVersion().WithKind("RolloutList"), &unstructured.UnstructuredList{})
	b := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...)
	ix := &Index{Keys: keys, SourceKinds: refs.Kinds()}
	for _, k := range kinds {
		if err := ix.Register(t.Context(), dependentstest.Indexer(b), k); err != nil {
			t.Fatal(err)
		}
	}
	ix.Reader = b.Build()
	return ix
}

func names(objs []client.Object) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.GetName())
	}
	slices.Sort(out)
	return out
}

// Of finds the workloads that reference a source, name it in a
// named-reload annotation (on the metadata or the pod template), or may
// match it by a pattern; not the others, nor another namespace's.
func TestOf(t *testing.T) {
	objs := []client.Object{
		deployment("shop", "env", nil, envFrom("cfg")),
		deployment("shop", "named", map[string]string{keys.ReloadKey(refs.ConfigMap): "cfg,other"}, corev1.PodSpec{}),
		deployment("shop", "pattern", map[string]string{keys.ReloadKey(refs.ConfigMap): "cf.*"}, corev1.PodSpec{}),
		deployment("shop", "secret-named", map[string]string{keys.ReloadKey(refs.Secret): "cfg"}, corev1.PodSpec{}),
		deployment("shop", "unrelated", nil, envFrom("else")),
		deployment("other", "env", nil, envFrom("cfg")),
	}
	tplNamed := deployment("shop", "tpl-named", nil, corev1.PodSpec{})
	tplNamed.Spec.Template.Annotations = map[string]string{keys.ReloadKey(refs.ConfigMap): "cfg"}
	objs = append(objs, tplNamed)
	ix := newIndex(t, objs, workload.Deployment)
	got, err := ix.Of(t.Context(), workload.Deployment, "shop", refs.Ref{Kind: refs.ConfigMap, Name: "cfg"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"env", "named", "pattern", "tpl-named"}; !slices.Equal(names(got), want) {
		t.Errorf("Of(ConfigMap/cfg) = %v, want %v", names(got), want)
	}
	got, err = ix.Of(t.Context(), workload.Deployment, "shop", refs.Ref{Kind: refs.Secret, Name: "cfg"})
	if err != nil || !slices.Equal(names(got), []string{"secret-named"}) {
		t.Errorf("Of(Secret/cfg) = %v, %v", names(got), err)
	}
	all, err := ix.InNamespace(t.Context(), workload.Deployment, "other")
	if err != nil || len(all) != 1 || all[0] != (types.NamespacedName{Namespace: "other", Name: "env"}) {
		t.Errorf("InNamespace(other) = %v, %v", all, err)
	}
}

// A Rollout that takes its template from a Deployment depends on what
// that Deployment uses.
func TestOfThroughWorkloadRef(t *testing.T) {
	objs := []client.Object{
		deployment("shop", "base", nil, envFrom("cfg")),
		rollout("shop", "canary", "base"),
		rollout("shop", "elsewhere", "missing"),
	}
	ix := newIndex(t, objs, workload.Deployment, rolloutKind)
	got, err := ix.Of(t.Context(), rolloutKind, "shop", refs.Ref{Kind: refs.ConfigMap, Name: "cfg"})
	if err != nil || !slices.Equal(names(got), []string{"canary"}) {
		t.Errorf("Of(Rollout, ConfigMap/cfg) = %v, %v; want [canary]", names(got), err)
	}
	using, err := ix.UsingTemplateOf(t.Context(), rolloutKind, "shop", "base")
	if err != nil || len(using) != 1 || using[0].Name != "canary" {
		t.Errorf("UsingTemplateOf(base) = %v, %v", using, err)
	}
}

// A workload whose template cannot be read is reported, and still indexed
// by its own annotations.
func TestIndexValuesReportsErrors(t *testing.T) {
	var reported []string
	ix := &Index{Keys: keys, SourceKinds: refs.Kinds(), Error: func(err error, obj client.Object) { reported = append(reported, obj.GetName()) }}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "not-a-deployment", Annotations: map[string]string{keys.ReloadKey(refs.Secret): "s"}}}
	if got := ix.indexValues(workload.Deployment)(cm); !slices.Equal(got, []string{"Secret/s"}) || !slices.Equal(reported, []string{"not-a-deployment"}) {
		t.Errorf("index values %v, reported %v", got, reported)
	}
}

// A cache that fails is an error, not an empty answer.
func TestOfCacheError(t *testing.T) {
	b := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
		List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
			return errors.New("cache not started")
		},
	})
	ix := &Index{Reader: b.Build(), Keys: keys}
	if _, err := ix.Of(t.Context(), workload.Deployment, "shop", refs.Ref{Kind: refs.ConfigMap, Name: "cfg"}); err == nil {
		t.Error("Of on a failing cache: no error")
	}
	if _, err := ix.InNamespace(t.Context(), workload.Deployment, "shop"); err == nil {
		t.Error("InNamespace on a failing cache: no error")
	}
	if _, err := ix.UsingTemplateOf(t.Context(), rolloutKind, "shop", "base"); err == nil {
		t.Error("UsingTemplateOf on a failing cache: no error")
	}
}

// With --namespace-selector only the namespaces in the namespace cache
// are in scope, and a failing cache is an error, not "out of scope".
func TestInScopeBySelector(t *testing.T) {
	selected := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "selected"}}
	s := &Scope{Reader: fake.NewClientBuilder().WithObjects(selected).Build(), Selective: true}
	for ns, want := range map[string]bool{"selected": true, "other": false} {
		if in, err := s.InScope(t.Context(), ns); in != want || err != nil {
			t.Errorf("InScope(%q) = %v, %v; want %v", ns, in, err, want)
		}
	}
	failing := &Scope{Selective: true, Reader: fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
		Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
			return errors.New("cache not started")
		},
	}).Build()}
	if in, err := failing.InScope(t.Context(), "selected"); in || err == nil {
		t.Errorf("InScope on a failing cache = %v, %v; want an error", in, err)
	}
}

// The index never compiles a pattern: a Deployment whose named-reload
// values are 255 KiB of patterns (issue 33: 4.6 s an index call, so a
// few tens of them held the cache sync past its timeout) indexes in
// milliseconds, and a pattern, valid or not, indexes as "<Kind>/*".
func TestIndexValuesCompileNothing(t *testing.T) {
	var items []string
	for i := range annotation.MaxItems {
		items = append(items, fmt.Sprintf("(a{30}b{30}){30}%d-%s", i, strings.Repeat("b", 200)))
	}
	huge := strings.Join(items, ",")
	huge += strings.Repeat(" ", 255<<10-len(huge))
	ix := &Index{Keys: keys, SourceKinds: refs.Kinds()}
	dep := deployment("shop", "hostile", map[string]string{
		keys.ReloadKey(refs.ConfigMap): huge,
		keys.ReloadKey(refs.Secret):    "db, app-(, " + strings.Repeat("x", annotation.MaxItemLen+1),
	}, corev1.PodSpec{})
	index := ix.indexValues(workload.Deployment)
	start := time.Now()
	got := index(dep)
	// Generous for a shared machine: it was 4.6 s; the allocations below
	// are the exact check.
	if elapsed := time.Since(start); elapsed > time.Second {
		t.Errorf("indexing took %v", elapsed)
	}
	// Compiling one pattern alone allocates more than this.
	if allocs := testing.AllocsPerRun(5, func() { index(dep) }); allocs > 60 {
		t.Errorf("indexing allocates %v times", allocs)
	}
	if want := []string{"ConfigMap/*", "Secret/db", "Secret/*"}; !slices.Equal(got, want) {
		t.Errorf("index values %v, want %v", got, want)
	}
}

// A declared kind's objects are indexed by the configs their refs name,
// as their cache keeps them (trimmed, the refs read once), so that a
// config's event finds them without a list of the kind.
func TestOfByFieldRefs(t *testing.T) {
	k := declared.Kind{Group: "example.com", Version: "v1", Kind: "SecretSync", Resource: "secretsyncs",
		Restart: &declared.Restart{Annotation: "example.com/force-sync"},
		Refs:    []declared.Ref{{Path: "spec.from[].configMap.name", Kind: "ConfigMap"}, {Path: "spec.from[].secret.name", Kind: "Secret"}}}
	kind := workload.NewDeclared(k)
	trim := workload.TrimDeclared([]declared.Kind{k})
	sync := func(name string, from ...any) client.Object {
		u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"from": from}}}
		u.SetGroupVersionKind(k.GVK())
		u.SetNamespace("shop")
		u.SetName(name)
		cached, err := trim(u)
		if err != nil {
			t.Fatal(err)
		}
		return cached.(*unstructured.Unstructured)
	}
	cm := func(name string) any { return map[string]any{"configMap": map[string]any{"name": name}} }
	objs := []client.Object{
		sync("tpl", cm("cfg")),
		sync("both", cm("other"), cm("cfg")),
		sync("secret", map[string]any{"secret": map[string]any{"name": "cfg"}}),
		sync("none"),
	}
	scheme := runtime.NewScheme()
	scheme.AddKnownTypeWithName(k.GVK(), &unstructured.Unstructured{})
	scheme.AddKnownTypeWithName(k.GVK().GroupVersion().WithKind("SecretSyncList"), &unstructured.UnstructuredList{})
	b := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...)
	ix := &Index{Keys: keys, SourceKinds: refs.Kinds()}
	if err := ix.Register(t.Context(), dependentstest.Indexer(b), kind); err != nil {
		t.Fatal(err)
	}
	ix.Reader = b.Build()
	got, err := ix.Of(t.Context(), kind, "shop", refs.Ref{Kind: refs.ConfigMap, Name: "cfg"})
	if err != nil || !slices.Equal(names(got), []string{"both", "tpl"}) {
		t.Errorf("Of(ConfigMap/cfg) = %v, %v; want [both tpl]", names(got), err)
	}
	got, err = ix.Of(t.Context(), kind, "shop", refs.Ref{Kind: refs.Secret, Name: "cfg"})
	if err != nil || !slices.Equal(names(got), []string{"secret"}) {
		t.Errorf("Of(Secret/cfg) = %v, %v; want [secret]", names(got), err)
	}
}
