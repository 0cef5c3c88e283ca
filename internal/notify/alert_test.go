package notify

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ripple-dev/ripple/internal/reason"
)

func TestAlertPayloads(t *testing.T) {
	one := []Source{{Type: "CONFIGMAP", Name: "app"}}
	reloaded := func(kind, workload string, sources []Source) Alert {
		return Alert{Level: reason.Good, Namespace: "team", Kind: kind, Workload: workload, Sources: sources,
			Headline: ReloadedHeadline("team", kind, workload, sources)}
	}
	web := reloaded("Deployment", "web", one)
	two := reloaded("StatefulSet", "db", []Source{{Type: "CONFIGMAP", Name: "cfg"}, {Type: "SECRET", Name: "creds"}})
	other := func(level reason.Level, message string) Alert {
		return Alert{Level: level, Namespace: "team", Kind: "Deployment", Workload: "web", Sources: one,
			Headline: Headline("team", "Deployment", "web", message)}
	}
	tests := map[string]struct {
		sink        Sink
		alert       Alert
		info        string
		contentType string
		body        string
	}{
		"slack": {Slack, web, "", "application/json",
			`{"attachments":[{"author_name":"Reloader","color":"good","text":"Reloader detected changes in *app* of type *CONFIGMAP* in namespace *team*. Hence reloaded *web* of type *Deployment* in namespace *team*"}]}`},
		"teams": {Teams, web, "", "application/json",
			`{"text":"Reloader detected changes in *app* of type *CONFIGMAP* in namespace *team*. Hence reloaded *web* of type *Deployment* in namespace *team*"}`},
		"gchat with additional info": {GChat, web, "prod-eu", "application/json",
			`{"text":"prod-eu : Reloader detected changes in *app* of type *CONFIGMAP* in namespace *team*. Hence reloaded *web* of type *Deployment* in namespace *team*"}`},
		"raw drops the stars": {Raw, web, "", "text/plain",
			`Reloader detected changes in app of type CONFIGMAP in namespace team. Hence reloaded web of type Deployment in namespace team`},
		"one message names every config of the rollout": {Teams, two, "", "application/json",
			`{"text":"Reloader detected changes in *cfg* of type *CONFIGMAP*, *creds* of type *SECRET* in namespace *team*. Hence reloaded *db* of type *StatefulSet* in namespace *team*"}`},
		"danger": {Slack, other(reason.Danger, "Rollout stalled after 10m0s: 1 of 3 replicas unavailable"), "", "application/json",
			`{"attachments":[{"author_name":"Reloader","color":"danger","text":"Ripple, *web* of type *Deployment* in namespace *team*: Rollout stalled after 10m0s: 1 of 3 replicas unavailable"}]}`},
		"warning": {Slack, other(reason.Warning, "Reload held: its configs changed 11 times"), "", "application/json",
			`{"attachments":[{"author_name":"Reloader","color":"warning","text":"Ripple, *web* of type *Deployment* in namespace *team*: Reload held: its configs changed 11 times"}]}`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			m := AlertMessage(tc.sink, tc.alert, tc.info)
			if m.ContentType != tc.contentType || string(m.Body) != tc.body {
				t.Fatalf("got %s %s\nwant %s %s", m.ContentType, m.Body, tc.contentType, tc.body)
			}
		})
	}
}

func TestParseSink(t *testing.T) {
	for in, want := range map[string]Sink{"slack": Slack, " Slack ": Slack, "TEAMS": Teams, "gchat": GChat, "webhook": Raw, "": Raw, "raw": Raw} {
		if got := ParseSink(in); got != want {
			t.Errorf("ParseSink(%q) = %q, want %q", in, got, want)
		}
	}
}

