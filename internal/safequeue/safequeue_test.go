package safequeue

import (
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Workers that add, take and finish items as fast as they can while the
// queue shuts down all stop: the shutdown that deadlocks controller-runtime
// v0.23's priority queue within a few rounds of this (issue #3538) does
// not deadlock Queue, in any of 100 rounds.
func TestShutdownSafeQueueStopsEveryWorker(t *testing.T) {
	for round := range 100 {
		q := New(priorityqueue.New[reconcile.Request]("test"), WakeRequest)
		var wg sync.WaitGroup
		for range 20 {
			wg.Go(func() {
				for {
					q.AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(rand.IntN(10))}, WakeRequest(rand.IntN(1000)+1000)) //nolint:gosec // not for security
					item, _, shutdown := q.GetWithPriority()
					if shutdown {
						return
					}
					q.Done(item)
				}
			})
		}
		time.Sleep(5 * time.Millisecond)
		q.ShutDown()
		stopped := make(chan struct{})
		go func() { wg.Wait(); close(stopped) }()
		select {
		case <-stopped:
		case <-time.After(20 * time.Second):
			t.Fatalf("round %d: workers still blocked 20 s after ShutDown", round)
		}
		if _, shutdown := q.Get(); !shutdown {
			t.Fatalf("round %d: Get after ShutDown did not say shutdown", round)
		}
	}
}
