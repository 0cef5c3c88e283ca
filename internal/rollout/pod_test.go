package rollout

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestPodReady(t *testing.T) {
	for name, tc := range map[string]struct {
		conds []corev1.PodCondition
		want  bool
	}{
		"ready":        {[]corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}, {Type: corev1.PodReady, Status: corev1.ConditionTrue}}, true},
		"not ready":    {[]corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}, false},
		"unknown":      {[]corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionUnknown}}, false},
		"no ready":     {[]corev1.PodCondition{{Type: corev1.ContainersReady, Status: corev1.ConditionTrue}}, false},
		"no condition": {nil, false},
	} {
		if got := PodReady(&corev1.Pod{Status: corev1.PodStatus{Conditions: tc.conds}}); got != tc.want {
			t.Errorf("%s: PodReady = %v, want %v", name, got, tc.want)
		}
	}
}
