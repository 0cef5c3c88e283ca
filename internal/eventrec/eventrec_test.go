package eventrec

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ripple-dev/ripple/internal/reason"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/flowcontrol"
)

// one returns recorders that all write to fake.
func one(fake record.EventRecorder) map[string]record.EventRecorder {
	out := map[string]record.EventRecorder{}
	for _, c := range eventComponents {
		out[c] = fake
	}
	return out
}

// Thousands of Events in a burst all reach the broadcaster, paced, in
// order; past the queue's bound they are dropped without blocking the
// caller.
func TestPacedRecorder(t *testing.T) {
	const n = 3000
	fake := record.NewFakeRecorder(n)
	p := newPacedRecorder(one(fake), clientgoscheme.Scheme, flowcontrol.NewTokenBucketRateLimiter(1e6, 1), n, logr.Discard())
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}}
	for i := range n {
		p.Eventf(d, nil, "Normal", "Reloaded", "Reload", "change %d", i)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); p.run(ctx) }()
	for i := range n {
		select {
		case got := <-fake.Events:
			if want := fmt.Sprintf("Normal Reloaded change %d", i); got != want {
				t.Fatalf("event %d: %q, want %q", i, got, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%d of %d Events reached the broadcaster", i, n)
		}
	}
	cancel()
	<-done

	full := newPacedRecorder(one(fake), clientgoscheme.Scheme, flowcontrol.NewTokenBucketRateLimiter(1, 1), 2, logr.Discard())
	start := time.Now()
	for range 5 {
		full.Eventf(d, nil, "Normal", "Reloaded", "Reload", "x")
	}
	if took := time.Since(start); took > time.Second || full.dropped.Load() != 3 {
		t.Errorf("a full queue: %d dropped in %s, want 3 dropped at once", full.dropped.Load(), took)
	}
}

// A namespace that floods the Event queue (a tenant's thousands of
// invalid annotations) loses its own oldest Events; another namespace's
// Event is still recorded, and next in turn.
func TestPacedRecorderIsFairPerNamespace(t *testing.T) {
	const size, flood = 100, 1000
	fake := record.NewFakeRecorder(size)
	p := newPacedRecorder(one(fake), clientgoscheme.Scheme, flowcontrol.NewFakeAlwaysRateLimiter(), size, logr.Discard())
	counted := 0
	p.onDrop = func() { counted++ }
	hostile := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "flood"}}
	for i := range flood {
		p.Eventf(hostile, nil, "Warning", "InvalidAnnotation", "Reload", "invalid %d", i)
	}
	shop := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}}
	p.Eventf(shop, nil, "Normal", "Reloaded", "Reload", "Reloaded for changes in ConfigMap %q", "app")
	if want := int64(flood + 1 - size); p.dropped.Load() != want || counted != int(want) {
		t.Fatalf("dropped %d, counted %d; want %d, all the flood's", p.dropped.Load(), counted, want)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); p.run(ctx) }()
	defer func() { cancel(); <-done }()
	var got []string
	for range 2 {
		select {
		case e := <-fake.Events:
			got = append(got, e)
		case <-time.After(10 * time.Second):
			t.Fatalf("only %v reached the broadcaster", got)
		}
	}
	want := []string{"Warning InvalidAnnotation invalid 901", `Normal Reloaded Reloaded for changes in ConfigMap "app"`}
	if got[0] != want[0] || got[1] != want[1] {
		t.Errorf("recorded %q first, want %q", got, want)
	}
}

