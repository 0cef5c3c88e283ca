package gather

import (
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/internal/annotation"
	"github.com/ripple-dev/ripple/internal/digest"
	"github.com/ripple-dev/ripple/internal/manifest"
	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/source"
	"github.com/ripple-dev/ripple/internal/workload"
)

var keys = annotation.DefaultKeys("")

func cm(name string, data string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, Annotations: map[string]string{"team": "a"}}, Data: map[string]string{"k": data}}
}

func secret(name string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name}, Data: map[string][]byte{"k": []byte(name)}}
}

func spc(name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(source.SecretProviderClassGVK)
	u.SetNamespace("shop")
	u.SetName(name)
	return u
}

// podStatus is a pod status of SecretProviderClass vault, as cached.
func podStatus(name, version string) *unstructured.Unstructured {
	u := source.PodStatusObject()
	u.SetNamespace("shop")
	u.SetName(name)
	_ = unstructured.SetNestedField(u.Object, "vault", "status", "secretProviderClassName")
	_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"id": "secret/db", "version": version}}, "status", "objects")
	_, _ = source.TransformPodStatus(u) // as the cache holds it
	return u
}

// web references ConfigMap cfg and SecretProviderClass vault, names
// Secrets by a pattern, and its applied record holds a ConfigMap that is
// gone.
func web() *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", Annotations: map[string]string{
			keys.ReloadKey(refs.Secret): "app-.*",
			keys.Applied:                `{"ConfigMap/gone":"abc"}`,
		}},
		Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "app", EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}}}},
			Volumes: []corev1.Volume{{Name: "vault", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{
				Driver: "secrets-store.csi.k8s.io", VolumeAttributes: map[string]string{"secretProviderClass": "vault"},
			}}}},
		}}},
	}
}

func gatherer(objs []client.Object, rot *source.Rotations, priors *source.Priors) Gatherer {
	return Gatherer{
		Reader:    manifest.NewReader(objs),
		Settings:  plan.Settings{Keys: keys, SourceKinds: refs.Kinds()},
		Rotations: rot, Priors: priors,
	}
}

func refsOf(in plan.Input) []string {
	var out []string
	for _, s := range in.Sources {
		out = append(out, s.Ref.String())
	}
	return out
}

// Input reads every candidate source: referenced, named by a pattern
// (only the matching ones), and in the applied record even when gone; with
// the data replaced by its digest, as the cache holds it.
func TestInput(t *testing.T) {
	objs := []client.Object{web(), cm("cfg", "v1"), cm("unused", "v1"), secret("app-1"), secret("app-2"), secret("other"), spc("vault"),
		podStatus("p1", "1"), podStatus("p2", "1"), podStatus("p3", "2")}
	rot := &source.Rotations{}
	rot.Serve()
	g := gatherer(objs, rot, nil)
	d := web()
	in, err := g.Input(t.Context(), workload.Deployment, d, &d.Spec.Template)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"ConfigMap/cfg", "ConfigMap/gone", "Secret/app-1", "Secret/app-2", "SecretProviderClass/vault"}
	if got := refsOf(in); !slices.Equal(got, want) {
		t.Fatalf("sources = %v, want %v", got, want)
	}
	cfg, gone, vault := in.Sources[0], in.Sources[1], in.Sources[4]
	if !cfg.Found || cfg.Digest != digest.ConfigMap(cm("cfg", "v1")) || cfg.Annotations["team"] != "a" || cfg.Keys == "" {
		t.Errorf("ConfigMap/cfg = %+v", cfg)
	}
	if gone.Found || gone.Digest != "" {
		t.Errorf("ConfigMap/gone = %+v, want not found", gone)
	}
	// No rotation seen since start: what the pods mounted, by digest.
	if !vault.Found || vault.Digest != "" || len(vault.Mounts) != 2 || slices.Max(mapValues(vault.Mounts)) != 2 {
		t.Errorf("SecretProviderClass/vault = %+v, want two digests mounted, one by two pods", vault)
	}
	if in.Workload.Namespace != "shop" || !in.Workload.Pausable || in.Workload.Template != &d.Spec.Template {
		t.Errorf("workload = %+v", in.Workload)
	}

	// A rotation seen wins over the mounts.
	changed := podStatus("p4", "3")
	rot.Observe(changed)
	in, err = g.Input(t.Context(), workload.Deployment, d, &d.Spec.Template)
	if err != nil || in.Sources[4].Digest != source.Digest(changed) || in.Sources[4].Mounts != nil {
		t.Errorf("after a rotation: %+v, %v", in.Sources[4], err)
	}
}

// Until the CSI driver's API is served, SecretProviderClasses are left out.
func TestInputWithoutTheCSIDriver(t *testing.T) {
	d := web()
	in, err := gatherer([]client.Object{d, cm("cfg", "v1")}, nil, nil).Input(t.Context(), workload.Deployment, d, &d.Spec.Template)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(in.SourceKinds, refs.SecretProviderClass) || slices.Contains(refsOf(in), "SecretProviderClass/vault") {
		t.Errorf("kinds %v, sources %v: SecretProviderClass gathered without the driver", in.SourceKinds, refsOf(in))
	}
}

