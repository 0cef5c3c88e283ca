package workload

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

func podTemplate(ann string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"version": ann}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app"}}},
	}
}

func meta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: "ns", Name: name, Annotations: map[string]string{"stale": "x"}}
}

// Each built-in kind writes a reload as one patch of its pod template and
// metadata annotations (a nil value removes one), read back from the
// server.
func TestTypedWrite(t *testing.T) {
	tpl := podTemplate("old")
	kinds := []struct {
		kind Kind
		obj  client.Object
	}{
		{Deployment, &appsv1.Deployment{ObjectMeta: meta("d"), Spec: appsv1.DeploymentSpec{Template: tpl}}},
		{StatefulSet, &appsv1.StatefulSet{ObjectMeta: meta("s"), Spec: appsv1.StatefulSetSpec{Template: tpl}}},
		{DaemonSet, &appsv1.DaemonSet{ObjectMeta: meta("ds"), Spec: appsv1.DaemonSetSpec{Template: tpl}}},
		{NewCronJob(CronJobOptions{Mode: CronJobTemplate}), &batchv1.CronJob{ObjectMeta: meta("cj"),
			Spec: batchv1.CronJobSpec{JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: tpl}}}}},
	}
	for _, k := range kinds {
		t.Run(k.kind.Name(), func(t *testing.T) {
			c := fake.NewClientBuilder().WithObjects(k.obj).Build()
			obj := k.kind.New()
			if err := c.Get(t.Context(), client.ObjectKeyFromObject(k.obj), obj); err != nil {
				t.Fatal(err)
			}
			if k.kind.KeepsTemplate(obj) {
				t.Errorf("KeepsTemplate = true, want false")
			}
			next := podTemplate("new")
			res, err := k.kind.Write(t.Context(), c, obj, Update{Template: &next, Annotations: map[string]*string{"applied": ptr.To("yes"), "stale": nil}})
			if err != nil || res != (Result{}) {
				t.Fatalf("Write = %+v, %v", res, err)
			}
			got := k.kind.New()
			if err := c.Get(t.Context(), client.ObjectKeyFromObject(k.obj), got); err != nil {
				t.Fatal(err)
			}
			gotTpl, err := k.kind.PodTemplate(got)
			if err != nil || gotTpl.Annotations["version"] != "new" {
				t.Errorf("template after Write = %v, %v; want version new", gotTpl, err)
			}
			if a := got.GetAnnotations(); a["applied"] != "yes" || a["stale"] != "" {
				t.Errorf("annotations after Write = %v", a)
			}
			// The write was locked on the resourceVersion read: writing the
			// same stale copy again conflicts instead of applying twice.
			if _, err := k.kind.Write(t.Context(), c, obj, Update{Template: &tpl}); !apierrors.IsConflict(err) {
				t.Errorf("second Write of a stale copy = %v, want a conflict", err)
			}
		})
	}
}

func TestPodTemplateOfAnotherKind(t *testing.T) {
	for _, kind := range []Kind{Deployment, StatefulSet, DaemonSet, NewCronJob(CronJobOptions{}), NewJob(JobOptions{})} {
		if _, err := kind.PodTemplate(&corev1.ConfigMap{}); err == nil {
			t.Errorf("%s.PodTemplate(ConfigMap) did not fail", kind.Name())
		}
		if _, err := kind.Write(t.Context(), nil, &corev1.ConfigMap{}, Update{Template: &corev1.PodTemplateSpec{}}); err == nil {
			t.Errorf("%s.Write(ConfigMap) did not fail", kind.Name())
		}
		if err := fake.NewClientBuilder().Build().List(t.Context(), kind.NewList()); err != nil {
			t.Errorf("%s.NewList is not listable: %v", kind.Name(), err)
		}
	}
}

