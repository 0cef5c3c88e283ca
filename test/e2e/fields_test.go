package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/ripple-dev/ripple/hack/cluster"
	"github.com/ripple-dev/ripple/hack/kit"
)

var (
	widgets           = schema.GroupVersionResource{Group: "test.ripple.dev", Version: "v1", Resource: "widgets"}
	deploymentConfigs = schema.GroupVersionResource{Group: "apps.openshift.io", Version: "v1", Resource: "deploymentconfigs"}
)

// widgetOnlyKinds declares the made-up Widget (hack/cluster/crds/widget.yaml,
// whose spec keeps unknown fields) with its pod template at spec.pod.template.
const widgetOnlyKinds = `- group: test.ripple.dev
  version: v1
  kind: Widget
  template: spec.pod.template
`

// unknownFieldsTemplate is a pod template whose pod, containers and an env
// entry carry fields that Ripple's copy of the Kubernetes types does not
// know, as a CRD's own fields or a newer cluster's would be.
func unknownFieldsTemplate(t *testing.T) map[string]any {
	t.Helper()
	tpl := map[string]any{
		"metadata": map[string]any{"labels": map[string]any{"app": "app"}},
		"spec": map[string]any{
			"futurePodField": "pod",
			"tolerations":    []any{map[string]any{"key": kit.KwokToleration.Key, "operator": string(kit.KwokToleration.Operator)}},
			"containers": []any{
				map[string]any{
					"name": "app", "image": "registry.invalid/app:1",
					"futureField": map[string]any{"depth": int64(1), "on": true},
					"envFrom":     []any{map[string]any{"configMapRef": map[string]any{"name": configName}}},
					"env":         []any{map[string]any{"name": "LOG_LEVEL", "value": "info", "futureEnv": "kept"}},
				},
				map[string]any{"name": "side", "image": "registry.invalid/side:1", "sidecarFuture": true},
			},
		},
	}
	return tpl
}

// A reload keeps every field of the workload it did not set: of a declared
// kind and of a DeploymentConfig, the fields their CRDs keep that Ripple's
// types do not know (on the pod, on a container, on an env entry); of a
// Deployment, fields the types know but Ripple never sets. Under both
// strategies the reload is written (the env var or the annotation holds
// the config's new digest) and the template is otherwise as it was.
func TestReloadKeepsEveryField(t *testing.T) {
	t.Parallel()
	if err := kc.InstallCRDs(t.Context(), cluster.WidgetCRD, cluster.DeploymentConfigCRD); err != nil {
		t.Fatal(err)
	}
	kinds := filepath.Join(t.TempDir(), "kinds.yaml")
	if err := os.WriteFile(kinds, []byte(widgetOnlyKinds), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, strategy := range []string{"env-vars", "annotations"} {
		t.Run(strategy, func(t *testing.T) {
			t.Parallel()
			cs := kubernetes.NewForConfigOrDie(kc.Config)
			dc := dynamic.NewForConfigOrDie(kc.Config)
			ns := newNamespace(t, cs)
			startRipple(t, ns, "--workload-kinds="+kinds, "--is-openshift", "--reload-strategy="+strategy)
			createConfigMap(t, cs, ns, configName, "v1")

			custom := map[schema.GroupVersionResource][]string{
				widgets:           {"spec", "pod", "template"},
				deploymentConfigs: {"spec", "template"},
			}
			for gvr, path := range custom {
				createWithTemplate(t, dc, ns, gvr, path, unknownFieldsTemplate(t))
			}
			createKnownFieldsDeployment(t, cs, ns)

			// The baseline written, each template is what its creator wrote.
			before := map[schema.GroupVersionResource]map[string]any{}
			for gvr, path := range custom {
				u := waitBaselineRecord(t, func(ctx context.Context) (metav1.Object, error) {
					return dc.Resource(gvr).Namespace(ns).Get(ctx, "app", metav1.GetOptions{})
				}).(*unstructured.Unstructured)
				before[gvr], _, _ = unstructured.NestedMap(u.Object, path...)
			}
			d := waitBaselineRecord(t, func(ctx context.Context) (metav1.Object, error) {
				return cs.AppsV1().Deployments(ns).Get(ctx, "app", metav1.GetOptions{})
			}).(*appsv1.Deployment)

			sum := setConfigMapValue(t, cs, ns, configName, "v2")
			reloaded := envIs(configEnv, sum)
			if strategy == "annotations" {
				reloaded = lastReloadedFrom("CONFIGMAP", configName, sum)
			}
			for gvr, path := range custom {
				var after map[string]any
				waitFor(t, "the reload of "+gvr.Resource, func(ctx context.Context) (bool, error) {
					u, err := dc.Resource(gvr).Namespace(ns).Get(ctx, "app", metav1.GetOptions{})
					if err != nil {
						return false, err
					}
					after, _, _ = unstructured.NestedMap(u.Object, path...)
					tpl := &corev1.PodTemplateSpec{}
					if err := runtime.DefaultUnstructuredConverter.FromUnstructured(after, tpl); err != nil {
						return false, err
					}
					return reloaded(tpl) == nil, nil
				})
				want := withReload(t, before[gvr], strategy, sum, after)
				if a, w := jsonString(t, after), jsonString(t, want); a != w {
					t.Errorf("%s template after the reload:\n%s\nwant every field kept:\n%s", gvr.Resource, a, w)
				}
			}

			var got *appsv1.Deployment
			waitFor(t, "the reload of the Deployment", func(ctx context.Context) (bool, error) {
				var err error
				got, err = cs.AppsV1().Deployments(ns).Get(ctx, "app", metav1.GetOptions{})
				return err == nil && reloaded(&got.Spec.Template) == nil, err
			})
			want := d.Spec.Template.DeepCopy()
			if strategy == "annotations" {
				if want.Annotations == nil {
					want.Annotations = map[string]string{}
				}
				want.Annotations[lastReloadedFromAnnot] = got.Spec.Template.Annotations[lastReloadedFromAnnot]
			} else {
				want.Spec.Containers[0].Env = append(want.Spec.Containers[0].Env, corev1.EnvVar{Name: configEnv, Value: sum})
			}
			if !equality.Semantic.DeepEqual(&got.Spec.Template, want) {
				t.Errorf("Deployment template after the reload:\n%s\nwant every field kept:\n%s", jsonString(t, got.Spec.Template), jsonString(t, want))
			}
		})
	}
}

// createWithTemplate creates the object "app" of gvr, auto-reloaded, with
// tpl at path.
func createWithTemplate(t *testing.T, dc dynamic.Interface, ns string, gvr schema.GroupVersionResource, path []string, tpl map[string]any) {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{}}
	kind := map[string]string{"widgets": "Widget", "deploymentconfigs": "DeploymentConfig"}[gvr.Resource]
	u.SetGroupVersionKind(gvr.GroupVersion().WithKind(kind))
	u.SetName("app")
	u.SetAnnotations(auto())
	if err := unstructured.SetNestedField(u.Object, tpl, path...); err != nil {
		t.Fatal(err)
	}
	if _, err := dc.Resource(gvr).Namespace(ns).Create(t.Context(), u, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating %s: %v", kind, err)
	}
}