// A ConfigMap changed since start carries its data before the change.
func TestInputPriors(t *testing.T) {
	d := web()
	old, cur := cm("cfg", "v1"), cm("cfg", "v2")
	for _, o := range []*corev1.ConfigMap{old, cur} {
		if _, err := source.Transform(digest.Digester{}, o); err != nil {
			t.Fatal(err)
		}
	}
	priors := &source.Priors{}
	seen := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	priors.Observe(refs.ConfigMap, old, cur, seen)
	in, err := gatherer([]client.Object{d, cm("cfg", "v2")}, nil, priors).Input(t.Context(), workload.Deployment, d, &d.Spec.Template)
	if err != nil {
		t.Fatal(err)
	}
	b := in.Sources[0].Before
	if b == nil || b.Digest != source.Digest(old) || !b.Seen.Equal(seen) || in.Sources[0].Digest != source.Digest(cur) {
		t.Errorf("ConfigMap/cfg = %+v, before %+v", in.Sources[0], b)
	}
}

// Workload is the workload as the planner sees it: a CronJob's invalid
// mode annotation is reported, a StatefulSet is not pausable.
func TestWorkload(t *testing.T) {
	cj := &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "nightly", Annotations: map[string]string{keys.CronJobReload: "often"}}}
	kind := workload.NewCronJob(workload.CronJobOptions{Mode: workload.CronJobRun, ModeKey: keys.CronJobReload})
	w := Workload(kind, cj, &cj.Spec.JobTemplate.Spec.Template)
	if len(w.Invalid) != 1 || !w.KeepsTemplate || w.Pausable {
		t.Errorf("CronJob = %+v", w)
	}
	ss := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "db"}}
	if w := Workload(workload.StatefulSet, ss, &ss.Spec.Template); w.Pausable || w.Invalid != nil || w.KeepsTemplate {
		t.Errorf("StatefulSet = %+v", w)
	}
}

// A change of the pod template by anyone starts new pods of the kinds that
// roll on it, not of a CronJob or a Job (plan's TemplateApplied).
func TestWorkloadRollsWithTemplate(t *testing.T) {
	obj := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}}
	for _, tc := range []struct {
		kind workload.Kind
		want bool
	}{
		{workload.Deployment, true}, {workload.StatefulSet, true}, {workload.DaemonSet, true},
		{workload.NewRollout(workload.RolloutOptions{}), true}, {workload.DeploymentConfig, true},
		{workload.NewCronJob(workload.CronJobOptions{Mode: workload.CronJobRun}), false}, {workload.NewJob(workload.JobOptions{}), false},
	} {
		if got := Workload(tc.kind, obj, &corev1.PodTemplateSpec{}).RollsWithTemplate; got != tc.want {
			t.Errorf("%s: RollsWithTemplate %v, want %v", tc.kind.Name(), got, tc.want)
		}
	}
}

func mapValues(m map[string]int) []int {
	var out []int
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// The workload's record counts as restored when another manager than
// Ripple wrote its value (a Deployment's undo), by managedFields.
func TestInputRecordRestored(t *testing.T) {
	record := metav1.NewFieldsV1(`{"f:metadata":{"f:annotations":{"f:` + keys.Applied + `":{}}}}`)
	for _, tc := range []struct {
		name   string
		fields []metav1.ManagedFieldsEntry
		want   bool
	}{
		{"Ripple wrote it", []metav1.ManagedFieldsEntry{
			{Manager: workload.FieldManager, Operation: metav1.ManagedFieldsOperationApply, FieldsType: "FieldsV1", FieldsV1: record},
			{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status"},
		}, false},
		{"kubectl rollout undo wrote it", []metav1.ManagedFieldsEntry{
			{Manager: "kubectl-rollout", Operation: metav1.ManagedFieldsOperationUpdate, FieldsType: "FieldsV1", FieldsV1: record},
		}, true},
		{"no managedFields", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := web()
			d.ManagedFields = tc.fields
			in, err := gatherer([]client.Object{d}, nil, nil).Input(t.Context(), workload.Deployment, d, &d.Spec.Template)
			if err != nil {
				t.Fatal(err)
			}
			if in.Workload.RecordRestored != tc.want {
				t.Errorf("RecordRestored %v, want %v", in.Workload.RecordRestored, tc.want)
			}
		})
	}
}

// A Deployment asking for in-place whose env var DB_URL is read by
// fileKeyRef from a file init container render writes from ConfigMap cfg
// is gathered with the template write and a problem naming why: the
// workload reloads, by a new pod.
func TestInputRefusesInPlaceForFileKeyRef(t *testing.T) {
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", Annotations: map[string]string{keys.RestartMethod: "in-place"}},
		Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Volumes: []corev1.Volume{{Name: "env", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
			InitContainers: []corev1.Container{{Name: "render", VolumeMounts: []corev1.VolumeMount{{Name: "env", MountPath: "/out"}},
				EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}}}},
			Containers: []corev1.Container{{Name: "app", Env: []corev1.EnvVar{{Name: "DB_URL",
				ValueFrom: &corev1.EnvVarSource{FileKeyRef: &corev1.FileKeySelector{VolumeName: "env", Path: "app.env", Key: "DB_URL"}}}}}},
		}}},
	}
	g := gatherer([]client.Object{d, cm("cfg", "v1")}, nil, nil)
	g.Settings.RestartMethod = workload.RestartTemplate
	in, err := g.Input(t.Context(), workload.WithRestarts(workload.Deployment), d, &d.Spec.Template)
	if err != nil {
		t.Fatal(err)
	}
	if in.Workload.Restart.Method != workload.RestartTemplate {
		t.Errorf("restart %+v, want the template write", in.Workload.Restart)
	}
	if !slices.ContainsFunc(in.Workload.Invalid, func(p string) bool {
		return strings.Contains(p, `restart method "in-place"`) && strings.Contains(p, "env var DB_URL") && strings.Contains(p, "init container render")
	}) {
		t.Errorf("problems %q, want one naming in-place, DB_URL and render", in.Workload.Invalid)
	}
}
