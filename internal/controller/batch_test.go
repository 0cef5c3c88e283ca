package controller

import (
	"context"
	"errors"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/strategy"
	"github.com/ripple-dev/ripple/internal/workload"
)

// failJobCreates fails the first n creates of a Job, as an API server
// that went away between two steps of a reload would.
func failJobCreates(n *int) option {
	return withInterceptor(interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			_, typed := obj.(*batchv1.Job)
			// A re-created Job is sent as it was stored (unstructured).
			if (typed || obj.GetObjectKind().GroupVersionKind().Kind == "Job") && *n > 0 {
				*n--
				return errors.New("the API server went away")
			}
			return c.Create(ctx, obj, opts...)
		},
	})
}

// jobPod is the pod template of the Jobs and CronJobs here: it uses the
// ConfigMap "cfg" whole.
func jobPod() corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{
		Name: "job", Image: "job",
		EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}},
	}}}}
}

func batchMeta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(name + "-uid"),
		Annotations: map[string]string{"reloader.stakater.com/auto": "true"}}
}

// reconcileErr reconciles and returns the error.
func (w *world) reconcileErr(kind, name string) error {
	_, err := w.recs[kind].Reconcile(w.t.Context(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}})
	return err
}

// A Job is re-created to reload it: deleted, then created again from a
// record. When the create fails, the next reconcile (the Job is gone)
// finishes it from the record, with the new data.
func TestJobRecreateResumes(t *testing.T) {
	fails := 0
	// The kind indexes with no reader; it reconciles with the client.
	w := newWorld(t, []workload.Kind{workload.NewJob(workload.JobOptions{})}, noSettle, failJobCreates(&fails))
	k := w.deps.Settings.Keys
	w.addKind(workload.NewJob(workload.JobOptions{Reader: w.c, Namespace: "ripple", RecordLabel: k.RecreateRecord, ReplacesKey: k.Replaces}))
	w.create(configMap(), &batchv1.Job{ObjectMeta: batchMeta("batch"), Spec: batchv1.JobSpec{Template: jobPod()}})
	w.reconcile("Job", "batch")
	fails = 1
	sum := w.change("Job", "v2")
	if err := w.reconcileErr("Job", "batch"); err == nil {
		t.Fatal("the failed create of the new Job was not an error")
	}
	got := &batchv1.Job{}
	if err := w.c.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "batch"}, got); err == nil {
		t.Fatal("the old Job is still there")
	}
	w.reconcile("Job", "batch") // gone: finished from the record
	if err := w.c.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "batch"}, got); err != nil {
		t.Fatalf("the Job was not re-created: %v", err)
	}
	if applied, _ := (strategy.EnvVars{}).Applied(&got.Spec.Template, refs.Ref{Kind: refs.ConfigMap, Name: "cfg"}); applied != sum {
		t.Errorf("re-created Job: applied %q, want %q", applied, sum)
	}
	records := &corev1.ConfigMapList{}
	if err := w.c.List(t.Context(), records, client.InNamespace("ripple")); err != nil || len(records.Items) != 0 {
		t.Errorf("records left: %d (%v), want none", len(records.Items), err)
	}
	if w.deps.Memory.Following(workload.RefFor("Job", types.NamespacedName{Namespace: ns, Name: "batch"})) {
		t.Error("a Job's rollout (the write itself) is followed")
	}
}

// A CronJob reload records the Job to start, then creates it. When the
// create fails, the next reconcile starts the recorded Job, once.
func TestCronJobPendingJob(t *testing.T) {
	fails := 0
	w := newWorld(t, []workload.Kind{workload.NewCronJob(workload.CronJobOptions{Mode: workload.CronJobRun})}, noSettle, failJobCreates(&fails))
	k := w.deps.Settings.Keys
	w.addKind(workload.NewCronJob(workload.CronJobOptions{Mode: workload.CronJobRun, ModeKey: k.CronJobReload, PendingKey: k.PendingJob, Reader: w.c}))
	w.create(configMap(), &batchv1.CronJob{ObjectMeta: batchMeta("nightly"),
		Spec: batchv1.CronJobSpec{Schedule: "0 0 * * *", JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: jobPod()}}}})
	w.reconcile("CronJob", "nightly")
	fails = 1
	sum := w.change("CronJob", "v2")
	if err := w.reconcileErr("CronJob", "nightly"); err == nil {
		t.Fatal("the failed create of the Job was not an error")
	}
	cj := &batchv1.CronJob{}
	if err := w.c.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "nightly"}, cj); err != nil || cj.Annotations[k.PendingJob] == "" {
		t.Fatalf("no pending Job recorded on the CronJob (%v)", err)
	}
	w.reconcile("CronJob", "nightly") // starts the pending Job
	w.reconcile("CronJob", "nightly") // nothing left to do
	jobs := &batchv1.JobList{}
	if err := w.c.List(t.Context(), jobs, client.InNamespace(ns)); err != nil || len(jobs.Items) != 1 {
		t.Fatalf("Jobs: %d (%v), want the one pending", len(jobs.Items), err)
	}
	if applied, _ := (strategy.EnvVars{}).Applied(&jobs.Items[0].Spec.Template, refs.Ref{Kind: refs.ConfigMap, Name: "cfg"}); applied != sum {
		t.Errorf("started Job: applied %q, want %q", applied, sum)
	}
	if err := w.c.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "nightly"}, cj); err != nil || cj.Annotations[k.PendingJob] != "" {
		t.Errorf("the pending record stays on the CronJob (%v)", err)
	}
}
