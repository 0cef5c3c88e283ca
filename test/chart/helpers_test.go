package chart

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/ripple-dev/ripple/hack/helmchart"
	"github.com/ripple-dev/ripple/internal/config"
	"github.com/ripple-dev/ripple/test/inproc"
)

// render runs helm template and decodes the result; a failure fails t.
func render(t testing.TB, r helmchart.Release) ([]byte, []*unstructured.Unstructured) {
	t.Helper()
	out, err := helmchart.Template(r)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := helmchart.Objects(out)
	if err != nil {
		t.Fatalf("decoding helm's output: %v\n%s", err, out)
	}
	return out, objs
}

// reloaderValues is Reloader's default values.yaml, as copied into testdata.
func reloaderValues() string { return testdata("reloader-values.yaml") }

// find returns the rendered objects of kind.
func find(objs []*unstructured.Unstructured, kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

// rippleDeployment returns the rendered Deployment and Ripple's container.
func rippleDeployment(t *testing.T, objs []*unstructured.Unstructured) (*appsv1.Deployment, corev1.Container) {
	t.Helper()
	deps := find(objs, "Deployment")
	if len(deps) != 1 {
		t.Fatalf("rendered %d Deployments, want 1", len(deps))
	}
	d := &appsv1.Deployment{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(deps[0].Object, d); err != nil {
		t.Fatal(err)
	}
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name == "ripple" {
			return d, c
		}
	}
	t.Fatalf("Deployment %s has no container named ripple", d.Name)
	return nil, corev1.Container{}
}

// podName is what the downward API gives metadata.name in these tests.
const podName = "ripple-7d4b9c-x2x9q"

// envLookup resolves the container's environment as the kubelet would for
// a pod of d: literal values, the downward-API fields the chart uses, and
// keys of the Secrets among objs (the chart's own). Keys of other Secrets
// read as "<from secret>".
func envLookup(objs []*unstructured.Unstructured, d *appsv1.Deployment, c corev1.Container) func(string) string {
	secrets := map[string]map[string]string{}
	for _, o := range find(objs, "Secret") {
		s := &corev1.Secret{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, s); err == nil {
			secrets[s.Name] = map[string]string{}
			for k, v := range s.Data {
				secrets[s.Name][k] = string(v)
			}
			for k, v := range s.StringData {
				secrets[s.Name][k] = v
			}
		}
	}
	env := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = e.Value
		case e.ValueFrom.FieldRef != nil:
			switch e.ValueFrom.FieldRef.FieldPath {
			case "metadata.name":
				env[e.Name] = podName
			case "metadata.namespace":
				env[e.Name] = d.Namespace
			default:
				env[e.Name] = "<" + e.ValueFrom.FieldRef.FieldPath + ">"
			}
		case e.ValueFrom.ResourceFieldRef != nil:
			env[e.Name] = "1"
		case e.ValueFrom.SecretKeyRef != nil:
			ref := e.ValueFrom.SecretKeyRef
			if v, ok := secrets[ref.Name][ref.Key]; ok {
				env[e.Name] = v
			} else {
				env[e.Name] = "<from secret>"
			}
		default:
			env[e.Name] = "<from elsewhere>"
		}
	}
	return func(k string) string { return env[k] }
}

// parseRendered parses the flags of the rendered Deployment; a failure
// fails t.
func parseRendered(t *testing.T, objs []*unstructured.Unstructured) (*config.Options, config.Config) {
	t.Helper()
	d, c := rippleDeployment(t, objs)
	if len(c.Command) > 0 {
		t.Fatalf("the chart sets a command %q; the image's entrypoint must run", c.Command)
	}
	opts, cfg, err := inproc.ParseFlags(c.Args, envLookup(objs, d, c))
	if err != nil {
		t.Fatalf("ripple rejects the rendered arguments %q: %v", c.Args, err)
	}
	return opts, cfg
}

// applier applies unstructured objects with server-side apply, finding each
// kind's resource through discovery.
type applier struct {
	dyn    dynamic.Interface
	mapper *restmapper.DeferredDiscoveryRESTMapper
}

var (
	mapperOnce sync.Once
	mapper     *restmapper.DeferredDiscoveryRESTMapper
)

func newApplier(t testing.TB, rc *rest.Config) *applier {
	t.Helper()
	mapperOnce.Do(func() {
		dc := discovery.NewDiscoveryClientForConfigOrDie(api.Config)
		mapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	})
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	return &applier{dyn: dyn, mapper: mapper}
}

// apply server-side applies o; dryRun only validates and admits it.
func (a *applier) apply(ctx context.Context, o *unstructured.Unstructured, dryRun bool) error {
	gvk := o.GroupVersionKind()
	m, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return fmt.Errorf("%s: %w", gvk, err)
	}
	ri := dynamic.ResourceInterface(a.dyn.Resource(m.Resource))
	if m.Scope.Name() == "namespace" {
		if o.GetNamespace() == "" {
			return fmt.Errorf("%s %s has no namespace", gvk.Kind, o.GetName())
		}
		ri = a.dyn.Resource(m.Resource).Namespace(o.GetNamespace())
	}
	opts := metav1.ApplyOptions{FieldManager: "ripple-chart-test", Force: true}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	_, err = ri.Apply(ctx, o.GetName(), o, opts)
	if err != nil {
		return fmt.Errorf("%s %s/%s: %w", gvk.Kind, o.GetNamespace(), o.GetName(), err)
	}
	return nil
}

// delete deletes o.
func (a *applier) delete(ctx context.Context, o *unstructured.Unstructured) error {
	gvk := o.GroupVersionKind()
	m, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return err
	}
	if m.Scope.Name() == "namespace" {
		return a.dyn.Resource(m.Resource).Namespace(o.GetNamespace()).Delete(ctx, o.GetName(), metav1.DeleteOptions{})
	}
	return a.dyn.Resource(m.Resource).Delete(ctx, o.GetName(), metav1.DeleteOptions{})
}

// ensureNamespace creates ns with labels, or adds them to it when another
// test made it first: which test runs first must not change what one
// checks (the restricted Pod Security labels of the release namespace).
func ensureNamespace(t *testing.T, cs kubernetes.Interface, ns string, labels map[string]string) {
	t.Helper()
	_, err := cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: labels}}, metav1.CreateOptions{})
	switch {
	case apierrors.IsAlreadyExists(err) && len(labels) > 0:
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": labels}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cs.CoreV1().Namespaces().Patch(t.Context(), ns, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	case err != nil && !apierrors.IsAlreadyExists(err):
		t.Fatal(err)
	}
}

// warnings collects the warnings the API server returns.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) HandleWarningHeader(code int, agent, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, text)
}

func (w *warnings) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.msgs...)
}

// onShared are the arguments of a helm command on the shared API server:
// an install or upgrade leaves the ConfigRollout write policy out, as it
// is cluster-wide and would refuse the ConfigRollouts of the other tests'
// Ripples, each under a ServiceAccount of its own
// (TestConfigRolloutWritePolicy tests it, bound to its own namespace).
func onShared(args []string) []string {
	if len(args) > 0 && (args[0] == "install" || args[0] == "upgrade") {
		return append(args, "--set", "ripple.configRollouts.writePolicy=false")
	}
	return args
}
