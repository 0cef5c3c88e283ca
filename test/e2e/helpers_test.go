package e2e

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// newNamespace creates a namespace of the test's own and deletes it when
// the test ends.
func newNamespace(t *testing.T, cs kubernetes.Interface) string {
	t.Helper()
	ns, err := cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
	})
	return ns.Name
}

// waitFor polls cond until it holds, failing the test after two minutes:
// rollouts on a 2-core machine with several components are not instant.
func waitFor(t *testing.T, what string, cond wait.ConditionWithContextFunc) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 2*time.Minute, true, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

func podReady(p *corev1.Pod) bool {
	if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// readyPods counts Ready pods that match selector; pods being deleted do not count.
func readyPods(ctx context.Context, cs kubernetes.Interface, ns, selector string) int {
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return -1
	}
	n := 0
	for i := range pods.Items {
		if podReady(&pods.Items[i]) {
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
		if podReady(&pods.Items[i]) {
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
	list, err := cs.AppsV1().ReplicaSets(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []appsv1.ReplicaSet
	for _, rs := range list.Items {
		if ref := metav1.GetControllerOf(&rs); ref != nil && ref.UID == owner {
			out = append(out, rs)
		}
	}
	return out
}
