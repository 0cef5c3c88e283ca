package kit

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// KwokToleration lets pods onto the local cluster's kwok fake nodes, which
// are tainted so that nothing else lands there. kwok runs no container, so
// a pod's image is never pulled.
var KwokToleration = corev1.Toleration{Key: "kwok.x-k8s.io/node", Operator: corev1.TolerationOpExists}

// PodReady reports a pod that runs and is Ready; a pod being deleted is
// not Ready, whatever its conditions say.
func PodReady(p *corev1.Pod) bool {
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

// Controlled returns the items whose controller is the object with uid.
func Controlled[T any, PT interface {
	*T
	metav1.Object
}](items []T, owner types.UID) []T {
	var out []T
	for i := range items {
		if ref := metav1.GetControllerOf(PT(&items[i])); ref != nil && ref.UID == owner {
			out = append(out, items[i])
		}
	}
	return out
}

// ReplicaSets returns the ReplicaSets in ns that the Deployment with uid
// controls: one per rollout it has made.
func ReplicaSets(ctx context.Context, cs kubernetes.Interface, ns string, owner types.UID) ([]appsv1.ReplicaSet, error) {
	list, err := cs.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	return Controlled(list.Items, owner), nil
}
