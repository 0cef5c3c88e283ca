package controller

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/ripple-dev/ripple/internal/metrics"
	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/podrestart"
	"github.com/ripple-dev/ripple/internal/workload"
)

// Store holds the plan.Memory of every workload Ripple remembers
// something of: the one place it is kept, shared by the reconcilers of
// every kind and by the rollout followers. It changes a memory only by a
// transition of package plan, applied under its lock one at a time, so
// the reload loop and the rollout follower of one workload never lose
// each other's change. A memory that remembers nothing is dropped.
//
// It keeps the gauges of what it holds: the workloads held by the flap
// breaker, waiting for a rollout slot, their reload window or an approval,
// and the rollouts followed.
type Store struct {
	Metrics *metrics.Metrics

	mu sync.Mutex
	m  map[workload.Ref]plan.Memory
	// templates are the memories that hold only the pod template seen
	// (Memory.Template), kept apart: almost every workload Ripple
	// reconciled has one, and a whole Memory costs about 0.5 KiB.
	templates map[workload.Ref]plan.TemplateSeen
	// waiting and following index the workloads in line for a rollout
	// slot and those whose rollout is followed, for Admit.
	waiting, following map[workload.Ref]struct{}
	// deferred indexes the workloads whose reload waits for their reload
	// window, for its gauge.
	deferred map[workload.Ref]struct{}
	// awaiting are the workloads whose reload waits for an approval.
	awaiting map[workload.Ref]struct{}
	// pods are, per workload whose pods are restarted, what Ripple
	// remembers of them (podrestart.Memory), kept apart from the plan's
	// memory: the planner never reads it. calling counts the reload-action
	// calls in flight, at most podrestart.MaxCalls; calls waits for them.
	pods    map[workload.Ref]podrestart.Memory
	calling int
	calls   sync.WaitGroup
}

// Load returns the memory of k.
func (s *Store) Load(k workload.Ref) plan.Memory {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.load(k)
}

// load returns the memory of k; the lock is held.
func (s *Store) load(k workload.Ref) plan.Memory {
	if m, ok := s.m[k]; ok {
		return m
	}
	return plan.Memory{Template: s.templates[k]}
}

// Update applies the transition t to the memory of k and keeps the
// result, which it returns.
func (s *Store) Update(k workload.Ref, t func(plan.Memory) plan.Memory) plan.Memory {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := t(s.load(k))
	s.set(k, m)
	return m
}

// Following reports whether the rollout of k is followed.
func (s *Store) Following(k workload.Ref) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.following[k]
	return ok
}

// Admit applies the admission decide to the memory of k, with the line as
// it stands at now: the workloads that stopped asking for a slot leave it
// first (plan.Memory.Expire). The lock is held throughout, so that two
// workloads never take one slot.
func (s *Store) Admit(k workload.Ref, now time.Time, decide func(plan.Memory, plan.Line) plan.Memory) {
	s.mu.Lock()
	defer s.mu.Unlock()
	line := plan.Line{InProgress: map[string]int{}}
	for f := range s.following {
		line.InProgress[f.Namespace]++
	}
	for w := range s.waiting {
		if w == k {
			continue
		}
		m := s.load(w).Expire(now)
		s.set(w, m)
		if m.Turn.Waiting() {
			line.Waiting = append(line.Waiting, plan.Waiter{Key: w, Turn: m.Turn})
		}
	}
	s.set(k, decide(s.load(k), line))
}

// set keeps m as the memory of k, and the indexes and gauges with it.
func (s *Store) set(k workload.Ref, m plan.Memory) {
	old := s.load(k)
	switch {
	case old.Storm.Held.IsZero() && !m.Storm.Held.IsZero():
		s.Metrics.HoldBegan(k.Kind)
	case !old.Storm.Held.IsZero() && m.Storm.Held.IsZero():
		s.Metrics.HoldEnded()
	}
	rest := m
	rest.Template = plan.TemplateSeen{}
	delete(s.m, k)
	delete(s.templates, k)
	switch {
	case !rest.IsZero():
		if s.m == nil {
			s.m = map[workload.Ref]plan.Memory{}
		}
		s.m[k] = m
	case m.Template != plan.TemplateSeen{}:
		if s.templates == nil {
			s.templates = map[workload.Ref]plan.TemplateSeen{}
		}
		s.templates[k] = m.Template
	}
	if index(&s.waiting, k, m.Turn.Waiting()) {
		s.Metrics.RolloutsWaiting(len(s.waiting))
	}
	if index(&s.following, k, m.Rollout.Followed()) {
		s.Metrics.RolloutsInProgress(len(s.following))
	}
	if index(&s.deferred, k, m.Deferred != "") {
		s.Metrics.ReloadsDeferred(len(s.deferred))
	}
	if index(&s.awaiting, k, m.Awaiting.ID != "") {
		s.Metrics.ReloadsPending(len(s.awaiting))
	}
}

