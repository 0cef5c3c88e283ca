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

	"github.com/ripple-dev/ripple/test/cluster"
)

// kc is the cluster shared by every test; tests isolate themselves in
// namespaces of their own.
var kc *cluster.Cluster

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	flag.Parse()
	// The tests spend their time waiting for the cluster, not on a CPU:
	// run more of them at once than go test's default of GOMAXPROCS. An
	// explicit -parallel wins.
	explicit := false
	flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "test.parallel" })
	if !explicit {
		_ = flag.Set("test.parallel", "8")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var err error
	kc, err = cluster.Start(ctx, cluster.Options{Nodes: 3})
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the local cluster:", err)
		return 1
	}
	code := m.Run()
	if err := kc.Stop(); err != nil {
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
