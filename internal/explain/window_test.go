package explain

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/ripple-dev/ripple/internal/standing"
)

// explain shows the reload window (value, where from, open or the next
// opening) and a reload it defers, as the state and a wait.
func TestBuildReloadWindow(t *testing.T) {
	written := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) // a Friday
	old, current := strings.Repeat("a", 40), strings.Repeat("b", 40)
	meta := func(window string) map[string]string {
		return map[string]string{"reloader.stakater.com/auto": "true", "ripple.dev/settle-window": "0s", "ripple.dev/reload-window": window}
	}

	r := Build(facts(t, meta("Sat 00:00-01:00 UTC"), old, current, written, defaults(t)))
	if r.State != standing.Waiting || r.Reason != "ReloadDeferred" || !strings.HasPrefix(r.Verdict, `Reload for changes in ConfigMap "app" deferred: the reload window "Sat 00:00-01:00 UTC" (from the workload) is closed`) {
		t.Errorf("%s (%s): %s; want Waiting (ReloadDeferred)", r.State, r.Reason, r.Verdict)
	}
	next := time.Date(2026, 1, 3, 0, 0, 0, 0, time.UTC)
	w := r.ReloadWindow
	if w == nil || w.Open || w.From != "workload" || w.NextOpening == nil || !w.NextOpening.Equal(next) {
		t.Fatalf("reload window %+v, want closed, from the workload, next opening %s", w, next)
	}
	if len(r.Waiting) != 1 || r.Waiting[0].For != "reloadWindow" || !r.Waiting[0].Until.Equal(next) || r.Waiting[0].Setting != "ripple.dev/reload-window" {
		t.Errorf("waiting %+v, want the reload window until %s", r.Waiting, next)
	}
	open := Build(facts(t, meta("always"), old, current, written, defaults(t)))
	if l := (List{Items: []Report{open, r}}).Awaiting(); len(l.Items) != 1 || l.Items[0].Reason != "ReloadDeferred" {
		t.Errorf("--pending lists %+v, want the deferred workload only", l.Items)
	}
	var b bytes.Buffer
	if err := Print(&b, FormatTable, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `Reload window:`) || !strings.Contains(b.String(), "closed, next opening Sat 2026-01-03 00:00 UTC") {
		t.Errorf("text output does not show the window:\n%s", b.String())
	}

	// open now: up to date, with when it closes
	r = Build(facts(t, meta("Fri 03:00-04:00 UTC"), current, current, written, defaults(t)))
	if w := r.ReloadWindow; w == nil || !w.Open || w.Closes == nil || !w.Closes.Equal(time.Date(2026, 1, 2, 4, 0, 0, 0, time.UTC)) {
		t.Errorf("reload window %+v, want open until 04:00", w)
	}
	// invalid: the position, and the reload waits
	r = Build(facts(t, meta("Fri 3:00-04:00 UTC"), old, current, written, defaults(t)))
	if w := r.ReloadWindow; w == nil || !strings.Contains(w.Invalid, "at character 5 (window 1)") || r.Reason != "ReloadDeferred" {
		t.Errorf("reload window %+v, reason %s; want invalid naming the position, deferred", w, r.Reason)
	}
	// none governs: no window shown
	if r := Build(facts(t, meta("always"), current, current, written, defaults(t))); r.ReloadWindow != nil {
		t.Errorf("always: reload window %+v, want none", r.ReloadWindow)
	}
}
