package kit

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// WorkloadKind builds and reads one kind of workload Ripple reloads, so a
// scenario runs unchanged for each kind.
type WorkloadKind struct {
	Name string
	// New builds a workload from meta and a pod template. Kinds with a
	// selector select app=<meta.Name>, a label New puts on the template;
	// batch kinds never restart their pods.
	New func(meta metav1.ObjectMeta, tpl corev1.PodTemplateSpec) client.Object
	// Template returns the pod template of a workload of the kind.
	Template func(client.Object) *corev1.PodTemplateSpec
}

func (k *WorkloadKind) String() string { return k.Name }

// The kinds Ripple reloads by changing their own pod template.
var (
	Deployment = &WorkloadKind{
		Name: "Deployment",
		New: func(meta metav1.ObjectMeta, tpl corev1.PodTemplateSpec) client.Object {
			return &appsv1.Deployment{ObjectMeta: meta, Spec: appsv1.DeploymentSpec{Selector: selectApp(&tpl, meta.Name), Template: tpl}}
		},
		Template: func(o client.Object) *corev1.PodTemplateSpec { return &as[*appsv1.Deployment](o).Spec.Template },
	}
	StatefulSet = &WorkloadKind{
		Name: "StatefulSet",
		New: func(meta metav1.ObjectMeta, tpl corev1.PodTemplateSpec) client.Object {
			return &appsv1.StatefulSet{ObjectMeta: meta, Spec: appsv1.StatefulSetSpec{Selector: selectApp(&tpl, meta.Name), Template: tpl}}
		},
		Template: func(o client.Object) *corev1.PodTemplateSpec { return &as[*appsv1.StatefulSet](o).Spec.Template },
	}
	DaemonSet = &WorkloadKind{
		Name: "DaemonSet",
		New: func(meta metav1.ObjectMeta, tpl corev1.PodTemplateSpec) client.Object {
			return &appsv1.DaemonSet{ObjectMeta: meta, Spec: appsv1.DaemonSetSpec{Selector: selectApp(&tpl, meta.Name), Template: tpl}}
		},
		Template: func(o client.Object) *corev1.PodTemplateSpec { return &as[*appsv1.DaemonSet](o).Spec.Template },
	}
)

// TemplateKinds are the kinds whose reload is a change of their own pod
// template, in the order the suites run them.
var TemplateKinds = []*WorkloadKind{Deployment, StatefulSet, DaemonSet}

// The batch kinds: a reload does not change the object's own template; a
// CronJob starts a Job, a Job is re-created.
var (
	CronJob = &WorkloadKind{
		Name: "CronJob",
		New: func(meta metav1.ObjectMeta, tpl corev1.PodTemplateSpec) client.Object {
			tpl.Spec.RestartPolicy = corev1.RestartPolicyNever
			return &batchv1.CronJob{ObjectMeta: meta, Spec: batchv1.CronJobSpec{
				Schedule:    NeverSchedule,
				JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: tpl}},
			}}
		},
		Template: func(o client.Object) *corev1.PodTemplateSpec {
			return &as[*batchv1.CronJob](o).Spec.JobTemplate.Spec.Template
		},
	}
	Job = &WorkloadKind{
		Name: "Job",
		New: func(meta metav1.ObjectMeta, tpl corev1.PodTemplateSpec) client.Object {
			tpl.Spec.RestartPolicy = corev1.RestartPolicyNever
			return &batchv1.Job{ObjectMeta: meta, Spec: batchv1.JobSpec{Template: tpl}}
		},
		Template: func(o client.Object) *corev1.PodTemplateSpec { return &as[*batchv1.Job](o).Spec.Template },
	}
)

// as is o as a T; a kind's Template given another kind's object is a bug in
// the test, so it panics, naming both.
func as[T client.Object](o client.Object) T {
	v, ok := o.(T)
	if !ok {
		panic(fmt.Sprintf("kit: %T is not a %T", o, v))
	}
	return v
}

// NeverSchedule is a CronJob schedule that does not fire while a test runs
// (midnight on January 1st), so every Job of a test CronJob is Ripple's.
const NeverSchedule = "0 0 1 1 *"

func selectApp(tpl *corev1.PodTemplateSpec, name string) *metav1.LabelSelector {
	tpl.Labels = map[string]string{"app": name}
	return &metav1.LabelSelector{MatchLabels: tpl.Labels}
}
