// Package kubelet is the real-kubelet tier: beside a local control plane
// (kube-apiserver, etcd, kube-controller-manager, kube-scheduler; see
// hack/cluster), each test runs a real kubelet, built from the pinned
// Kubernetes modules, on a fake container runtime that records every
// container the kubelet creates (hack/kubeletnode, hack/fakecri). kwok
// nodes start no container, so what a restarted container is given (its
// environment, its mounts) can only be shown on the kubelet's own code.
//
// The tests prove what an in-place restart (issue 45) relies on: a
// container restarted by a resize through pods/resize, in the same pod,
// is created with the new values of a changed ConfigMap and Secret, and a
// subPath file keeps its old content while a plain configMap volume is
// updated. The in-place e2e tests (inplace_test.go) run Ripple's in-place
// method end to end, the Ripple binary as a child process: on 20-pod
// Deployments no pod is created or deleted, each container restarts once
// with the new value, never more than max-unavailable down (a pod watch
// counts at each event), also with Ripple killed with SIGKILL midway; a
// pod that is not eligible is warned of and evicted only with the
// fallback; the pods/resize right is needed. The reload-action tests
// (reloadaction_test.go) serve each pod's reload endpoint on its address
// (the fake runtime's, in 127.1.0.0/16) and show each pod called once,
// after reload-delay, with the new file in its volume, max-unavailable
// calls at a time; 3 tries, then the Warning and the fallback; the
// action refused for a config read as env; the list pods right is
// needed; and 32 Deployments whose pods accept the call and never answer
// delay no template reload in another namespace past the settle window
// plus 1 s (reloadaction_hang_test.go).
//
// The kubelet runs as root on the host, fenced in a mount namespace and a
// cgroup root of its own: the tier must run as root (`make test-kubelet`).
package kubelet

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

// kc is the tier's control plane.
var kc *cluster.Cluster

func TestMain(m *testing.M) {
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "the real-kubelet tier runs a kubelet, which needs root")
		os.Exit(1)
	}
	// envtest logs through controller-runtime's logger and, with none set,
	// prints a goroutine stack that reads like a failure in the output.
	ctrllog.SetLogger(logr.Discard())
	os.Exit(kit.Main(context.Background(), m, func(ctx context.Context) (func() error, error) {
		ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
		defer cancel()
		var err error
		// One kwok node (the cluster's least); its taint keeps the tests'
		// pods, which tolerate none, on the kubelet's node.
		if kc, err = cluster.Start(ctx, cluster.Options{Nodes: 1}); err != nil {
			return nil, fmt.Errorf("starting the local cluster: %w", err)
		}
		return kc.Stop, nil
	}))
}
