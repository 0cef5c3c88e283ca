package explain

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/ripple-dev/ripple/internal/workload"
)

// The report names the restart method in effect, and the restart in
// progress; the template method (the default) is not shown.
func TestBuildShowsRestartMethod(t *testing.T) {
	s := defaults(t)
	current := strings.Repeat("c", 40)
	kind := Kind{Kind: workload.WithRestarts(workload.Deployment)}
	f := facts(t, map[string]string{"reloader.stakater.com/auto": "true"}, current, current, time.Now(), s)
	f.Kind = kind
	if r := Build(f); r.Restart != nil {
		t.Errorf("restart %+v for the template method, want none", r.Restart)
	}
	f = facts(t, map[string]string{"reloader.stakater.com/auto": "true", s.Plan.Keys.RestartMethod: "evict",
		s.Plan.Keys.MaxUnavailable: "2", s.Plan.Keys.RestartedAt: "2026-01-02T03:04:05Z"}, current, current, time.Now(), s)
	f.Kind = kind
	r := Build(f)
	if r.Restart == nil || r.Restart.Method != "evict" || r.Restart.MaxUnavailable != 2 || r.Restart.Since == nil {
		t.Fatalf("restart %+v, want evict, 2, since the restart time", r.Restart)
	}
	var b bytes.Buffer
	if err := Print(&b, FormatTable, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "Restart:") || !strings.Contains(b.String(), "evict, up to 2 pods") || !strings.Contains(b.String(), "2026-01-02T03:04:05Z") {
		t.Errorf("text report does not show the restart:\n%s", b.String())
	}
}
