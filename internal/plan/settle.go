package plan

import (
	"fmt"
	"strings"
	"time"

	"github.com/ripple-dev/ripple/internal/annotation"
	"github.com/ripple-dev/ripple/internal/strategy"
)

// maxSettleFactor bounds the settle window: a workload whose sources keep
// changing is still rolled after this many windows from the first change.
const maxSettleFactor = 10

// SettleWindow returns a workload's settle window: its settle-window
// annotation, else def. An invalid annotation gives def and a warning.
func SettleWindow(annotations map[string]string, keys annotation.Keys, def time.Duration) (time.Duration, string) {
	v, ok := annotations[keys.SettleWindow]
	if !ok {
		return def, ""
	}
	d, err := time.ParseDuration(strings.TrimSpace(v))
	if err != nil || d < 0 {
		return def, fmt.Sprintf("annotation %q: %q is not a duration such as 5s or 0; using the default %s", keys.SettleWindow, v, def)
	}
	return d, ""
}

// settle returns the settle state to keep and how long to wait before
// acting on the change set id: until window has passed without a new change
// set, and no longer than maxSettleFactor windows after the first. A
// pending state without an ID was noticed when a source event arrived
// (Notice): the change set is the one that event brought, seen then.
func settle(pending Pending, id string, window time.Duration, now time.Time) (Pending, time.Duration) {
	if window <= 0 {
		return Pending{}, 0
	}
	if pending.First.IsZero() {
		pending.First = now
	}
	switch {
	case pending.ID == "" && !pending.Last.IsZero():
		pending.ID = id
	case pending.ID != id:
		pending.ID, pending.Last = id, now
	}
	deadline := pending.Last.Add(window)
	if limit := pending.First.Add(maxSettleFactor * window); limit.Before(deadline) {
		deadline = limit
	}
	return pending, max(deadline.Sub(now), 0)
}

// Notice records that a source event for the workload arrived at t,
// before any reconcile identified the change set it brings.
func (p Pending) Notice(t time.Time) Pending {
	switch {
	case p.First.IsZero():
		return Pending{First: t, Last: t}
	case p.ID == "":
		p.Last = t
	}
	return p
}

// changeID identifies a change set.
func changeID(changes []strategy.Change) string {
	var b strings.Builder
	for _, c := range changes {
		b.WriteString(c.Ref.String() + "=" + c.Hash + ";")
	}
	return b.String()
}
