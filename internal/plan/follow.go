package plan

import (
	"fmt"
	"time"

	"github.com/ripple-dev/ripple/internal/rollout"
	"github.com/ripple-dev/ripple/internal/workload"
)

// Rollout is a rollout Ripple started and follows to its end, holding a
// rollout slot meanwhile.
type Rollout struct {
	// Started is when Ripple's write started it.
	Started time.Time
	// StaleVersion is the resourceVersion the write was made on: a cached
	// copy still at it does not show the write yet.
	StaleVersion string
	// Restart is the pod restart the write asked for (evict, delete or
	// in-place, workload.Update.Restart): its progress is then the pods',
	// not the workload's status. Zero for a template write.
	Restart workload.Restart
}

// IsZero reports whether r is no rollout at all.
func (r Rollout) IsZero() bool {
	return r.Started.IsZero() && r.StaleVersion == "" && r.Restart.IsZero()
}

// Followed reports whether there is a rollout to follow.
func (r Rollout) Followed() bool { return !r.Started.IsZero() }

// Observed is a followed workload as the cache shows it.
type Observed struct {
	ResourceVersion string
	// Status is how its rollout stands by its own status.
	Status rollout.Status
}

// Progress is what Follow found.
type Progress struct {
	// State is Progressing while the rollout is followed.
	State rollout.State
	// Reason says why it stalled, or how far it is.
	Reason string
	// Took is how long the rollout has taken.
	Took time.Duration
	// Left is how long until a rollout in progress times out; 0 when it
	// never does.
	Left time.Duration
}

// Follow checks the followed rollout of the workload against o at now,
// with the rollout timeout. It reports false when no rollout is followed.
// A rollout that completed or stalled (by the workload's status, or by
// running longer than timeout) is no longer followed: its slot is free.
func (m Memory) Follow(o Observed, timeout time.Duration, now time.Time) (Memory, Progress, bool) {
	if !m.Rollout.Followed() {
		return m, Progress{}, false
	}
	p := Progress{State: rollout.Progressing, Reason: "the write is not in the cache yet", Took: now.Sub(m.Rollout.Started)}
	if o.ResourceVersion != m.Rollout.StaleVersion {
		p.State, p.Reason = o.Status.State, o.Status.Reason
	}
	if p.State == rollout.Progressing && timeout > 0 {
		p.Left = timeout - p.Took
		if p.Left <= 0 {
			p.State, p.Reason = rollout.Stalled, fmt.Sprintf("not complete after %s (--rollout-timeout): %s", timeout, p.Reason)
		}
	}
	if p.State != rollout.Progressing {
		m.Rollout = Rollout{}
	}
	return m, p, true
}
