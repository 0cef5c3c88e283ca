package podrestart

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/ripple-dev/ripple/internal/workload"
)

// Memory is what Ripple remembers of the pods of one workload in its pod
// restart at At, because the pods do not show it: whose resize the API
// server refused (so it is not sent again), when Ripple resized each pod
// (so a resize the kubelet made without restarting the containers is found
// out rather than sent again and again), which pods were told of (once per
// restart), and how each reload endpoint answered. Only memory: after a
// Ripple restart a pod is told once more, a refused resize is sent once
// more, and a reload endpoint that answered is called once more (an
// endpoint takes that as one more reload). A Memory of another restart
// time is of no use: For starts afresh.
type Memory struct {
	At time.Time
	// Restart is the restart as the workload's reconcile resolved it (its
	// method, pace and action), which the restarter carries out.
	Restart workload.Restart
	// StaleVersion is the workload's resourceVersion the restart's write
	// was made on: a cached copy still at it does not show the restart
	// time yet, so it says nothing of whether the restart is over.
	StaleVersion string
	Pods         map[types.UID]PodMemory
}

// PodMemory is what Ripple remembers of one pod in a restart.
type PodMemory struct {
	// Refused is why the API server refused to resize it; empty when it
	// did not.
	Refused string
	// Told is set once it was told of (it cannot be restarted in place,
	// or reloaded by its action).
	Told bool
	// Sent is when Ripple resized it; zero when it did not.
	Sent time.Time
	// Call is how its reload endpoint answered.
	Call Call
}

// Call is how a pod's reload endpoint answered in one restart.
type Call struct {
	// Calling is set while a call is in flight.
	Calling bool
	// Answered is when it answered 2xx; zero while it did not.
	Answered time.Time
	// Tries are the failed calls, the last at Last, failing with Err.
	Tries int
	Last  time.Time
	Err   string
}

// IsZero reports whether m remembers nothing.
func (m Memory) IsZero() bool { return len(m.Pods) == 0 }

// For returns m for the restart at at: m itself when it is of that
// restart, else an empty Memory of it.
func (m Memory) For(at time.Time) Memory {
	if m.At.Equal(at) && m.Pods != nil {
		return m
	}
	return Memory{At: at, Restart: m.Restart, Pods: map[types.UID]PodMemory{}}
}

// Pod returns what m remembers of pod uid in the restart at at; nothing
// when m is of another restart.
func (m Memory) Pod(at time.Time, uid types.UID) PodMemory {
	if !m.At.Equal(at) {
		return PodMemory{}
	}
	return m.Pods[uid]
}

// Refuse is p once the API server refused its resize, for why.
func (p PodMemory) Refuse(why string) PodMemory {
	p.Refused = why
	return p
}

// Send is p once Ripple resized it at t.
func (p PodMemory) Send(t time.Time) PodMemory {
	p.Sent = t
	return p
}

// Tell is p once it was told of, and whether it is to be told now (it was
// not yet in this restart).
func (p PodMemory) Tell() (PodMemory, bool) {
	first := !p.Told
	p.Told = true
	return p, first
}

// MaxCalls bounds the reload-action calls in flight in the whole Ripple:
// a call runs beside the reconciles, never in one, so a pod that accepts
// the call and never answers holds only its own call (its timeout), and a
// tenant's many such pods hold at most these; a pod beyond them is called
// at a later step.
const MaxCalls = 256

// Dial is p once a call of its reload endpoint started, with inFlight
// calls of all pods in flight; false (p unchanged) when its call is in
// flight already, or MaxCalls are.
func (p PodMemory) Dial(inFlight int) (PodMemory, bool) {
	if p.Call.Calling || inFlight >= MaxCalls {
		return p, false
	}
	p.Call.Calling = true
	return p, true
}

// Answer is p once its reload endpoint answered at t the call Dial
// started: failed is empty for a 2xx, else what failed.
func (p PodMemory) Answer(t time.Time, failed string) PodMemory {
	p.Call.Calling = false
	if failed == "" {
		p.Call.Answered = t
	} else {
		p.Call.Tries, p.Call.Last, p.Call.Err = p.Call.Tries+1, t, failed
	}
	return p
}

// ResizeGrace is how long after Ripple resized a pod it waits for the
// restart of its containers when the pod shows no resize in flight (a
// kubelet that reports no observed generation): then the resize is taken
// to have been made without a restart.
const ResizeGrace = 30 * time.Second

// InPlace is st, how a pod stands in an in-place restart as it shows, with
// what Ripple remembers of it at now: a resize the API server refused is a
// refusal, a resize Ripple sent within ResizeGrace is in flight, and one
// sent before that without a restart since is a refusal too.
func (p PodMemory) InPlace(st InPlacePod, now time.Time) InPlacePod {
	if st.Refused != "" || !st.Restarted.IsZero() || st.Busy != "" {
		return st
	}
	switch since := now.Sub(p.Sent); {
	case p.Refused != "":
		st.Refused, st.Resize = p.Refused, nil
	case p.Sent.IsZero():
	case since < ResizeGrace:
		st.Busy = fmt.Sprintf("Ripple resized it %s ago", since.Round(time.Second))
	default:
		st.Refused, st.Resize = fmt.Sprintf("its containers did not restart within %s of its resize (the kubelet resized them without a restart)", ResizeGrace), nil
	}
	return st
}
