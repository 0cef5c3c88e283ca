package app

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/ripple-dev/ripple/internal/gather"
	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/source"
	"github.com/ripple-dev/ripple/internal/workload"
)

// fakeSource lists one ConfigMap and then streams what the test sends.
type fakeSource struct {
	list *corev1.ConfigMapList
	w    *watch.FakeWatcher
}

func (s fakeSource) List(metav1.ListOptions) (runtime.Object, error) {
	return s.list.DeepCopy(), nil
}

func (s fakeSource) Watch(metav1.ListOptions) (watch.Interface, error) { return s.w, nil }

// IsWatchListSemanticsUnSupported makes the reflector list, then watch.
func (fakeSource) IsWatchListSemanticsUnSupported() bool { return true }

// heldInformer holds every notification to the handlers added through it
// until release is closed. client-go updates an informer's store first and
// tells its handlers afterwards, each in a goroutine of its own: a
// reconcile can read a change from the cache before a handler has run.
type heldInformer struct {
	toolscache.SharedIndexInformer
	release <-chan struct{}
}

func (h heldInformer) AddEventHandler(hd toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	return h.SharedIndexInformer.AddEventHandler(held{hd, h.release})
}

func (h heldInformer) AddEventHandlerWithOptions(hd toolscache.ResourceEventHandler, o toolscache.HandlerOptions) (toolscache.ResourceEventHandlerRegistration, error) {
	return h.SharedIndexInformer.AddEventHandlerWithOptions(held{hd, h.release}, o)
}

type held struct {
	toolscache.ResourceEventHandler
	release <-chan struct{}
}

func (h held) OnAdd(obj any, initial bool) { <-h.release; h.ResourceEventHandler.OnAdd(obj, initial) }
func (h held) OnUpdate(old, cur any)       { <-h.release; h.ResourceEventHandler.OnUpdate(old, cur) }
func (h held) OnDelete(obj any)            { <-h.release; h.ResourceEventHandler.OnDelete(obj) }

// A workload reconciled as soon as the cache holds a change of its
// ConfigMap, before any handler of the informer has been told of it (at
// start, thousands of reconciles race the handlers), still sees the data
// before the change: the change rolls it instead of becoming its baseline.
func TestPriorBeforeTheCacheHasTheChange(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	release := make(chan struct{})
	defer close(release) // before cancel: a held handler would keep the informer from stopping

	v1 := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "cfg", UID: "u1", ResourceVersion: "1"}, Data: map[string]string{"k": "v1"}}
	v2 := v1.DeepCopy()
	v2.ResourceVersion, v2.Data = "2", map[string]string{"k": "v2"}
	src := fakeSource{list: &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}, Items: []corev1.ConfigMap{*v1}}, w: watch.NewFakeWithChanSize(1, false)}

	cfg := configOf(t)
	priors := &source.Priors{Clock: clock.RealClock{}}
	o := cacheOptions(cfg.Scope, priors, nil)
	o.Scheme = runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(o.Scheme); err != nil {
		t.Fatal(err)
	}
	mapper := apimeta.NewDefaultRESTMapper(nil)
	for _, kind := range []string{"ConfigMap", "Secret"} {
		mapper.Add(corev1.SchemeGroupVersion.WithKind(kind), apimeta.RESTScopeNamespace)
	}
	o.Mapper = mapper
	// stored is told of every update after the store has it: not held.
	stored := make(chan struct{}, 1)
	ripples := o.NewInformer
	o.NewInformer = func(_ toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, idx toolscache.Indexers) toolscache.SharedIndexInformer {
		inf := ripples(src, obj, resync, idx)
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{UpdateFunc: func(any, any) { stored <- struct{}{} }}); err != nil {
			t.Error(err)
		}
		return heldInformer{inf, release}
	}
	c, err := cache.New(&rest.Config{Host: "http://127.0.0.1:1"}, o)
	if err != nil {
		t.Fatal(err)
	}
	if err := trackPriors(ctx, c, priors, []refs.Kind{refs.ConfigMap}); err != nil {
		t.Fatal(err)
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		t.Fatal("the cache did not sync")
	}

	src.w.Modify(v2)
	select {
	case <-stored:
	case <-time.After(time.Minute):
		t.Fatal("the update never reached the store")
	}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", CreationTimestamp: metav1.NewTime(time.Now().Add(-time.Hour)),
		Annotations: map[string]string{cfg.Keys.Auto: "true"}}}
	d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "app", EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}}}}
	settings := cfg.PlanSettings(time.Now())
	in, err := gather.Gatherer{Reader: c, Settings: settings, Priors: priors}.Input(ctx, workload.Deployment, d, &d.Spec.Template)
	if err != nil {
		t.Fatal(err)
	}
	in.Now = time.Now()
	p := plan.For(in)
	if len(p.Sources) != 1 || p.Sources[0].State != plan.Changed {
		t.Fatalf("the workload read the change before the handlers ran: %+v, want ConfigMap/cfg changed", p.Sources)
	}
}
