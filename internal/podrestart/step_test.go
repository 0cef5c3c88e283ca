package podrestart

import (
	"slices"
	"testing"
	"time"

	"github.com/ripple-dev/ripple/internal/rollout"
)

func TestNextRestart(t *testing.T) {
	at := time.Date(2026, 1, 1, 10, 0, 0, 400e6, time.UTC) // the write, mid-second
	before := at.Add(-time.Hour)
	pod := func(name string, created time.Time, ready bool) Pod {
		return Pod{Name: name, Created: created.Truncate(time.Second), Ready: ready}
	}
	gone := func(p Pod) Pod { p.Terminating = true; return p }
	after := at.Add(2 * time.Second)
	tests := []struct {
		name        string
		r           Restart
		now         time.Time
		timeout     time.Duration
		restart     []string
		left        int
		state       rollout.State
		wantRequeue time.Duration
	}{{
		name: "waits for the second of the write to pass before the first restart",
		r:    Restart{At: at, Want: 2, MaxUnavailable: 1, Pods: []Pod{pod("a", before, true), pod("b", before, true)}},
		now:  at.Add(100 * time.Millisecond),
		left: 2, state: rollout.Progressing, wantRequeue: 500 * time.Millisecond,
	}, {
		name: "restarts the oldest pod first, one at a time",
		r: Restart{At: at, Want: 3, MaxUnavailable: 1,
			Pods: []Pod{pod("c", before.Add(time.Minute), true), pod("b", before, true), pod("a", before.Add(time.Minute), true)}},
		now:     after,
		restart: []string{"b"}, left: 3, state: rollout.Progressing, wantRequeue: Poll,
	}, {
		name: "up to max-unavailable at once",
		r: Restart{At: at, Want: 4, MaxUnavailable: 2,
			Pods: []Pod{pod("a", before, true), pod("b", before, true), pod("c", before, true), pod("d", before, true)}},
		now:     after,
		restart: []string{"a", "b"}, left: 4, state: rollout.Progressing, wantRequeue: Poll,
	}, {
		name: "waits while the replacement is not ready",
		r: Restart{At: at, Want: 2, MaxUnavailable: 1,
			Pods: []Pod{gone(pod("a", before, true)), pod("a2", after, false), pod("b", before, true)}},
		now:  after,
		left: 1, state: rollout.Progressing, wantRequeue: Poll,
	}, {
		name: "a pod deleted and not yet replaced counts as unavailable",
		r:    Restart{At: at, Want: 2, MaxUnavailable: 1, Pods: []Pod{pod("b", before, true)}},
		now:  after,
		left: 1, state: rollout.Progressing, wantRequeue: Poll,
	}, {
		name: "continues after the replacement is ready: a pod created in the second of the write is old",
		r: Restart{At: at, Want: 2, MaxUnavailable: 1,
			Pods: []Pod{pod("a2", after, true), pod("b", at, true)}},
		now:     after,
		restart: []string{"b"}, left: 1, state: rollout.Progressing, wantRequeue: Poll,
	}, {
		name: "an old pod that is not ready is restarted beyond the budget",
		r: Restart{At: at, Want: 3, MaxUnavailable: 1,
			Pods: []Pod{pod("a", before, true), pod("b", before, false), pod("c", before, true)}},
		now:     after,
		restart: []string{"b"}, left: 3, state: rollout.Progressing, wantRequeue: Poll,
	}, {
		name: "a terminating pod whose replacement is ready does not hold the next",
		r: Restart{At: at, Want: 2, MaxUnavailable: 1,
			Pods: []Pod{gone(pod("a", before, true)), pod("a2", after, true), pod("b", before, true)}},
		now:     after,
		restart: []string{"b"}, left: 1, state: rollout.Progressing, wantRequeue: Poll,
	}, {
		name:  "complete once every pod is newer and ready",
		r:     Restart{At: at, Want: 2, MaxUnavailable: 1, Pods: []Pod{pod("a2", after, true), pod("b2", after, true)}},
		now:   after,
		state: rollout.Complete,
	}, {
		name:  "complete for a workload with no pods wanted",
		r:     Restart{At: at, Want: 0, MaxUnavailable: 1},
		now:   after,
		state: rollout.Complete,
	}, {
		name: "stalled when no pod was replaced for the timeout, still trying",
		r:    Restart{At: at, Want: 1, MaxUnavailable: 1, Pods: []Pod{pod("a", before, true)}},
		now:  at.Add(time.Minute), timeout: time.Minute,
		restart: []string{"a"}, left: 1, state: rollout.Stalled, wantRequeue: Poll,
	}, {
		name: "progress is the latest replacement",
		r: Restart{At: at, Want: 2, MaxUnavailable: 1,
			Pods: []Pod{pod("a2", at.Add(50*time.Second), true), pod("b", before, true)}},
		now: at.Add(time.Minute), timeout: time.Minute,
		restart: []string{"b"}, left: 1, state: rollout.Progressing, wantRequeue: Poll,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Next(tt.r, tt.now, tt.timeout)
			if !slices.Equal(s.Restart, tt.restart) {
				t.Errorf("restart %v, want %v", s.Restart, tt.restart)
			}
			if s.Left != tt.left || s.Status.State != tt.state || s.Requeue != tt.wantRequeue {
				t.Errorf("left %d, state %s (%s), requeue %s; want %d, %s, %s",
					s.Left, s.Status.State, s.Status.Reason, s.Requeue, tt.left, tt.state, tt.wantRequeue)
			}
		})
	}
}

// Under reload-action no pod is called before the reload delay is over.
func TestNextRestartWaitsTheDelay(t *testing.T) {
	at := time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)
	in := Restart{At: at, Want: 1, MaxUnavailable: 1, Delay: 30 * time.Second,
		Pods: []Pod{{Name: "p", Created: at.Add(-time.Hour), Ready: true}}}
	s := Next(in, at.Add(10*time.Second), 0)
	if len(s.Restart) != 0 || s.Requeue != 20*time.Second {
		t.Errorf("10s in: restart %v, requeue %s; want none, 20s", s.Restart, s.Requeue)
	}
	if s := Next(in, at.Add(30*time.Second), 0); len(s.Restart) != 1 {
		t.Errorf("30s in: restart %v, want p", s.Restart)
	}
}
