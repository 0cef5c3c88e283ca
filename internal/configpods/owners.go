package configpods

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// owned reports whether a workload of Ripple's owns p, so that its own
// reload restarts it: its controller is of a kind Ripple has, or is the
// ReplicaSet of a Deployment in the cache (named for it and the pod's
// pod-template-hash: Ripple may not read ReplicaSets), of an Argo Rollout,
// or the ReplicationController of a DeploymentConfig.
func (c *Controller) owned(ctx context.Context, p *corev1.Pod) bool {
	ref := metav1.GetControllerOf(p)
	if ref == nil {
		return false
	}
	kinds := c.env.Kinds
	if kinds[ref.Kind] {
		return true
	}
	switch ref.Kind {
	case "ReplicaSet":
		if kinds["Rollout"] && p.Labels["rollouts-pod-template-hash"] != "" {
			return true
		}
		name, ok := strings.CutSuffix(ref.Name, "-"+p.Labels["pod-template-hash"])
		return ok && p.Labels["pod-template-hash"] != "" && c.deployment(ctx, p.Namespace, name)
	case "ReplicationController":
		return kinds["DeploymentConfig"] && p.Labels["deploymentconfig"] != ""
	}
	return false
}

// deployment reports whether Ripple's cache holds the Deployment ns/name;
// when it cannot tell, the pod is taken as the Deployment's and left.
func (c *Controller) deployment(ctx context.Context, ns, name string) bool {
	if c.env.Deployment == nil {
		return false
	}
	err := c.env.Cache.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, c.env.Deployment())
	return client.IgnoreNotFound(err) != nil || err == nil
}

// evictPod evicts p through the Eviction API, only if it is still the pod
// that was read.
func evictPod(ctx context.Context, c client.Client, p *corev1.Pod) error {
	ev := &policyv1.Eviction{
		ObjectMeta:    metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace},
		DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &p.UID}},
	}
	return c.SubResource("eviction").Create(ctx, p, ev)
}
