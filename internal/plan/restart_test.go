package plan

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
		r           PodRestart
		now         time.Time
		timeout     time.Duration
		restart     []string
		left        int
		state       rollout.State
		wantRequeue time.Duration
	}{{
		name: "waits for the second of the write to pass before the first restart",
		r:    PodRestart{At: at, Want: 2, MaxUnavailable: 1, Pods: []Pod{pod("a", before, true), pod("b", before, true)}},
		now:  at.Add(100 * time.Millisecond),
		left: 2, state: rollout.Progressing, wantRequeue: 500 * time.Millisecond,
	}, {
		name: "restarts the oldest pod first, one at a time",
		r: PodRestart{At: at, Want: 3, MaxUnavailable: 1,
			Pods: []Pod{pod("c", before.Add(time.Minute), true), pod("b", before, true), pod("a", before.Add(time.Minute), true)}},
		now:     after,
		restart: []string{"b"}, left: 3, state: rollout.Progressing, wantRequeue: RestartPoll,
	}, {
		name: "up to max-unavailable at once",
		r: PodRestart{At: at, Want: 4, MaxUnavailable: 2,
			Pods: []Pod{pod("a", before, true), pod("b", before, true), pod("c", before, true), pod("d", before, true)}},
		now:     after,
		restart: []string{"a", "b"}, left: 4, state: rollout.Progressing, wantRequeue: RestartPoll,
	}, {
		name: "waits while the replacement is not ready",
		r: PodRestart{At: at, Want: 2, MaxUnavailable: 1,
			Pods: []Pod{gone(pod("a", before, true)), pod("a2", after, false), pod("b", before, true)}},
		now:  after,
		left: 1, state: rollout.Progressing, wantRequeue: RestartPoll,
	}, {
		name: "a pod deleted and not yet replaced counts as unavailable",
		r:    PodRestart{At: at, Want: 2, MaxUnavailable: 1, Pods: []Pod{pod("b", before, true)}},
		now:  after,
		left: 1, state: rollout.Progressing, wantRequeue: RestartPoll,
	}, {
		name: "continues after the replacement is ready: a pod created in the second of the write is old",
		r: PodRestart{At: at, Want: 2, MaxUnavailable: 1,
			Pods: []Pod{pod("a2", after, true), pod("b", at, true)}},
		now:     after,
		restart: []string{"b"}, left: 1, state: rollout.Progressing, wantRequeue: RestartPoll,
	}, {
		name: "an old pod that is not ready is restarted beyond the budget",
		r: PodRestart{At: at, Want: 3, MaxUnavailable: 1,
			Pods: []Pod{pod("a", before, true), pod("b", before, false), pod("c", before, true)}},
		now:     after,
		restart: []string{"b"}, left: 3, state: rollout.Progressing, wantRequeue: RestartPoll,
	}, {
		name: "a terminating pod whose replacement is ready does not hold the next",
		r: PodRestart{At: at, Want: 2, MaxUnavailable: 1,
			Pods: []Pod{gone(pod("a", before, true)), pod("a2", after, true), pod("b", before, true)}},
		now:     after,
		restart: []string{"b"}, left: 1, state: rollout.Progressing, wantRequeue: RestartPoll,
	}, {
		name:  "complete once every pod is newer and ready",
		r:     PodRestart{At: at, Want: 2, MaxUnavailable: 1, Pods: []Pod{pod("a2", after, true), pod("b2", after, true)}},
		now:   after,
		state: rollout.Complete,
	}, {
		name:  "complete for a workload with no pods wanted",
		r:     PodRestart{At: at, Want: 0, MaxUnavailable: 1},
		now:   after,
		state: rollout.Complete,
	}, {
		name: "stalled when no pod was replaced for the timeout, still trying",
		r:    PodRestart{At: at, Want: 1, MaxUnavailable: 1, Pods: []Pod{pod("a", before, true)}},
		now:  at.Add(time.Minute), timeout: time.Minute,
		restart: []string{"a"}, left: 1, state: rollout.Stalled, wantRequeue: RestartPoll,
	}, {
		name: "progress is the latest replacement",
		r: PodRestart{At: at, Want: 2, MaxUnavailable: 1,
			Pods: []Pod{pod("a2", at.Add(50*time.Second), true), pod("b", before, true)}},
		now: at.Add(time.Minute), timeout: time.Minute,
		restart: []string{"b"}, left: 1, state: rollout.Progressing, wantRequeue: RestartPoll,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NextRestart(tt.r, tt.now, tt.timeout)
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
