// Package kit is the test kit that Ripple's test suites (test/integration,
// test/e2e, test/chart) and hack/demo share: running a suite around one
// control plane and proving it left no process behind, test namespaces,
// the workload kinds Ripple rolls, pod readiness and ownership, events,
// child processes stopped by signal, an alert endpoint, a log buffer safe for concurrent
// writers, and how far a watch has delivered (WatchProgress), so that a
// test judges what it counted only once its observer has caught up. Each suite keeps its scenarios; this package holds only what
// they would otherwise each write again. It lives under hack/, beside
// hack/cluster, because hack/ programs import no test/ package.
package kit

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"testing"

	"github.com/ripple-dev/ripple/hack/cluster"
)

// Main runs a suite's tests around what start starts (a control plane,
// usually) and returns the exit code for os.Exit. A TestMain has no test
// context: it creates the root context, ctx, and start gets it. The suite
// fails when start fails, when stop fails, or when any process the test
// binary started is still alive after stop: a suite that leaves a process
// behind is broken, and says so loudly.
func Main(ctx context.Context, m *testing.M, start func(context.Context) (stop func() error, err error)) int {
	stop, err := start(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	stopOnce := sync.OnceValue(stop)
	// An interrupted run (Ctrl-C, or a signal to the test binary alone)
	// never returns from m.Run: stop the control plane here, or its
	// kube-apiserver and etcd outlive the suite.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	go func() {
		s := <-sig
		fmt.Fprintf(os.Stderr, "%v: stopping the control plane\n", s)
		if err := stopOnce(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the control plane:", err)
		}
		os.Exit(1)
	}()
	code := m.Run()
	if err := stopOnce(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping the control plane:", err)
		code = 1
	}
	if left := cluster.Descendants(); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "processes left behind after Stop: %v\n", left)
		code = 1
	}
	return code
}
