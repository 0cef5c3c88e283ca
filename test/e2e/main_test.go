// Package e2e tests Ripple on a full local cluster: kube-apiserver, etcd,
// kube-controller-manager, kube-scheduler and kwok fake nodes, so
// Deployments, StatefulSets and DaemonSets really roll out new pods.
package e2e

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/ripple-dev/ripple/hack/cluster"
	"github.com/ripple-dev/ripple/hack/kit"
)

// kc is the cluster shared by every test; tests isolate themselves in
// namespaces of their own.
var kc *cluster.Cluster

func TestMain(m *testing.M) {
	flag.Parse()
	// The tests spend their time waiting for the cluster, not on a CPU:
	// run more of them at once than go test's default of GOMAXPROCS. An
	// explicit -parallel wins.
	explicit := false
	flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "test.parallel" })
	if !explicit {
		_ = flag.Set("test.parallel", "8")
	}
	// envtest logs through controller-runtime's logger and, with none set,
	// prints a goroutine stack that reads like a failure in the output.
	ctrllog.SetLogger(logr.Discard())
	os.Exit(kit.Main(context.Background(), m, func(ctx context.Context) (func() error, error) {
		ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
		defer cancel()
		var err error
		if kc, err = cluster.Start(ctx, cluster.Options{Nodes: 3}); err != nil {
			return nil, fmt.Errorf("starting the local cluster: %w", err)
		}
		// Ripple's own CRD, as the chart installs it by default.
		if err := kc.InstallCRDs(ctx, cluster.ConfigRolloutCRD); err != nil {
			_ = kc.Stop()
			return nil, err
		}
		return kc.Stop, nil
	}))
}
