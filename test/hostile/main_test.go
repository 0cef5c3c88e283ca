// Package hostile is the hostile-tenant tier: on a local cluster of its
// own (kube-apiserver, etcd, kube-controller-manager, kube-scheduler and a
// kwok node), a user with the built-in `edit` role in its own namespaces
// tries every attack of issue 33 on Ripple at once (a viewer of another
// namespace, the secret oracle), and the tier checks that
// nothing happens outside that namespace, that no Job comes of a forged
// record or annotation, and that Ripple still starts, reloads another
// namespace's workload within its settle window plus 2 s, records that
// namespace's Events and stays within a memory bound. docs/security.md
// says what it proves.
package hostile

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/ripple-dev/ripple/hack/cluster"
	"github.com/ripple-dev/ripple/hack/kit"
)

// kc is the tier's cluster.
var kc *cluster.Cluster

func TestMain(m *testing.M) {
	// envtest logs through controller-runtime's logger and, with none set,
	// prints a goroutine stack that reads like a failure in the output.
	ctrllog.SetLogger(logr.Discard())
	os.Exit(kit.Main(context.Background(), m, func(ctx context.Context) (func() error, error) {
		ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
		defer cancel()
		var err error
		if kc, err = cluster.Start(ctx, cluster.Options{Nodes: 1}); err != nil {
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
