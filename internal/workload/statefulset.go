package workload

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// StatefulSet rolls an apps/v1 StatefulSet by a server-side apply of Ripple's fields on its pod template.
var StatefulSet Kind = typed[*appsv1.StatefulSet]{
	name:         "StatefulSet",
	newObj:       func() *appsv1.StatefulSet { return &appsv1.StatefulSet{} },
	newList:      func() client.ObjectList { return &appsv1.StatefulSetList{} },
	template:     func(o *appsv1.StatefulSet) *corev1.PodTemplateSpec { return &o.Spec.Template },
	applyVersion: "apps/v1",
}
