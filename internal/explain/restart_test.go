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

// Under in-place the report names the containers and the fallback.
func TestBuildShowsInPlace(t *testing.T) {
	s := defaults(t)
	current := strings.Repeat("c", 40)
	f := facts(t, map[string]string{"reloader.stakater.com/auto": "true", s.Plan.Keys.RestartMethod: "in-place",
		s.Plan.Keys.RestartContainers: "app", s.Plan.Keys.InPlaceFallback: "evict", s.Plan.Keys.RestartedAt: "2026-01-02T03:04:05Z"},
		current, current, time.Now(), s)
	f.Kind = Kind{Kind: workload.WithRestarts(workload.Deployment)}
	r := Build(f)
	if r.Restart == nil || r.Restart.Method != workload.RestartInPlace || r.Restart.Fallback != workload.FallbackEvict {
		t.Fatalf("restart %+v, want in-place with the evict fallback", r.Restart)
	}
	var b bytes.Buffer
	if err := Print(&b, FormatTable, r); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); !strings.Contains(out, "in-place, up to 1 pods") || !strings.Contains(out, "containers app, fallback evict") ||
		!strings.Contains(out, "the containers of the pods, not restarted since 2026-01-02T03:04:05Z") {
		t.Errorf("text report does not show the in-place restart:\n%s", out)
	}
}

// Under a reload action the report names the call, its delay and the
// fallback, in text and in JSON.
func TestBuildShowsReloadAction(t *testing.T) {
	s := defaults(t)
	current := strings.Repeat("c", 40)
	f := facts(t, map[string]string{"reloader.stakater.com/auto": "true", s.Plan.Keys.ReloadAction: ":9090/-/reload",
		s.Plan.Keys.ReloadDelay: "90s", s.Plan.Keys.RestartedAt: "2026-01-02T03:04:05Z"},
		current, current, time.Now(), s)
	f.Kind = Kind{Kind: workload.WithRestarts(workload.Deployment)}
	r := Build(f)
	if r.Restart == nil || r.Restart.Method != workload.RestartReloadAction || r.Restart.Action != "POST :9090/-/reload" || r.Restart.Delay != "1m30s" {
		t.Fatalf("restart %+v, want reload-action POST :9090/-/reload after 1m30s", r.Restart)
	}
	var b bytes.Buffer
	if err := Print(&b, FormatTable, r); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); !strings.Contains(out, "calls POST :9090/-/reload 1m30s after a change, fallback none") ||
		!strings.Contains(out, "by their reload action the pods created before 2026-01-02T03:04:05Z") {
		t.Errorf("text report does not show the reload action:\n%s", out)
	}
	b.Reset()
	if err := Print(&b, FormatJSON, r); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); !strings.Contains(out, `"reloadAction": "POST :9090/-/reload"`) || !strings.Contains(out, `"reloadDelay": "1m30s"`) {
		t.Errorf("JSON report does not show the reload action:\n%s", out)
	}
}
