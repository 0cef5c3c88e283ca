package workload

import (
	"context"
	"math"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Recoverer is a kind that leaves records of unfinished reloads behind a
// restart (a Job being re-created).
type Recoverer interface {
	Recover(ctx context.Context, c client.Client, namespaces []string) error
}

// Recovery is a runnable that finishes, once on the leader, the reloads a
// previous leader left unfinished, retrying with backoff.
type Recovery struct {
	Kind       Recoverer
	Client     client.Client
	Namespaces []string
	// Backoff paces the retries; the zero value means recoveryBackoff.
	Backoff wait.Backoff
	// Clock is injected by tests; nil means the real clock.
	Clock clock.Clock
	// Log is the manager's logger: a runnable's context carries none.
	Log logr.Logger
}

// recoveryBackoff waits 1 s before the first retry, doubling up to a
// minute, and retries until the recovery succeeds: the records must be
// finished, and the API server may be away for long.
var recoveryBackoff = wait.Backoff{Duration: time.Second, Factor: 2, Cap: time.Minute, Steps: math.MaxInt32}

// Start runs the recovery until it succeeds or ctx ends.
func (r *Recovery) Start(ctx context.Context) error {
	logger := r.Log.WithName("recovery")
	backoff, clk := r.Backoff, r.Clock
	if backoff.Steps == 0 {
		backoff = recoveryBackoff
	}
	if clk == nil {
		clk = clock.RealClock{}
	}
	for {
		err := r.Kind.Recover(ctx, r.Client, r.Namespaces)
		if err == nil {
			return nil
		}
		// Past the cap, Step keeps returning the cap.
		delay := backoff.Step()
		logger.Error(err, "finishing interrupted reloads; retrying", "in", delay)
		select {
		case <-ctx.Done():
			return nil
		case <-clk.After(delay):
		}
	}
}
