package e2e

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/ripple-dev/ripple/hack/cluster"
	"github.com/ripple-dev/ripple/hack/kit"
)

// rippleControllers is the number of controllers Ripple runs (Deployment,
// StatefulSet, DaemonSet, CronJob, Job); each logs "Starting workers" once
// its caches have synced (on the leader).
const rippleControllers = 5

// rippleReadyTimeout bounds how long Ripple may take to sync its caches.
const rippleReadyTimeout = time.Minute

// rippleStopTimeout is how long Stop waits after SIGTERM before SIGKILL.
const rippleStopTimeout = 10 * time.Second

// ripple is the Ripple binary running as a child process of the test,
// watching one namespace of the shared cluster. Its output, across every
// restart, is kept and printed when the test fails.
type ripple struct {
	t    *testing.T
	args []string
	// env is added to the test's environment, e.g. RELOADER_NAMESPACE.
	env  []string
	out  *kit.LogBuffer
	runs int
	mark int          // offset in out where the current run's output starts
	proc *kit.Process // the current run; nil once stopped
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
	bin := os.Getenv("RIPPLE_BINARY")
	if bin == "" {
		t.Fatal("RIPPLE_BINARY is not set: run `make test-e2e`, or `make build` and then " +
			"`RIPPLE_BINARY=$PWD/bin/ripple go test ./test/e2e/`")
	}
	if fi, err := os.Stat(bin); err != nil || fi.IsDir() {
		t.Fatalf("RIPPLE_BINARY=%s is not a Ripple binary (%v); run `make build` first", bin, err)
	}
	r := &ripple{
		t: t,
		args: append([]string{
			"--kubeconfig=" + kc.Kubeconfig,
			"--namespaces=" + ns,
			"--metrics-bind-address=0",
			"--health-probe-bind-address=0",
		}, flags...),
		out: &kit.LogBuffer{},
	}
	r.args = append([]string{bin}, r.args...)
	t.Cleanup(func() {
		r.Stop()
		if t.Failed() {
			t.Logf("Ripple's output (%d runs):\n%s", r.runs, r.out.String())
		}
	})
	return r
}

// Start starts Ripple and waits until every controller runs its workers,
// which controller-runtime does only after the informer caches synced.
func (r *ripple) Start() {
	r.t.Helper()
	r.launch()
	r.waitWorkers()
}

// launch starts the process without waiting for anything.
func (r *ripple) launch() {
	r.t.Helper()
	if r.running() {
		r.t.Fatal("ripple: Start while already running")
	}
	r.runs++
	r.out.Printf("=== ripple run %d: %s\n", r.runs, strings.Join(r.args, " "))
	r.mark = r.out.Len()
	cmd := exec.Command(r.args[0], r.args[1:]...)
	if len(r.env) > 0 {
		cmd.Env = append(os.Environ(), r.env...)
	}
	cmd.Stdout, cmd.Stderr = r.out, r.out
	p, err := kit.StartProcess(cmd, func(err error) { r.out.Printf("=== ripple run exited: %v\n", err) })
	if err != nil {
		r.t.Fatalf("starting Ripple: %v", err)
	}
	r.proc = p
}

// waitWorkers waits until the current run's controllers run their workers:
// on a replica that leads.
func (r *ripple) waitWorkers() {
	r.t.Helper()
	p := r.proc
	deadline := time.After(rippleReadyTimeout)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if n := strings.Count(r.out.From(r.mark), "Starting workers"); n >= rippleControllers {
			break
		}
		select {
		case <-p.Done():
			r.t.Fatalf("Ripple exited before it was ready: %v", p.Err())
		case <-deadline:
			r.t.Fatalf("Ripple did not start %d controllers within %s", rippleControllers, rippleReadyTimeout)
		case <-tick.C:
		}
	}
	// Metrics and health endpoints are off: Ripple must not listen on
	// anything but loopback (it should not listen at all).
	bad, err := cluster.NonLoopbackListeners([]int{p.Pid()})
	if err != nil {
		r.t.Fatal(err)
	}
	if len(bad) > 0 {
		r.t.Fatalf("Ripple listens outside loopback: %v", bad)
	}
}

// Stop sends SIGTERM, waits up to rippleStopTimeout for Ripple to exit,
// then kills it. It fails the test when Ripple did not exit cleanly on
// SIGTERM. Stopping a stopped Ripple does nothing.
func (r *ripple) Stop() {
	r.t.Helper()
	if r.proc == nil {
		return
	}
	switch {
	case r.proc.Exited(): // exited by itself: a crash
		r.t.Errorf("Ripple exited while the test ran: %v", r.proc.Err())
	case r.proc.Stop(rippleStopTimeout):
		r.t.Errorf("Ripple did not exit within %s of SIGTERM; it was killed", rippleStopTimeout)
	case r.proc.Err() != nil:
		r.t.Errorf("Ripple did not exit cleanly on SIGTERM: %v", r.proc.Err())
	}
	r.proc = nil
}

// Kill ends Ripple with SIGKILL, as a node failure or OOM kill would: no
// graceful shutdown of any kind.
func (r *ripple) Kill() {
	r.t.Helper()
	if r.proc == nil {
		return
	}
	r.proc.Kill()
	r.proc = nil
}

// Restart stops Ripple gracefully and starts it again.
func (r *ripple) Restart() {
	r.t.Helper()
	r.Stop()
	r.Start()
}

func (r *ripple) running() bool { return r.proc != nil && !r.proc.Exited() }

// finalLines stops Ripple and returns the lines of its log, over every
// run, that hold every one of subs. Its log reaches the test through a
// pipe, behind the writes the test sees on the API server; once the
// process has exited, every line it wrote is in the buffer.
func (r *ripple) finalLines(subs ...string) []string {
	r.t.Helper()
	r.Stop()
	return r.out.Lines(subs...)
}

// Log returns everything Ripple printed so far, in every run.
func (r *ripple) Log() string { return r.out.String() }

// waitLog waits until Ripple's current run has logged a line containing s.
func waitLog(t *testing.T, r *ripple, s string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(r.out.From(r.mark), s) {
		if time.Now().After(deadline) {
			t.Fatalf("Ripple did not log %q within 30s", s)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
