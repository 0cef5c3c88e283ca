package chart

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ripple-dev/ripple/hack/helmchart"
	"github.com/ripple-dev/ripple/internal/metrics"
)

// external are the series the dashboard and alerts read that Ripple does
// not define: controller-runtime's work queues, Prometheus' scrape health
// and kube-state-metrics' pod readiness.
var external = []string{"workqueue_depth", "up", "kube_pod_status_ready"}

// notYetExported are metric names the dashboard already shows that Ripple
// does not register yet. The test fails once one of them is registered, so
// the entry is removed then.
var notYetExported = []string{}

// exportedMetrics returns the names internal/metrics registers.
func exportedMetrics(t *testing.T) []string {
	t.Helper()
	reg := &describingRegistry{}
	if _, err := metrics.New(reg, true); err != nil {
		t.Fatal(err)
	}
	return reg.names()
}

// describingRegistry records the names of the metrics registered on it.
type describingRegistry struct {
	mu    sync.Mutex
	descs []string
}

var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

func (r *describingRegistry) Register(c prometheus.Collector) error {
	ch := make(chan *prometheus.Desc)
	go func() { c.Describe(ch); close(ch) }()
	r.mu.Lock()
	defer r.mu.Unlock()
	for d := range ch {
		if m := fqName.FindStringSubmatch(d.String()); m != nil {
			r.descs = append(r.descs, m[1])
		}
	}
	return nil
}

func (r *describingRegistry) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		_ = r.Register(c)
	}
}

func (r *describingRegistry) Unregister(prometheus.Collector) bool { return false }

func (r *describingRegistry) names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.descs)
}

var seriesName = regexp.MustCompile(`\b(?:reloader|ripple|workqueue|kube)_[a-z0-9_]+\b|\bup\b`)

// checkExpr fails t for every series an expression reads that nothing
// exports. Histogram series (_bucket, _sum, _count) count as their metric.
func checkExpr(t *testing.T, where, expr string, known []string) {
	t.Helper()
	for _, name := range seriesName.FindAllString(expr, -1) {
		base := name
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if b, ok := strings.CutSuffix(name, suffix); ok && slices.Contains(known, b) {
				base = b
			}
		}
		if !slices.Contains(known, base) {
			t.Errorf("%s reads %s, which Ripple does not export: %s", where, name, expr)
		}
	}
}

func knownMetrics(t *testing.T) []string {
	exported := exportedMetrics(t)
	for _, name := range notYetExported {
		if slices.Contains(exported, name) {
			t.Errorf("%s is exported now: remove it from notYetExported", name)
		}
	}
	return slices.Concat(exported, external, notYetExported)
}

// TestDashboard checks the Grafana dashboard: valid JSON, a panel for each
// question an operator asks (reload rate, failures, latency, coalescing,
// queue depth, leader), and queries that read only series Ripple exports.
func TestDashboard(t *testing.T) {
	t.Parallel()
	chart, err := helmchart.Dir()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(chart, "files", "dashboards", "ripple.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		UID    string `json:"uid"`
		Title  string `json:"title"`
		Panels []struct {
			Title   string `json:"title"`
			Type    string `json:"type"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Name string `json:"name"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("the dashboard is not valid JSON: %v", err)
	}
	if d.UID == "" || d.Title == "" {
		t.Error("the dashboard needs a uid and a title")
	}
	known := knownMetrics(t)
	var titles []string
	for _, p := range d.Panels {
		titles = append(titles, strings.ToLower(p.Title))
		if p.Type != "row" && len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, q := range p.Targets {
			checkExpr(t, "panel "+p.Title, q.Expr, known)
			if !strings.Contains(q.Expr, `namespace="$namespace",job=~"$job"`) {
				t.Errorf("panel %q does not filter by the dashboard's namespace and job: %s", p.Title, q.Expr)
			}
		}
	}
	for _, topic := range []string{"reload rate", "fail", "latency", "coalesc", "queue depth", "leader"} {
		if !slices.ContainsFunc(titles, func(s string) bool { return strings.Contains(s, topic) }) {
			t.Errorf("no panel about %q among %q", topic, titles)
		}
	}

	// The chart ships it in a ConfigMap for Grafana's sidecar.
	_, objs := render(t, helmchart.Release{Name: relName, Namespace: relNS, Values: []map[string]any{{"ripple": map[string]any{"dashboards": map[string]any{"enabled": true}}}}})
	cms := find(objs, "ConfigMap")
	if len(cms) != 1 {
		t.Fatalf("%d ConfigMaps, want the dashboard's", len(cms))
	}
	if got, _, _ := unstructured.NestedString(cms[0].Object, "data", "ripple.json"); strings.TrimSpace(got) != strings.TrimSpace(string(b)) {
		t.Error("the ConfigMap does not hold the dashboard file unchanged")
	}
	if cms[0].GetLabels()["grafana_dashboard"] != "1" {
		t.Error("the dashboard ConfigMap lacks the grafana_dashboard label the sidecar looks for")
	}
}

// TestAlerts checks the PrometheusRule: the alerts an operator needs
// (failures, flapping, not ready), thresholds from the values, and
// expressions that read only series Ripple exports, for this release.
func TestAlerts(t *testing.T) {
	t.Parallel()
	_, objs := render(t, helmchart.Release{Name: relName, Namespace: relNS, Values: []map[string]any{{"ripple": map[string]any{"alerts": map[string]any{
		"enabled": true, "flappingRolloutsPerMinute": 12, "reloadFailuresFor": "3m", "additionalLabels": map[string]any{"team": "platform"},
	}}}}})
	rules := find(objs, "PrometheusRule")
	if len(rules) != 1 {
		t.Fatalf("%d PrometheusRules, want 1", len(rules))
	}
	groups, _, _ := unstructured.NestedSlice(rules[0].Object, "spec", "groups")
	known := knownMetrics(t)
	alerts := map[string]map[string]any{}
	for _, g := range groups {
		rs, _, _ := unstructured.NestedSlice(g.(map[string]any), "rules")
		for _, x := range rs {
			rule := x.(map[string]any)
			name, _ := rule["alert"].(string)
			expr, _ := rule["expr"].(string)
			alerts[name] = rule
			checkExpr(t, "alert "+name, expr, known)
			if !strings.Contains(expr, `namespace="`+relNS+`"`) {
				t.Errorf("alert %s is not limited to this release's namespace: %s", name, expr)
			}
			if labels, _, _ := unstructured.NestedStringMap(rule, "labels"); labels["team"] != "platform" || labels["severity"] == "" {
				t.Errorf("alert %s labels %v: want a severity and the additional labels", name, labels)
			}
		}
	}
	var names []string
	for n := range alerts {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, want := range []string{"RippleReloadFailures", "RippleReloadsFlapping", "RippleReloadsHeld", "RippleLeaderFlapping", "RippleNotReady", "RippleDown", "RippleNoLeader"} {
		if alerts[want] == nil {
			t.Errorf("no alert %s among %v", want, names)
		}
	}
	if f := alerts["RippleReloadFailures"]; f != nil && f["for"] != "3m" {
		t.Errorf("RippleReloadFailures waits %v, want the value's 3m", f["for"])
	}
	if f := alerts["RippleReloadsFlapping"]; f != nil && !strings.Contains(f["expr"].(string), "> 12") {
		t.Errorf("RippleReloadsFlapping ignores flappingRolloutsPerMinute: %v", f["expr"])
	}
}
