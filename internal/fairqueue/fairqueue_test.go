package fairqueue

import (
	"fmt"
	"slices"
	"testing"
)

func drain(q *Queue[string]) []string {
	var out []string
	for {
		v, ok := q.Pop()
		if !ok {
			return out
		}
		out = append(out, v)
	}
}

// Keys are served in turn, each in its own order, a new key after the
// keys already waiting.
func TestRoundRobin(t *testing.T) {
	q := New[string](100)
	for i := range 3 {
		q.Push("flood", fmt.Sprintf("flood-%d", i))
	}
	q.Push("shop", "shop-0")
	q.Push("shop", "shop-1")
	if v, _ := q.Pop(); v != "flood-0" {
		t.Fatalf("first pop %q, want flood-0", v)
	}
	q.Push("late", "late-0")
	want := []string{"shop-0", "flood-1", "late-0", "shop-1", "flood-2"}
	if got := drain(q); !slices.Equal(got, want) {
		t.Errorf("served %v, want %v", got, want)
	}
	if q.Len() != 0 {
		t.Errorf("Len %d after draining, want 0", q.Len())
	}
}

// A namespace that floods a full queue loses its own oldest items, never
// another namespace's, and the others are served next.
func TestFloodDropsTheFloodersOwn(t *testing.T) {
	q := New[string](10)
	q.Push("shop", "shop-0")
	var lost []string
	for i := range 1000 {
		if from, dropped := q.Push("flood", fmt.Sprintf("flood-%d", i)); dropped {
			lost = append(lost, from)
		}
	}
	q.Push("shop", "shop-1") // the queue is full: the flood pays
	if len(lost) != 991 || slices.ContainsFunc(lost, func(k string) bool { return k != "flood" }) {
		t.Fatalf("%d dropped, from %v; want 991, all from flood", len(lost), slices.Compact(lost))
	}
	if from, dropped := q.Push("other", "other-0"); !dropped || from != "flood" {
		t.Errorf("a third namespace's push dropped from %q (%v), want flood's", from, dropped)
	}
	got := drain(q)
	want := []string{"shop-0", "flood-993", "other-0", "shop-1", "flood-994"}
	if !slices.Equal(got[:5], want) {
		t.Errorf("served %v first, want %v", got[:5], want)
	}
	if len(got) != 10 || got[9] != "flood-999" {
		t.Errorf("served %d, last %q; want 10, the flood's newest last", len(got), got[len(got)-1])
	}
}

// On a tie the pushing key pays, so two equal keys keep their shares.
func TestTieDropsOwn(t *testing.T) {
	q := New[string](2)
	q.Push("a", "a-0")
	q.Push("b", "b-0")
	if from, _ := q.Push("b", "b-1"); from != "b" {
		t.Errorf("dropped from %q, want b", from)
	}
	if got := drain(q); !slices.Equal(got, []string{"a-0", "b-1"}) {
		t.Errorf("served %v, want [a-0 b-1]", got)
	}
}

// Ready wakes a consumer once per burst of pushes.
func TestReady(t *testing.T) {
	q := New[int](0)
	select {
	case <-q.Ready():
		t.Fatal("ready before any push")
	default:
	}
	q.Push("a", 1)
	q.Push("a", 2) // size 1: drops 1
	<-q.Ready()
	if v, ok := q.Pop(); !ok || v != 2 {
		t.Errorf("Pop = %d, %v; want 2, true", v, ok)
	}
}
