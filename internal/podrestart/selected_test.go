package podrestart

import (
	"slices"
	"testing"
	"time"

	"github.com/ripple-dev/ripple/internal/rollout"
)

// TestSelectedOneAtATime steps three bare pods through a restart with
// max-unavailable 1, as the config's pods controller reads them: a pod
// evicted holds the next eviction until it is gone, and a pod that nobody
// recreates is not waited for once gone.
func TestSelectedOneAtATime(t *testing.T) {
	at := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	before, now := at.Add(-time.Hour), at.Add(40*time.Second)
	settle := 30 * time.Second
	pod := func(name string, created time.Time) Pod { return Pod{Name: name, Created: created, Ready: true} }
	terminating := func(p Pod) Pod { p.Terminating = true; return p }
	tests := []struct {
		name    string
		pods    []Pod
		now     time.Time
		restart []string
		state   rollout.State
	}{
		{name: "waits for the settle window", pods: []Pod{pod("a", before), pod("b", before)}, now: at.Add(10 * time.Second), state: rollout.Progressing},
		{name: "evicts the oldest first", pods: []Pod{pod("b", before.Add(time.Second)), pod("a", before), pod("c", before)}, now: now,
			restart: []string{"a"}, state: rollout.Progressing},
		{name: "an evicted pod not yet gone holds the next", pods: []Pod{terminating(pod("a", before)), pod("b", before), pod("c", before)}, now: now,
			state: rollout.Progressing},
		{name: "a bare pod gone is not waited for", pods: []Pod{pod("b", before), pod("c", before)}, now: now,
			restart: []string{"b"}, state: rollout.Progressing},
		{name: "a recreated pod not Ready holds the next", pods: []Pod{{Name: "a", Created: now}, pod("b", before)}, now: now,
			state: rollout.Progressing},
		{name: "a pod created after the write is done", pods: []Pod{pod("a", now), pod("b", at.Add(time.Second))}, now: now,
			state: rollout.Complete},
		{name: "no pods: complete", now: now, state: rollout.Complete},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Next(Selected(at, settle, 1, tt.pods), tt.now, 0)
			if !slices.Equal(s.Restart, tt.restart) || s.Status.State != tt.state {
				t.Errorf("restart %v, %s; want %v, %s (%s)", s.Restart, s.Status.State, tt.restart, tt.state, s.Status.Reason)
			}
		})
	}
}

// TestSelectedMaxUnavailable: two at a time, and a pod being deleted
// takes one of them.
func TestSelectedMaxUnavailable(t *testing.T) {
	at := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	before, now := at.Add(-time.Hour), at.Add(time.Minute)
	pods := []Pod{{Name: "a", Created: before, Ready: true, Terminating: true}, {Name: "b", Created: before, Ready: true},
		{Name: "c", Created: before.Add(time.Second), Ready: true}, {Name: "d", Created: before.Add(2 * time.Second), Ready: true}}
	s := Next(Selected(at, 0, 2, pods), now, 0)
	if !slices.Equal(s.Restart, []string{"b"}) {
		t.Errorf("restart %v, want [b]", s.Restart)
	}
}
