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

// ReleasePoll is how often a change set that waits for a pending Helm
// release looks again; ReleaseHoldMax bounds that wait from the change
// set's first sight, for a release left pending (a helm process killed
// mid-upgrade leaves its record so) or a record forged by a tenant holds
// only that long.
const (
	ReleasePoll    = time.Second
	ReleaseHoldMax = 5 * time.Minute
)

// holdsForRelease reports whether the change set of pending waits for the
// workload's pending Helm release: a `helm upgrade` writes the configs
// first and the workload after, which on a large chart or a busy API
// server can be seconds later than the settle window; waiting for the
// release lets its template change apply the configs (template.go), one
// rollout. A settle window of 0 asks for no wait at all.
func holdsForRelease(in Input, pending Pending, window time.Duration) bool {
	return in.Workload.Release != "" && window > 0 && in.Now.Sub(pending.First) < ReleaseHoldMax
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
