package announce

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllertest"

	"github.com/ripple-dev/ripple/internal/annotation"
	"github.com/ripple-dev/ripple/internal/dependents"
	"github.com/ripple-dev/ripple/internal/dependents/dependentstest"
	"github.com/ripple-dev/ripple/internal/digest"
	"github.com/ripple-dev/ripple/internal/notify"
	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/source"
	"github.com/ripple-dev/ripple/internal/workload"
)

var keys = annotation.DefaultKeys("")

// readerCache is the cache as post reads it: the informers are never
// asked for.
type readerCache struct {
	cache.Informers
	client.Reader
}

// endpoint is a webhook receiver that hands over each body it gets.
func endpoint(t *testing.T) (string, <-chan Body) {
	t.Helper()
	bodies := make(chan Body, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var body Body
		if err := json.Unmarshal(b, &body); err != nil {
			t.Errorf("body %s: %v", b, err)
		}
		bodies <- body
	}))
	t.Cleanup(srv.Close)
	return srv.URL, bodies
}

func deployment(name string, ann map[string]string) *appsv1.Deployment {
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, Annotations: ann},
		Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "app", EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}},
		}}}}}}
}

// notifier returns a Notifier over two Deployments using ConfigMap cfg,
// one opted in, with scope as given, posting to a running queue.
func notifier(t *testing.T, scope dependents.Scope, settings plan.Settings) (*Notifier, <-chan Body) {
	t.Helper()
	b := fake.NewClientBuilder().WithObjects(deployment("opted-in", map[string]string{keys.Auto: "true"}), deployment("not-opted-in", nil))
	f := &dependents.Finder{Index: dependents.Index{Keys: keys, SourceKinds: refs.Kinds()}, Scope: scope}
	if err := f.Register(t.Context(), dependentstest.Indexer(b), workload.Deployment); err != nil {
		t.Fatal(err)
	}
	c := b.Build()
	f.Index.Reader = c
	url, bodies := endpoint(t)
	q, err := notify.NewQueue(url, notify.Options{}, logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); _ = q.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	settings.Keys, settings.SourceKinds = keys, refs.Kinds()
	return &Notifier{Cache: readerCache{Reader: c}, Finder: f, Kinds: []workload.Kind{workload.Deployment}, Settings: settings, Queue: q,
		ScopeBackoff: wait.Backoff{Duration: time.Millisecond, Steps: 3}}, bodies
}

func configMap(data string, created time.Time) *corev1.ConfigMap {
	c := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "cfg", CreationTimestamp: metav1.NewTime(created)},
		Data: map[string]string{"k": data}}
	_, _ = source.Transform(digest.Digester{}, c) // as the cache holds it
	return c
}

func next(t *testing.T, bodies <-chan Body) Body {
	t.Helper()
	select {
	case b := <-bodies:
		return b
	case <-time.After(10 * time.Second):
		t.Fatal("nothing posted")
	}
	return Body{}
}

// A data change is posted with Reloader's fields and the workloads that
// would reload; an update that changes no data, and a create or delete
// without --reload-on-create/--reload-on-delete, post nothing.
func TestPostsChanges(t *testing.T) {
	started := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	n, bodies := notifier(t, dependents.Scope{}, plan.Settings{Started: started})
	h := n.handler(t.Context(), refs.ConfigMap)
	old, cur := configMap("v1", started), configMap("v2", started)
	h.OnUpdate(old, old.DeepCopy())                           // no data change
	h.OnAdd(configMap("v1", started.Add(time.Hour)), false)   // no --reload-on-create
	h.OnDelete(toolscache.DeletedFinalStateUnknown{Obj: cur}) // no --reload-on-delete
	h.OnUpdate(old, cur)
	want := Body{Webhook: "update successful", Event: "update", Kind: refs.ConfigMap, Namespace: "shop", Name: "cfg",
		Workloads: []workload.Ref{{Kind: "Deployment", Namespace: "shop", Name: "opted-in"}}}
	if got := next(t, bodies); !equal(got, want) {
		t.Errorf("posted %+v, want %+v", got, want)
	}
}

