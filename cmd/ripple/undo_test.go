package main

import (
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stypes "k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/ripple-dev/ripple/api/v1alpha1"
	"github.com/ripple-dev/ripple/internal/pin"
)

// planUndo rolls back the workloads that run the config's current data,
// the change's canary first whatever its name; it leaves alone one that
// runs older data and says why, and skips one that does not read the
// config.
func TestPlanUndo(t *testing.T) {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = v1alpha1.AddToScheme(scheme)
	const key, good, bad = "ripple.dev/pinned", "configmap/app=aaaaaaaaaaaa", "configmap/app=bbbbbbbbbbbb"
	cfg := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "app", UID: "app-uid"}, Data: map[string]string{"k": "bad"}}
	copyOf := func(name, v string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, Labels: map[string]string{pin.CopyLabel: "true"}}, Data: map[string]string{"k": v}}
	}
	objs := []client.Object{cfg, copyOf("app-r-aaaaaaaaaaaa", "good"), copyOf("app-r-bbbbbbbbbbbb", "bad")}
	deployment := func(name, record string, reads bool) {
		tpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}, Annotations: map[string]string{key: record}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}}}
		if reads {
			tpl.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "app"}}}}
		}
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, UID: k8stypes.UID(name + "-uid")},
			Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}, Template: tpl}}
		objs = append(objs, d)
		for i, rec := range []string{good, record} {
			rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name + "-" + string(rune('1'+i)), Labels: map[string]string{"app": name},
				Annotations:     map[string]string{"deployment.kubernetes.io/revision": string(rune('1' + i))},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: name, UID: d.UID, Controller: ptr.To(true)}}},
				Spec: appsv1.ReplicaSetSpec{Template: *tpl.DeepCopy()}}
			rs.Spec.Template.Annotations = map[string]string{key: rec}
			objs = append(objs, rs)
		}
	}
	deployment("a-first", bad, true)
	deployment("z-canary", bad, true)
	deployment("held", good, true)
	deployment("other", bad, false)
	objs = append(objs, &v1alpha1.ConfigRollout{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "app-1", CreationTimestamp: metav1.NewTime(time.Now()),
			Labels: map[string]string{v1alpha1.LabelConfigKind: "configmap", v1alpha1.LabelConfigName: "app"}},
		Spec:   v1alpha1.ConfigRolloutSpec{Config: v1alpha1.ConfigReference{Kind: "ConfigMap", Name: "app", UID: "app-uid"}, Revision: "r1"},
		Status: v1alpha1.ConfigRolloutStatus{Canary: &v1alpha1.CanaryStatus{Phase: "Halted", Workloads: []v1alpha1.CanaryWorkload{{Kind: "Deployment", Name: "z-canary"}}}},
	})
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
	todo, left, err := planUndo(t.Context(), c, "shop", cfg, key)
	if err != nil {
		t.Fatal(err)
	}
	names := func(us []undone) []string {
		var out []string
		for _, u := range us {
			out = append(out, u.String())
		}
		return out
	}
	if got, want := names(todo), []string{"Deployment/z-canary", "Deployment/a-first"}; !slices.Equal(got, want) {
		t.Errorf("rolled back %v, want %v (the canary first)", got, want)
	}
	if got := names(left); !slices.Equal(got, []string{"Deployment/held"}) || left[0].why == "" {
		t.Errorf("left alone %v (%+v), want the held Deployment, with why", got, left)
	}
}
