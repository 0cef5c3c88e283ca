package hostile

import (
	"net"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/ripple-dev/ripple/hack/kit"
)

// controllers is the number of Ripple's reload controllers (Deployment,
// StatefulSet, DaemonSet, CronJob, Job); each logs "Starting workers"
// once its caches have synced, as do the rollout followers (named
// "<kind>-rollout"), which are not counted.
const controllers = 5

// cacheSyncTimeout is Ripple's --cache-sync-timeout here, a twelfth of
// its default: it exits when its caches have not synced by then. With the
// tier's hostile objects they sync within about a second; before issue 33
// the tenant's patterns, compiled in the index function, took 12 s.
const cacheSyncTimeout = 10 * time.Second

// ripple is Ripple running cluster-wide with the admin's rights, as a
// ClusterRole would give it, with its own namespace home and metrics on
// a loopback port.
type ripple struct {
	proc    *kit.Process
	out     *kit.LogBuffer
	metrics string
	// started is how long its caches took to sync.
	started time.Duration
}

// startRipple starts Ripple, with extra flags after the shared cluster's
// settings (a flag given again there wins), and waits until every
// controller runs its workers, which controller-runtime does only after
// the caches synced; it fails the test unless that happens within
// cacheSyncTimeout.
func startRipple(t *testing.T, home string, extra ...string) *ripple {
	t.Helper()
	bin := os.Getenv("RIPPLE_BINARY")
	if bin == "" {
		t.Fatal("RIPPLE_BINARY is not set: run `make test-hostile`, or `make build` and then " +
			"`RIPPLE_BINARY=$PWD/bin/ripple go test ./test/hostile/`")
	}
	r := &ripple{out: &kit.LogBuffer{}, metrics: freeAddr(t)}
	args := append([]string{"--kubeconfig=" + kc.Kubeconfig, "--metrics-bind-address=" + r.metrics,
		"--health-probe-bind-address=0", "--cache-sync-timeout=" + cacheSyncTimeout.String(),
		// A shared cluster's settings (docs/security.md).
		"--digest=hmac-sha256", "--tighten-only", "--namespace-defaults"}, extra...)
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "POD_NAMESPACE="+home)
	cmd.Stdout, cmd.Stderr = r.out, r.out
	began := time.Now()
	p, err := kit.StartProcess(cmd, func(err error) { r.out.Printf("=== ripple exited: %v\n", err) })
	if err != nil {
		t.Fatalf("starting Ripple: %v", err)
	}
	r.proc = p
	t.Cleanup(func() {
		if p.Stop(10 * time.Second) {
			t.Error("Ripple did not exit within 10s of SIGTERM")
		}
		if t.Failed() {
			t.Logf("Ripple's output:\n%s", r.out.String())
		}
	})
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	// Ripple exits by itself at its timeout; the margin only keeps a hung
	// Ripple from hanging the tier.
	hung := time.After(cacheSyncTimeout + 10*time.Second)
	for len(r.out.Lines("Starting workers"))-len(r.out.Lines("Starting workers", `-rollout"`)) < controllers {
		select {
		case <-p.Done():
			t.Fatalf("Ripple exited before its caches synced: %v", p.Err())
		case <-hung:
			t.Fatalf("Ripple neither synced its caches nor exited within %s", cacheSyncTimeout+10*time.Second)
		case <-tick.C:
		}
	}
	r.started = time.Since(began)
	if r.started > cacheSyncTimeout {
		t.Fatalf("Ripple's caches synced after %s, past its --cache-sync-timeout of %s", r.started, cacheSyncTimeout)
	}
	return r
}

// freeAddr returns a free loopback address for Ripple's metrics.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}
