package app

import (
	"context"
	"errors"
	"net/url"
	"runtime"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"
)

// refusing fails its first watches with err, then watches.
type refusing struct {
	fails int32
	err   error
	calls atomic.Int32
}

func (r *refusing) List(metav1.ListOptions) (kruntime.Object, error) { return nil, r.err }

func (r *refusing) Watch(metav1.ListOptions) (watch.Interface, error) {
	if r.calls.Add(1) <= r.fails {
		return nil, r.err
	}
	return watch.NewFake(), nil
}

// A watch that finds the API server down waits until /readyz answers,
// probed every interval, and is then tried again: client-go's reflector
// sees no failure and has no back-off to sit out. Other errors, and an
// unreachable server whose /readyz answers, go back to the reflector at
// once.
func TestOutageWaitsForTheAPIServer(t *testing.T) {
	refused := &url.Error{Op: "Get", URL: "https://127.0.0.1:6443", Err: syscall.ECONNREFUSED}
	fc := clocktesting.NewFakeClock(time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC))
	var down atomic.Bool
	var probes atomic.Int32
	o := &outage{interval: probeInterval, clock: fc, ready: func(context.Context) error {
		probes.Add(1)
		if down.Load() {
			return refused
		}
		return nil
	}}
	watchOf := func(lw toolscache.ListerWatcher) func() (watch.Interface, error) {
		return func() (watch.Interface, error) {
			return o.wrap(lw).(toolscache.ListerWatcherWithContext).WatchWithContext(t.Context(), metav1.ListOptions{})
		}
	}

	down.Store(true)
	lw := &refusing{fails: 1, err: refused}
	done := make(chan error, 1)
	go func() { _, err := watchOf(lw)(); done <- err }()
	waitUntil(t, func() bool { return probes.Load() == 1 && fc.HasWaiters() })
	fc.Step(probeInterval) // still down
	waitUntil(t, func() bool { return probes.Load() == 2 && fc.HasWaiters() })
	select {
	case err := <-done:
		t.Fatalf("the watch returned while the API server is down: %v", err)
	default:
	}
	down.Store(false)
	fc.Step(probeInterval)
	if err := <-done; err != nil || lw.calls.Load() != 2 {
		t.Fatalf("after the API server answered: %v, %d watches; want the second to succeed", err, lw.calls.Load())
	}

	fc.Step(probeInterval) // the last probe is stale
	for _, err := range []error{refused, apierrors.NewTooManyRequests("slow down", 1), apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "x", errors.New("no"))} {
		lw := &refusing{fails: 1, err: err}
		if _, got := watchOf(lw)(); !errors.Is(got, err) || lw.calls.Load() != 1 {
			t.Errorf("%v with /readyz ok: %v after %d watches; want it at once", err, got, lw.calls.Load())
		}
	}
}

// waitUntil yields until cond holds: the goroutine under test gets there
// without the test's clock moving.
func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		runtime.Gosched()
	}
}
