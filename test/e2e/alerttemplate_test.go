package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"k8s.io/client-go/kubernetes"

	"github.com/ripple-dev/ripple/hack/kit"
	"github.com/ripple-dev/ripple/internal/digest"
)

// alertTemplate is docs/alerts.md's example body for a generic JSON
// webhook.
const alertTemplate = `{
  "text": {{ json .Message }},
  "level": {{ json .Level }},
  "reason": {{ json .Reason }},
  "cluster": {{ json .Cluster }},
  "workload": {"namespace": {{ json .Namespace }}, "kind": {{ json .Kind }}, "name": {{ json .Workload }}},
  "configs": {{ json .Configs }},
  "time": {{ json .Time }}
}
`

// With --alert-template, a rollout's alert reaches a local HTTP sink as
// the template's body, sent as JSON; a sink that answers 500 has the
// alert logged once, with the sink and the status, and counted in
// ripple_notifications_failed_total{sink="alert"}.
func TestAlertTemplateRendersAndCountsFailures(t *testing.T) {
	t.Parallel()
	cs := kubernetes.NewForConfigOrDie(kc.Config)
	path := filepath.Join(t.TempDir(), "alert.tmpl")
	if err := os.WriteFile(path, []byte(alertTemplate), 0o600); err != nil {
		t.Fatal(err)
	}

	// A sink that takes the alert.
	ns := newNamespace(t, cs)
	sink := kit.NewAlertSink(t, 0)
	startRipple(t, ns, "--alert-webhook-url="+sink.URL, "--alert-template="+path, "--alert-cluster-name=e2e-cluster")
	rollOnce(t, cs, ns)
	var body map[string]any
	waitFor(t, "the rendered alert", func(context.Context) (bool, error) {
		for _, a := range sink.Received() {
			if b, ok := strings.CutPrefix(a, "application/json "); ok && json.Unmarshal([]byte(b), &body) == nil && body["reason"] == "Reloaded" {
				return true, nil
			}
		}
		return false, nil
	})
	want := map[string]any{
		"level": "good", "reason": "Reloaded", "cluster": "e2e-cluster",
		"workload": map[string]any{"namespace": ns, "kind": "Deployment", "name": "web"},
		"configs":  []any{map[string]any{"kind": "ConfigMap", "name": configName}},
	}
	for k, v := range want {
		gb, _ := json.Marshal(body[k])
		wb, _ := json.Marshal(v)
		if string(gb) != string(wb) {
			t.Errorf("%s = %s, want %s (body %v)", k, gb, wb, body)
		}
	}
	if text, _ := body["text"].(string); !strings.HasPrefix(text, "Reloader detected changes in *"+configName+"*") {
		t.Errorf("text %q", text)
	}
	if tm, _ := body["time"].(string); !strings.HasSuffix(tm, "Z") {
		t.Errorf("time %q, want RFC 3339 in UTC", tm)
	}

	// A sink that answers 500: logged once with the status, and counted.
	failing := newNamespace(t, cs)
	var tries atomic.Int32
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tries.Add(1)
		w.WriteHeader(http.StatusInternalServerError)
	}))
	t.Cleanup(bad.Close)
	addr := freeAddr(t)
	r := startRipple(t, failing, "--alert-webhook-url="+bad.URL+"/hook", "--alert-template="+path, "--metrics-bind-address="+addr)
	if got := kit.Scrape(t, addr)[`ripple_notifications_failed_total{sink="alert"}`]; got != 0 {
		t.Errorf("ripple_notifications_failed_total{sink=alert} = %v before any alert, want 0", got)
	}
	rollOnce(t, cs, failing)
	waitFor(t, "the failed alert counted", func(context.Context) (bool, error) {
		return kit.Scrape(t, addr)[`ripple_notifications_failed_total{sink="alert"}`] == 1, nil
	})
	waitLog(t, r, "notification not delivered")
	lines := r.finalLines("notification not delivered")
	if len(lines) != 1 {
		t.Fatalf("the failure logged %d times, want once: %q", len(lines), lines)
	}
	for _, want := range []string{"--alert-template alert sink", "500", "127.0.0.1"} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("the failure's line %q does not say %s", lines[0], want)
		}
	}
	if strings.Contains(lines[0], "/hook") {
		t.Errorf("the failure's line %q quotes the URL", lines[0])
	}
	t.Logf("the rendered alert: %v\nthe failure's line: %s", body, lines[0])
	if n := tries.Load(); n != 3 {
		t.Errorf("the failing sink was tried %d times, want 3", n)
	}
}

// rollOnce makes Deployment web of ns, reading configName, and changes
// configName once: one rollout, one alert.
func rollOnce(t *testing.T, cs kubernetes.Interface, ns string) {
	t.Helper()
	cm := createConfigMap(t, cs, ns, configName, "v1")
	w := workload{kit.Deployment, ns, "web"}
	w.create(t, cs, spec{configMaps: []string{configName}, annotations: auto()})
	before := waitRolledOut(t, cs, w)
	waitBaseline(t, cs, w, digest.ConfigMap(cm))
	sum := setConfigMapValue(t, cs, ns, configName, "v2")
	expectRollouts(t, cs, oneEach(before, envIs(configEnv, sum)))
}
