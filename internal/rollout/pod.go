package rollout

import corev1 "k8s.io/api/core/v1"

// PodReady reports whether p's Ready condition is true: how the pod
// restarter and the canary's pod gate read a pod alike.
func PodReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
