package workload

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
)

// ownedFields reads what client-go's ExtractDeployment reads (with the
// schema of every type) for every field Ripple's apply configurations
// hold: the same apply configuration, up to empty maps, which own
// nothing. Where env var names repeat (the API server allows it, with a
// warning) ExtractDeployment fails; ownedFields reads Ripple's fields as
// it would without the repeat.
func TestOwnedFieldsAsClientGoExtracts(t *testing.T) {
	const envKey = `"k:{\"name\":\"app\"}":{".":{},"f:name":{},"f:env":{"k:{\"name\":\"STAKATER_APP_CONFIG_CONFIGMAP\"}":{".":{},"f:name":{},"f:value":{}}}}`
	deployment := func(fields string, mutate func(*appsv1.Deployment)) *appsv1.Deployment {
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop",
				Annotations: map[string]string{"ripple.dev/applied": "rec", "owner": "gitops"}},
			Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"reloader.stakater.com/last-reloaded-from": "x", "team": "a"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{
					{Name: "app", Image: "app:1", Env: []corev1.EnvVar{
						{Name: "STAKATER_APP_CONFIG_CONFIGMAP", Value: "d1"},
						{Name: "FROM", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
					}},
					{Name: "sidecar", Image: "side:1"},
				}},
			}},
		}
		if fields != "" {
			d.ManagedFields = []metav1.ManagedFieldsEntry{
				{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:replicas":{}}}`)},
				{Manager: FieldManager, Operation: metav1.ManagedFieldsOperationApply, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(fields)},
			}
		}
		if mutate != nil {
			mutate(d)
		}
		return d
	}
	for _, tc := range []struct {
		name string
		d    *appsv1.Deployment
		// like, when set, is what client-go reads instead of d.
		like *appsv1.Deployment
	}{
		{"no fields of Ripple's", deployment("", nil), nil},
		{"the applied record", deployment(`{"f:metadata":{"f:annotations":{"f:ripple.dev/applied":{}}}}`, nil), nil},
		{"an env var", deployment(`{"f:metadata":{"f:annotations":{"f:ripple.dev/applied":{}}},"f:spec":{"f:template":{"f:spec":{"f:containers":{`+envKey+`}}}}}`, nil), nil},
		{"an env var another manager removed", deployment(`{"f:spec":{"f:template":{"f:spec":{"f:containers":{`+envKey+`}}}}}`, func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Containers[0].Env = d.Spec.Template.Spec.Containers[0].Env[1:]
		}), nil},
		{"a container that is gone", deployment(`{"f:spec":{"f:template":{"f:spec":{"f:containers":{`+envKey+`}}}}}`, func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Containers = d.Spec.Template.Spec.Containers[1:]
		}), nil},
		{"a pod-template annotation and spec.paused", deployment(`{"f:spec":{"f:paused":{},"f:template":{"f:metadata":{"f:annotations":{"f:reloader.stakater.com/last-reloaded-from":{}}}}}}`, func(d *appsv1.Deployment) {
			d.Spec.Paused = true
		}), nil},
		{"an annotation another manager removed", deployment(`{"f:metadata":{"f:annotations":{"f:ripple.dev/gone":{}}}}`, nil), nil},
		{"env names repeated", deployment(`{"f:spec":{"f:template":{"f:spec":{"f:containers":{`+envKey+`}}}}}`, func(d *appsv1.Deployment) {
			c := &d.Spec.Template.Spec.Containers[0]
			c.Env = append(c.Env, corev1.EnvVar{Name: "FROM", Value: "again"})
		}), deployment(`{"f:spec":{"f:template":{"f:spec":{"f:containers":{`+envKey+`}}}}}`, nil)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			like := tc.d
			if tc.like != nil {
				like = tc.like
			}
			ac, err := appsv1ac.ExtractDeployment(like, FieldManager)
			if err != nil {
				t.Fatal(err)
			}
			b, err := json.Marshal(ac)
			if err != nil {
				t.Fatal(err)
			}
			var want map[string]any
			if err := json.Unmarshal(b, &want); err != nil {
				t.Fatal(err)
			}
			got, err := ownedFields(tc.d, "apps/v1", "Deployment", &tc.d.Spec.Template, &tc.d.Spec.Paused, FieldManager)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(dropEmptyMaps(want), dropEmptyMaps(got)); diff != "" {
				t.Errorf("ownedFields differs from ExtractDeployment (-want +got):\n%s", diff)
			}
		})
	}
}

// dropEmptyMaps removes the empty maps of m, which own no field.
func dropEmptyMaps(m map[string]any) map[string]any {
	for k, v := range m {
		if vm, ok := v.(map[string]any); ok {
			if len(dropEmptyMaps(vm)) == 0 {
				delete(m, k)
			}
		}
	}
	return m
}
