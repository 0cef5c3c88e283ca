package notify

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ripple-dev/ripple/internal/reason"
)

// genericJSON is docs/alerts.md's example for a generic JSON webhook
// (TestDocsExampleIsTested keeps them alike).
const genericJSON = `{
  "text": {{ json .Message }},
  "level": {{ json .Level }},
  "reason": {{ json .Reason }},
  "cluster": {{ json .Cluster }},
  "workload": {"namespace": {{ json .Namespace }}, "kind": {{ json .Kind }}, "name": {{ json .Workload }}},
  "configs": {{ json .Configs }},
  "time": {{ json .Time }}
}`

func TestDocsExampleIsTested(t *testing.T) {
	b, err := os.ReadFile("../../docs/alerts.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "```text\n"+genericJSON+"\n```") {
		t.Error("docs/alerts.md's example template is not this test's genericJSON")
	}
}

// rolledAlert is the alert of a rollout of Deployment team/web.
func rolledAlert(sources ...Source) Alert {
	a := Alert{Level: reason.Good, Reason: reason.Reloaded, Namespace: "team", Kind: "Deployment", Workload: "web", Sources: sources}
	a.Headline = ReloadedHeadline("team", "Deployment", "web", sources)
	return a
}

func TestTemplateRendersTheFields(t *testing.T) {
	tpl, err := ParseTemplate(genericJSON, "prod-eu", "on call: team-a")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 2, 15, 4, 5, 0, time.FixedZone("CET", 3600))
	m, err := tpl.Render(rolledAlert(Source{Kind: "ConfigMap", Type: "CONFIGMAP", Name: "app"}, Source{Kind: "Secret", Type: "SECRET", Name: "creds"}), now)
	if err != nil {
		t.Fatal(err)
	}
	if m.ContentType != "application/json" || m.Namespace != "team" {
		t.Errorf("content type %q, namespace %q", m.ContentType, m.Namespace)
	}
	var got map[string]any
	if err := json.Unmarshal(m.Body, &got); err != nil {
		t.Fatalf("body %s: %v", m.Body, err)
	}
	want := map[string]any{
		"text":     "Reloader detected changes in *app* of type *CONFIGMAP*, *creds* of type *SECRET* in namespace *team*. Hence reloaded *web* of type *Deployment* in namespace *team*",
		"level":    "good",
		"reason":   "Reloaded",
		"cluster":  "prod-eu",
		"workload": map[string]any{"namespace": "team", "kind": "Deployment", "name": "web"},
		"configs":  []any{map[string]any{"kind": "ConfigMap", "name": "app"}, map[string]any{"kind": "Secret", "name": "creds"}},
		"time":     "2026-12-02T14:04:05Z",
	}
	gb, _ := json.Marshal(got)
	wb, _ := json.Marshal(want)
	if string(gb) != string(wb) {
		t.Errorf("rendered\n%s\nwant\n%s", gb, wb)
	}
	tpl, err = ParseTemplate(`{{ .AdditionalInfo }}: {{ .Message }}`, "", "on call: team-a")
	if err != nil {
		t.Fatal(err)
	}
	if m, _ := tpl.Render(rolledAlert(), now); m.ContentType != "text/plain" || !strings.HasPrefix(string(m.Body), "on call: team-a: Reloader detected") {
		t.Errorf("a text template: %s %q", m.ContentType, m.Body)
	}
}

