package explain

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/ripple-dev/ripple/api/v1alpha1"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/standing"
)

// A Secret the user may not read (the built-in view role) is explained by
// what Ripple records of its change, its ConfigRollout, with the right it
// lacks named: no digest, and no workload state made up without the data.
func TestChangeOfAnUnreadableSecret(t *testing.T) {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = v1alpha1.AddToScheme(scheme)
	cr := &v1alpha1.ConfigRollout{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "db-1", Labels: map[string]string{v1alpha1.LabelConfigKind: "secret", v1alpha1.LabelConfigName: "db"}},
		Spec:       v1alpha1.ConfigRolloutSpec{Config: v1alpha1.ConfigReference{Kind: "Secret", Name: "db"}},
		Status: v1alpha1.ConfigRolloutStatus{Phase: v1alpha1.PhasePropagated, SeenAt: metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)),
			Counts: v1alpha1.Counts{Managed: 2, Complete: 2, Stale: 1}},
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "db"}, Data: map[string][]byte{"password": []byte("hunter2")}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(cr, secret).WithInterceptorFuncs(forbidSecrets).Build()
	got, err := Explainer{Reader: c, Settings: defaults(t)}.Change(t.Context(), nil, "shop", refs.Ref{Kind: refs.Secret, Name: "db"})
	if err != nil {
		t.Fatal(err)
	}
	if got.Digest != "" || len(got.Workloads) != 0 || got.Rollout == nil || got.Rollout.Name != "db-1" ||
		got.Unread != "needs get on secrets in namespace shop (the built-in view role reads no Secrets)" {
		t.Errorf("Change = %+v, want the ConfigRollout db-1, no digest, no workloads, and the right it lacks", got)
	}
	var out bytes.Buffer
	if err := PrintChange(&out, FormatTable, got); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Data:       not read: needs get on secrets in namespace shop", "Change:     db-1: Propagated, 2 of 2 managed consumers updated, 1 stale",
		"kubectl get configrollout db-1 -n shop -o yaml"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table:\n%s\nwant %q", out.String(), want)
		}
	}
}

// A ConfigMap's change in a namespace where some workloads also read a
// Secret the user may not read: those that use the ConfigMap are listed
// as not planned, with the right they lack; those that do not are left
// out; the others are planned as usual.
func TestChangeWithUnreadableOtherSecrets(t *testing.T) {
	auto := map[string]string{"reloader.stakater.com/auto": "true"}
	deployment := func(name string, volumes ...corev1.Volume) *appsv1.Deployment {
		app := corev1.Container{Name: "app"}
		for _, v := range volumes {
			app.VolumeMounts = append(app.VolumeMounts, corev1.VolumeMount{Name: v.Name, MountPath: "/" + v.Name})
		}
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, Annotations: auto},
			Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{app}, Volumes: volumes}}}}
	}
	cfg := corev1.Volume{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}}
	db := corev1.Volume{Name: "db", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "db"}}}
	c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "cfg"}, Data: map[string]string{"k": "v"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "db"}},
		deployment("web", cfg), deployment("api", cfg, db), deployment("worker", db),
	).WithInterceptorFuncs(forbidSecrets).Build()
	s := defaults(t)
	e := Explainer{Reader: c, Settings: s, Now: time.Now}
	got, err := e.Change(t.Context(), Kinds(s, c), "shop", refs.Ref{Kind: refs.ConfigMap, Name: "cfg"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Workloads) != 1 || got.Workloads[0].Name != "web" || got.Workloads[0].State != standing.Complete {
		t.Errorf("workloads %+v, want web up to date", got.Workloads)
	}
	if len(got.Unplanned) != 1 || got.Unplanned[0].Name != "api" || !strings.Contains(got.Unplanned[0].Why, "cannot read Secret shop/db") {
		t.Errorf("not planned %+v, want api, naming Secret shop/db", got.Unplanned)
	}
	// explain --all: the workloads that read the Secret are not planned,
	// with the right they lack; the rest of the namespace is explained.
	all, err := e.All(t.Context(), Kinds(s, c), "shop")
	if err != nil {
		t.Fatalf("explain --all failed on a Secret the user may not read: %v", err)
	}
	var unplanned []string
	for _, u := range all.Unplanned {
		if strings.Contains(u.Why, "cannot read Secret shop/db") {
			unplanned = append(unplanned, u.Name)
		}
	}
	slices.Sort(unplanned)
	if len(all.Items) != 1 || all.Items[0].Workload.Name != "web" || strings.Join(unplanned, ",") != "api,worker" {
		t.Errorf("--all: items %d (first %v), not planned %v; want web, and api and worker not planned", len(all.Items), all.Items, unplanned)
	}
	var out strings.Builder
	if err := PrintList(&out, FormatTable, all, false); err != nil || !strings.Contains(out.String(), "Not planned (with your rights):") {
		t.Errorf("--all's table (%v):\n%s\nwant the workloads not planned listed", err, out.String())
	}
}

// forbidSecrets forbids every Secret read, as the built-in view role does.
var forbidSecrets = interceptor.Funcs{
	Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		if _, ok := obj.(*corev1.Secret); ok {
			return apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, key.Name, nil)
		}
		return c.Get(ctx, key, obj, opts...)
	},
	List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
		if _, ok := list.(*corev1.SecretList); ok {
			return apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "", nil)
		}
		return c.List(ctx, list, opts...)
	},
}
