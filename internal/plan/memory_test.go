package plan

import (
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ripple-dev/ripple/internal/rollout"
	"github.com/ripple-dev/ripple/internal/strategy"
	"github.com/ripple-dev/ripple/internal/workload"
)

var t0 = time.Unix(1000, 0)

func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

func wkey(ns, name string) workload.Ref {
	return workload.RefFor("Deployment", types.NamespacedName{Namespace: ns, Name: name})
}

// rolls is a plan that rolls the workload, with a minimum interval.
var rolls = Plan{Update: workload.Update{Template: &corev1.PodTemplateSpec{}}, Interval: time.Minute,
	Changes: []strategy.Change{{Hash: "h"}}}

func TestWrote(t *testing.T) {
	waiting := Memory{Pending: Pending{ID: "x", First: at(0), Last: at(0)}, Turn: Turn{Seen: at(0), Asked: at(1), Granted: true}}
	following := Memory{Rollout: Rollout{Started: at(-5), StaleVersion: "1"}}
	records := Plan{Update: workload.Update{Annotations: map[string]*string{"a": nil}}}
	for _, tc := range []struct {
		name string
		m    Memory
		p    Plan
		w    Write
		want Memory
	}{
		{"a rollout leaves the line, is followed, closes the window and counts for the interval", waiting, rolls, Write{StaleVersion: "7"},
			Memory{Rollout: Rollout{Started: at(2), StaleVersion: "7"}, Storm: Storm{Rolled: at(2)}}},
		{"a second write during a rollout keeps its start", following, rolls, Write{StaleVersion: "9"},
			Memory{Rollout: Rollout{Started: at(-5), StaleVersion: "9"}, Storm: Storm{Rolled: at(2)}}},
		{"an instant rollout is not followed", waiting, rolls, Write{Instant: true},
			Memory{Storm: Storm{Rolled: at(2)}}},
		{"a skipped reload leaves the line and closes the window, no rollout", waiting, rolls, Write{Skipped: true},
			Memory{}},
		{"a record write leaves the line and keeps the window", waiting, records, Write{},
			Memory{Pending: waiting.Pending}},
		{"dry-run counts for the interval, keeps the line and the window", waiting, Plan{WouldReload: true, Interval: time.Minute}, Write{},
			Memory{Pending: waiting.Pending, Turn: waiting.Turn, Storm: Storm{Rolled: at(2)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.m.Wrote(tc.p, tc.w, at(2)); !equalMemory(got, tc.want) {
				t.Errorf("Wrote = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func equalMemory(a, b Memory) bool {
	return a.Pending == b.Pending && a.Turn == b.Turn && reflect.DeepEqual(a.Rollout, b.Rollout) &&
		a.Storm.ID == b.Storm.ID && a.Storm.Held.Equal(b.Storm.Held) && a.Storm.Rolled.Equal(b.Storm.Rolled) && len(a.Storm.Seen) == len(b.Storm.Seen)
}

func TestMemoryTransitions(t *testing.T) {
	full := Memory{Pending: Pending{ID: "x", First: at(0), Last: at(0)}, Storm: Storm{Held: at(0)},
		Turn: Turn{Seen: at(0), Asked: at(0)}, Rollout: Rollout{Started: at(0)}}
	if m := (Memory{}).Notice(at(1)).Notice(at(2)); m.Pending.First != at(1) || m.Pending.Last != at(2) {
		t.Errorf("Notice twice: %+v, want first 1s, last 2s", m.Pending)
	}
	if m := full.LeftScope(); m.Pending != (Pending{}) || !reflect.DeepEqual(m.Rollout, full.Rollout) || m.Storm.Held != full.Storm.Held {
		t.Errorf("LeftScope = %+v, want only the window closed", m)
	}
	if m := full.Gone(); !m.IsZero() {
		t.Errorf("Gone = %+v, want nothing", m)
	}
	if m := full.LeaveLine(); m.Turn != (Turn{}) || !reflect.DeepEqual(m.Rollout, full.Rollout) {
		t.Errorf("LeaveLine = %+v, want only the turn dropped", m)
	}
	p := Plan{Pending: Pending{ID: "y"}, Storm: Storm{ID: "y"}}
	if m := full.Planned(p); m.Pending != p.Pending || m.Storm.ID != "y" || m.Turn != full.Turn || !reflect.DeepEqual(m.Rollout, full.Rollout) {
		t.Errorf("Planned = %+v, want the plan's window and storm, the rest kept", m)
	}
	if m := full.Expire(at(5)); m.Turn != full.Turn {
		t.Error("a turn asked for 5s ago expired")
	}
	if m := full.Expire(at(6)); m.Turn.Waiting() {
		t.Error("a turn not asked for over 5s did not expire")
	}
}

func TestAdmit(t *testing.T) {
	me := wkey("a", "me")
	granted := Waiter{Key: wkey("a", "g"), Turn: Turn{Seen: at(5), Asked: at(9), Granted: true}}
	earlier := Waiter{Key: wkey("b", "early"), Turn: Turn{Seen: at(0), Asked: at(9)}}
	for _, tc := range []struct {
		name       string
		m          Memory
		line       Line
		l          RolloutLimits
		ok, first  bool
		why        string
		wantSeenAt time.Time
	}{
		{name: "no cap", l: RolloutLimits{}, ok: true},
		{name: "a free slot", line: Line{InProgress: map[string]int{"x": 1}}, l: RolloutLimits{Max: 2}, ok: true, first: true, wantSeenAt: at(3)},
		{name: "full", line: Line{InProgress: map[string]int{"x": 2}}, l: RolloutLimits{Max: 2}, first: true,
			why: "2 of 2 in progress (--max-concurrent-rollouts)", wantSeenAt: at(3)},
		{name: "a granted slot counts as taken", line: Line{InProgress: map[string]int{"x": 1}, Waiting: []Waiter{granted}}, l: RolloutLimits{Max: 2},
			first: true, why: "--max-concurrent-rollouts", wantSeenAt: at(3)},
		{name: "one seen earlier goes first", line: Line{Waiting: []Waiter{earlier}}, l: RolloutLimits{Max: 1},
			first: true, why: "0 of 1 in progress", wantSeenAt: at(3)},
		{name: "one earlier in another namespace does not hold up this one", line: Line{Waiting: []Waiter{earlier}, InProgress: map[string]int{"b": 1}},
			l: RolloutLimits{MaxPerNamespace: 1}, ok: true, first: true, wantSeenAt: at(3)},
		{name: "the namespace is full", line: Line{InProgress: map[string]int{"a": 1}}, l: RolloutLimits{MaxPerNamespace: 1},
			first: true, why: "1 of 1 in progress in the namespace (--max-concurrent-rollouts-per-namespace)", wantSeenAt: at(3)},
		{name: "its own rollout in progress is its slot", m: Memory{Rollout: Rollout{Started: at(0)}}, line: Line{InProgress: map[string]int{"a": 9}},
			l: RolloutLimits{Max: 1}, ok: true},
		{name: "asking again keeps its place", m: Memory{Turn: Turn{Seen: at(-1), Asked: at(2)}}, line: Line{Waiting: []Waiter{earlier}},
			l: RolloutLimits{Max: 1}, ok: true, wantSeenAt: at(-1)},
		{name: "a granted slot is kept", m: Memory{Turn: Turn{Seen: at(1), Asked: at(2), Granted: true}},
			line: Line{Waiting: []Waiter{earlier}, InProgress: map[string]int{"x": 1}}, l: RolloutLimits{Max: 2}, ok: true, wantSeenAt: at(1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, a := Admit(me, tc.m, tc.line, tc.l, at(3), at(4))
			if a.OK != tc.ok || a.First != tc.first || !strings.Contains(a.Why, tc.why) || (tc.why == "") != (a.Why == "") {
				t.Fatalf("Admit = %+v, want ok %v, first %v, why containing %q", a, tc.ok, tc.first, tc.why)
			}
			if !m.Turn.Seen.Equal(tc.wantSeenAt) || m.Turn.Granted != (tc.ok && !tc.wantSeenAt.IsZero()) {
				t.Errorf("turn %+v, want seen at %v, granted %v", m.Turn, tc.wantSeenAt, tc.ok)
			}
			if !tc.wantSeenAt.IsZero() && !m.Turn.Asked.Equal(at(4)) {
				t.Errorf("asked at %v, want now", m.Turn.Asked)
			}
		})
	}
}

func TestFollow(t *testing.T) {
	followed := Memory{Rollout: Rollout{Started: at(0), StaleVersion: "5"}}
	progressing := rollout.Status{State: rollout.Progressing, Reason: "1 of 2 updated"}
	for _, tc := range []struct {
		name    string
		m       Memory
		o       Observed
		now     int
		ok      bool
		state   rollout.State
		reason  string
		left    time.Duration
		follows bool
	}{
		{name: "nothing followed", m: Memory{}, o: Observed{ResourceVersion: "6"}},
		{name: "the write is not in the cache yet", m: followed, o: Observed{ResourceVersion: "5", Status: rollout.Status{State: rollout.Complete}},
			now: 10, ok: true, state: rollout.Progressing, reason: "not in the cache yet", left: 50 * time.Second, follows: true},
		{name: "in progress", m: followed, o: Observed{ResourceVersion: "6", Status: progressing},
			now: 10, ok: true, state: rollout.Progressing, reason: "1 of 2 updated", left: 50 * time.Second, follows: true},
		{name: "complete frees the slot", m: followed, o: Observed{ResourceVersion: "6", Status: rollout.Status{State: rollout.Complete}},
			now: 10, ok: true, state: rollout.Complete},
		{name: "stalled by its status", m: followed, o: Observed{ResourceVersion: "6", Status: rollout.Status{State: rollout.Stalled, Reason: "deadline"}},
			now: 10, ok: true, state: rollout.Stalled, reason: "deadline"},
		{name: "timed out", m: followed, o: Observed{ResourceVersion: "6", Status: progressing},
			now: 60, ok: true, state: rollout.Stalled, reason: "not complete after 1m0s (--rollout-timeout): 1 of 2 updated"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, p, ok := tc.m.Follow(tc.o, time.Minute, at(tc.now))
			if ok != tc.ok || p.State != tc.state || !strings.Contains(p.Reason, tc.reason) || (ok && p.Left != tc.left && p.Left > 0) {
				t.Fatalf("Follow = %+v, %v; want %v, %v, %q, %s left", p, ok, tc.ok, tc.state, tc.reason, tc.left)
			}
			if m.Rollout.Followed() != tc.follows {
				t.Errorf("still followed: %v, want %v", m.Rollout.Followed(), tc.follows)
			}
			if ok && p.Took != time.Duration(tc.now)*time.Second {
				t.Errorf("took %s, want %ds", p.Took, tc.now)
			}
		})
	}
}
