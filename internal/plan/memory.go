package plan

import (
	"time"
)

// Memory is everything Ripple remembers about one workload between
// reconciles; what was applied is on the workload itself (Applied only
// recalls what Ripple's last rollout wrote there, to read a Deployment's
// undo, which overwrites it, more precisely than the workload can).
// Each part changes only through the transitions in this package, pure
// functions of the memory, an input and the time. The controller loads a
// workload's memory from its one store (controller.Store), calls them and
// keeps the result; nothing else writes it.
//
// It lives in memory only. A restart loses it on purpose and nothing that
// a reload depends on: the next change starts a new settle window, the
// next storm trips the flap breaker again, the next rollout may come sooner
// than the minimum interval, and the rollouts in flight are neither
// reported nor counted against the caps (docs/architecture.md, State).
//
// A feature that remembers something more of a workload adds a field here
// and its transitions beside it, not a store of its own.
type Memory struct {
	// Pending is the settle schedule: the change set waiting for its
	// settle window to close.
	Pending Pending
	// Storm is the storm breaker's state: the flap history, the hold and
	// the last rollout.
	Storm Storm
	// Turn is the workload's place in line for a rollout slot; zero when
	// it does not wait for one.
	Turn Turn
	// Rollout is the rollout Ripple started and follows; zero when none.
	Rollout Rollout
	// Applied is the applied record (its JSON) that Ripple's last rollout
	// of the workload wrote with the template. `kubectl rollout undo` of a
	// Deployment restores the record of the revision it returns to along
	// with its template. The workload tells that it did (the restored
	// value is another manager's), but only this tells which data Ripple
	// applied since, so that a config changed after it still rolls
	// (rollback.go).
	Applied string
	// Deferred identifies the change set last reported deferred by its
	// reload window (window.go), so that it is reported once; empty when
	// none is.
	Deferred string
	// Awaiting is the change set a manual policy holds for an approval,
	// as last reported (approval.go); zero when none.
	Awaiting AwaitingState
	// OnTemplate is what Ripple's last rollout wrote on the pod template
	// (ref=digest; for each source the strategy shows there), Tries how
	// many rollouts in a row wrote the record Applied, RevertSeen the
	// OnTemplate whose revert was reported, and Held the record whose
	// rollout is held after MaxAttempts (revert.go).
	OnTemplate, RevertSeen, Held string
	Tries                        int
	// Template is the pod template as Ripple last saw it, and when it saw
	// someone else change it (template.go).
	Template TemplateSeen
	// Canary are the canary notices told of the workload (canary.go).
	Canary string
}

// IsZero reports whether m remembers nothing: the store then drops it.
func (m Memory) IsZero() bool {
	return m.Pending == (Pending{}) && m.Storm.IsZero() && m.Turn == (Turn{}) && m.Rollout.IsZero() && m.Applied == "" &&
		m.Deferred == "" && m.Awaiting == (AwaitingState{}) &&
		m.OnTemplate == "" && m.RevertSeen == "" && m.Held == "" && m.Tries == 0 &&
		m.Template == (TemplateSeen{}) && m.Canary == ""
}

// Notice is the memory after a source event that may change the workload
// arrived at t: it opens or extends the settle window.
func (m Memory) Notice(t time.Time) Memory {
	m.Pending = m.Pending.Notice(t)
	return m
}

// Planned is the memory after plan p, which For made from it: the settle
// and storm-breaker state p keeps, and the pod template it saw.
func (m Memory) Planned(p Plan) Memory {
	m.Pending, m.Storm, m.Template = p.Pending, p.Storm, p.Template
	m.Deferred = deferredAfter(m.Deferred, p)
	m.Canary = canaryTold(p)
	if p.Wait <= 0 {
		// a plan that waits never reached the policy gate
		m.Awaiting = p.awaiting()
	}
	if len(p.Reverted) > 0 {
		m.RevertSeen = m.OnTemplate
	}
	if p.RevertHeld {
		m.Held = p.record
	}
	return m
}

// LeftScope is the memory of a workload whose namespace left the scope:
// nothing is planned for it, so no settle window stays open and no reload
// stays deferred.
func (m Memory) LeftScope() Memory {
	m.Pending, m.Deferred, m.Awaiting = Pending{}, "", AwaitingState{}
	return m
}

// Gone is the memory of a workload that is gone, being deleted or has no
// pod template: nothing. Its rollout is neither complete nor stalled, and
// it leaves the line.
func (m Memory) Gone() Memory { return Memory{} }

// LeaveLine is the memory of a workload that needs no rollout (any more):
// it leaves the line for a rollout slot.
func (m Memory) LeaveLine() Memory {
	m.Turn = Turn{}
	return m
}

// Write is what the write of a plan did, as the controller saw it.
type Write struct {
	// Skipped is set when the kind rolled nothing (workload.Result.Skipped).
	Skipped bool
	// Instant is set when the write is the whole rollout (a CronJob
	// starting a Job, a Job re-created): there is nothing to follow.
	Instant bool
	// StaleVersion is the resourceVersion the write was made on: a cached
	// copy still at it does not show the write yet.
	StaleVersion string
}

// Wrote is the memory after plan p was carried out at t without error:
// its write made (if it has one) or, in dry-run, the rollout it would
// have started. A rollout leaves the line, is followed (unless instant),
// closes the settle window and counts for the minimum rollout interval; a
// write that rolled nothing leaves the line.
func (m Memory) Wrote(p Plan, w Write, t time.Time) Memory {
	rolled := p.Reloads() && !w.Skipped
	if p.Writes() {
		m.Turn = Turn{}
	}
	if rolled && !w.Instant {
		m.Rollout = m.Rollout.started(p, w, t)
	}
	if p.Reloads() || (p.Writes() && len(p.WithTemplate) > 0) {
		m.Pending, m.Deferred = Pending{}, ""
	}
	if rolled || p.WouldReload {
		m.Storm = m.Storm.AfterRollout(p, t)
	}
	if rolled && p.record != "" {
		if p.record == m.Applied {
			m.Tries++
		} else {
			m.Tries = 1
		}
		m.Applied = p.record
	}
	if rolled {
		m.OnTemplate, m.Held = p.onTemplate, ""
	}
	return m
}

// started is the rollout to follow after plan p's write w at t: a second
// write during a rollout keeps its start.
func (r Rollout) started(p Plan, w Write, t time.Time) Rollout {
	began := t
	if r.Followed() {
		began = r.Started
	}
	next := Rollout{Started: began, StaleVersion: w.StaleVersion}
	if rs := p.Update.Restart; rs != nil {
		next.Restart = *rs
	}
	return next
}
