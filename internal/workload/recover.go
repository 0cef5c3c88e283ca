package workload

import (
	"context"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
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
}

// Start runs the recovery until it succeeds or ctx ends.
func (r *Recovery) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("recovery")
	for delay := time.Second; ; delay = min(2*delay, time.Minute) {
		err := r.Kind.Recover(ctx, r.Client, r.Namespaces)
		if err == nil {
			return nil
		}
		logger.Error(err, "finishing interrupted reloads; retrying", "in", delay)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(delay):
		}
	}
}
