package change

import (
	"context"
	"sync"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// turns gives every namespace its turn in the change controller's queue.
// A config's key is queued with minus the number of keys its namespace
// already has waiting as its priority; the priority queue serves higher
// priorities first and equal ones in order, so one key of every
// namespace goes before a second of any: a tenant's storm of changes
// waits behind itself, not in front of another namespace's change.
type turns struct {
	mu sync.Mutex
	// waiting is each namespace's keys queued and not yet taken, with
	// the priority each was given.
	waiting map[string]map[Key]int
}

// add queues key in q at its namespace's turn.
func (t *turns) add(q workqueue.TypedRateLimitingInterface[Key], key Key) {
	p := t.enter(key)
	if pq, ok := q.(priorityqueue.PriorityQueue[Key]); ok {
		pq.AddWithOpts(priorityqueue.AddOpts{Priority: &p}, key)
		return
	}
	q.Add(key)
}

// enter notes key as waiting and returns its priority: the one it was
// given, if it waits already.
func (t *turns) enter(key Key) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.waiting == nil {
		t.waiting = map[string]map[Key]int{}
	}
	ns := t.waiting[key.Namespace]
	if ns == nil {
		ns = map[Key]int{}
		t.waiting[key.Namespace] = ns
	}
	if p, ok := ns[key]; ok {
		return p
	}
	p := -len(ns)
	ns[key] = p
	return p
}

// take notes that key left the queue: a worker looks at it.
func (t *turns) take(key Key) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if ns := t.waiting[key.Namespace]; ns != nil {
		delete(ns, key)
		if len(ns) == 0 {
			delete(t.waiting, key.Namespace)
		}
	}
}

// reconciler is r taking turns: a key taken leaves its namespace's
// waiting keys, and one queued again (a requeue, an error's retry) gets
// its namespace's next turn.
func (t *turns) reconciler(r reconcile.TypedReconciler[Key]) reconcile.TypedReconciler[Key] {
	return reconcile.TypedFunc[Key](func(ctx context.Context, key Key) (reconcile.Result, error) {
		t.take(key)
		res, err := r.Reconcile(ctx, key)
		if err != nil || res.RequeueAfter > 0 {
			p := t.enter(key)
			res.Priority = &p
		}
		return res, err
	})
}
