package integration

import (
	"context"
	"testing"
	"time"

	"github.com/ripple-dev/ripple/hack/kit"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/test/inproc"
)

// --graceful-shutdown-timeout bounds how long Ripple waits on SIGTERM for
// its work to finish. The work here is an alert queued for a sink that
// hangs: by default Ripple keeps trying to deliver it for the alert
// queue's flush time (5 s) before it exits; with a 1 s timeout it exits
// after 1 s, reporting what it left.
func TestGracefulShutdownTimeout(t *testing.T) {
	for _, tc := range []struct {
		name     string
		args     []string
		min, max time.Duration
		clean    bool
	}{
		{"1s", []string{"--graceful-shutdown-timeout=1s"}, 900 * time.Millisecond, 3 * time.Second, false},
		{"default", nil, 4 * time.Second, 20 * time.Second, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := kit.NewAlertSink(t, time.Minute)
			e := newEnv(t)
			env := map[string]string{"ALERT_ON_RELOAD": "true", "ALERT_SINK": "raw", "ALERT_WEBHOOK_URL": srv.URL}
			args := append([]string{"--namespaces=" + e.ns, "--metrics-bind-address=0", "--health-probe-bind-address=0", "--settle-window=0"}, tc.args...)
			// Only Stop stops it: the test times Stop.
			r, err := inproc.Start(context.WithoutCancel(t.Context()), inproc.Options{REST: e.rc, Args: args, Env: func(k string) string { return env[k] }})
			if err != nil {
				t.Fatal(err)
			}
			stopped := false
			t.Cleanup(func() {
				if !stopped {
					_ = r.Stop()
				}
				if t.Failed() {
					t.Logf("ripple's log:\n%s", r.Log.String())
				}
			})
			deploy := kit.Deployment
			cm := refs.Ref{Kind: refs.ConfigMap, Name: "cfg"}
			e.newConfig(t, cm)
			w := e.newWorkload(t, deploy, "app", ann(autoKey, "true"), envFrom(cm.Kind, cm.Name))
			e.waitFor(t, w, "the baseline record", hasBaseline)
			e.waitApplied(t, deploy, w, cm, e.setConfig(t, cm, "v2"))
			for len(srv.Received()) == 0 { // the alert is now being sent, and hangs
				time.Sleep(20 * time.Millisecond)
			}

			began := time.Now()
			err = r.Stop()
			stopped = true
			took := time.Since(began)
			t.Logf("stopped in %s: %v", took, err)
			if took < tc.min || took > tc.max {
				t.Errorf("stopped in %s, want between %s and %s", took, tc.min, tc.max)
			}
			if (err == nil) != tc.clean {
				t.Errorf("Stop returned %v; want a clean stop: %v", err, tc.clean)
			}
		})
	}
}