// A tenant writes names and Event messages that an alert quotes: with the
// json function, no value can end its string, add a field or a line.
func TestTemplateJSONHoldsAgainstATenantValue(t *testing.T) {
	tpl, err := ParseTemplate(`{"text": {{ json .Message }}, "workload": {{ json .Workload }}}`, "", "")
	if err != nil {
		t.Fatal(err)
	}
	hostile := "x\", \"admin\": true, \"y\": \"\n</script>\\"
	a := Alert{Level: reason.Warning, Reason: reason.RolloutStalled, Namespace: "team", Kind: "Deployment", Workload: hostile,
		Headline: Headline("team", "Deployment", hostile, "stalled: \"}\n{\"")}
	m, err := tpl.Render(a, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(m.Body, &got); err != nil {
		t.Fatalf("body %s is not JSON: %v", m.Body, err)
	}
	if len(got) != 2 || got["workload"] != hostile || !strings.Contains(got["text"].(string), hostile) {
		t.Errorf("fields %v: the tenant's value changed the body", got)
	}
	if m.ContentType != "application/json" {
		t.Errorf("content type %q", m.ContentType)
	}
}

func TestTemplateRefusedAtParse(t *testing.T) {
	for name, text := range map[string]string{
		"syntax":          `{"text": {{ json .Message }`,
		"unknown field":   `{{ .Secret }}`,
		"unknown func":    `{{ slack .Message }}`,
		"fails to render": `{{ index .Configs 5 }}`,
		"too large":       strings.Repeat("x", MaxTemplateSize+1),
	} {
		if _, err := ParseTemplate(text, "", ""); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestTemplateBodyBound(t *testing.T) {
	// Each config's name, repeated: a few large names pass the bound.
	tpl, err := ParseTemplate(`{{ range .Configs }}{{ .Name }}{{ .Name }}{{ .Name }}{{ .Name }}{{ end }}`, "", "")
	if err != nil {
		t.Fatal(err)
	}
	var sources []Source
	for range 100 {
		sources = append(sources, Source{Kind: "ConfigMap", Name: strings.Repeat("n", 253)})
	}
	if _, err := tpl.Render(rolledAlert(sources...), time.Now()); err != nil {
		t.Fatalf("100 configs, about 100 KiB: %v", err)
	}
	for range 200 {
		sources = append(sources, Source{Kind: "ConfigMap", Name: strings.Repeat("n", 253)})
	}
	if _, err := tpl.Render(rolledAlert(sources...), time.Now()); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("300 configs, about 300 KiB: error %v, want the body bound", err)
	}
}

// A message not delivered after its attempts is counted once and logged
// once, with the sink, the host and the status.
func TestFailureCountedAndLoggedWithStatus(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer srv.Close()
	var failed atomic.Int32
	logs := &capture{}
	q, _ := NewQueue(srv.URL+"/hook", Options{Attempts: 2, Backoff: time.Millisecond, OnFail: func() { failed.Add(1) },
		Sink: "the --alert-template alert sink (ALERT_WEBHOOK_URL)"}, logs.logger())
	start(t, q)
	q.Send(Message{Body: []byte("x"), What: "alert for Deployment team/web"})
	waitUntil(t, "the failure counted", func() bool { return failed.Load() == 1 })
	time.Sleep(50 * time.Millisecond)
	out := logs.String()
	if n := strings.Count(out, "not delivered"); n != 1 || failed.Load() != 1 {
		t.Fatalf("logged %d times, counted %d; want once each:\n%s", n, failed.Load(), out)
	}
	for _, want := range []string{"--alert-template alert sink", `"status"=500`, `"host"=`} {
		if !strings.Contains(out, want) {
			t.Errorf("log %q does not say %s", out, want)
		}
	}
}

// An alert that fails to render is not sent: logged once and counted.
func TestTemplateRenderFailureCounted(t *testing.T) {
	tpl, err := ParseTemplate(`{{ index .Configs 0 }}`, "", "")
	if err != nil {
		t.Fatal(err)
	}
	var sent []Message
	failed := 0
	logs := &capture{}
	send := tpl.Sender(func(m Message) { sent = append(sent, m) }, func() { failed++ }, logs.logger(), time.Now)
	send(rolledAlert(Source{Kind: "ConfigMap", Name: "app"}))
	send(Alert{Level: reason.Warning, Reason: reason.ReloadHeld, Namespace: "team", Kind: "Deployment", Workload: "db"}) // no config: index fails
	if len(sent) != 1 || failed != 1 || strings.Count(logs.String(), "alert not sent") != 1 || !strings.Contains(logs.String(), "Deployment team/db") {
		t.Errorf("sent %d, failed %d, logs:\n%s", len(sent), failed, logs)
	}
}
