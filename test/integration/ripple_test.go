package integration

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/ripple-dev/ripple/hack/kit"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/source"
	"github.com/ripple-dev/ripple/test/inproc"
)

// env is one test's namespace with a Ripple running in it.
type env struct {
	ns string
	c  client.Client // uncached admin client
	cs kubernetes.Interface

	// rc is how Ripple authenticates: the admin unless a test says otherwise.
	rc *rest.Config
	// cache reads the last started Ripple's cache; logs holds its log.
	cache client.Reader
	logs  *kit.LogBuffer
	// globalMetrics registers Ripple's metrics where /metrics serves them.
	globalMetrics bool
	// registry, when set, receives Ripple's metrics instead, to be read
	// without /metrics.
	registry *prometheus.Registry
	// environ is the environment Ripple reads (ALERT_*, ...).
	environ map[string]string
}

// startRipple creates a namespace and runs Ripple in-process, scoped to it,
// configured by command-line args exactly as the binary parses them. Ripple
// stops when the test ends.
func startRipple(t *testing.T, args ...string) *env {
	t.Helper()
	e := newEnv(t)
	e.run(t, args...)
	return e
}

// newEnv creates a namespace for a test, with no Ripple running yet.
func newEnv(t *testing.T) *env {
	t.Helper()
	cs := kubernetes.NewForConfigOrDie(api.Config)
	e := &env{ns: kit.NewNamespace(t, cs, "it-", nil), cs: cs, rc: api.Config}
	var err error
	if e.c, err = client.New(api.Config, client.Options{}); err != nil {
		t.Fatal(err)
	}
	return e
}

// run starts a Ripple on e's namespace and waits until its caches have
// synced; it stops when the returned func is called or the test ends.
func (e *env) run(t *testing.T, args ...string) (stop func()) {
	t.Helper()
	return e.launch(t, true, args...)
}

// start starts a Ripple without waiting for its caches; it stops when the
// test ends.
func (e *env) start(t *testing.T, args ...string) {
	t.Helper()
	e.launch(t, false, args...)
}

func (e *env) launch(t *testing.T, waitSynced bool, args ...string) (stop func()) {
	t.Helper()
	base := []string{"--metrics-bind-address=0", "--health-probe-bind-address=0", "--settle-window=0"}
	if !slices.ContainsFunc(args, func(a string) bool {
		return strings.HasPrefix(a, "--namespace") // scoped elsewhere, or global mode
	}) {
		base = append(base, "--namespaces="+e.ns)
	}
	o := inproc.Options{REST: e.rc, Args: append(base, args...), Env: func(k string) string { return e.environ[k] }}
	if e.globalMetrics { // the one test that scrapes /metrics
		o.Registry = ctrlmetrics.Registry
	}
	if e.registry != nil {
		o.Registry = e.registry
	}
	// Stop, in the cleanup, stops it; it outlives the test's context so
	// that the cleanups registered before it still see it running.
	r, err := inproc.Start(context.WithoutCancel(t.Context()), o)
	if err != nil {
		t.Fatal(err)
	}
	e.logs = r.Log
	stop = func() {
		if err := r.Stop(); err != nil {
			t.Errorf("ripple stopped: %v", err)
		}
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("ripple's log:\n%s", r.Log.String())
		}
	})
	cfg, mgr := r.Config, r.Manager
	e.cache = mgr.GetClient()
	if !waitSynced {
		return stop
	}
	// Reading each kind through the cache waits until its informer has
	// synced, so the test starts against a Ripple that has seen everything.
	// A Ripple with a namespace selector lists every namespace's objects of
	// the shared API server, all the tier's tests' Secrets among them: with
	// make test's lanes beside it, its Secret informer took over 30 s to
	// sync.
	syncCtx, syncCancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer syncCancel()
	lists := []client.ObjectList{&appsv1.DeploymentList{}, &appsv1.StatefulSetList{}, &appsv1.DaemonSetList{}}
	if !cfg.IgnoreCronJobs {
		lists = append(lists, &batchv1.CronJobList{})
	}
	if !cfg.IgnoreJobs {
		lists = append(lists, &batchv1.JobList{})
	}
	for _, k := range source.Watched(cfg.Kinds) {
		if k == refs.ConfigMap {
			lists = append(lists, &corev1.ConfigMapList{})
		} else {
			lists = append(lists, &corev1.SecretList{})
		}
	}
	scope := e.ns
	if len(cfg.Namespaces) > 0 {
		scope = cfg.Namespaces[0]
	}
	err = wait.PollUntilContextCancel(syncCtx, 20*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		for _, list := range lists {
			if err := mgr.GetClient().List(ctx, list, client.InNamespace(scope)); err != nil {
				return false, nil // the cache is not started yet
			}
		}
		return true, nil
	})
	if err != nil {
		stop()
		t.Fatalf("ripple's caches did not sync: %v", err)
	}
	return stop
}

// warningEvents returns the messages of Warning events with reason on the
// object named name.
func (e *env) warningEvents(ctx context.Context, name, reason string) []string {
	notes, _ := kit.EventNotes(ctx, e.cs, e.ns, kit.EventMatch{Name: name, Reason: reason, Type: corev1.EventTypeWarning})
	return notes
}
