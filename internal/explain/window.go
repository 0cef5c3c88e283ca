package explain

import (
	"fmt"
	"time"

	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/reason"
)

// waitWindow is the wait of a reload deferred by the reload window.
const waitWindow = "reloadWindow"

// ReloadWindow is the reload window that governs the workload.
type ReloadWindow struct {
	// Value is the window as written; From where: workload, pod template,
	// namespace or flag.
	Value string `json:"value"`
	From  string `json:"from"`
	// Open says whether a reload may roll now.
	Open bool `json:"open"`
	// Closes is when the current opening ends, while open; NextOpening the
	// next opening, while closed.
	Closes      *time.Time `json:"closes,omitempty"`
	NextOpening *time.Time `json:"nextOpening,omitempty"`
	// Invalid is why the window cannot be read: reloads then wait.
	Invalid string `json:"invalid,omitempty"`
}

// reloadWindow is the workload's reload window; nil when none governs it
// (no value, or "always").
func reloadWindow(f Facts) *ReloadWindow {
	s, value, from, err := plan.ReloadWindow(f.Input.Workload, f.Settings.Plan, f.Now)
	if err != nil {
		return &ReloadWindow{Value: value, From: from, Invalid: err.Error()}
	}
	if s.Always() {
		return nil
	}
	w := &ReloadWindow{Value: value, From: from, Open: s.Open(f.Now)}
	if w.Open {
		end := s.End(f.Now)
		w.Closes = &end
	} else {
		next := s.Next(f.Now)
		w.NextOpening = &next
	}
	return w
}

// windowWait is the wait of a reload the reload window defers, told as
// the controller tells it (its ReloadDeferred notice).
func windowWait(f Facts) (Wait, bool) {
	d := f.Plan.Deferred
	n, ok := f.Plan.Notice(reason.ReloadDeferred)
	if d == nil || !ok {
		return Wait{}, false
	}
	setting := f.Settings.Plan.Keys.ReloadWindow
	if d.From == plan.FromFlag {
		setting = "--reload-window"
	}
	w := Wait{For: waitWindow, Setting: setting, Message: n.Message}
	if d.Invalid == "" {
		next := d.Next
		w.Until = &next
	}
	return w, true
}

// windowText is the reload window for people, e.g. `"Mon-Fri 02:00-04:00
// Europe/Berlin" (from the namespace): closed, next opening ...`.
func windowText(w *ReloadWindow) string {
	switch {
	case w.Invalid != "":
		return fmt.Sprintf("%q (from the %s): invalid, reloads wait: %s", w.Value, w.From, w.Invalid)
	case w.Open:
		return fmt.Sprintf("%q (from the %s): open until %s (%s)", w.Value, w.From, w.Closes.Format("Mon 2006-01-02 15:04 MST"), stamp(*w.Closes))
	}
	return fmt.Sprintf("%q (from the %s): closed, next opening %s (%s)", w.Value, w.From, w.NextOpening.Format("Mon 2006-01-02 15:04 MST"), stamp(*w.NextOpening))
}
