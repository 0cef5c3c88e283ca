package kit

import (
	"context"
	"errors"
	"testing"
	"time"
)

// Reached waits for the watch to deliver a resourceVersion (compared as
// the API server allows: numerically), returns at once for one already
// delivered even after the watch ended, and fails when the watch ends
// first or the context does.
func TestWatchProgressReached(t *testing.T) {
	p := NewWatchProgress("100")
	if err := p.Reached(t.Context(), "99"); err != nil {
		t.Fatalf("an older version: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Reached(t.Context(), "1000") }()
	p.Saw("999")
	select {
	case err := <-done:
		t.Fatalf("returned at 999 for 1000: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	p.Saw("1001")
	if err := <-done; err != nil {
		t.Fatalf("after 1001: %v", err)
	}

	ended := errors.New("the watch ended")
	p.Fail(ended)
	p.Fail(errors.New("a later error"))
	if err := p.Reached(t.Context(), "1001"); err != nil {
		t.Errorf("a delivered version after the watch ended: %v", err)
	}
	if err := p.Reached(t.Context(), "2000"); !errors.Is(err, ended) {
		t.Errorf("a version the ended watch never delivered: %v, want the first error", err)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	if err := NewWatchProgress("1").Reached(ctx, "2"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a watch that never gets there: %v", err)
	}
	if err := NewWatchProgress("1").Reached(t.Context(), "not-a-version"); err == nil {
		t.Error("a malformed resourceVersion was accepted")
	}
}
