package kubelet

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/ripple-dev/ripple/hack/kit"
)

// Ripple runs here as it runs in the cluster: the binary RIPPLE_BINARY as
// a child process of the test (as test/e2e does), so a kill -9 ends it as
// an OOM kill or a node failure would, with nothing flushed or handed
// over. test/e2e's ripple type is in a _test package of its own; this is
// the part of it the in-place tests need.

// rippleControllers is the number of controllers Ripple runs (Deployment,
// StatefulSet, DaemonSet, CronJob, Job); each logs "Starting workers" once
// its caches have synced.
const rippleControllers = 5

// rippleReadyTimeout bounds how long Ripple may take to sync its caches;
// rippleStopTimeout how long Stop waits after SIGTERM before SIGKILL.
const (
	rippleReadyTimeout = time.Minute
	rippleStopTimeout  = 10 * time.Second
)

// ripple is a Ripple process watching one namespace. Its output, across
// every run, is kept and printed when the test fails.
type ripple struct {
	t    testing.TB
	args []string
	out  *kit.LogBuffer
	runs int
	mark int // offset in out where the current run's output starts
	proc *kit.Process
}

// startRipple runs Ripple on namespace ns with kubeconfig (the admin's
// when empty), and waits until its controllers run. Metrics
// and health endpoints are off: it binds no port. It is stopped when the
// test ends.
func startRipple(t testing.TB, ns, kubeconfig string) *ripple {
	t.Helper()
	bin := os.Getenv("RIPPLE_BINARY")
	if bin == "" {
		t.Fatal("RIPPLE_BINARY is not set: run `make test-kubelet`, or `make build` and then " +
			"`RIPPLE_BINARY=$PWD/bin/ripple go test ./test/kubelet/`")
	}
	if fi, err := os.Stat(bin); err != nil || fi.IsDir() {
		t.Fatalf("RIPPLE_BINARY=%s is not a Ripple binary (%v); run `make build` first", bin, err)
	}
	if kubeconfig == "" {
		kubeconfig = kc.Kubeconfig
	}
	r := &ripple{t: t, out: &kit.LogBuffer{}, args: []string{
		bin,
		"--kubeconfig=" + kubeconfig,
		"--namespaces=" + ns,
		"--metrics-bind-address=0",
		"--health-probe-bind-address=0",
	}}
	t.Cleanup(func() {
		r.stop()
		if t.Failed() {
			t.Logf("Ripple's output (%d runs):\n%s", r.runs, r.out.String())
		}
	})
	r.start()
	return r
}

// start starts a run and waits until its controllers run their workers,
// which controller-runtime does only after the informer caches synced.
func (r *ripple) start() {
	r.t.Helper()
	r.runs++
	r.out.Printf("=== ripple run %d: %s\n", r.runs, strings.Join(r.args, " "))
	r.mark = r.out.Len()
	cmd := exec.Command(r.args[0], r.args[1:]...)
	cmd.Stdout, cmd.Stderr = r.out, r.out
	p, err := kit.StartProcess(cmd, func(err error) { r.out.Printf("=== ripple run exited: %v\n", err) })
	if err != nil {
		r.t.Fatalf("starting Ripple: %v", err)
	}
	r.proc = p
	deadline := time.After(rippleReadyTimeout)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for strings.Count(r.out.From(r.mark), "Starting workers") < rippleControllers {
		select {
		case <-p.Done():
			r.t.Fatalf("Ripple exited before it was ready: %v", p.Err())
		case <-deadline:
			r.t.Fatalf("Ripple did not start %d controllers within %s", rippleControllers, rippleReadyTimeout)
		case <-tick.C:
		}
	}
}

// stop sends SIGTERM and fails the test when Ripple crashed before, or
// did not exit cleanly. Stopping a stopped Ripple does nothing.
func (r *ripple) stop() {
	r.t.Helper()
	if r.proc == nil {
		return
	}
	switch {
	case r.proc.Exited():
		r.t.Errorf("Ripple exited while the test ran: %v", r.proc.Err())
	case r.proc.Stop(rippleStopTimeout):
		r.t.Errorf("Ripple did not exit within %s of SIGTERM; it was killed", rippleStopTimeout)
	case r.proc.Err() != nil:
		r.t.Errorf("Ripple did not exit cleanly on SIGTERM: %v", r.proc.Err())
	}
	r.proc = nil
}

// kill ends Ripple with SIGKILL: no graceful shutdown of any kind.
func (r *ripple) kill() {
	r.t.Helper()
	if r.proc != nil {
		r.proc.Kill()
		r.proc = nil
	}
}

// waitLog waits until the current run has logged n lines holding every
// one of subs, within timeout.
func (r *ripple) waitLog(timeout time.Duration, n int, subs ...string) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(r.t.Context(), timeout)
	defer cancel()
	var lines []string
	for {
		if lines = r.lines(subs...); len(lines) >= n {
			return
		}
		select {
		case <-ctx.Done():
			r.t.Fatalf("Ripple's run %d logged %d lines with %q within %v, expected %d", r.runs, len(lines), subs, timeout, n)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// lines returns the lines of the current run holding every one of subs.
func (r *ripple) lines(subs ...string) []string {
	var out []string
	for _, line := range strings.Split(r.out.From(r.mark), "\n") {
		ok := line != ""
		for _, s := range subs {
			ok = ok && strings.Contains(line, s)
		}
		if ok {
			out = append(out, line)
		}
	}
	return out
}
