package app

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache/informertest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllertest"

	"github.com/ripple-dev/ripple/api/v1alpha1"
	"github.com/ripple-dev/ripple/internal/config"
	"github.com/ripple-dev/ripple/internal/source"
	"github.com/ripple-dev/ripple/internal/workload"
)

// configOf parses args as the binary does, with no environment.
func configOf(t *testing.T, args ...string) config.Config {
	t.Helper()
	o := config.NewOptions()
	o.ReadEnv(func(string) string { return "" })
	fs := pflag.NewFlagSet("ripple", pflag.ContinueOnError)
	o.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	cfg, err := o.Config()
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func kindNames(kinds []workload.Kind) []string {
	var out []string
	for _, k := range kinds {
		out = append(out, k.Name())
	}
	return out
}

// The workload kinds follow --ignore-cronjobs and --ignore-jobs, and the
// optional kinds --is-Argo-Rollouts and --is-openshift.
func TestKinds(t *testing.T) {
	all := kindNames(Kinds(configOf(t), nil))
	if want := []string{"Deployment", "StatefulSet", "DaemonSet", "CronJob", "Job"}; !slices.Equal(all, want) {
		t.Errorf("Kinds = %v, want %v", all, want)
	}
	some := kindNames(Kinds(configOf(t, "--ignored-workload-types", "jobs,cronjobs"), nil))
	if want := []string{"Deployment", "StatefulSet", "DaemonSet"}; !slices.Equal(some, want) {
		t.Errorf("Kinds without CronJobs and Jobs = %v, want %v", some, want)
	}
	if opt := optionalKinds(configOf(t), nil, clock.RealClock{}); len(opt) != 0 {
		t.Errorf("optional kinds by default = %v", opt)
	}
	opt := optionalKinds(configOf(t, "--is-Argo-Rollouts", "--is-openshift"), nil, clock.RealClock{})
	if len(opt) != 2 || opt[0].Kind.Name() != "Rollout" || opt[0].API.GVK != workload.RolloutGVK || opt[1].API.GVK != workload.DeploymentConfigGVK {
		t.Errorf("optional kinds = %+v", opt)
	}
}

// The informers Ripple needs from the start: sources, workloads, and with
// --namespace-selector the namespaces.
func TestWatchedObjects(t *testing.T) {
	count := func(objs []client.Object) int { return len(objs) }
	if n := count(watchedObjects(configOf(t))); n != 2+5 {
		t.Errorf("%d watched kinds by default, want 7", n)
	}
	if n := count(watchedObjects(configOf(t, "--namespace-selector", "team=a", "--resource-label-selector", "x=y", "--ignored-workload-types", "jobs"))); n != 2+4+1 {
		t.Errorf("%d watched kinds with a namespace selector and no Jobs, want 7", n)
	}
}

// The caches: only the listed namespaces; ignored namespaces filtered by
// the API server; sources by the resource selector, with their data
// dropped; namespaces by the namespace selector.
func TestCacheOptions(t *testing.T) {
	cfg := configOf(t, "--namespaces-to-ignore", "kube-system,kube-public", "--namespace-selector", "team=a", "--resource-label-selector", "ripple=yes")
	o := cacheOptions(cfg.Scope, &source.Priors{}, nil)
	if o.DefaultNamespaces != nil {
		t.Errorf("namespaces %v, want all", o.DefaultNamespaces)
	}
	if s := o.DefaultFieldSelector.String(); !strings.Contains(s, "metadata.namespace!=kube-system") || !strings.Contains(s, "metadata.namespace!=kube-public") {
		t.Errorf("field selector %q", s)
	}
	if len(o.ByObject) != 3 {
		t.Errorf("%d ByObject entries, want ConfigMaps, Secrets and namespaces", len(o.ByObject))
	}
	for obj, b := range o.ByObject {
		switch obj.(type) {
		case *corev1.ConfigMap, *corev1.Secret:
			if b.Transform == nil || b.Label.String() != "ripple=yes" {
				t.Errorf("%T: transform %v, label %v", obj, b.Transform != nil, b.Label)
			}
		default:
			if b.Label.String() != "team=a" {
				t.Errorf("%T: label %v", obj, b.Label)
			}
		}
	}
	listed := cacheOptions(configOf(t, "--namespaces", "a,b").Scope, &source.Priors{}, nil)
	if len(listed.DefaultNamespaces) != 2 || listed.DefaultFieldSelector != nil {
		t.Errorf("with --namespaces: %v, %v", listed.DefaultNamespaces, listed.DefaultFieldSelector)
	}
}

// No cached object keeps another manager's field set (only its name, for
// a revert's Event), Ripple keeps its own applied fields (its next apply
// starts from them), and a CSI pod status keeps only the digest of what it
// mounted.
func TestDefaultTransform(t *testing.T) {
	fields := metav1.NewFieldsV1(`{"f:spec":{}}`)
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d", ManagedFields: []metav1.ManagedFieldsEntry{
		{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate, FieldsType: "FieldsV1", FieldsV1: fields},
		{Manager: "ripple", Operation: metav1.ManagedFieldsOperationApply, FieldsType: "FieldsV1", FieldsV1: fields},
	}}}
	out, err := defaultTransform(d)
	mf := out.(*appsv1.Deployment).ManagedFields
	if err != nil || len(mf) != 2 || mf[0].Manager != "kubectl" || mf[0].FieldsV1 != nil || mf[1].FieldsV1 == nil {
		t.Errorf("Deployment after the transform: %v, %v", mf, err)
	}
	ps := source.PodStatusObject()
	_ = unstructured.SetNestedField(ps.Object, "vault", "status", "secretProviderClassName")
	_ = unstructured.SetNestedSlice(ps.Object, []any{map[string]any{"id": "db", "version": "1"}}, "status", "objects")
	out, err = defaultTransform(ps)
	u := out.(*unstructured.Unstructured)
	if _, found, _ := unstructured.NestedSlice(u.Object, "status", "objects"); err != nil || found || source.Digest(u) == "" {
		t.Errorf("pod status after the transform: %v, %v", u.Object, err)
	}
	// A ConfigRollout's annotations are anyone's with write on it: 1 MiB
	// of them costs Ripple's cache nothing.
	cr := &v1alpha1.ConfigRollout{ObjectMeta: metav1.ObjectMeta{Name: "db-r1", Labels: map[string]string{v1alpha1.LabelLatest: "true"},
		Annotations: map[string]string{"junk": strings.Repeat("x", 1<<20)}, ManagedFields: d.ManagedFields}}
	out, err = defaultTransform(cr)
	if c := out.(*v1alpha1.ConfigRollout); err != nil || c.Annotations != nil || c.ManagedFields != nil || c.Labels[v1alpha1.LabelLatest] != "true" {
		t.Errorf("ConfigRollout after the transform: %+v, %v; want its labels only", c.Labels, err)
	}
}

