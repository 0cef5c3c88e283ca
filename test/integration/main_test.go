// Package integration tests Ripple against a real kube-apiserver and etcd
// (envtest) with RBAC authorization on. Nothing here is a mock of the API
// server: patch semantics, conflicts, RBAC and events are the real ones.
package integration

import (
	"fmt"
	"os"
	"testing"

	"github.com/ripple-dev/ripple/test/cluster"
)

// api is shared by every test in the package; tests isolate themselves by
// working in namespaces of their own.
var api *cluster.API

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	api, err = cluster.StartAPI(cluster.APIOptions{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the API server:", err)
		return 1
	}
	// The optional kinds' APIs are served to every test; a test that needs
	// them absent, or installs and removes them, starts an API of its own.
	if err := api.InstallCRDs(cluster.RolloutCRD, cluster.DeploymentConfigCRD,
		cluster.SecretProviderClassCRD, cluster.SecretProviderClassPodStatusCRD); err != nil {
		fmt.Fprintln(os.Stderr, err)
		_ = api.Stop()
		return 1
	}
	code := m.Run()
	if err := api.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping the control plane:", err)
		code = 1
	}
	// A suite that leaves a process behind is broken; say so loudly.
	if left := cluster.Descendants(); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "processes left behind after Stop: %v\n", left)
		code = 1
	}
	return code
}
