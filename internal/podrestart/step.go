package podrestart

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ripple-dev/ripple/internal/rollout"
)

// A reload under the evict, delete or in-place restart method writes no
// template: the write records the change set's time on the workload (the
// restarted-at annotation, next to the applied record), and the workload's
// pods created up to that time are the ones left to restart (under
// in-place, until their containers started after it: inplace.go). Each step
// reads the pods again and restarts the next ones, so a restart that a
// Ripple restart or failover interrupted continues where the pods show it
// stands, and a pod is never restarted twice for one change set.
//
// Pod creation times have a resolution of one second, so "created up to
// the restart time" compares whole seconds, and the first pod is restarted
// only once that second is over: a replacement then always shows a later
// second than the restart time.

// Poll is how soon a restart in progress is looked at again: Ripple
// does not watch pods, so it reads them again after this long.
const Poll = time.Second

// Pod is one pod of a workload being restarted, as read.
type Pod struct {
	Name    string
	Created time.Time
	// Ready is its Ready condition; Terminating is set once it is being
	// deleted (it no longer counts).
	Ready, Terminating bool
	// Under the in-place method, Restarted is when its containers were
	// restarted after the restart time (zero while they were not), and
	// Busy is set while a resize is in flight: it counts as unavailable
	// and is not restarted again. Skipped is set for a pod that cannot be
	// restarted in place and is not evicted instead: it is not left to
	// restart. Under reload-action, Restarted is when its reload endpoint
	// answered, and Busy is set while it waits to be called again.
	Restarted     time.Time
	Busy, Skipped bool
}

// Restart is a pod restart in progress, as read from the workload and
// its pods.
type Restart struct {
	// At is the restart time the reload recorded.
	At time.Time
	// Want is how many pods the workload wants (its replicas, or for a
	// DaemonSet the nodes it should run on).
	Want int
	// MaxUnavailable is how many pods may be unavailable at once (at
	// least 1).
	MaxUnavailable int
	// Delay is how long after At the first pod is restarted (the
	// reload-action method's reload-delay).
	Delay time.Duration
	Pods  []Pod
}

// Step is what to do next in a pod restart.
type Step struct {
	// Restart are the pods to evict, delete or resize now, oldest first.
	Restart []string
	// Left is how many pods created up to the restart time remain.
	Left int
	// Status is how the restart stands: complete once no pod is left and
	// every pod wanted is ready, stalled once nothing progressed for the
	// rollout timeout.
	Status rollout.Status
	// Requeue is when to look again; 0 once complete.
	Requeue time.Duration
}

// left reports whether p is left to restart: created up to at, by whole
// seconds, and not restarted in place since (nor skipped).
func left(p Pod, at time.Time) bool {
	return p.Restarted.IsZero() && !p.Skipped && !p.Created.Truncate(time.Second).After(at.Truncate(time.Second))
}

// Next decides the next step of the pod restart r at now, with the
// rollout timeout (0: none). Progress is the restart time or the creation
// of the latest replacement, whichever is later, so a restart that waits
// for a PodDisruptionBudget longer than timeout without any pod replaced
// is stalled; it keeps going anyway, as a rollout does.
func Next(r Restart, now time.Time, timeout time.Duration) Step {
	var s Step
	old, unavailable, progress := count(r)
	s.Left = len(old)
	if s.Left == 0 && unavailable == 0 {
		s.Status = rollout.Status{State: rollout.Complete, Reason: "every pod was created after the change"}
		return s
	}
	s.Requeue = Poll
	s.Status = rollout.Status{State: rollout.Progressing,
		Reason: fmt.Sprintf("%d of %d pods left to restart, %d unavailable", s.Left, max(r.Want, len(r.Pods)), unavailable)}
	if timeout > 0 && now.Sub(progress) >= timeout {
		s.Status = rollout.Status{State: rollout.Stalled,
			Reason: fmt.Sprintf("no pod replaced for %s (--rollout-timeout): %s", timeout, s.Status.Reason)}
	}
	start := r.At.Truncate(time.Second).Add(time.Second)
	if d := r.At.Add(r.Delay); d.After(start) {
		start = d
	}
	if now.Before(start) {
		s.Requeue = start.Sub(now)
		return s
	}
	s.Restart = next(old, max(r.MaxUnavailable, 1)-unavailable)
	return s
}

// count returns the pods of r left to restart, how many pods are
// unavailable, and the last progress.
func count(r Restart) (old []Pod, unavailable int, progress time.Time) {
	present := 0
	progress = r.At
	for _, p := range r.Pods {
		// A terminating pod counts neither way: its replacement (or the
		// lack of one) does, as for a PodDisruptionBudget.
		if p.Terminating {
			continue
		}
		present++
		if !p.Ready || p.Busy {
			unavailable++
		}
		switch {
		case left(p, r.At):
			old = append(old, p)
		case p.Restarted.After(progress):
			progress = p.Restarted
		case p.Created.After(progress):
			progress = p.Created
		}
	}
	return old, unavailable + max(r.Want-present, 0), progress // deleted and not yet replaced
}

// next picks the pods to restart now out of old, within budget: those not
// ready first (they cost no availability, so the budget does not bound
// them), then the oldest.
func next(old []Pod, budget int) []string {
	slices.SortStableFunc(old, func(a, b Pod) int {
		if a.Ready != b.Ready {
			if !a.Ready {
				return -1
			}
			return 1
		}
		if c := a.Created.Compare(b.Created); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	var out []string
	for _, p := range old {
		if p.Busy {
			continue // its resize is in flight
		}
		if p.Ready {
			if budget <= 0 {
				break
			}
			budget--
		}
		out = append(out, p.Name)
	}
	return out
}
