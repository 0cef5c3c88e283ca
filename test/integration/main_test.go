// Package integration tests Ripple against a real kube-apiserver and etcd
// (envtest) with RBAC authorization on. Nothing here is a mock of the API
// server: patch semantics, conflicts, RBAC and events are the real ones.
package integration

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/ripple-dev/ripple/hack/cluster"
	"github.com/ripple-dev/ripple/hack/kit"
)

// api is shared by every test in the package; tests isolate themselves by
// working in namespaces of their own.
var api *cluster.API

func TestMain(m *testing.M) {
	// envtest logs through controller-runtime's logger and, with none set,
	// prints a goroutine stack that reads like a failure in the output.
	ctrllog.SetLogger(logr.Discard())
	os.Exit(kit.Main(context.Background(), m, func(ctx context.Context) (func() error, error) {
		var err error
		api, err = cluster.StartAPI(cluster.APIOptions{})
		if err != nil {
			return nil, fmt.Errorf("starting the API server: %w", err)
		}
		// The optional kinds' APIs, every preset's kinds and the made-up
		// Widget, and Ripple's own ConfigRollouts, are served to every test; a test that needs them
		// absent, or installs and removes them, starts an API of its own.
		if err := api.InstallCRDs(ctx, cluster.RolloutCRD, cluster.DeploymentConfigCRD,
			cluster.SecretProviderClassCRD, cluster.SecretProviderClassPodStatusCRD, cluster.CloneSetCRD, cluster.WidgetCRD,
			cluster.AdvancedStatefulSetCRD, cluster.AdvancedDaemonSetCRD, cluster.KnativeServiceCRD, cluster.ScaledJobCRD, cluster.ExternalSecretCRD, cluster.ConfigRolloutCRD); err != nil {
			_ = api.Stop()
			return nil, err
		}
		return api.Stop, nil
	}))
}
