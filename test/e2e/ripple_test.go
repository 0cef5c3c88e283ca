package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/ripple-dev/ripple/hack/cluster"
	"github.com/ripple-dev/ripple/hack/kit"
)

// ripple is the Ripple binary running as a child process of the test
// (kit.Ripple), watching one namespace of the shared cluster.
type ripple struct {
	*kit.Ripple
}

// startRipple runs Ripple on namespace ns with extra flags and waits until
// its controllers have started. Ripple binds no port: metrics and health
// endpoints are off. The process is stopped when the test ends.
func startRipple(t *testing.T, ns string, flags ...string) *ripple {
	t.Helper()
	r := newRipple(t, ns, flags...)
	r.Start()
	return r
}

// newRipple prepares a Ripple process without starting it.
func newRipple(t *testing.T, ns string, flags ...string) *ripple {
	t.Helper()
	return &ripple{kit.NewRipple(t, "test-e2e", append([]string{
		"--kubeconfig=" + kc.Kubeconfig,
		"--namespaces=" + ns,
		"--metrics-bind-address=0",
		"--health-probe-bind-address=0",
	}, flags...)...)}
}

// Start starts Ripple and waits until every controller runs its workers.
func (r *ripple) Start() {
	r.T.Helper()
	r.Launch()
	r.waitWorkers()
}

// waitWorkers waits until the current run's controllers run their workers
// (on a replica that leads), and checks that Ripple listens on nothing
// but loopback: metrics and health endpoints are off, so it should not
// listen at all.
func (r *ripple) waitWorkers() {
	r.T.Helper()
	r.WaitWorkers()
	bad, err := cluster.NonLoopbackListeners([]int{r.Proc.Pid()})
	if err != nil {
		r.T.Fatal(err)
	}
	if len(bad) > 0 {
		r.T.Fatalf("Ripple listens outside loopback: %v", bad)
	}
}

// Restart stops Ripple gracefully and starts it again.
func (r *ripple) Restart() {
	r.T.Helper()
	r.Stop()
	r.Start()
}

// finalLines stops Ripple and returns the lines of its log, over every
// run, that hold every one of subs. Its log reaches the test through a
// pipe, behind the writes the test sees on the API server; once the
// process has exited, every line it wrote is in the buffer.
func (r *ripple) finalLines(subs ...string) []string {
	r.T.Helper()
	r.Stop()
	return r.Out.Lines(subs...)
}

// Log returns everything Ripple printed so far, in every run.
func (r *ripple) Log() string { return r.Out.String() }

// waitLog waits until Ripple's current run has logged a line containing s.
func waitLog(t *testing.T, r *ripple, s string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(r.Out.From(r.Mark), s) {
		if time.Now().After(deadline) {
			t.Fatalf("Ripple did not log %q within 30s", s)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
