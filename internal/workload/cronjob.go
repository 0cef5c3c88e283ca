package workload

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The ways a CronJob takes a reload (--cronjob-reload and its annotation).
const (
	// CronJobRun starts a Job from the job template now, as Reloader does.
	CronJobRun = "run"
	// CronJobTemplate patches the job template instead, so the next
	// scheduled runs carry the change and nothing runs now.
	CronJobTemplate = "template"
)

// instantiateAnnotation marks a Job started by hand from a CronJob, as
// `kubectl create job --from=cronjob` does.
const instantiateAnnotation = "cronjob.kubernetes.io/instantiate"

// CronJobOptions configure the CronJob kind.
type CronJobOptions struct {
	// Mode is CronJobRun or CronJobTemplate.
	Mode string
	// ModeKey is the annotation that overrides Mode per CronJob.
	ModeKey string
	// PendingKey is the annotation holding the change (pendingChange) of a
	// Job that is decided but not yet created.
	PendingKey string
	// Reader reads around the cache: a cached CronJob may still show a
	// Job as pending that has been created since.
	Reader client.Reader
}

// NewCronJob returns the batch/v1 CronJob kind.
func NewCronJob(o CronJobOptions) Kind { return cronJob{o} }

type cronJob struct{ o CronJobOptions }

func (cronJob) Name() string               { return "CronJob" }
func (cronJob) New() client.Object         { return &batchv1.CronJob{} }
func (cronJob) NewList() client.ObjectList { return &batchv1.CronJobList{} }

func (cronJob) PodTemplate(obj client.Object) (*corev1.PodTemplateSpec, error) {
	cj, ok := obj.(*batchv1.CronJob)
	if !ok {
		return nil, fmt.Errorf("unexpected object type %T for a CronJob", obj)
	}
	return &cj.Spec.JobTemplate.Spec.Template, nil
}

// mode is the CronJob's mode; an invalid annotation means the default.
func (k cronJob) mode(obj client.Object) string {
	switch v := strings.TrimSpace(obj.GetAnnotations()[k.o.ModeKey]); v {
	case CronJobRun, CronJobTemplate:
		return v
	}
	return k.o.Mode
}

func (k cronJob) KeepsTemplate(obj client.Object) bool { return k.mode(obj) == CronJobRun }

func (k cronJob) Check(obj client.Object) []string {
	var msgs []string
	if v, ok := obj.GetAnnotations()[k.o.ModeKey]; ok && k.mode(obj) != strings.TrimSpace(v) {
		msgs = append(msgs, fmt.Sprintf("annotation %q: %q is not %q or %q; using %q", k.o.ModeKey, v, CronJobRun, CronJobTemplate, k.o.Mode))
	}
	if cj, ok := obj.(*batchv1.CronJob); ok {
		if _, err := k.pending(cj); err != nil && !errors.Is(err, errNoPending) {
			msgs = append(msgs, err.Error())
		}
	}
	return msgs
}

// pending is the change a CronJob's pending-job annotation records, if it
// has one (ok); an annotation Ripple did not write is an error that names it.
func (k cronJob) pending(cj *batchv1.CronJob) (ch pendingChange, err error) {
	v, ok := cj.Annotations[k.o.PendingKey]
	if !ok {
		return ch, errNoPending
	}
	ch, err = parsePending(v, &cj.Spec.JobTemplate.Spec.Template)
	if err != nil {
		return ch, fmt.Errorf("annotation %q: %w", k.o.PendingKey, err)
	}
	return ch, nil
}

