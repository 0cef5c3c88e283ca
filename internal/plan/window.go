package plan

import (
	"fmt"
	"time"

	"github.com/ripple-dev/ripple/internal/window"
)

// Reload windows: a plan that would roll a workload while its reload
// window is closed is deferred. It writes no template (the record of what
// the workload shows may still be written, as in dry-run), and the
// reconcile looks again at the next opening. Nothing about the deferral is
// kept but the change set already reported (Memory.Deferred): the applied
// record and the current digests say there is something to roll, so a
// restart or a new leader defers it again and rolls it in the window, once,
// with the data current then.
//
//	change ──settle──> window closed? ──yes──> deferred (ReloadDeferred, once per change set)
//	                        │ no                  │ next opening (RequeueAfter)
//	                        v                     v
//	                     rolls <───── window open: rolls once, latest data (waves cap applies)
//
// An invalid window defers too: a typo must neither roll at a time the
// owner meant to exclude nor go unnoticed. The plan warns (naming the
// annotation and the position of the error), the reload waits, and the
// reconcile looks again every invalidWindowPoll, so that a fix of the
// Namespace's annotation (whose change brings no reconcile) is seen.

// invalidWindowPoll is how often a reload deferred by an invalid window
// looks at it again.
const invalidWindowPoll = 5 * time.Minute

// Deferred says that a plan's reload waits for the workload's reload
// window.
type Deferred struct {
	// Window is the governing reload-window value, as written; From says
	// where it came from (FromWorkload, FromTemplate, FromNamespace,
	// FromFlag).
	Window, From string
	// Next is the next opening; zero when the window is invalid.
	Next time.Time
	// Invalid is why the window could not be read; the reload then waits
	// until it is fixed.
	Invalid string
	// Began is set on the first plan that defers this change set, so that
	// it is reported once.
	Began bool
	// Closed is set when the workload was in line for a rollout slot: the
	// window closed before its rollout started.
	Closed bool
}

// ReloadWindow returns the reload window governing w at now (Governing:
// the workload's annotation, its template's, its Namespace's, else the
// flag's; with TightenOnly, the floor's when the workload's own would
// widen it: tighten.go), its value as written and where it came from. An
// invalid value is an error naming the annotation (or flag) and the
// position.
func ReloadWindow(w Workload, s Settings, now time.Time) (sched window.Schedule, value, from string, err error) {
	g := governingWindow(w, s, now)
	return g.schedule, g.value, g.from, g.err
}

// governingWindow is ReloadWindow, with why the workload's own window was
// not taken (tighten-only).
func governingWindow(w Workload, s Settings, now time.Time) governedWindow {
	return tightWindow(w, s, parsedWindow(s, w.Governing), now)
}

// parsedWindow reads the window that lookup (Workload.Governing or
// Workload.floor) finds.
func parsedWindow(s Settings, lookup func(key, def string) (string, string)) governedWindow {
	var g governedWindow
	g.value, g.from = lookup(s.Keys.ReloadWindow, s.ReloadWindow)
	g.schedule, g.err = window.Parse(g.value)
	switch {
	case g.err == nil:
	case g.from == FromFlag:
		g.err = fmt.Errorf("flag --reload-window: %q: %w", g.value, g.err)
	default:
		g.err = fmt.Errorf("annotation %q on the %s: %q: %w", s.Keys.ReloadWindow, g.from, g.value, g.err)
	}
	return g
}

// deferral defers p when it would roll the workload while its reload
// window is closed (or invalid): p then writes only the record of what the
// workload shows, and looks again at the next opening. It reports whether
// it deferred p.
func deferral(in Input, p *Plan, period time.Duration) bool {
	if len(p.Changes) == 0 {
		return false
	}
	// The window first: it is open for most workloads, and the write is
	// the dearer question.
	s, value, from, err := ReloadWindow(in.Workload, in.Settings, in.Now)
	if err == nil && s.Open(in.Now) {
		return false
	}
	if u, _ := update(in, *p, period); !u.Reloads() {
		return false // rolls nothing, e.g. the delete of an env var never written
	}
	d := &Deferred{Window: value, From: from, Began: in.Deferred != changeID(p.Changes), Closed: in.Turn.Waiting()}
	wait := invalidWindowPoll
	if err != nil {
		d.Invalid = err.Error()
		if d.Began {
			p.Warnings = append(p.Warnings, err.Error()+"; reloads of this workload wait until it is fixed")
		}
	} else {
		d.Next = s.Next(in.Now)
		wait = d.Next.Sub(in.Now)
	}
	p.Deferred = d
	p.Update, p.Requeue = dryRun(in, *p, period)
	if p.Requeue <= 0 || wait < p.Requeue {
		p.Requeue = wait
	}
	return true
}

// deferredAfter is the change set a memory keeps as reported deferred
// after plan p.
func deferredAfter(reported string, p Plan) string {
	switch {
	case p.Deferred != nil:
		return changeID(p.Changes)
	case len(p.Changes) == 0 || p.Reloads() || p.WouldReload:
		return ""
	}
	return reported
}
