package e2e

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/ripple-dev/ripple/hack/cluster"
	"github.com/ripple-dev/ripple/hack/kit"
)

// newNamespace creates a namespace of the test's own and deletes it when
// the test ends.
func newNamespace(t *testing.T, cs kubernetes.Interface) string {
	t.Helper()
	return kit.NewNamespace(t, cs, "e2e-", nil)
}

// waitFor polls cond until it holds, failing the test after two minutes:
// rollouts on a 2-core machine with several components are not instant.
func waitFor(t *testing.T, what string, cond wait.ConditionWithContextFunc) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 2*time.Minute, true, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// readyPods counts Ready pods that match selector; pods being deleted do not count.
func readyPods(ctx context.Context, cs kubernetes.Interface, ns, selector string) int {
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return -1
	}
	n := 0
	for i := range pods.Items {
		if kit.PodReady(&pods.Items[i]) {
			n++
		}
	}
	return n
}

// readyPodNodes counts the distinct nodes that run a Ready pod matching selector.
func readyPodNodes(ctx context.Context, cs kubernetes.Interface, ns, selector string) int {
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return -1
	}
	nodes := map[string]bool{}
	for i := range pods.Items {
		if kit.PodReady(&pods.Items[i]) {
			nodes[pods.Items[i].Spec.NodeName] = true
		}
	}
	return len(nodes)
}

func podUIDs(t *testing.T, cs kubernetes.Interface, ns, selector string) map[types.UID]bool {
	t.Helper()
	pods, err := cs.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	uids := map[types.UID]bool{}
	for _, p := range pods.Items {
		uids[p.UID] = true
	}
	return uids
}

// replicaSets returns the ReplicaSets controlled by the Deployment with uid.
func replicaSets(t *testing.T, cs kubernetes.Interface, ns string, owner types.UID) []appsv1.ReplicaSet {
	t.Helper()
	rss, err := kit.ReplicaSets(t.Context(), cs, ns, owner)
	if err != nil {
		t.Fatal(err)
	}
	return rss
}

// newReplicaSet returns the ReplicaSet of rss that is not old, and checks
// that old has been scaled to zero.
func newReplicaSet(t *testing.T, rss []appsv1.ReplicaSet, old types.UID) appsv1.ReplicaSet {
	t.Helper()
	var newRS appsv1.ReplicaSet
	for _, rs := range rss {
		if rs.UID == old {
			if n := ptr.Deref(rs.Spec.Replicas, -1); n != 0 || rs.Status.Replicas != 0 {
				t.Errorf("old ReplicaSet %s: spec.replicas=%d status.replicas=%d, want 0 and 0", rs.Name, n, rs.Status.Replicas)
			}
			continue
		}
		newRS = rs
	}
	return newRS
}

// ownCluster starts a one-node cluster of the test's own, for what must
// not touch the shared one (faults, a missing CRD, the docs' own names),
// and stops it when the test ends.
func ownCluster(t *testing.T, what string) *cluster.Cluster {
	t.Helper()
	fc, err := cluster.Start(t.Context(), cluster.Options{Nodes: 1})
	if err != nil {
		t.Fatalf("starting %s: %v", what, err)
	}
	t.Cleanup(func() {
		if err := fc.Stop(); err != nil {
			t.Errorf("stopping %s: %v", what, err)
		}
	})
	return fc
}
