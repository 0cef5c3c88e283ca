package controller

import (
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ripple-dev/ripple/internal/metrics"
)

// loggingManager is a manager that only has a logger: all newQueue asks.
type loggingManager struct{ ctrl.Manager }

func (loggingManager) GetLogger() logr.Logger { return logr.Discard() }

// Workers that add, take and finish items as fast as they can while the
// workloads' queue (newQueue: controller-runtime's priority queue, which
// the change controller's loop uses too) shuts down all stop, in each of
// 100 rounds: a shutdown while workers wait for items, or while the queue
// hands one over, must not leave a worker or the queue blocked, or the
// manager would give up waiting for its controllers at shutdown.
func TestQueueShutdownStopsEveryWorker(t *testing.T) {
	m, err := metrics.New(prometheus.NewRegistry(), false)
	if err != nil {
		t.Fatal(err)
	}
	s := &setup{mgr: loggingManager{}, deps: &Deps{Metrics: m}}
	req := func(i int) reconcile.Request {
		return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: string(rune('a' + i%26))}}
	}
	for round := range 100 {
		q, ok := s.newQueue("test", workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]()).(priorityqueue.PriorityQueue[reconcile.Request])
		if !ok {
			t.Fatal("newQueue is not a priority queue")
		}
		var wg sync.WaitGroup
		for range 20 {
			wg.Go(func() {
				for {
					q.AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(rand.IntN(10))}, req(rand.IntN(1000))) //nolint:gosec // not for security
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
