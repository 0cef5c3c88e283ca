package workload

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// DaemonSet rolls an apps/v1 DaemonSet by a server-side apply of Ripple's fields on its pod template.
var DaemonSet Kind = typed[*appsv1.DaemonSet]{
	name:         "DaemonSet",
	newObj:       func() *appsv1.DaemonSet { return &appsv1.DaemonSet{} },
	newList:      func() client.ObjectList { return &appsv1.DaemonSetList{} },
	template:     func(o *appsv1.DaemonSet) *corev1.PodTemplateSpec { return &o.Spec.Template },
	applyVersion: "apps/v1",
}
