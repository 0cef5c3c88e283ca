package main

import (
	"context"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	k8stypes "k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/ripple-dev/ripple/api/v1alpha1"
	"github.com/ripple-dev/ripple/internal/pin"
	"github.com/ripple-dev/ripple/internal/workload"
)

// planUndo rolls back the workloads that run the config's current data
// (an Argo Rollout among them), the change's canary first whatever its
// name; it leaves alone one that runs older data and says why, and skips
// one that does not read the config. Each copy is read once.
func TestPlanUndo(t *testing.T) {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = v1alpha1.AddToScheme(scheme)
	scheme.AddKnownTypeWithName(workload.RolloutGVK, &unstructured.Unstructured{})
	scheme.AddKnownTypeWithName(workload.RolloutGVK.GroupVersion().WithKind("RolloutList"), &unstructured.UnstructuredList{})
	const key, good, bad = "ripple.dev/pinned", "configmap/app=aaaaaaaaaaaa", "configmap/app=bbbbbbbbbbbb"
	cfg := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "app", UID: "app-uid"}, Data: map[string]string{"k": "bad"}}
	copyOf := func(name, v string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, Labels: map[string]string{pin.CopyLabel: "true"}}, Data: map[string]string{"k": v}}
	}
	objs := []client.Object{cfg, copyOf("app-r-aaaaaaaaaaaa", "good"), copyOf("app-r-bbbbbbbbbbbb", "bad")}
	deployment := func(name, record string, reads, rollout bool) {
		tpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}, Annotations: map[string]string{key: record}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}}}
		if reads {
			tpl.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "app"}}}}
		}
		var d client.Object = &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, UID: k8stypes.UID(name + "-uid")},
			Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}, Template: tpl}}
		owner, numbered := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment"}, "deployment.kubernetes.io/revision"
		if rollout {
			u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(d)
			if err != nil {
				t.Fatal(err)
			}
			ro := &unstructured.Unstructured{Object: u}
			ro.SetGroupVersionKind(workload.RolloutGVK)
			d = ro
			owner, numbered = metav1.OwnerReference{APIVersion: workload.RolloutGVK.GroupVersion().String(), Kind: "Rollout"}, "rollout.argoproj.io/revision"
		}
		owner.Name, owner.UID, owner.Controller = name, d.GetUID(), ptr.To(true)
		objs = append(objs, d)
		for i, rec := range []string{good, record} {
			rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name + "-" + string(rune('1'+i)), Labels: map[string]string{"app": name},
				Annotations:     map[string]string{numbered: string(rune('1' + i))},
				OwnerReferences: []metav1.OwnerReference{owner}},
				Spec: appsv1.ReplicaSetSpec{Template: *tpl.DeepCopy()}}
			rs.Spec.Template.Annotations = map[string]string{key: rec}
			objs = append(objs, rs)
		}
	}
	deployment("a-first", bad, true, false)
	deployment("z-canary", bad, true, false)
	deployment("held", good, true, false)
	deployment("other", bad, false, false)
	deployment("ro", bad, true, true)
	objs = append(objs, &v1alpha1.ConfigRollout{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "app-1", CreationTimestamp: metav1.NewTime(time.Now()),
			Labels: map[string]string{v1alpha1.LabelConfigKind: "configmap", v1alpha1.LabelConfigName: "app"}},
		Spec:   v1alpha1.ConfigRolloutSpec{Config: v1alpha1.ConfigReference{Kind: "ConfigMap", Name: "app", UID: "app-uid"}, Revision: "r1"},
		Status: v1alpha1.ConfigRolloutStatus{Canary: &v1alpha1.CanaryStatus{Phase: "Halted", Workloads: []v1alpha1.CanaryWorkload{{Kind: "Deployment", Name: "z-canary"}}}},
	})
	reads := map[string]int{}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			reads[key.Name]++
			return c.Get(ctx, key, obj, opts...)
		},
	}).Build()
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
	if got, want := names(todo), []string{"Deployment/z-canary", "Deployment/a-first", "Rollout/ro"}; !slices.Equal(got, want) {
		t.Errorf("rolled back %v, want %v (the canary first)", got, want)
	}
	if got := names(left); !slices.Equal(got, []string{"Deployment/held"}) || left[0].why == "" {
		t.Errorf("left alone %v (%+v), want the held Deployment, with why", got, left)
	}
	for _, name := range []string{"app-r-aaaaaaaaaaaa", "app-r-bbbbbbbbbbbb"} {
		if reads[name] != 1 {
			t.Errorf("copy %s read %d times, want once however many workloads pin it", name, reads[name])
		}
	}
}
