package podrestart

import (
	"strings"
	"testing"
	"time"
)

// A Memory is of one restart: another restart time starts afresh, and
// reads nothing of the earlier one.
func TestMemoryFor(t *testing.T) {
	at := restartAt
	m := Memory{}.For(at)
	m.Pods["a"] = PodMemory{}.Refuse("no")
	if got := m.For(at).Pod(at, "a").Refused; got != "no" {
		t.Errorf("same restart: refused %q, want kept", got)
	}
	later := at.Add(time.Minute)
	if got := m.Pod(later, "a"); got != (PodMemory{}) {
		t.Errorf("another restart reads %+v, want nothing", got)
	}
	if n := m.For(later); !n.IsZero() || !n.At.Equal(later) {
		t.Errorf("For(later) = %+v, want empty of the later restart", n)
	}
}

// A pod is told of once per restart.
func TestPodMemoryTell(t *testing.T) {
	p, first := PodMemory{}.Tell()
	if !first {
		t.Error("first Tell says not to tell")
	}
	if _, again := p.Tell(); again {
		t.Error("second Tell says to tell again")
	}
}

// A call is dialled once while in flight, never beyond MaxCalls, and its
// answer ends it: a 2xx is when it answered, a failure counts a try.
func TestPodMemoryCalls(t *testing.T) {
	now := restartAt
	if _, ok := (PodMemory{}).Dial(MaxCalls); ok {
		t.Error("dialled with MaxCalls in flight")
	}
	p, ok := PodMemory{}.Dial(0)
	if !ok || !p.Call.Calling {
		t.Fatalf("Dial = %+v, %v; want calling", p, ok)
	}
	if _, again := p.Dial(1); again {
		t.Error("dialled a pod whose call is in flight")
	}
	p = p.Answer(now, "refused")
	if p.Call.Calling || p.Call.Tries != 1 || !p.Call.Last.Equal(now) || p.Call.Err != "refused" {
		t.Errorf("after a failure %+v, want one try at now, not calling", p.Call)
	}
	p, _ = p.Dial(0)
	p = p.Answer(now.Add(time.Second), "")
	if !p.Call.Answered.Equal(now.Add(time.Second)) || p.Call.Tries != 1 {
		t.Errorf("after a 2xx %+v, want answered, the try kept", p.Call)
	}
}

// What Ripple remembers of a resize completes what the pod shows: a
// refusal, a resize in flight for ResizeGrace, then a resize made without
// a restart; what the pod shows comes first.
func TestPodMemoryInPlace(t *testing.T) {
	now := restartAt.Add(time.Minute)
	want := InPlacePod{Resize: []ContainerResize{{Name: "app"}}}
	for _, tc := range []struct {
		name       string
		st         InPlacePod
		p          PodMemory
		busy, refd string
	}{
		{name: "nothing remembered", st: want},
		{name: "refused", st: want, p: PodMemory{}.Refuse("invalid"), refd: "invalid"},
		{name: "sent just now", st: want, p: PodMemory{}.Send(now.Add(-time.Second)), busy: "Ripple resized it 1s ago"},
		{name: "sent long ago", st: want, p: PodMemory{}.Send(now.Add(-ResizeGrace)), refd: "did not restart within"},
		{name: "the pod's own refusal first", st: InPlacePod{Refused: "BestEffort"}, p: PodMemory{}.Refuse("invalid"), refd: "BestEffort"},
		{name: "restarted since", st: InPlacePod{Restarted: now}, p: PodMemory{}.Send(now.Add(-time.Hour))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := tc.p.InPlace(tc.st, now)
			if st.Busy != tc.busy || !strings.Contains(st.Refused, tc.refd) || (tc.refd == "") != (st.Refused == "") {
				t.Errorf("busy %q, refused %q; want %q, %q", st.Busy, st.Refused, tc.busy, tc.refd)
			}
			if st.Refused != "" && st.Resize != nil {
				t.Errorf("refused with a resize %v", st.Resize)
			}
		})
	}
}
