package controller

import (
	"cmp"
	"fmt"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/ripple-dev/ripple/internal/metrics"
	"github.com/ripple-dev/ripple/internal/rollout"
)

// RolloutLimits bound the rollouts Ripple has in progress.
type RolloutLimits struct {
	// Max is the cap on rollouts in progress, all namespaces together;
	// 0 is no cap.
	Max int
	// MaxPerNamespace is the cap per namespace; 0 is no cap.
	MaxPerNamespace int
	// Timeout is how long a rollout may take before it is reported
	// stalled and frees its slot.
	Timeout time.Duration
}

// waitPoll is how often a workload waiting for a rollout slot asks again.
// The order of turns does not depend on it: Admit grants slots in the
// order the changes were seen, whoever asks first.
const waitPoll = time.Second

// waitForget is how long a waiting workload that stopped asking keeps
// its place (it was deleted, or no longer needs a rollout).
const waitForget = 5 * waitPoll

// trackKey names a workload of a kind.
type trackKey struct {
	kind string
	types.NamespacedName
}

// tracked is a rollout Ripple started and follows.
type tracked struct {
	started time.Time
	// staleVersion is the resourceVersion the write was made on: a cached
	// copy still at it does not show the write yet.
	staleVersion string
}

// waiter is a workload waiting for a rollout slot.
type waiter struct {
	key trackKey
	// seen is when its change was first seen; it orders the turns.
	seen time.Time
	// asked is when it last asked for a slot.
	asked time.Time
	// granted is set once it got a slot, which it holds until its write
	// starts the rollout (Start) or it leaves: a workload that joins the
	// line later, ahead of it, does not take that slot.
	granted bool
}

// Tracker follows the rollouts Ripple started, shared by the reconcilers
// of every kind, and hands out rollout slots under RolloutLimits. It keeps
// no state that a reload depends on: what was applied is on the workload.
// After a restart it starts empty, so rollouts that were in flight are
// neither reported nor counted against the caps.
type Tracker struct {
	Limits  RolloutLimits
	Clock   clock.PassiveClock
	Metrics *metrics.Metrics

	mu      sync.Mutex
	active  map[trackKey]tracked
	waiting map[trackKey]*waiter
}

// Tracked reports whether the rollout of kind's workload key is followed.
func (t *Tracker) Tracked(kind string, key types.NamespacedName) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.active[trackKey{kind, key}]
	return ok
}

// trackedUpdates passes the updates of the workloads of kind whose
// rollout Ripple follows, status updates included. Every other workload
// is reconciled on spec and annotation changes only, so the status
// updates of the cluster's other workloads cost nothing.
func (t *Tracker) trackedUpdates(kind string) predicate.Predicate {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			return t.Tracked(kind, client.ObjectKeyFromObject(e.ObjectNew))
		},
	}
}

// Admission is Admit's answer.
type Admission struct {
	OK bool
	// Why says why not, e.g. "waiting for a rollout slot: 50 of 50 in
	// progress (--max-concurrent-rollouts)".
	Why string
	// First is set when the workload just joined the line.
	First bool
}

// Admit reports whether kind's workload key may start a rollout now. When
// it may not, it keeps the workload's place in line (by seen, then
// namespace and name) and says why. Turns are handed out in that order:
// a workload is admitted when the free slots reach it.
func (t *Tracker) Admit(kind string, key types.NamespacedName, seen time.Time) Admission {
	if t.Limits.Max <= 0 && t.Limits.MaxPerNamespace <= 0 {
		return Admission{OK: true}
	}
	now := t.Clock.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	k := trackKey{kind, key}
	if _, ok := t.active[k]; ok {
		// A second change while its rollout is in progress: that slot is
		// its own.
		return Admission{OK: true}
	}
	w := t.waiting[k]
	first := w == nil
	if first {
		if seen.IsZero() {
			seen = now
		}
		w = &waiter{key: k, seen: seen}
		if t.waiting == nil {
			t.waiting = map[trackKey]*waiter{}
		}
		t.waiting[k] = w
	}
	w.asked = now
	ok, why := t.turn(k, now)
	t.Metrics.RolloutsWaiting(len(t.waiting))
	return Admission{OK: ok, Why: why, First: first}
}

