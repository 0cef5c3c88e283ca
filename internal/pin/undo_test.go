package pin

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/ripple-dev/ripple/internal/refs"
)

// A Deployment that runs the config's latest data (its copy holds the
// config's data) rolls back to the newest revision that pins other data,
// its template put back whole; one that runs older data, or keeps no
// revision of other data, is left alone, saying why.
func TestPlanRollback(t *testing.T) {
	app := refs.Ref{Kind: refs.ConfigMap, Name: "app"}
	ctrlBy := ownerOf("Deployment", "web", "d-uid", true)
	rs := func(name, number, record, image string) *appsv1.ReplicaSet {
		r := replicaSet(name, types.UID("uid-"+name), ctrlBy, record)
		r.Annotations = map[string]string{deploymentRevision: number}
		r.Spec.Template.Labels = map[string]string{"app": "web", appsv1.DefaultDeploymentUniqueLabelKey: name}
		r.Spec.Template.Spec.Containers = []corev1.Container{{Name: "app", Image: image}}
		return r
	}
	deployment := func(record string) *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "d-uid"},
			Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"},
					Annotations: map[string]string{recordKey: record}}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:3"}}}}}}
	}
	cfg := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app"}, Data: map[string]string{"k": "bad"}}
	withData := func(name, v string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: map[string]string{CopyLabel: "true"}}, Data: map[string]string{"k": v}}
	}
	const good, bad, older = "configmap/app=aaaaaaaaaaaa", "configmap/app=bbbbbbbbbbbb", "configmap/app=cccccccccccc"
	revs := []client.Object{rs("web-1", "1", older, "app:1"), rs("web-2", "2", good, "app:2"), rs("web-3", "3", bad, "app:3"),
		withData("app-r-aaaaaaaaaaaa", "good"), withData("app-r-bbbbbbbbbbbb", "bad"), withData("app-r-cccccccccccc", "older")}

	t.Run("runs the latest data", func(t *testing.T) {
		d := deployment(bad)
		c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(append(revs, d)...).Build()
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(d), d); err != nil {
			t.Fatal(err)
		}
		rb, why, err := PlanRollback(t.Context(), c, d, &d.Spec.Template, recordKey, cfg, app)
		if err != nil || why != "" {
			t.Fatalf("PlanRollback: %q, %v", why, err)
		}
		if rb.Revision != 2 || rb.From.Name() != "app-r-bbbbbbbbbbbb" || rb.To.Name() != "app-r-aaaaaaaaaaaa" {
			t.Fatalf("rollback %+v, want revision 2, from the bad copy to the good one", rb)
		}
		if err := rb.Apply(t.Context(), c, d); err != nil {
			t.Fatal(err)
		}
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(d), d); err != nil {
			t.Fatal(err)
		}
		tpl := d.Spec.Template
		if tpl.Annotations[recordKey] != good || tpl.Spec.Containers[0].Image != "app:2" || tpl.Labels[appsv1.DefaultDeploymentUniqueLabelKey] != "" {
			t.Errorf("template after the rollback: %+v, want revision 2's, without its hash label", tpl)
		}
	})
	t.Run("runs older data", func(t *testing.T) {
		d := deployment(good)
		c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(append(revs, d)...).Build()
		if _, why, err := PlanRollback(t.Context(), c, d, &d.Spec.Template, recordKey, cfg, app); err != nil || why == "" {
			t.Fatalf("PlanRollback of a workload on older data: %q, %v; want a reason", why, err)
		}
	})
	t.Run("keeps no revision of other data", func(t *testing.T) {
		d := deployment(bad)
		c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(rs("web-3", "3", bad, "app:3"), withData("app-r-bbbbbbbbbbbb", "bad"), d).Build()
		if _, why, err := PlanRollback(t.Context(), c, d, &d.Spec.Template, recordKey, cfg, app); err != nil || why == "" {
			t.Fatalf("PlanRollback without an earlier revision: %q, %v; want a reason", why, err)
		}
	})
}
