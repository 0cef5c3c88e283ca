package notify

import "testing"

func TestAlertPayloads(t *testing.T) {
	one := Reload{Namespace: "team", Kind: "Deployment", Workload: "web", Sources: []Source{{Type: "CONFIGMAP", Name: "app"}}}
	two := Reload{Namespace: "team", Kind: "StatefulSet", Workload: "db", Sources: []Source{{Type: "CONFIGMAP", Name: "cfg"}, {Type: "SECRET", Name: "creds"}}}
	held := one
	held.Held = "changed 11 times within 1m0s; it rolls once when quiet"
	stalled := one
	stalled.Sources, stalled.Stalled = nil, "after 10m0s: 1 of 3 replicas unavailable"
	pending := one
	pending.Pending = "waiting since 2026-11-25T14:00:00Z; approve with `ripple approve deployment/web -n team`"
	notified := one
	notified.Notify = true
	tests := map[string]struct {
		sink        Sink
		reload      Reload
		info        string
		contentType string
		body        string
	}{
		"slack": {Slack, one, "", "application/json",
			`{"attachments":[{"author_name":"Reloader","color":"good","text":"Reloader detected changes in *app* of type *CONFIGMAP* in namespace *team*. Hence reloaded *web* of type *Deployment* in namespace *team*"}]}`},
		"teams": {Teams, one, "", "application/json",
			`{"text":"Reloader detected changes in *app* of type *CONFIGMAP* in namespace *team*. Hence reloaded *web* of type *Deployment* in namespace *team*"}`},
		"gchat with additional info": {GChat, one, "prod-eu", "application/json",
			`{"text":"prod-eu : Reloader detected changes in *app* of type *CONFIGMAP* in namespace *team*. Hence reloaded *web* of type *Deployment* in namespace *team*"}`},
		"raw drops the stars": {Raw, one, "", "text/plain",
			`Reloader detected changes in app of type CONFIGMAP in namespace team. Hence reloaded web of type Deployment in namespace team`},
		"one message names every config of the rollout": {Teams, two, "", "application/json",
			`{"text":"Reloader detected changes in *cfg* of type *CONFIGMAP*, *creds* of type *SECRET* in namespace *team*. Hence reloaded *db* of type *StatefulSet* in namespace *team*"}`},
		"a stalled rollout is danger": {Slack, stalled, "", "application/json",
			`{"attachments":[{"author_name":"Reloader","color":"danger","text":"The rollout Ripple started of *web* of type *Deployment* in namespace *team* stalled after 10m0s: 1 of 3 replicas unavailable"}]}`},
		"a hold is a warning": {Slack, held, "", "application/json",
			`{"attachments":[{"author_name":"Reloader","color":"warning","text":"Ripple holds the reload of *web* of type *Deployment* in namespace *team*: *app* of type *CONFIGMAP* changed 11 times within 1m0s; it rolls once when quiet"}]}`},
		"a reload waiting for approval is a warning": {Slack, pending, "", "application/json",
			`{"attachments":[{"author_name":"Reloader","color":"warning","text":"Ripple waits for an approval to reload *web* of type *Deployment* in namespace *team* for changes in *app* of type *CONFIGMAP*: waiting since 2026-11-25T14:00:00Z; approve with ` + "`ripple approve deployment/web -n team`" + `"}]}`},
		"notify tells what it would reload": {Raw, notified, "", "text/plain",
			`Ripple detected changes in app of type CONFIGMAP in namespace team and would reload web of type Deployment (reload policy notify: not reloaded)`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			m := AlertMessage(tc.sink, tc.reload, tc.info)
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