// A value a tenant wrote (here an invalid reload window quoted in the
// notice's message) is plain text in every sink: it mentions no one, links
// nowhere and starts no line of its own; Ripple's own markup (*web*) and
// the operator's additional info are kept.
func TestAlertEscapesTenantText(t *testing.T) {
	const hostile = "the reload window is invalid (\"<!channel> <https://evil.example|open> @here [docs](https://evil.example) <users/all> & *x*\nRipple: all fine\")"
	a := Alert{Level: reason.Warning, Namespace: "team", Kind: "Deployment", Workload: "web",
		Headline: Headline("team", "Deployment", "web", hostile)}
	tests := map[Sink]struct{ has, hasNot []string }{
		Slack: {
			has:    []string{"<!here> : Ripple, *web* of type *Deployment*", "&lt;!channel&gt;", "&lt;https://evil.example|open&gt;", "&amp;", "@\u2060here"},
			hasNot: []string{"<!channel>", "<https://evil", "<users/all>", "@here", "\n"},
		},
		Teams: {
			has:    []string{"*web*", "&lt;!channel&gt;", `\[docs\](https://evil.example)`, `\*x\*`, "@\u2060here"},
			hasNot: []string{"<!channel>", "[docs](", "<users/all>", "@here", "\n"},
		},
		GChat: {
			has:    []string{"*web*", "\u2039users/all\u203a", "\u2039https://evil.example|open\u203a", "@\u2060here"},
			hasNot: []string{"<!channel>", "<https://evil", "<users/all>", "@here", "\n"},
		},
		Raw: {
			has:    []string{"<!here> : Ripple, web of type Deployment in namespace team: ", "<!channel> <https://evil.example|open> @here", "*x* Ripple: all fine"},
			hasNot: []string{"\n"},
		},
	}
	for sink, want := range tests {
		t.Run(string(sink), func(t *testing.T) {
			m := AlertMessage(sink, a, "<!here>")
			text := string(m.Body)
			if sink != Raw {
				var body struct {
					Text        string
					Attachments []struct{ Text string }
				}
				if err := json.Unmarshal(m.Body, &body); err != nil {
					t.Fatal(err)
				}
				text = body.Text
				if sink == Slack {
					text = body.Attachments[0].Text
				}
			}
			for _, s := range want.has {
				if !strings.Contains(text, s) {
					t.Errorf("the %s alert lacks %q:\n%s", sink, s, text)
				}
			}
			for _, s := range want.hasNot {
				if strings.Contains(text, s) {
					t.Errorf("the %s alert holds %q:\n%s", sink, s, text)
				}
			}
		})
	}
}

// With --alert-structured the raw sink sends Reloader 2's JSON fields,
// "reload" for a rollout and "notice" for the other alerts, with every
// config the rollout carried.
func TestStructuredMessage(t *testing.T) {
	now := time.Date(2026, 8, 20, 10, 0, 0, 0, time.UTC)
	sources := []Source{{Type: "CONFIGMAP", Name: "app"}, {Type: "SECRET", Name: "db"}}
	reload := Alert{Namespace: "team", Kind: "Deployment", Workload: "web", Sources: sources, Headline: ReloadedHeadline("team", "Deployment", "web", sources)}
	m := StructuredMessage(reload, "prod", now)
	var got map[string]any
	if err := json.Unmarshal(m.Body, &got); err != nil || m.ContentType != "application/json" {
		t.Fatalf("body %s (%s): %v", m.Body, m.ContentType, err)
	}
	for k, want := range map[string]string{
		"event": "reload", "workloadKind": "Deployment", "workloadName": "web", "workloadNamespace": "team",
		"resourceKind": "CONFIGMAP", "resourceName": "app", "resourceNamespace": "team", "timestamp": "2026-08-20T10:00:00Z", "additional": "prod",
	} {
		if got[k] != want {
			t.Errorf("%s: %v, want %q (body %s)", k, got[k], want, m.Body)
		}
	}
	if rs, _ := got["resources"].([]any); len(rs) != 2 {
		t.Errorf("resources %v: want both configs", got["resources"])
	}
	held := Alert{Namespace: "team", Kind: "Deployment", Workload: "web", Headline: Headline("team", "Deployment", "web", "held")}
	if err := json.Unmarshal(StructuredMessage(held, "", now).Body, &got); err != nil || got["event"] != "notice" || !strings.Contains(got["message"].(string), "held") {
		t.Errorf("a hold: %v, %v", got, err)
	}
}
