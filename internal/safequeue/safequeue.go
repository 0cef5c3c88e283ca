// Package safequeue wraps controller-runtime's priority queue so that its
// shutdown cannot deadlock; both of Ripple's loops (the workloads' and the
// change controller's) queue through it. It exists until the upgrade to
// controller-runtime v0.25, which fixes the queue itself: remove it then.
//
// controller-runtime v0.23's priority queue can deadlock when it shuts
// down (kubernetes-sigs/controller-runtime#3538, fixed in v0.25, which
// needs Kubernetes 0.37 libraries): a worker waiting for an item returns
// on the shutdown while the queue's goroutine is handing it one, and that
// goroutine then blocks forever holding the queue's locks, so the next
// Done or Get of any worker blocks too and the manager gives up waiting
// for its controllers ("failed waiting for all runnables to end within
// grace period"). Queue ends every worker's wait with an item of its own
// before the queue shuts down, so no hand-off is ever left over.
package safequeue

import (
	"fmt"
	"math"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// shutdownWait bounds how long ShutDown wakes waiting workers before it
// shuts the queue down anyway.
const shutdownWait = 10 * time.Second

// Queue is a priority queue whose ShutDown first wakes the workers
// waiting in GetWithPriority: it adds wake-up keys (wake(i), keys no
// object has) until none waits, and only then shuts the queue down. Once
// it is closing, every Get returns shutdown, and an item a waiting worker
// got is dropped, as the queue drops its items at shutdown.
type Queue[T comparable] struct {
	priorityqueue.PriorityQueue[T]
	wake func(i int) T

	mu      sync.Mutex
	closing bool
	waiting int
}

// New is q shutting down safely; wake(i) is its i-th wake-up key, a key
// no object has.
func New[T comparable](q priorityqueue.PriorityQueue[T], wake func(int) T) *Queue[T] {
	return &Queue[T]{PriorityQueue: q, wake: wake}
}

// GetWithPriority implements priorityqueue.PriorityQueue.
func (q *Queue[T]) GetWithPriority() (item T, priority int, shutdown bool) {
	q.mu.Lock()
	if q.closing {
		q.mu.Unlock()
		return item, 0, true
	}
	q.waiting++
	q.mu.Unlock()
	got, p, shut := q.PriorityQueue.GetWithPriority()
	q.mu.Lock()
	defer q.mu.Unlock()
	q.waiting--
	if q.closing {
		return item, 0, true
	}
	return got, p, shut
}

// Get implements workqueue.TypedInterface.
func (q *Queue[T]) Get() (T, bool) {
	item, _, shutdown := q.GetWithPriority()
	return item, shutdown
}

// ShutDown implements workqueue.TypedInterface: it wakes each waiting
// worker with a key of its own (first in line), then shuts the queue down.
func (q *Queue[T]) ShutDown() {
	q.mu.Lock()
	q.closing = true
	q.mu.Unlock()
	deadline := time.Now().Add(shutdownWait)
	for i := 0; ; i++ {
		q.mu.Lock()
		waiting := q.waiting
		q.mu.Unlock()
		if waiting == 0 || time.Now().After(deadline) {
			break
		}
		q.AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(math.MaxInt)}, q.wake(i))
		time.Sleep(time.Millisecond)
	}
	q.PriorityQueue.ShutDown()
}

// ShutDownWithDrain implements workqueue.TypedInterface; the priority
// queue does not drain either.
func (q *Queue[T]) ShutDownWithDrain() { q.ShutDown() }

// WakeRequest is the i-th wake-up key of a queue of reconcile.Requests:
// a namespace name no object can have.
func WakeRequest(i int) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "\x00wake", Name: fmt.Sprint(i)}}
}
