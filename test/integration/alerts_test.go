package integration

import (
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/hack/kit"
	"github.com/ripple-dev/ripple/internal/refs"
)

// With ALERT_ON_RELOAD=true each rollout sends one alert in the sink's
// Reloader payload, naming every config the rollout carries.
func TestAlertsPerSink(t *testing.T) {
	const text = `Reloader detected changes in *cfg* of type *CONFIGMAP*, *creds* of type *SECRET* in namespace *%NS%*. Hence reloaded *app* of type *Deployment* in namespace *%NS%*`
	tests := map[string]string{
		"slack":   `application/json {"attachments":[{"author_name":"Reloader","color":"good","text":"` + text + `"}]}`,
		"teams":   `application/json {"text":"` + text + `"}`,
		"gchat":   `application/json {"text":"` + text + `"}`,
		"webhook": `text/plain Reloader detected changes in cfg of type CONFIGMAP, creds of type SECRET in namespace %NS%. Hence reloaded app of type Deployment in namespace %NS%`,
	}
	for sink, want := range tests {
		t.Run(sink, func(t *testing.T) {
			t.Parallel()
			srv := kit.NewAlertSink(t, 0)
			e := newEnv(t)
			e.environ = map[string]string{"ALERT_ON_RELOAD": "true", "ALERT_SINK": sink, "ALERT_WEBHOOK_URL": srv.URL + "/alert"}
			// The window must hold the test's two config writes, which
			// take their time on a loaded machine: one change set, one alert.
			e.run(t, "--settle-window=2s")
			deploy := kit.Deployment
			cm, sec := refs.Ref{Kind: refs.ConfigMap, Name: "cfg"}, refs.Ref{Kind: refs.Secret, Name: "creds"}
			e.newConfig(t, cm)
			e.newConfig(t, sec)
			w := e.newWorkload(t, deploy, "app", ann(autoKey, "true"), envFrom(cm.Kind, cm.Name), envFrom(sec.Kind, sec.Name))
			e.waitFor(t, w, "the baseline record", hasBaseline)
			e.setConfig(t, cm, "v2")
			e.waitApplied(t, deploy, w, sec, e.setConfig(t, sec, "v2"))
			e.waitFor(t, w, "the alert", func(client.Object) bool { return len(srv.Received()) > 0 })
			time.Sleep(300 * time.Millisecond) // a second alert would show
			got := srv.Received()
			want = strings.ReplaceAll(want, "%NS%", e.ns)
			if len(got) != 1 || got[0] != want {
				t.Fatalf("alerts:\n%q\nwant one:\n%q", got, want)
			}
		})
	}
}

// A sink that hangs delays no reload. Each attempt to deliver to it ends
// when Ripple gives up on it (notify's 10 s timeout), so a reload that
// waited for the delivery of the alert before it would come after all of
// that alert's attempts (3, over 30 s): when the last reload is applied,
// the sink must still be on the first alert's attempts. The bound is the
// delivery's own timeout, not a guess at how fast a reload is.
func TestHungAlertSinkDelaysNothing(t *testing.T) {
	t.Parallel()
	srv := kit.NewAlertSink(t, time.Minute)
	e := newEnv(t)
	e.environ = map[string]string{"ALERT_ON_RELOAD": "true", "ALERT_SINK": "slack", "ALERT_WEBHOOK_URL": srv.URL}
	e.run(t)
	deploy := kit.Deployment
	r := refs.Ref{Kind: refs.ConfigMap, Name: "cfg"}
	e.newConfig(t, r)
	w := e.newWorkload(t, deploy, "app", ann(autoKey, "true"), envFrom(r.Kind, r.Name))
	e.waitFor(t, w, "the baseline record", hasBaseline)
	e.waitApplied(t, deploy, w, r, e.setConfig(t, r, "v2"))
	e.waitFor(t, w, "the first alert's delivery", func(client.Object) bool { return len(srv.Received()) > 0 })
	began := time.Now()
	for i, v := range []string{"v3", "v4", "v5"} {
		e.waitApplied(t, deploy, w, r, e.setConfig(t, r, v))
		t.Logf("reload %d applied %s after the first alert hung", i+2, time.Since(began))
	}
	const attempts = 3 // notify.Options.Attempts' default
	if n := len(srv.Received()); n >= attempts {
		t.Fatalf("the sink saw %d requests by the last reload: the reloads waited for a delivery's %d attempts", n, attempts)
	}
}

// A rollout Ripple started that stalls is an alert too, after the one of
// the reload: envtest runs no Deployment controller, so the rollout never
// completes and --rollout-timeout reports it.
func TestStalledRolloutAlert(t *testing.T) {
	t.Parallel()
	srv := kit.NewAlertSink(t, 0)
	e := newEnv(t)
	e.environ = map[string]string{"ALERT_ON_RELOAD": "true", "ALERT_SINK": "slack", "ALERT_WEBHOOK_URL": srv.URL + "/alert"}
	e.run(t, "--rollout-timeout=2s")
	cm := refs.Ref{Kind: refs.ConfigMap, Name: "cfg"}
	e.newConfig(t, cm)
	w := e.newWorkload(t, kit.Deployment, "app", ann(autoKey, "true"), envFrom(cm.Kind, cm.Name))
	e.waitFor(t, w, "the baseline record", hasBaseline)
	e.waitApplied(t, kit.Deployment, w, cm, e.setConfig(t, cm, "v2"))
	e.waitFor(t, w, "two alerts", func(client.Object) bool { return len(srv.Received()) >= 2 })
	time.Sleep(300 * time.Millisecond) // a third alert would show
	got := srv.Received()
	want := `application/json {"attachments":[{"author_name":"Reloader","color":"danger","text":"Ripple, *app* of type *Deployment* in namespace *` +
		e.ns + `*: Rollout stalled after `
	if len(got) != 2 || !strings.Contains(got[0], `"color":"good"`) || !strings.HasPrefix(got[1], want) ||
		!strings.Contains(got[1], "not complete after 2s (--rollout-timeout)") {
		t.Fatalf("alerts:\n%q\nwant the reload's, then one starting %q and naming --rollout-timeout", got, want)
	}
}
