package plan

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ripple-dev/ripple/internal/annotation"
)

// The storm breaker keeps a workload whose configs keep changing from
// rolling again and again. Two limits, both decided here from the Storm
// state the reconciler keeps in memory:
//
//   - The flap breaker. Every new change set a plan sees is counted (its
//     time goes into Storm.Seen). When more than Flap.Threshold were seen
//     within Flap.Window, the workload is held: its plans wait instead of
//     rolling, the settle cap included. The hold ends by itself once no new
//     change set has been seen for Flap.Quiet, and the plan then rolls once,
//     with the latest data. Nothing is dropped: a hold is only a wait, and
//     every plan is built from the current data.
//
//   - The minimum rollout interval. A rollout waits until the interval has
//     passed since the workload's last rollout by this Ripple, then rolls
//     the latest data once.
//
//	           > Threshold change sets within Window
//	  rolling ─────────────────────────────────────> held (Warning ReloadHeld)
//	     ^                                             │
//	     └──────── Quiet without a new change set ─────┘ (rolls once, latest data)

// Flap are the flap breaker's limits: a workload whose configs change more
// than Threshold times within Window is held until they have been quiet for
// Quiet. A zero Threshold turns the breaker off.
type Flap struct {
	Threshold     int
	Window, Quiet time.Duration
}

func (f Flap) enabled() bool { return f.Threshold > 0 && f.Window > 0 && f.Quiet > 0 }

// Storm is a workload's storm-breaker state, kept in memory from plan to
// plan. Its size is bounded: Seen never holds more than Threshold+1 times.
// Losing it on a restart forgets a hold (the next storm trips it again)
// and the last rollout (the next rollout may come sooner than the minimum
// interval); it never loses a change.
type Storm struct {
	// ID identifies the last change set counted.
	ID string
	// Seen are when the last change sets were first seen, oldest first,
	// all within the flap window of the last one.
	Seen []time.Time
	// Held is when the current hold began; zero when not held.
	Held time.Time
	// Rolled is when this Ripple last rolled the workload, kept while the
	// minimum rollout interval may apply.
	Rolled time.Time
}

// IsZero reports whether s holds nothing worth keeping.
func (s Storm) IsZero() bool {
	return s.ID == "" && len(s.Seen) == 0 && s.Held.IsZero() && s.Rolled.IsZero()
}

// AfterRollout returns the state to keep after the plan p rolled the
// workload at t: the rollout time, when a minimum interval applies.
func (s Storm) AfterRollout(p Plan, t time.Time) Storm {
	if p.Interval > 0 {
		s.Rolled = t
	}
	return s
}

// Hold says that the flap breaker holds the workload.
type Hold struct {
	// Began is set on the plan that starts the hold, so that it is
	// reported once.
	Began bool
	// Changes is how many change sets were seen within Window.
	Changes int
	// Window and Quiet are the limits in effect.
	Window, Quiet time.Duration
	// Until is the earliest the hold ends: Quiet after the last change
	// set, later if another comes.
	Until time.Time
}

// MinRolloutInterval returns a workload's minimum rollout interval: its
// min-rollout-interval annotation, else def. An invalid annotation gives
// def and a warning.
func MinRolloutInterval(annotations map[string]string, keys annotation.Keys, def time.Duration) (time.Duration, string) {
	v, ok := annotations[keys.MinRolloutInterval]
	if !ok {
		return def, ""
	}
	d, err := time.ParseDuration(strings.TrimSpace(v))
	if err != nil || d < 0 {
		return def, fmt.Sprintf("annotation %q: %q is not a duration such as 5m or 0; using the default %s", keys.MinRolloutInterval, v, def)
	}
	return d, ""
}

// guard applies the storm breaker to p: it sets the storm state to keep,
// the hold and the interval in effect, and returns how long the rollout
// must wait for them.
func guard(in Input, p *Plan) time.Duration {
	interval, warning := MinRolloutInterval(in.Workload.Annotations, in.Keys, in.MinRolloutInterval)
	p.Warnings = appendNonEmpty(p.Warnings, warning)
	p.Interval = interval
	id := ""
	if len(p.Changes) > 0 {
		id = changeID(p.Changes)
	}
	s := in.Storm.flap(id, in.Now, in.Flap)
	p.Resumed = !in.Storm.Held.IsZero() && s.Held.IsZero()
	var wait time.Duration
	if !s.Held.IsZero() {
		until := s.Seen[len(s.Seen)-1].Add(in.Flap.Quiet)
		p.Hold = &Hold{Began: in.Storm.Held.IsZero(), Changes: len(s.Seen), Window: in.Flap.Window, Quiet: in.Flap.Quiet, Until: until}
		wait = until.Sub(in.Now)
	}
	if id != "" && interval > 0 && !s.Rolled.IsZero() {
		if next := s.Rolled.Add(interval); in.Now.Before(next) && next.Sub(in.Now) > wait {
			wait, p.Spaced = next.Sub(in.Now), true
		}
	}
	if s.Rolled.Add(interval).Before(in.Now) {
		s.Rolled = time.Time{} // no interval left to keep
	}
	p.Storm = s
	return wait
}

// flap counts the change set id seen at now (none when id is empty) and
// decides the hold.
func (s Storm) flap(id string, now time.Time, f Flap) Storm {
	if !f.enabled() {
		return Storm{Rolled: s.Rolled}
	}
	next := Storm{ID: id, Rolled: s.Rolled}
	// Only the change sets within the window of now can count; a hold
	// keeps the last one, which its quiet period runs from.
	from := len(s.Seen)
	for from > 0 && now.Sub(s.Seen[from-1]) < f.Window {
		from--
	}
	if from == len(s.Seen) && from > 0 && !s.Held.IsZero() {
		from--
	}
	next.Seen = slices.Clone(s.Seen[from:])
	if id == "" {
		// Nothing to roll (the configs came back to what is applied): nothing
		// to hold either; the change sets seen still count for the next.
		return next
	}
	next.Held = s.Held
	if id != s.ID {
		next.Seen = append(next.Seen, now)
		if n := len(next.Seen) - (f.Threshold + 1); n > 0 {
			next.Seen = next.Seen[n:]
		}
		if len(next.Seen) > f.Threshold && next.Held.IsZero() {
			next.Held = now
		}
	}
	if !next.Held.IsZero() && !now.Before(next.Seen[len(next.Seen)-1].Add(f.Quiet)) {
		next.Held = time.Time{}
	}
	return next
}
