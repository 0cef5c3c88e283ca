package workload

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Deployment rolls an apps/v1 Deployment by a server-side apply of Ripple's fields on its pod template. It
// can be paused (pause-period).
var Deployment Kind = pausable[*appsv1.Deployment]{typed[*appsv1.Deployment]{
	name:         "Deployment",
	newObj:       func() *appsv1.Deployment { return &appsv1.Deployment{} },
	newList:      func() client.ObjectList { return &appsv1.DeploymentList{} },
	template:     func(o *appsv1.Deployment) *corev1.PodTemplateSpec { return &o.Spec.Template },
	applyVersion: "apps/v1",
	paused:       func(o *appsv1.Deployment) *bool { return &o.Spec.Paused },
}}