// Pause-period pauses and resumes a Deployment through spec.paused.
func TestDeploymentPause(t *testing.T) {
	d := &appsv1.Deployment{ObjectMeta: meta("d"), Spec: appsv1.DeploymentSpec{Template: podTemplate("a")}}
	c := fake.NewClientBuilder().WithObjects(d).Build()
	pz, ok := Deployment.(Pauser)
	if !ok {
		t.Fatal("a Deployment is no Pauser")
	}
	got := &appsv1.Deployment{}
	_ = c.Get(t.Context(), client.ObjectKeyFromObject(d), got)
	if pz.Paused(got) {
		t.Fatal("paused before the write")
	}
	if _, err := Deployment.Write(t.Context(), c, got, Update{Paused: ptr.To(true)}); err != nil {
		t.Fatal(err)
	}
	_ = c.Get(t.Context(), client.ObjectKeyFromObject(d), got)
	if !pz.Paused(got) || got.Spec.Template.Annotations["version"] != "a" {
		t.Errorf("after pausing: paused %v, template %v", got.Spec.Paused, got.Spec.Template.Annotations)
	}
	if pz.Paused(&corev1.ConfigMap{}) {
		t.Error("a ConfigMap is paused")
	}
}

func nightly(mode string, suspend bool) *batchv1.CronJob {
	return &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "nightly", UID: "cj-uid", Annotations: map[string]string{"mode": mode}},
		Spec: batchv1.CronJobSpec{Suspend: &suspend, JobTemplate: batchv1.JobTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "nightly"}, Annotations: map[string]string{"team": "a"}},
			Spec:       batchv1.JobSpec{Template: podTemplate("old")},
		}},
	}
}

func jobs(t *testing.T, c client.Client) []batchv1.Job {
	t.Helper()
	list := &batchv1.JobList{}
	if err := c.List(t.Context(), list, client.InNamespace("ns")); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// In run mode a CronJob's reload starts a Job from the new template, as
// `kubectl create job --from` does, and leaves the CronJob's own template
// alone; the pending record is cleared once the Job exists.
func TestCronJobRun(t *testing.T) {
	kind := NewCronJob(CronJobOptions{Mode: CronJobTemplate, ModeKey: "mode", PendingKey: "pending"})
	cj := nightly(CronJobRun, false)
	c := fake.NewClientBuilder().WithObjects(cj).Build()
	got := &batchv1.CronJob{}
	_ = c.Get(t.Context(), client.ObjectKeyFromObject(cj), got)
	if !kind.KeepsTemplate(got) {
		t.Error("a CronJob in run mode does not keep its template")
	}
	next := podTemplate("new") // not the strategy's: the Job keeps the CronJob's "old"
	next.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "STAKATER_CFG_CONFIGMAP", Value: "new"}}
	if _, err := kind.Write(t.Context(), c, got, Update{Template: &next, Annotations: map[string]*string{"applied": ptr.To("1")}}); err != nil {
		t.Fatal(err)
	}
	js := jobs(t, c)
	if len(js) != 1 {
		t.Fatalf("%d Jobs, want 1", len(js))
	}
	j := js[0]
	if j.Spec.Template.Annotations["version"] != "old" || len(j.Spec.Template.Spec.Containers[0].Env) != 1 ||
		j.Spec.Template.Spec.Containers[0].Env[0].Value != "new" || j.Annotations[instantiateAnnotation] != "manual" || j.Annotations["team"] != "a" ||
		j.Labels["app"] != "nightly" || metav1.GetControllerOf(&j) == nil || metav1.GetControllerOf(&j).Name != "nightly" {
		t.Errorf("Job started = %+v", j.ObjectMeta)
	}
	_ = c.Get(t.Context(), client.ObjectKeyFromObject(cj), got)
	if _, pending := got.Annotations["pending"]; pending || got.Annotations["applied"] != "1" ||
		got.Spec.JobTemplate.Spec.Template.Annotations["version"] != "old" {
		t.Errorf("CronJob after the run: annotations %v, template %v", got.Annotations, got.Spec.JobTemplate.Spec.Template.Annotations)
	}
}

