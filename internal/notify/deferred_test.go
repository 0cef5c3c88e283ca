package notify

import "testing"

// A reload deferred by the reload window is a warning naming the configs
// and when it rolls.
func TestAlertDeferred(t *testing.T) {
	r := Reload{Namespace: "team", Kind: "Deployment", Workload: "web", Sources: []Source{{Type: "CONFIGMAP", Name: "app"}},
		Deferred: `the reload window "Mon-Fri 02:00-04:00 UTC" (from the flag) is closed; it rolls once at its next opening`}
	m := AlertMessage(Slack, r, "")
	want := `{"attachments":[{"author_name":"Reloader","color":"warning","text":"Ripple defers the reload of *web* of type *Deployment* in namespace *team* for changes in *app* of type *CONFIGMAP*: the reload window \"Mon-Fri 02:00-04:00 UTC\" (from the flag) is closed; it rolls once at its next opening"}]}`
	if string(m.Body) != want {
		t.Errorf("got %s\nwant %s", m.Body, want)
	}
}