// With --reload-on-create and --reload-on-delete, a source created since
// start and a deletion (also one seen only after a watch gap) are posted;
// a source from before the start is no creation.
func TestPostsCreatesAndDeletes(t *testing.T) {
	started := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	n, bodies := notifier(t, dependents.Scope{}, plan.Settings{Started: started, ReloadOnCreate: true, ReloadOnDelete: true})
	h := n.handler(t.Context(), refs.ConfigMap)
	h.OnAdd(configMap("v1", started.Add(-time.Hour)), true)
	h.OnAdd(configMap("v1", started.Add(time.Hour)), false)
	if got := next(t, bodies); got.Event != "create" || len(got.Workloads) != 1 {
		t.Errorf("posted %+v, want the create", got)
	}
	h.OnDelete(toolscache.DeletedFinalStateUnknown{Obj: configMap("v1", started)})
	if got := next(t, bodies); got.Event != "delete" || got.Name != "cfg" {
		t.Errorf("posted %+v, want the delete", got)
	}
}

// Another shard's namespace is not posted; a scope check that fails is
// retried, and posted once it answers.
func TestPostScope(t *testing.T) {
	var mu sync.Mutex
	failures := 2
	flaky := fake.NewClientBuilder().WithObjects(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}).
		WithInterceptorFuncs(interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			mu.Lock()
			defer mu.Unlock()
			if failures > 0 {
				failures--
				return errors.New("cache not synced")
			}
			return c.Get(ctx, key, obj, opts...)
		}}).Build()
	owner := dependents.ShardOf("shop", 2)
	n, bodies := notifier(t, dependents.Scope{Reader: flaky, Selective: true, ShardCount: 2, ShardIndex: owner}, plan.Settings{})
	other, _ := notifier(t, dependents.Scope{ShardCount: 2, ShardIndex: 1 - owner}, plan.Settings{})
	other.post(t.Context(), "update", refs.ConfigMap, configMap("v2", time.Time{}))
	n.post(t.Context(), "update", refs.ConfigMap, configMap("v2", time.Time{}))
	if got := next(t, bodies); got.Event != "update" {
		t.Errorf("posted %+v", got)
	}
	if failures != 0 {
		t.Errorf("%d failures left: the scope was not asked again", failures)
	}
}

// A scope check that keeps failing posts nothing, and says so in an error
// naming the change.
func TestPostScopeFailureIsReported(t *testing.T) {
	failing := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
		Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
			return errors.New("cache not synced")
		},
	}).Build()
	n, bodies := notifier(t, dependents.Scope{Reader: failing, Selective: true}, plan.Settings{})
	var mu sync.Mutex
	var logged []string
	ctx := logr.NewContext(t.Context(), funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		logged = append(logged, args)
	}, funcr.Options{}))
	n.post(ctx, "update", refs.ConfigMap, configMap("v2", time.Time{}))
	mu.Lock()
	log := strings.Join(logged, "\n")
	mu.Unlock()
	if !strings.Contains(log, "not posting a change") || !strings.Contains(log, `"name"="cfg"`) || !strings.Contains(log, "cache not synced") {
		t.Errorf("log = %s; want the error naming the change", log)
	}
	select {
	case b := <-bodies:
		t.Errorf("posted %+v without knowing the scope", b)
	case <-time.After(200 * time.Millisecond):
	}
}

// handled is a fake informer that says when each handler is added.
type handled struct {
	*controllertest.FakeInformer
	added chan struct{}
}

func (h handled) AddEventHandler(handler toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	defer func() { h.added <- struct{}{} }()
	return h.FakeInformer.AddEventHandler(handler)
}

// oneInformer serves one informer, for every kind (ConfigMaps and
// Secrets: two handlers).
type oneInformer struct {
	cache.Informers
	inf handled
}

func (o oneInformer) GetInformer(context.Context, client.Object, ...cache.InformerGetOption) (cache.Informer, error) {
	return o.inf, nil
}

// Start follows the sources' informers: a data change of a ConfigMap seen
// by its informer is posted.
func TestStartFollowsTheInformers(t *testing.T) {
	n, bodies := notifier(t, dependents.Scope{}, plan.Settings{})
	inf := handled{FakeInformer: &controllertest.FakeInformer{}, added: make(chan struct{}, 2)}
	n.Cache = readerCache{Informers: oneInformer{inf: inf}, Reader: n.Cache}
	if !n.NeedLeaderElection() {
		t.Error("NeedLeaderElection = false: standbys would post too")
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- n.Start(ctx) }()
	<-inf.added
	<-inf.added
	inf.Update(configMap("v1", time.Time{}), configMap("v2", time.Time{}))
	// Both handlers see it (one informer serves both kinds here).
	for _, kind := range []refs.Kind{refs.ConfigMap, refs.Secret} {
		if b := next(t, bodies); b.Event != "update" || b.Name != "cfg" {
			t.Errorf("posted %+v for the %s handler", b, kind)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Start = %v", err)
	}
}

func equal(a, b Body) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}