// Write patches the job template in template mode. In run mode it records
// the Job to start on the CronJob first, with the optimistic lock, then
// creates it: a conflict costs nothing, and once recorded the Job is
// created even across errors and restarts (Finish).
func (k cronJob) Write(ctx context.Context, c client.Client, obj client.Object, u Update) (Result, error) {
	cj, ok := obj.(*batchv1.CronJob)
	if !ok {
		return Result{}, fmt.Errorf("unexpected object type %T", obj)
	}
	if k.mode(obj) == CronJobTemplate {
		return Result{}, patch(ctx, c, obj, u, func(o client.Object) bool {
			cj, ok := o.(*batchv1.CronJob)
			if ok && u.Template != nil {
				cj.Spec.JobTemplate.Spec.Template = *u.Template
			}
			return ok
		})
	}
	tpl := u.Template
	u.Template = nil
	if tpl == nil || (cj.Spec.Suspend != nil && *cj.Spec.Suspend) {
		// A suspended CronJob runs nothing; the change is recorded as
		// applied, so resuming it does not start a Job for an old change.
		err := patch(ctx, c, obj, u, nil)
		if tpl != nil && err == nil {
			return Result{Skipped: "the CronJob is suspended: no Job was started"}, nil
		}
		return Result{}, err
	}
	ch := changeOf(&cj.Spec.JobTemplate.Spec.Template, tpl)
	b, err := json.Marshal(ch)
	if err != nil {
		return Result{}, err
	}
	pending := string(b)
	if u.Annotations == nil {
		u.Annotations = map[string]*string{}
	}
	u.Annotations[k.o.PendingKey] = &pending
	if err := patch(ctx, c, obj, u, nil); err != nil {
		return Result{}, err
	}
	recorded := cj.DeepCopy()
	setAnnotations(recorded, u.Annotations)
	return Result{}, k.startPending(ctx, c, recorded, ch)
}

// errNoPending is pending's answer for a CronJob without a pending Job.
var errNoPending = errors.New("no pending Job")

// Finish creates the Job a CronJob records as pending, when the API server
// (not only the cache) still shows it pending: from the CronJob's own job
// template as the API server has it, with the recorded change. An
// annotation Ripple did not write starts nothing and stays, reported by
// Check, until it is removed or a reload replaces it.
func (k cronJob) Finish(ctx context.Context, c client.Client, key types.NamespacedName, obj client.Object) (bool, error) {
	cached, ok := obj.(*batchv1.CronJob)
	if !ok {
		return false, nil
	}
	if _, err := k.pending(cached); err != nil {
		return false, nil
	}
	cj := &batchv1.CronJob{}
	if err := k.o.Reader.Get(ctx, key, cj); err != nil {
		return true, client.IgnoreNotFound(err)
	}
	ch, err := k.pending(cj)
	if errors.Is(err, errNoPending) {
		return true, nil
	}
	if err != nil {
		return false, nil
	}
	return true, k.startPending(ctx, c, cj, ch)
}

// startPending creates the Job from cj's job template with the pending
// change, then clears the record.
func (k cronJob) startPending(ctx context.Context, c client.Client, cj *batchv1.CronJob, ch pendingChange) error {
	tpl := cj.Spec.JobTemplate.Spec.Template.DeepCopy()
	ch.apply(tpl)
	if err := c.Create(ctx, jobFromCronJob(cj, tpl), client.FieldOwner(FieldManager)); err != nil {
		return fmt.Errorf("creating a Job from CronJob %s/%s: %w", cj.Namespace, cj.Name, err)
	}
	done, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{k.o.PendingKey: nil}}})
	return client.IgnoreNotFound(c.Patch(ctx, cj, client.RawPatch(types.MergePatchType, done), client.FieldOwner(FieldManager)))
}

// jobFromCronJob builds the Job Reloader (and kubectl create job --from)
// starts from a CronJob: generateName "<cronjob>-", the instantiate
// annotation under the template's own, the template's labels, and the
// CronJob as controller.
func jobFromCronJob(cj *batchv1.CronJob, tpl *corev1.PodTemplateSpec) *batchv1.Job {
	ann := map[string]string{instantiateAnnotation: "manual"}
	for k, v := range cj.Spec.JobTemplate.Annotations {
		ann[k] = v
	}
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName:    cj.Name + "-",
			Namespace:       cj.Namespace,
			Annotations:     ann,
			Labels:          cj.Spec.JobTemplate.Labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(cj, batchv1.SchemeGroupVersion.WithKind("CronJob"))},
		},
		Spec: *cj.Spec.JobTemplate.Spec.DeepCopy(),
	}
	job.Spec.Template = *tpl
	return job
}
