package kubelet

import (
	"testing"

	"github.com/ripple-dev/ripple/hack/kit"
)

// startRipple runs Ripple (kit.Ripple: the binary, as test/e2e runs it) on
// namespace ns with kubeconfig (the admin's when empty), and waits until
// its controllers run. Metrics and health endpoints are off: it binds no
// port. It is stopped when the test ends.
func startRipple(t testing.TB, ns, kubeconfig string) *kit.Ripple {
	t.Helper()
	if kubeconfig == "" {
		kubeconfig = kc.Kubeconfig
	}
	r := kit.NewRipple(t, "test-kubelet",
		"--kubeconfig="+kubeconfig,
		"--namespaces="+ns,
		"--metrics-bind-address=0",
		"--health-probe-bind-address=0",
	)
	start(r)
	return r
}

// start starts a run of r and waits until its controllers run.
func start(r *kit.Ripple) {
	r.T.Helper()
	r.Launch()
	r.WaitWorkers()
}