// createKnownFieldsDeployment creates the Deployment "app", auto-reloaded,
// whose template sets fields the types know and Ripple never writes.
func createKnownFieldsDeployment(t *testing.T, cs kubernetes.Interface, ns string) {
	t.Helper()
	tpl := spec{configMaps: []string{configName}, env: []corev1.EnvVar{{Name: "LOG_LEVEL", Value: "info"}}}.template("app")
	tpl.Spec.ShareProcessNamespace = ptr.To(true)
	tpl.Spec.EnableServiceLinks = ptr.To(false)
	c := &tpl.Spec.Containers[0]
	c.TerminationMessagePolicy = corev1.TerminationMessageFallbackToLogsOnError
	c.Stdin, c.TTY, c.WorkingDir = true, true, "/srv"
	tpl.Spec.Containers = append(tpl.Spec.Containers, corev1.Container{Name: "side", Image: "registry.invalid/side:1", StdinOnce: true, Stdin: true})
	_, err := cs.AppsV1().Deployments(ns).Create(t.Context(), &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Annotations: auto()},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "app"}},
			Template: tpl,
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating the Deployment: %v", err)
	}
}

// waitBaselineRecord waits until the object get reads carries Ripple's applied
// record (the baseline) and returns it.
func waitBaselineRecord(t *testing.T, get func(context.Context) (metav1.Object, error)) metav1.Object {
	t.Helper()
	var obj metav1.Object
	waitFor(t, "the baseline record", func(ctx context.Context) (bool, error) {
		var err error
		obj, err = get(ctx)
		return err == nil && obj.GetAnnotations()[appliedAnnotation] != "", err
	})
	return obj
}

// withReload is the stored template before with the strategy's reload
// written: the env var appended on the first container, or the
// annotation as after has it (its value is checked by the wait).
func withReload(t *testing.T, before map[string]any, strategy, sum string, after map[string]any) map[string]any {
	t.Helper()
	want := runtime.DeepCopyJSON(before)
	if strategy == "annotations" {
		v, _, _ := unstructured.NestedString(after, "metadata", "annotations", lastReloadedFromAnnot)
		if err := unstructured.SetNestedField(want, v, "metadata", "annotations", lastReloadedFromAnnot); err != nil {
			t.Fatal(err)
		}
		return want
	}
	containers, _, _ := unstructured.NestedSlice(want, "spec", "containers")
	app := containers[0].(map[string]any)
	app["env"] = append(app["env"].([]any), map[string]any{"name": configEnv, "value": sum})
	if err := unstructured.SetNestedSlice(want, containers, "spec", "containers"); err != nil {
		t.Fatal(err)
	}
	return want
}

func jsonString(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
