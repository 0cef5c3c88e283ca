// Package fairqueue is a bounded FIFO per key (a namespace) served round
// robin, for the queues any tenant can fill: Ripple's Events and its
// notifications. A shared FIFO that drops its oldest item when full lets
// one namespace that floods it push out every other namespace's items;
// here a full queue drops the oldest item of the key that holds the most,
// so a flood only ever costs the flooding namespace its own items, and
// the others are served in turn however long its sub-queue is.
package fairqueue

import "sync"

// Queue holds at most Size items in all. It is safe for concurrent use.
type Queue[T any] struct {
	size int

	mu     sync.Mutex
	byKey  map[string][]T
	keys   []string // the keys with items, in round-robin order
	next   int      // the index in keys that Pop serves next
	length int
	ready  chan struct{}
}

// New returns a queue of at most size items (at least 1).
func New[T any](size int) *Queue[T] {
	return &Queue[T]{size: max(size, 1), byKey: map[string][]T{}, ready: make(chan struct{}, 1)}
}

// Push queues v under key and never blocks. When the queue is full it
// first drops the oldest item of the key with the most items (key's own
// when it ties for the most), and reports which key lost one.
func (q *Queue[T]) Push(key string, v T) (droppedFrom string, dropped bool) {
	q.mu.Lock()
	if q.length >= q.size {
		droppedFrom, dropped = q.dropFromLongest(key), true
	}
	if _, ok := q.byKey[key]; !ok {
		// A new key is served after every key already waiting.
		q.keys = append(q.keys[:q.next], append([]string{key}, q.keys[q.next:]...)...)
		q.next = (q.next + 1) % len(q.keys)
	}
	q.byKey[key] = append(q.byKey[key], v)
	q.length++
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default:
	}
	return droppedFrom, dropped
}

// dropFromLongest drops the oldest item of the longest sub-queue,
// preferring key on a tie; q.mu is held and the queue is not empty.
func (q *Queue[T]) dropFromLongest(key string) string {
	longest := key
	for _, k := range q.keys {
		if len(q.byKey[k]) > len(q.byKey[longest]) {
			longest = k
		}
	}
	q.removeFirst(longest)
	return longest
}

// Pop returns the oldest item of the next key in turn.
func (q *Queue[T]) Pop() (T, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.length == 0 {
		var zero T
		return zero, false
	}
	key := q.keys[q.next]
	v := q.byKey[key][0]
	if !q.removeFirst(key) {
		q.next = (q.next + 1) % len(q.keys)
	}
	return v, true
}

// removeFirst removes the oldest item of key, and key with it when that
// was its last, keeping next on the key that was to be served. It reports
// whether key was removed.
func (q *Queue[T]) removeFirst(key string) bool {
	items := q.byKey[key]
	var zero T
	items[0] = zero // let the item be collected
	q.length--
	if len(items) > 1 {
		q.byKey[key] = items[1:]
		return false
	}
	delete(q.byKey, key)
	for i, k := range q.keys {
		if k != key {
			continue
		}
		q.keys = append(q.keys[:i], q.keys[i+1:]...)
		switch {
		case len(q.keys) == 0:
			q.next = 0
		case i < q.next:
			q.next--
		case q.next >= len(q.keys):
			q.next = 0
		}
		break
	}
	return true
}

// Len is the number of items queued.
func (q *Queue[T]) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.length
}

// Ready receives a value after a Push; a consumer waits on it when Pop
// finds nothing, and pops until then after each receive.
func (q *Queue[T]) Ready() <-chan struct{} { return q.ready }
