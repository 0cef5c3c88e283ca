package pin

import (
	"maps"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
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
		rb, why, err := PlanRollback(t.Context(), c, d, &d.Spec.Template, recordKey, NewChanged(cfg, app))
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
		if _, why, err := PlanRollback(t.Context(), c, d, &d.Spec.Template, recordKey, NewChanged(cfg, app)); err != nil || why == "" {
			t.Fatalf("PlanRollback of a workload on older data: %q, %v; want a reason", why, err)
		}
	})
	t.Run("keeps no revision of other data", func(t *testing.T) {
		d := deployment(bad)
		c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(rs("web-3", "3", bad, "app:3"), withData("app-r-bbbbbbbbbbbb", "bad"), d).Build()
		if _, why, err := PlanRollback(t.Context(), c, d, &d.Spec.Template, recordKey, NewChanged(cfg, app)); err != nil || why == "" {
			t.Fatalf("PlanRollback without an earlier revision: %q, %v; want a reason", why, err)
		}
	})
}

// rollout is an Argo Rollout ns/web (uid r-uid) selecting app=web, whose
// template pins record.
func rollout(t *testing.T, record string) *unstructured.Unstructured {
	t.Helper()
	tpl, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{
		Labels: map[string]string{"app": "web"}, Annotations: map[string]string{recordKey: record}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:3"}}}})
	if err != nil {
		t.Fatal(err)
	}
	ro := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"selector": map[string]any{"matchLabels": map[string]any{"app": "web"}}, "template": tpl}}}
	ro.SetGroupVersionKind(rolloutKind.WithVersion("v1alpha1"))
	ro.SetNamespace("ns")
	ro.SetName("web")
	ro.SetUID("r-uid")
	return ro
}

// rolloutScheme knows Argo Rollouts' kinds as unstructured objects, as
// Ripple reads them.
func rolloutScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	gv := rolloutKind.WithVersion("v1alpha1").GroupVersion()
	s.AddKnownTypeWithName(gv.WithKind("Rollout"), &unstructured.Unstructured{})
	s.AddKnownTypeWithName(gv.WithKind("RolloutList"), &unstructured.UnstructuredList{})
	return s
}

// An Argo Rollout's revisions are its ReplicaSets, numbered by Argo
// Rollouts' own annotation: its copies are handed to them, and an undo
// puts back the newest one of other data, without the hash label its
// controller adds, as `kubectl argo rollouts undo` does.
func TestRollout(t *testing.T) {
	app := refs.Ref{Kind: refs.ConfigMap, Name: "app"}
	byRollout := metav1.OwnerReference{APIVersion: "argoproj.io/v1alpha1", Kind: "Rollout", Name: "web", UID: "r-uid", Controller: new(true)}
	rs := func(name, number, record, image string) *appsv1.ReplicaSet {
		r := replicaSet(name, types.UID("uid-"+name), byRollout, record)
		r.Annotations = map[string]string{rolloutRevision: number}
		r.Spec.Template.Labels = map[string]string{"app": "web", rolloutHash: name}
		r.Spec.Template.Spec.Containers = []corev1.Container{{Name: "app", Image: image}}
		return r
	}
	const good, bad = "configmap/app=aaaaaaaaaaaa", "configmap/app=bbbbbbbbbbbb"
	cfg := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app"}, Data: map[string]string{"k": "bad"}}
	goodCopy := copyObject("ConfigMap", "app-r-aaaaaaaaaaaa", true, metav1.OwnerReference{APIVersion: "argoproj.io/v1alpha1", Kind: "Rollout", Name: "web", UID: "r-uid"})
	badCopy := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app-r-bbbbbbbbbbbb", Labels: map[string]string{CopyLabel: "true"}}, Data: cfg.Data}
	ro := rollout(t, bad)
	c := fake.NewClientBuilder().WithScheme(rolloutScheme(t)).WithObjects(ro, rs("web-1", "1", good, "app:1"), rs("web-2", "2", bad, "app:2"), goodCopy, badCopy).Build()
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(ro), ro); err != nil {
		t.Fatal(err)
	}

	if err := (Copier{Client: c, API: c}).Adopt(t.Context(), ro, recordKey); err != nil {
		t.Fatal(err)
	}
	if got := owners(t, c, goodCopy); !slices.Equal(got, []string{"ReplicaSet/web-1"}) {
		t.Errorf("the copy is owned by %v, want the Rollout's ReplicaSet", got)
	}

	var tpl corev1.PodTemplateSpec
	m, _, _ := unstructured.NestedMap(ro.Object, "spec", "template")
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &tpl); err != nil {
		t.Fatal(err)
	}
	rb, why, err := PlanRollback(t.Context(), c, ro, &tpl, recordKey, NewChanged(cfg, app))
	if err != nil || why != "" || rb.Revision != 1 || rb.To.Name() != "app-r-aaaaaaaaaaaa" {
		t.Fatalf("PlanRollback: %+v, %q, %v; want revision 1, to the good copy", rb, why, err)
	}
	if err := rb.Apply(t.Context(), c, ro); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(ro), ro); err != nil {
		t.Fatal(err)
	}
	record, _, _ := unstructured.NestedString(ro.Object, "spec", "template", "metadata", "annotations", recordKey)
	labels, _, _ := unstructured.NestedStringMap(ro.Object, "spec", "template", "metadata", "labels")
	if record != good || !maps.Equal(labels, map[string]string{"app": "web"}) {
		t.Errorf("after the undo the Rollout's template pins %q with labels %v, want %q and no hash label", record, labels, good)
	}
}
