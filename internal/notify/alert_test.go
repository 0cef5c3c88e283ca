package notify

import (
	"testing"

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
