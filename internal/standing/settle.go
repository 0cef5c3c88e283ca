package standing

import (
	"time"

	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/refs"
)

// Planned is the plan of in at in.Now with the settle window the
// controller's memory would hold for its change set, which a reader
// without that memory rebuilds here, one way: the window opened at the
// first write of its changed configs and moved with the last (written
// says when each was written; an unknown time counts as in.Now). `ripple
// explain` asks it with the configs' managedFields times, `ripple plan`
// and the admission warning with the write they judge (Settled).
func Planned(in plan.Input, written func(refs.Ref) time.Time) plan.Plan {
	p := plan.For(in)
	if len(p.Changes) == 0 {
		return p
	}
	var firstWrite, last time.Time
	for _, c := range p.Changes {
		t := written(c.Ref)
		if t.IsZero() {
			t = in.Now
		}
		if firstWrite.IsZero() || t.Before(firstWrite) {
			firstWrite = t
		}
		if t.After(last) {
			last = t
		}
	}
	in.Pending = plan.Pending{}.Notice(firstWrite).Notice(last)
	return plan.For(in)
}

// Settled is the plan of in once the settle window of its change set,
// written as written says, has closed (Planned, then again when the window
// closes): what a write does. A wait of the storm breaker, or for a
// pending Helm release, is a wait of its own and stays.
func Settled(in plan.Input, written func(refs.Ref) time.Time) plan.Plan {
	p := Planned(in, written)
	if p.Wait > 0 && p.Hold == nil && !p.Spaced {
		in.Now = in.Now.Add(p.Wait)
		p = Planned(in, written)
	}
	return p
}