// index adds k to or removes it from the set, and reports whether that
// changed it.
func index(set *map[workload.Ref]struct{}, k workload.Ref, in bool) bool {
	_, was := (*set)[k]
	switch {
	case in == was:
		return false
	case in:
		if *set == nil {
			*set = map[workload.Ref]struct{}{}
		}
		(*set)[k] = struct{}{}
	default:
		delete(*set, k)
	}
	return true
}

// Pod returns what Ripple remembers of pod uid of k in the restart at at.
func (s *Store) Pod(k workload.Ref, at time.Time, uid types.UID) podrestart.PodMemory {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pods[k].Pod(at, uid)
}

// UpdatePod applies the transition t to what Ripple remembers of pod uid
// of k in the restart at at (a memory of an earlier restart is dropped),
// and returns the result.
func (s *Store) UpdatePod(k workload.Ref, at time.Time, uid types.UID, t func(podrestart.PodMemory) podrestart.PodMemory) podrestart.PodMemory {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.updatePod(k, at, uid, t)
}

// updatePod is UpdatePod; the lock is held.
func (s *Store) updatePod(k workload.Ref, at time.Time, uid types.UID, t func(podrestart.PodMemory) podrestart.PodMemory) podrestart.PodMemory {
	m := s.podsAt(k, at)
	p := t(m.Pods[uid])
	m.Pods[uid] = p
	s.pods[k] = m
	return p
}

// Dial records that the reload endpoint of pod uid of k is called in the
// restart at at (podrestart.PodMemory.Dial); false when it is already, or
// when podrestart.MaxCalls calls are in flight. Answer ends it.
func (s *Store) Dial(k workload.Ref, at time.Time, uid types.UID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ok bool
	s.updatePod(k, at, uid, func(p podrestart.PodMemory) podrestart.PodMemory {
		p, ok = p.Dial(s.calling)
		return p
	})
	if ok {
		s.calling++
		s.calls.Add(1)
	}
	return ok
}

// Answer records how the reload endpoint of pod uid of k answered at t the
// call Dial started (failed: empty for a 2xx), unless its restart is
// forgotten since, and returns the pod's memory.
func (s *Store) Answer(k workload.Ref, at time.Time, uid types.UID, t time.Time, failed string) podrestart.PodMemory {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.calls.Done()
	s.calling--
	m, ok := s.pods[k]
	if !ok || !m.At.Equal(at) {
		return podrestart.PodMemory{}.Answer(t, failed)
	}
	p := m.Pods[uid].Answer(t, failed)
	m.Pods[uid] = p
	return p
}

// KeepRestart keeps rst, the restart in progress of k, for the
// restarter, with the resourceVersion its write was made on (stale; empty
// when it was read, not written); what is remembered of the pods of an
// earlier restart is dropped.
func (s *Store) KeepRestart(k workload.Ref, rst workload.Restart, stale string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.podsAt(k, rst.At)
	m.Restart, m.StaleVersion = rst, stale
	s.pods[k] = m
}

// podsAt is what is remembered of the pods of k in the restart at at
// (an earlier restart's is dropped); the lock is held.
func (s *Store) podsAt(k workload.Ref, at time.Time) podrestart.Memory {
	if s.pods == nil {
		s.pods = map[workload.Ref]podrestart.Memory{}
	}
	return s.pods[k].For(at)
}

// Restart returns the restart in progress of k kept by KeepRestart, and
// the resourceVersion its write was made on; false when there is none.
func (s *Store) Restart(k workload.Ref) (rst workload.Restart, stale string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.pods[k]
	return m.Restart, m.StaleVersion, ok && m.Restart.At.Equal(m.At) && !m.At.IsZero()
}

// ForgetRestart drops what Ripple remembers of the pods of k if it is of
// the restart at at: that restart is over, and a newer one kept since is
// not.
func (s *Store) ForgetRestart(k workload.Ref, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pods[k].At.Equal(at) {
		delete(s.pods, k)
	}
}

// ForgetPods drops what Ripple remembers of the pods of k: its restart is
// over, or it is gone.
func (s *Store) ForgetPods(k workload.Ref) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.pods, k)
}