// A suspended CronJob runs nothing: the change is only recorded, and the
// result says why.
func TestCronJobSuspended(t *testing.T) {
	kind := NewCronJob(CronJobOptions{Mode: CronJobRun, PendingKey: "pending"})
	cj := nightly("", true)
	c := fake.NewClientBuilder().WithObjects(cj).Build()
	got := &batchv1.CronJob{}
	_ = c.Get(t.Context(), client.ObjectKeyFromObject(cj), got)
	next := podTemplate("new")
	res, err := kind.Write(t.Context(), c, got, Update{Template: &next, Annotations: map[string]*string{"applied": ptr.To("1")}})
	if err != nil || res.Skipped == "" {
		t.Fatalf("Write = %+v, %v; want skipped", res, err)
	}
	_ = c.Get(t.Context(), client.ObjectKeyFromObject(cj), got)
	if n := len(jobs(t, c)); n != 0 || got.Annotations["applied"] != "1" {
		t.Errorf("%d Jobs, annotations %v", n, got.Annotations)
	}
}

// A Job decided but not started before a crash (the pending record on the
// CronJob) is started by Finish, once. The record of an earlier Ripple (a
// whole pod template) gives only the strategy's env var: the Job is the
// CronJob's own template (image "app", not the record's "v2").
func TestCronJobFinishPending(t *testing.T) {
	cj := nightly(CronJobRun, false)
	cj.Annotations["pending"] = `{"spec":{"containers":[{"name":"app","image":"v2","env":[{"name":"STAKATER_CFG_CONFIGMAP","value":"abc"}]}]}}`
	c := fake.NewClientBuilder().WithObjects(cj).Build()
	kind := NewCronJob(CronJobOptions{Mode: CronJobRun, ModeKey: "mode", PendingKey: "pending", Reader: c})
	fin, ok := kind.(Finisher)
	if !ok {
		t.Fatal("a CronJob is no Finisher")
	}
	got := &batchv1.CronJob{}
	_ = c.Get(t.Context(), client.ObjectKeyFromObject(cj), got)
	if did, err := fin.Finish(t.Context(), c, client.ObjectKeyFromObject(cj), got); !did || err != nil {
		t.Fatalf("Finish = %v, %v", did, err)
	}
	js := jobs(t, c)
	if len(js) != 1 || js[0].Spec.Template.Spec.Containers[0].Image != "app" || len(js[0].Spec.Template.Spec.Containers[0].Env) != 1 ||
		js[0].Spec.Template.Spec.Containers[0].Env[0].Value != "abc" {
		t.Fatalf("Jobs after Finish = %v", js)
	}
	_ = c.Get(t.Context(), client.ObjectKeyFromObject(cj), got)
	if did, err := fin.Finish(t.Context(), c, client.ObjectKeyFromObject(cj), got); did || err != nil || len(jobs(t, c)) != 1 {
		t.Errorf("second Finish = %v, %v with %d Jobs; want nothing done", did, err, len(jobs(t, c)))
	}
	if did, err := fin.Finish(t.Context(), c, client.ObjectKeyFromObject(cj), nil); did || err != nil {
		t.Errorf("Finish of a missing CronJob = %v, %v", did, err)
	}
}

// An invalid mode annotation is reported, and the default mode used.
func TestCronJobCheck(t *testing.T) {
	kind := NewCronJob(CronJobOptions{Mode: CronJobRun, ModeKey: "mode"})
	ch, ok := kind.(Checker)
	if !ok {
		t.Fatal("a CronJob is no Checker")
	}
	if msgs := ch.Check(nightly("sometimes", false)); len(msgs) != 1 || !kind.KeepsTemplate(nightly("sometimes", false)) {
		t.Errorf("Check(invalid) = %v", msgs)
	}
	if msgs := ch.Check(nightly(CronJobTemplate, false)); len(msgs) != 0 {
		t.Errorf("Check(template) = %v", msgs)
	}
}