// turn hands the free slots to the waiting workloads in order and reports
// whether k gets one, else why not.
func (t *Tracker) turn(k trackKey, now time.Time) (bool, string) {
	free := t.Limits.Max - len(t.active)
	perNS := map[string]int{}
	for a := range t.active {
		perNS[a.Namespace]++
	}
	line := make([]*waiter, 0, len(t.waiting))
	for key, w := range t.waiting {
		switch {
		case now.Sub(w.asked) > waitForget:
			delete(t.waiting, key)
		case w.granted:
			free--
			perNS[key.Namespace]++
		default:
			line = append(line, w)
		}
	}
	if t.waiting[k].granted {
		return true, ""
	}
	slices.SortFunc(line, func(a, b *waiter) int {
		return cmp.Or(a.seen.Compare(b.seen), cmp.Compare(a.key.Namespace, b.key.Namespace),
			cmp.Compare(a.key.Name, b.key.Name), cmp.Compare(a.key.kind, b.key.kind))
	})
	for _, w := range line {
		globalFull := t.Limits.Max > 0 && free <= 0
		nsFull := t.Limits.MaxPerNamespace > 0 && perNS[w.key.Namespace] >= t.Limits.MaxPerNamespace
		if w.key == k {
			w.granted = !globalFull && !nsFull
			return t.why(globalFull, nsFull, perNS[k.Namespace])
		}
		if !globalFull && !nsFull {
			free--
			perNS[w.key.Namespace]++
		}
	}
	return false, "not waiting" // unreachable: k is in line
}

func (t *Tracker) why(globalFull, nsFull bool, inNamespace int) (bool, string) {
	switch {
	case globalFull:
		return false, fmt.Sprintf("waiting for a rollout slot: %d of %d in progress (--max-concurrent-rollouts)",
			len(t.active), t.Limits.Max)
	case nsFull:
		return false, fmt.Sprintf("waiting for a rollout slot: %d of %d in progress in the namespace (--max-concurrent-rollouts-per-namespace)",
			inNamespace, t.Limits.MaxPerNamespace)
	}
	return true, ""
}

// Leave takes kind's workload key out of the line: it needs no rollout
// (anymore), or it is gone.
func (t *Tracker) Leave(kind string, key types.NamespacedName) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.waiting[trackKey{kind, key}]; ok {
		delete(t.waiting, trackKey{kind, key})
		t.Metrics.RolloutsWaiting(len(t.waiting))
	}
}

// Start follows the rollout that a write on obj, made at resourceVersion
// staleVersion, started. A second write during a rollout keeps its start.
// A CronJob's or Job's rollout is the write itself: it is not followed.
func (t *Tracker) Start(kind string, obj client.Object, staleVersion string) {
	k := trackKey{kind, client.ObjectKeyFromObject(obj)}
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.waiting, k)
	t.Metrics.RolloutsWaiting(len(t.waiting))
	if rollout.Instant(obj) {
		return
	}
	if t.active == nil {
		t.active = map[trackKey]tracked{}
	}
	started := t.Clock.Now()
	if a, ok := t.active[k]; ok {
		started = a.started
	}
	t.active[k] = tracked{started: started, staleVersion: staleVersion}
	t.Metrics.RolloutsInProgress(len(t.active))
}

// Progress is what Observe found.
type Progress struct {
	// State is Progressing while the rollout is followed.
	State rollout.State
	// Reason says why it stalled, or how far it is.
	Reason string
	// Took is how long the rollout has taken.
	Took time.Duration
	// Left is how long until a rollout in progress times out.
	Left time.Duration
}

// Observe checks the followed rollout of obj, as cached. It reports false
// when obj's rollout is not followed. A rollout that completed or stalled
// (by the kind's status, or by running longer than the timeout) is no
// longer followed and frees its slot.
func (t *Tracker) Observe(kind string, obj client.Object) (Progress, bool) {
	k := trackKey{kind, client.ObjectKeyFromObject(obj)}
	t.mu.Lock()
	defer t.mu.Unlock()
	a, ok := t.active[k]
	if !ok {
		return Progress{}, false
	}
	p := Progress{State: rollout.Progressing, Reason: "the write is not in the cache yet", Took: t.Clock.Since(a.started)}
	if obj.GetResourceVersion() != a.staleVersion {
		st := rollout.Of(obj)
		p.State, p.Reason = st.State, st.Reason
	}
	if p.State == rollout.Progressing && t.Limits.Timeout > 0 {
		p.Left = t.Limits.Timeout - p.Took
		if p.Left <= 0 {
			p.State, p.Reason = rollout.Stalled, fmt.Sprintf("not complete after %s (--rollout-timeout): %s", t.Limits.Timeout, p.Reason)
		}
	}
	if p.State != rollout.Progressing {
		delete(t.active, k)
		t.Metrics.RolloutsInProgress(len(t.active))
	}
	return p, true
}

// Forget stops following kind's workload key, which is gone: its rollout
// is neither complete nor stalled.
func (t *Tracker) Forget(kind string, key types.NamespacedName) {
	t.Leave(kind, key)
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.active[trackKey{kind, key}]; ok {
		delete(t.active, trackKey{kind, key})
		t.Metrics.RolloutsInProgress(len(t.active))
	}
}
