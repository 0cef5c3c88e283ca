package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/flowcontrol"
)

// Thousands of Events in a burst all reach the broadcaster, paced, with
// in order; past the queue's bound
// they are dropped without blocking the caller.
func TestPacedRecorder(t *testing.T) {
	const n = 3000
	fake := events.NewFakeRecorder(n)
	p := newPacedRecorder(fake, clientgoscheme.Scheme, flowcontrol.NewTokenBucketRateLimiter(1e6, 1), n, logr.Discard())
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

	full := newPacedRecorder(fake, clientgoscheme.Scheme, flowcontrol.NewTokenBucketRateLimiter(1, 1), 2, logr.Discard())
	start := time.Now()
	for range 5 {
		full.Eventf(d, nil, "Normal", "Reloaded", "Reload", "x")
	}
	if took := time.Since(start); took > time.Second || full.dropped.Load() != 3 {
		t.Errorf("a full queue: %d dropped in %s, want 3 dropped at once", full.dropped.Load(), took)
	}
}