// A Job a CronJob controls has no template of its own: the CronJob takes
// the reload.
func TestJobPodTemplate(t *testing.T) {
	kind := NewJob(JobOptions{})
	own := &batchv1.Job{ObjectMeta: meta("j"), Spec: batchv1.JobSpec{Template: podTemplate("a")}}
	if tpl, err := kind.PodTemplate(own); err != nil || tpl == nil {
		t.Errorf("PodTemplate(own Job) = %v, %v", tpl, err)
	}
	owned := own.DeepCopy()
	owned.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(nightly("", false), batchv1.SchemeGroupVersion.WithKind("CronJob"))}
	if tpl, err := kind.PodTemplate(owned); err != nil || tpl != nil {
		t.Errorf("PodTemplate(CronJob's Job) = %v, %v; want nil", tpl, err)
	}
}

func rolloutObj(ref string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(RolloutGVK)
	u.SetNamespace("ns")
	u.SetName("r")
	if ref != "" {
		_ = unstructured.SetNestedField(u.Object, map[string]any{"kind": "Deployment", "name": ref}, "spec", "workloadRef")
	}
	return u
}

// Template reads a workloadRef Rollout's template from its Deployment; a
// Deployment not there (yet) is no template and no error.
func TestTemplate(t *testing.T) {
	d := &appsv1.Deployment{ObjectMeta: meta("base"), Spec: appsv1.DeploymentSpec{Template: podTemplate("from-deployment")}}
	c := fake.NewClientBuilder().WithObjects(d).Build()
	kind := NewRollout(RolloutOptions{})
	ts, ok := kind.(TemplateSource)
	if !ok {
		t.Fatal("a Rollout is no TemplateSource")
	}
	if name, ok := ts.TemplateRef(rolloutObj("base")); !ok || name != "base" {
		t.Errorf("TemplateRef = %q, %v", name, ok)
	}
	tpl, err := Template(t.Context(), c, kind, rolloutObj("base"))
	if err != nil || tpl == nil || tpl.Annotations["version"] != "from-deployment" {
		t.Errorf("Template(workloadRef) = %v, %v", tpl, err)
	}
	if tpl, err := Template(t.Context(), c, kind, rolloutObj("missing")); tpl != nil || err != nil {
		t.Errorf("Template(missing workloadRef) = %v, %v; want nil, nil", tpl, err)
	}
	own := d.DeepCopy()
	if tpl, err := Template(t.Context(), c, Deployment, own); err != nil || tpl != &own.Spec.Template {
		t.Errorf("Template(Deployment) = %v, %v; want its own", tpl, err)
	}
}

func TestRef(t *testing.T) {
	d := &appsv1.Deployment{ObjectMeta: meta("web")}
	r := RefTo(Deployment, d)
	if r != (Ref{Kind: "Deployment", Namespace: "ns", Name: "web"}) || r.Key() != client.ObjectKeyFromObject(d) {
		t.Errorf("RefTo = %+v, key %v", r, r.Key())
	}
}

type flaky struct {
	fails, calls int
}

func (f *flaky) Recover(context.Context, client.Client, []string) error {
	f.calls++
	if f.calls <= f.fails {
		return errors.New("API server away")
	}
	return nil
}

