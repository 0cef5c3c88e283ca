package kit

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/util/resourceversion"
)

// WatchProgress is how far a watch has delivered: the resourceVersion of
// its last event. A watch runs behind the API server, so a test that
// counts through one first waits, with Reached, until it has delivered the
// resourceVersion of what the test read from the server.
type WatchProgress struct {
	mu    sync.Mutex
	rv    string
	err   error
	moved chan struct{} // closed, and replaced, each time rv or err changes
}

// NewWatchProgress starts at rv, the resourceVersion the watch starts from.
func NewWatchProgress(rv string) *WatchProgress {
	return &WatchProgress{rv: rv, moved: make(chan struct{})}
}

// Saw records that the watch delivered an event at rv.
func (p *WatchProgress) Saw(rv string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rv = rv
	p.wake()
}

// Fail records that the watch ended with err (an expired resourceVersion,
// say) and delivers nothing more; the first error is kept.
func (p *WatchProgress) Fail(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err == nil {
		p.err = err
	}
	p.wake()
}

func (p *WatchProgress) wake() {
	close(p.moved)
	p.moved = make(chan struct{})
}

// Reached waits until the watch has delivered rv or a later
// resourceVersion, and fails when the watch ended before it, or ctx ends
// first.
func (p *WatchProgress) Reached(ctx context.Context, rv string) error {
	for {
		p.mu.Lock()
		at, err, moved := p.rv, p.err, p.moved
		p.mu.Unlock()
		c, cerr := resourceversion.CompareResourceVersion(at, rv)
		switch {
		case cerr != nil:
			return cerr
		case c >= 0:
			return nil
		case err != nil:
			return err
		}
		select {
		case <-moved:
		case <-ctx.Done():
			return fmt.Errorf("the watch did not reach resourceVersion %s (it is at %s): %w", rv, at, ctx.Err())
		}
	}
}