// /live and /healthz answer at once; /readyz only once every watched
// informer has synced.
func TestHealthHandlers(t *testing.T) {
	fake := &informertest.FakeInformers{}
	h := &healthChecks{watched: []client.Object{&corev1.ConfigMap{}}}
	get := func(path string) int {
		rec := httptest.NewRecorder()
		h.handlers()[path].ServeHTTP(rec, httptest.NewRequestWithContext(t.Context(), http.MethodGet, path, nil))
		return rec.Code
	}
	if get("/live") != http.StatusOK || get("/healthz") != http.StatusOK {
		t.Error("not alive")
	}
	if code := get("/readyz"); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz before the cache = %d", code)
	}
	h.cache = fake
	inf := controllertest.NewFakeInformer() // not synced yet
	fake.InformersByGVK = map[schema.GroupVersionKind]toolscache.SharedIndexInformer{corev1.SchemeGroupVersion.WithKind("ConfigMap"): inf}
	if code := get("/readyz"); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz before the informers synced = %d", code)
	}
	inf.Synced()
	if code := get("/readyz"); code != http.StatusOK {
		t.Errorf("/readyz once synced = %d", code)
	}
}

func TestHealthAddr(t *testing.T) {
	if healthAddr("") != "0" || healthAddr(":8081") != ":8081" {
		t.Error("healthAddr: empty must disable the separate server")
	}
}

type syncedCache bool

func (s syncedCache) WaitForCacheSync(context.Context) bool { return bool(s) }

// afterSync calls its function once the cache synced, never when it did not.
func TestAfterSync(t *testing.T) {
	called := 0
	_ = afterSync{cache: syncedCache(false), f: func() { called++ }}.Start(t.Context())
	_ = afterSync{cache: syncedCache(true), f: func() { called++ }}.Start(t.Context())
	if called != 1 || (afterSync{}).NeedLeaderElection() {
		t.Errorf("called %d times, want 1", called)
	}
}

// restConfig reads --kubeconfig and names Ripple as the user agent.
func TestRestConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	kubeconfig := `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`
	if err := os.WriteFile(path, []byte(kubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	rc, err := restConfig(configOf(t, "--kubeconfig", path))
	if err != nil || rc.Host != "https://127.0.0.1:6443" || rc.UserAgent != "ripple" {
		t.Errorf("restConfig = %+v, %v", rc, err)
	}
	if _, err := restConfig(configOf(t, "--kubeconfig", filepath.Join(t.TempDir(), "missing"))); err == nil {
		t.Error("a missing kubeconfig is no error")
	}
}

// metadataInformers are fake informers that also serve metadata-only
// objects (the namespaces), by the kind they are set to.
type metadataInformers struct{ *informertest.FakeInformers }

func (m metadataInformers) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	if p, ok := obj.(*metav1.PartialObjectMetadata); ok {
		return m.FakeInformerForKind(ctx, p.GroupVersionKind())
	}
	return m.FakeInformers.GetInformer(ctx, obj, opts...)
}

// The manager is built and Ripple's controllers or its webhook notifier set
// up on it without an API server: nothing is read before Start.
func TestNewManagerAndSetup(t *testing.T) {
	for _, args := range [][]string{
		{"--namespace-selector", "team=a", "--is-Argo-Rollouts", "--enable-pprof", "--pprof-addr", "127.0.0.1:0"},
		{"--webhook-url", "http://127.0.0.1:1/hook"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			args = append(args, "--metrics-bind-address", "0")
			cfg := configOf(t, args...)
			mgr, err := NewManager(&rest.Config{Host: "http://127.0.0.1:1"}, cfg, func(o *ctrl.Options) {
				o.NewCache = func(*rest.Config, cache.Options) (cache.Cache, error) {
					return metadataInformers{&informertest.FakeInformers{}}, nil
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			if err := Setup(t.Context(), mgr, cfg, clock.RealClock{}, prometheus.NewRegistry()); err != nil {
				t.Fatal(err)
			}
		})
	}
}