// The recovery retries until it succeeds, and stops when its context ends.
func TestRecovery(t *testing.T) {
	fast := wait.Backoff{Duration: time.Millisecond, Factor: 2, Steps: 10}
	f := &flaky{fails: 2}
	if err := (&Recovery{Kind: f, Backoff: fast}).Start(t.Context()); err != nil || f.calls != 3 {
		t.Errorf("Start = %v after %d calls, want nil after 3", err, f.calls)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	never := &flaky{fails: 1 << 30}
	if err := (&Recovery{Kind: never}).Start(ctx); err != nil || never.calls != 1 {
		t.Errorf("Start with an ended context = %v after %d calls", err, never.calls)
	}
}

// A pending-job annotation holds only the strategy's change: not the job
// template, nor its literal env values.
func TestCronJobPendingHoldsOnlyTheChange(t *testing.T) {
	cj := nightly(CronJobRun, false)
	cj.Spec.JobTemplate.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "PASSWORD", Value: "hunter2"}}
	c := fake.NewClientBuilder().WithObjects(cj).WithInterceptorFuncs(interceptor.Funcs{
		Create: func(context.Context, client.WithWatch, client.Object, ...client.CreateOption) error {
			return errors.New("denied")
		},
	}).Build()
	kind := NewCronJob(CronJobOptions{Mode: CronJobRun, PendingKey: "pending", Reader: c})
	got := &batchv1.CronJob{}
	_ = c.Get(t.Context(), client.ObjectKeyFromObject(cj), got)
	next := got.Spec.JobTemplate.Spec.Template.DeepCopy()
	next.Spec.Containers[0].Env = append(next.Spec.Containers[0].Env, corev1.EnvVar{Name: "STAKATER_CFG_CONFIGMAP", Value: "abc"})
	if _, err := kind.Write(t.Context(), c, got, Update{Template: next}); err == nil {
		t.Fatal("the denied create was no error")
	}
	_ = c.Get(t.Context(), client.ObjectKeyFromObject(cj), got)
	want := `{"env":{"app":{"STAKATER_CFG_CONFIGMAP":"abc"}}}`
	if v := got.Annotations["pending"]; v != want {
		t.Errorf("pending annotation %s, want %s", v, want)
	}
}

// A pending-job annotation Ripple did not write starts no Job from its
// content: a change setting anything but the strategy's values, or a
// value that is no change, starts nothing and is reported by Check (it
// names the annotation); an earlier Ripple's format (a pod template) gives
// only the strategy's values to a Job built from the CronJob's template.
func TestCronJobTamperedPending(t *testing.T) {
	evil := `{"spec":{"hostPID":true,"containers":[{"name":"app","image":"evil",` +
		`"securityContext":{"privileged":true},"env":[{"name":"STAKATER_CFG_CONFIGMAP","value":"abc"}]}]}}`
	for _, tc := range []struct {
		name, value string
		job         bool // a Job of the CronJob's own template is started
	}{
		{"another env var", `{"env":{"app":{"LD_PRELOAD":"/evil.so"}}}`, false},
		{"another annotation", `{"annotations":{"sidecar.istio.io/inject":"false"}}`, false},
		{"unknown field", `{"env":{},"spec":{"hostPID":true}}`, false},
		{"not JSON", `hostPID`, false},
		{"privileged pod template (earlier format)", evil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cj := nightly(CronJobRun, false)
			cj.Annotations["pending"] = tc.value
			c := fake.NewClientBuilder().WithObjects(cj).Build()
			kind := NewCronJob(CronJobOptions{Mode: CronJobRun, ModeKey: "mode", PendingKey: "pending", Reader: c})
			got := &batchv1.CronJob{}
			_ = c.Get(t.Context(), client.ObjectKeyFromObject(cj), got)
			did, err := kind.(Finisher).Finish(t.Context(), c, client.ObjectKeyFromObject(cj), got)
			if err != nil || did != tc.job {
				t.Fatalf("Finish = %v, %v; want %v", did, err, tc.job)
			}
			js := jobs(t, c)
			msgs := kind.(Checker).Check(got)
			if !tc.job {
				if len(js) != 0 {
					t.Fatalf("a Job was started: %+v", js[0].Spec.Template.Spec)
				}
				if len(msgs) != 1 || !strings.Contains(msgs[0], `"pending"`) || !strings.Contains(msgs[0], "no Job is started") {
					t.Errorf("Check = %q; want one message naming the annotation", msgs)
				}
				return
			}
			if len(js) != 1 {
				t.Fatalf("%d Jobs, want 1", len(js))
			}
			spec := js[0].Spec.Template.Spec
			if spec.HostPID || spec.Containers[0].Image != "app" || spec.Containers[0].SecurityContext != nil ||
				len(spec.Containers[0].Env) != 1 || spec.Containers[0].Env[0].Value != "abc" {
				t.Errorf("the Job took more than the strategy's value from the annotation: %+v", spec)
			}
		})
	}
}
