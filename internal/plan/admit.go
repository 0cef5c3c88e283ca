package plan

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/ripple-dev/ripple/internal/workload"
)

// Rollout waves: with a cap on the rollouts in progress, a workload that
// is to roll asks for a slot (Admit) and, while none is free, waits in
// line, ordered by when its change was first seen. Slots are handed out in
// that order whoever asks first; a slot granted is held until the write
// starts the rollout (Wrote) or the workload leaves the line, and a
// rollout holds its slot until it completes, stalls or times out (Follow).
//
//	asks ──> waiting (Turn) ──slot free in its turn──> granted ──write──> followed (Rollout) ──complete/stalled──> free

// RolloutLimits bound the rollouts Ripple has in progress.
type RolloutLimits struct {
	// Max is the cap on rollouts in progress, all namespaces together;
	// 0 is no cap.
	Max int
	// MaxPerNamespace is the cap per namespace; 0 is no cap.
	MaxPerNamespace int
	// Timeout is how long a rollout may take before it is reported
	// stalled and frees its slot; 0 never times out.
	Timeout time.Duration
}

// WaitPoll is how often a workload waiting for a rollout slot asks again.
// The order of turns does not depend on it: Admit grants slots in the
// order the changes were seen, whoever asks first.
const WaitPoll = time.Second

// waitForget is how long a waiting workload that stopped asking keeps
// its place (it was deleted, or no longer needs a rollout).
const waitForget = 5 * WaitPoll

// Turn is a workload's place in line for a rollout slot.
type Turn struct {
	// Seen is when its change was first seen; it orders the turns.
	Seen time.Time
	// Asked is when it last asked for a slot.
	Asked time.Time
	// Granted is set once it got a slot, which it holds until its write
	// starts the rollout or it leaves: a workload that joins the line
	// later, ahead of it, does not take that slot.
	Granted bool
}

// Waiting reports whether the workload is in line.
func (t Turn) Waiting() bool { return !t.Asked.IsZero() }

// Expire is the memory of a workload in line that stopped asking for its
// slot for a while at now: it left the line.
func (m Memory) Expire(now time.Time) Memory {
	if m.Turn.Waiting() && now.Sub(m.Turn.Asked) > waitForget {
		m.Turn = Turn{}
	}
	return m
}

// Line is the admission view: the rollouts in progress and the other
// workloads in line, as the store holds them.
type Line struct {
	// InProgress counts the rollouts followed, by namespace.
	InProgress map[string]int
	// Waiting are the other workloads in line.
	Waiting []Waiter
}

// Waiter is a workload in line.
type Waiter struct {
	Key  workload.Ref
	Turn Turn
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

// Admit decides whether the workload k, remembering m, may start a
// rollout at now, its change first seen at seen; line holds the others.
// When it may not, the memory it returns keeps its place in line (by
// seen, then namespace, name and kind) and the Admission says why. A
// workload is admitted when the free slots, handed out in that order,
// reach it.
func Admit(k workload.Ref, m Memory, line Line, l RolloutLimits, seen, now time.Time) (Memory, Admission) {
	if l.Max <= 0 && l.MaxPerNamespace <= 0 {
		return m, Admission{OK: true}
	}
	if m.Rollout.Followed() {
		// A second change while its rollout is in progress: that slot is
		// its own.
		return m, Admission{OK: true}
	}
	first := !m.Turn.Waiting()
	if first {
		if seen.IsZero() {
			seen = now
		}
		m.Turn = Turn{Seen: seen}
	}
	m.Turn.Asked = now
	ok, why := turn(k, m.Turn, line, l)
	m.Turn.Granted = ok
	return m, Admission{OK: ok, Why: why, First: first}
}

// turn hands the free slots to the workloads in line in order and reports
// whether k, with its turn t, gets one, else why not.
func turn(k workload.Ref, t Turn, line Line, l RolloutLimits) (bool, string) {
	active := 0
	perNS := map[string]int{}
	for ns, n := range line.InProgress {
		active += n
		perNS[ns] = n
	}
	free := l.Max - active
	queue := []Waiter{{Key: k, Turn: t}}
	for _, w := range line.Waiting {
		if w.Turn.Granted {
			free--
			perNS[w.Key.Namespace]++
			continue
		}
		queue = append(queue, w)
	}
	if t.Granted {
		return true, ""
	}
	slices.SortFunc(queue, func(a, b Waiter) int {
		return cmp.Or(a.Turn.Seen.Compare(b.Turn.Seen), cmp.Compare(a.Key.Namespace, b.Key.Namespace),
			cmp.Compare(a.Key.Name, b.Key.Name), cmp.Compare(a.Key.Kind, b.Key.Kind))
	})
	for _, w := range queue {
		globalFull := l.Max > 0 && free <= 0
		nsFull := l.MaxPerNamespace > 0 && perNS[w.Key.Namespace] >= l.MaxPerNamespace
		if w.Key == k {
			return why(l, active, globalFull, nsFull, perNS[k.Namespace])
		}
		if !globalFull && !nsFull {
			free--
			perNS[w.Key.Namespace]++
		}
	}
	return false, "not waiting" // unreachable: k is in the queue
}

func why(l RolloutLimits, active int, globalFull, nsFull bool, inNamespace int) (bool, string) {
	switch {
	case globalFull:
		return false, fmt.Sprintf("waiting for a rollout slot: %d of %d in progress (--max-concurrent-rollouts)",
			active, l.Max)
	case nsFull:
		return false, fmt.Sprintf("waiting for a rollout slot: %d of %d in progress in the namespace (--max-concurrent-rollouts-per-namespace)",
			inNamespace, l.MaxPerNamespace)
	}
	return true, ""
}
