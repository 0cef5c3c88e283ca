package kit

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Ripple as the cluster tiers (test/e2e, test/kubelet) run it: the binary
// RIPPLE_BINARY as a child process of the test, so a kill -9 ends it as an
// OOM kill or a node failure would, with nothing flushed or handed over.

// RippleControllers is the number of controllers Ripple runs (Deployment,
// StatefulSet, DaemonSet, CronJob, Job); each logs "Starting workers" once
// its caches have synced (on the leader).
const RippleControllers = 5

// RippleReadyTimeout bounds how long Ripple may take to sync its caches;
// RippleStopTimeout how long Stop waits after SIGTERM before SIGKILL.
const (
	RippleReadyTimeout = time.Minute
	RippleStopTimeout  = 10 * time.Second
)

// Ripple is a Ripple process of a test. Its output, across every run, is
// kept in Out and printed when the test fails.
type Ripple struct {
	T testing.TB
	// Args are the command line, the binary first; Env is added to the
	// test's environment, e.g. RELOADER_NAMESPACE.
	Args []string
	Env  []string
	Out  *LogBuffer
	Runs int
	// Mark is the offset in Out where the current run's output starts.
	Mark int
	// Proc is the current run; nil once stopped.
	Proc *Process
}

// NewRipple prepares Ripple with flags, without starting it; target is the
// make target that sets RIPPLE_BINARY, for the message when it is unset.
// It is stopped when the test ends.
func NewRipple(t testing.TB, target string, flags ...string) *Ripple {
	t.Helper()
	bin := os.Getenv("RIPPLE_BINARY")
	if bin == "" {
		t.Fatalf("RIPPLE_BINARY is not set: run `make %s`, or `make build` and then RIPPLE_BINARY=$PWD/bin/ripple go test", target)
	}
	if fi, err := os.Stat(bin); err != nil || fi.IsDir() {
		t.Fatalf("RIPPLE_BINARY=%s is not a Ripple binary (%v); run `make build` first", bin, err)
	}
	r := &Ripple{T: t, Args: append([]string{bin}, flags...), Out: &LogBuffer{}}
	t.Cleanup(func() {
		r.Stop()
		if t.Failed() {
			t.Logf("Ripple's output (%d runs):\n%s", r.Runs, r.Out.String())
		}
	})
	return r
}

// Launch starts a run without waiting for anything.
func (r *Ripple) Launch() {
	r.T.Helper()
	if r.Running() {
		r.T.Fatal("ripple: started while already running")
	}
	r.Runs++
	r.Out.Printf("=== ripple run %d: %s\n", r.Runs, strings.Join(r.Args, " "))
	r.Mark = r.Out.Len()
	cmd := exec.Command(r.Args[0], r.Args[1:]...)
	if len(r.Env) > 0 {
		cmd.Env = append(os.Environ(), r.Env...)
	}
	cmd.Stdout, cmd.Stderr = r.Out, r.Out
	p, err := StartProcess(cmd, func(err error) { r.Out.Printf("=== ripple run exited: %v\n", err) })
	if err != nil {
		r.T.Fatalf("starting Ripple: %v", err)
	}
	r.Proc = p
}

// WaitWorkers waits until the current run's controllers run their
// workers, which controller-runtime does only after the informer caches
// synced (on a replica that leads).
func (r *Ripple) WaitWorkers() {
	r.T.Helper()
	p := r.Proc
	deadline := time.After(RippleReadyTimeout)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for strings.Count(r.Out.From(r.Mark), "Starting workers") < RippleControllers {
		select {
		case <-p.Done():
			r.T.Fatalf("Ripple exited before it was ready: %v", p.Err())
		case <-deadline:
			r.T.Fatalf("Ripple did not start %d controllers within %s", RippleControllers, RippleReadyTimeout)
		case <-tick.C:
		}
	}
}

// Stop sends SIGTERM, waits up to RippleStopTimeout for Ripple to exit,
// then kills it. It fails the test when Ripple crashed before, or did not
// exit cleanly on SIGTERM. Stopping a stopped Ripple does nothing.
func (r *Ripple) Stop() {
	r.T.Helper()
	if r.Proc == nil {
		return
	}
	switch {
	case r.Proc.Exited(): // exited by itself: a crash
		r.T.Errorf("Ripple exited while the test ran: %v", r.Proc.Err())
	case r.Proc.Stop(RippleStopTimeout):
		r.T.Errorf("Ripple did not exit within %s of SIGTERM; it was killed", RippleStopTimeout)
	case r.Proc.Err() != nil:
		r.T.Errorf("Ripple did not exit cleanly on SIGTERM: %v", r.Proc.Err())
	}
	r.Proc = nil
}

// Kill ends Ripple with SIGKILL, as a node failure or OOM kill would: no
// graceful shutdown of any kind.
func (r *Ripple) Kill() {
	if r.Proc != nil {
		r.Proc.Kill()
		r.Proc = nil
	}
}

// Running reports whether a run is going on.
func (r *Ripple) Running() bool { return r.Proc != nil && !r.Proc.Exited() }

// Lines returns the lines of the current run holding every one of subs.
func (r *Ripple) Lines(subs ...string) []string { return r.Out.LinesFrom(r.Mark, subs...) }

// WaitLog waits until the current run has logged n lines holding every
// one of subs, within timeout.
func (r *Ripple) WaitLog(timeout time.Duration, n int, subs ...string) {
	r.T.Helper()
	ctx, cancel := context.WithTimeout(r.T.Context(), timeout)
	defer cancel()
	var lines []string
	for {
		if lines = r.Lines(subs...); len(lines) >= n {
			return
		}
		select {
		case <-ctx.Done():
			r.T.Fatalf("Ripple's run %d logged %d lines with %q within %v, expected %d", r.Runs, len(lines), subs, timeout, n)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
