package change

import (
	"context"
	"fmt"
	"sync"
)

// maxBaking bounds the canaries a gate judges at once in one namespace
// (the pod gate's watches, the query gate's evaluations): a tenant's many
// baking changes cost its own bakes a wait, not Ripple's memory, the API
// server's watches or Prometheus' work.
const maxBaking = 100

// bakes are what a gate keeps of each baking change (T: a watch, an
// evaluation loop), ended with the bake.
type bakes[T any] struct {
	mu   sync.Mutex
	runs map[Key]*bake[T]
}

type bake[T any] struct {
	run      *T
	canaries int
	stop     context.CancelFunc
}

// start returns key's run, or a new one for its canaries with a context of
// base that done ends (ctx, nil for a run already there); with its
// namespace at the bound, none, and a hold that says so (does: what the
// gate does, "the pod gate watches the pods of").
func (b *bakes[T]) start(base context.Context, key Key, canaries int, does string) (run *T, ctx context.Context, hold string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if r, ok := b.runs[key]; ok {
		return r.run, nil, ""
	}
	n := 0
	for k, r := range b.runs {
		if k.Namespace == key.Namespace {
			n += r.canaries
		}
	}
	if n+canaries > maxBaking {
		return nil, nil, fmt.Sprintf("%s at most %d canaries of a namespace at once (%d now): the change waits for another's bake to end", does, maxBaking, n)
	}
	if b.runs == nil {
		b.runs = map[Key]*bake[T]{}
	}
	r := &bake[T]{run: new(T), canaries: canaries}
	ctx, r.stop = context.WithCancel(base) //nolint:gosec // G118: kept in the run; done calls it
	b.runs[key] = r
	return r.run, ctx, ""
}

// done ends key's run: its bake ended, or it is gone.
func (b *bakes[T]) done(key Key) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if r, ok := b.runs[key]; ok {
		r.stop()
		delete(b.runs, key)
	}
}