// When the API server writes Events slower than the pacedRecorder may
// hand them on, they wait in its fair queue, not in the broadcaster's
// first-in-first-out one: another namespace's Event is written within
// the first few after a flood of thousands, not after them.
func TestSlowWritesKeepTheQueueFair(t *testing.T) {
	const flood = 300
	cs := fake.NewClientset()
	var mu sync.Mutex
	var written []string
	cs.PrependReactor("create", "events", func(a k8stesting.Action) (bool, runtime.Object, error) {
		time.Sleep(2 * time.Millisecond) // a slow API server
		if c, ok := a.(k8stesting.CreateAction); ok {
			mu.Lock()
			written = append(written, c.GetNamespace())
			mu.Unlock()
		}
		return false, nil, nil
	})
	p := startRecorder(t.Context(), cs.CoreV1().Events(""), clientgoscheme.Scheme, flowcontrol.NewFakeAlwaysRateLimiter(), logr.Discard(), nil)
	for i := range flood {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: fmt.Sprintf("flood-%d", i)}}
		p.Eventf(d, nil, "Warning", "InvalidAnnotation", "Reload", "invalid")
	}
	shop := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}}
	p.Eventf(shop, nil, "Normal", "Reloaded", "Reload", "Reloaded for changes in ConfigMap %q", "app")
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		at := slices.Index(written, "shop")
		n := len(written)
		mu.Unlock()
		if at >= 0 {
			if at > 2*eventsInFlight {
				t.Errorf("shop's Event was write %d, after %d of the flood's; want it within the first %d", at+1, at, 2*eventsInFlight)
			}
			return
		}
		if n > 2*eventsInFlight || time.Now().After(deadline) {
			t.Fatalf("%d Events written, none of them shop's", n)
		}
		time.Sleep(time.Millisecond)
	}
}

// The source component is Reloader's for the config the Event is about:
// the related object's kind, else the first config the note names.
func TestEventComponent(t *testing.T) {
	for _, c := range []struct {
		related runtime.Object
		note    string
		want    string
	}{
		{nil, `Reloaded for changes in ConfigMap "app" (strategy env-vars)`, "reloader-configmaps"},
		{nil, `Reload for changes in Secret "db" failed: forbidden`, "reloader-secrets"},
		{nil, `Reloaded for changes in SecretProviderClass "vault" (strategy env-vars)`, "reloader-secretproviderclasspodstatuses"},
		{nil, `Reloaded for changes in Secret "db", ConfigMap "app" (strategy env-vars)`, "reloader-secrets"},
		{nil, `Reloaded for changes in ConfigMap "Secret \"x\"", Secret "db"`, "reloader-configmaps"},
		{&corev1.Secret{}, `Reloaded for changes in ConfigMap "app"`, "reloader-secrets"},
		{&corev1.ConfigMap{}, "The hold ends", "reloader-configmaps"},
		{nil, "Rollout complete after 3s", "ripple"},
	} {
		if got := eventComponent(c.related, c.note); got != c.want {
			t.Errorf("eventComponent(%T, %q) = %q, want %q", c.related, c.note, got, c.want)
		}
	}
}

// Ripple's Events are core/v1 Events on the workload, with Reloader's
// reason and source component, as Reloader writes them.
func TestRecorderWritesCoreEvents(t *testing.T) {
	cs := fake.NewClientset()
	limiter := flowcontrol.NewTokenBucketRateLimiter(eventQPS, eventBurst)
	p := startRecorder(t.Context(), cs.CoreV1().Events(""), clientgoscheme.Scheme, limiter, logr.Discard(), nil)
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "u1"}}
	p.Eventf(d, nil, corev1.EventTypeWarning, string(reason.ReloadFail), "Reload", "Reload for changes in %s failed: %v", `Secret "db"`, "forbidden")
	p.Eventf(d, nil, corev1.EventTypeNormal, string(reason.Reloaded), "Reload", "Reloaded for changes in %s", `ConfigMap "app"`)
	want := map[string]string{string(reason.ReloadFail): "reloader-secrets", string(reason.Reloaded): "reloader-configmaps"}
	deadline := time.Now().Add(10 * time.Second)
	for {
		list, err := cs.CoreV1().Events("shop").List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, e := range list.Items {
			if e.InvolvedObject.Kind != "Deployment" || e.InvolvedObject.Name != "web" || e.InvolvedObject.UID != "u1" {
				t.Errorf("event %s is about %+v, want the Deployment shop/web", e.Name, e.InvolvedObject)
			}
			got[e.Reason] = e.Source.Component
		}
		if len(got) == len(want) {
			for reason, component := range want {
				if got[reason] != component {
					t.Errorf("%s: source component %q, want %q", reason, got[reason], component)
				}
			}
			if string(reason.ReloadFail) != "ReloadFail" {
				t.Errorf("the failure reason is %q, want Reloader's ReloadFail", string(reason.ReloadFail))
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("events written: %v, want %v", got, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
