package config

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ripple-dev/ripple/internal/plan"
)

// The chart takes ripple.reloadPolicy exactly as --reload-policy does:
// each value the flag accepts (any case, spaces around) the chart's
// values.schema.json accepts, and each value the flag refuses the schema
// refuses, so a value fails at `helm install` or at neither. The schema's
// entry is read as helm's validator reads it: an enum, if any, and a
// pattern, matched with Go's regexp as helm's validator does.
func TestReloadPolicyChartTakesWhatTheFlagTakes(t *testing.T) {
	entry := chartValueSchema(t, "ripple", "reloadPolicy")
	for key := range entry {
		if !slices.Contains([]string{"type", "enum", "pattern", "description"}, key) {
			t.Fatalf("ripple.reloadPolicy's schema has %q, which this test does not evaluate", key)
		}
	}
	var pattern *regexp.Regexp
	if p, ok := entry["pattern"].(string); ok {
		pattern = regexp.MustCompile(p)
	}
	enum, _ := entry["enum"].([]any)
	schemaTakes := func(v string) bool {
		return (enum == nil || slices.Contains(enum, any(v))) && (pattern == nil || pattern.MatchString(v))
	}
	for _, v := range []string{
		"", "auto", "manual", "notify", "Manual", "MANUAL", "Notify", "AuTo", " manual ", "\tnotify",
		"later", "manually", "man ual", "auto,manual", "none", "0",
	} {
		_, err := parse(t, nil, "--reload-policy="+v)
		if err != nil && !strings.Contains(err.Error(), "--reload-policy") {
			t.Fatalf("--reload-policy=%q: %v, an error that does not name the flag", v, err)
		}
		if flag, chart := err == nil, schemaTakes(v); flag != chart {
			t.Errorf("ripple.reloadPolicy %q: the flag accepts it: %t (%v), the chart: %t", v, flag, err, chart)
		}
	}
	// The policy the flag reads is the planner's, whatever the case.
	cfg, err := parse(t, nil, "--reload-policy= Manual ")
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.PlanSettings(time.Time{}).ReloadPolicy; mustPolicy(t, got) != plan.Manual {
		t.Errorf("--reload-policy= Manual : the planner reads %q as %q", got, mustPolicy(t, got))
	}
}

func mustPolicy(t *testing.T, v string) plan.Policy {
	t.Helper()
	p, err := plan.ParsePolicy(v)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// chartValueSchema is the schema of the chart value at path
// (deploy/helm/ripple/values.schema.json).
func chartValueSchema(t *testing.T, path ...string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "helm", "ripple", "values.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var node map[string]any
	if err := json.Unmarshal(b, &node); err != nil {
		t.Fatal(err)
	}
	for _, p := range path {
		props, _ := node["properties"].(map[string]any)
		if node, _ = props[p].(map[string]any); node == nil {
			t.Fatalf("values.schema.json has no %s", strings.Join(path, "."))
		}
	}
	return node
}
