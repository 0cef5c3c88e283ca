package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/hack/kit"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/strategy"
)

const (
	instantiateKey = "cronjob.kubernetes.io/instantiate"
	cronJobModeKey = "ripple.dev/cronjob-reload"
	pendingJobKey  = "ripple.dev/pending-job"
	recreateLabel  = "ripple.dev/recreate-job"
	recreateSuffix = ".ripple-recreate"
)

// withHome gives the Ripples e starts a namespace of their own
// ($POD_NAMESPACE), where they keep the Job re-create records, and returns
// it.
func (e *env) withHome(t *testing.T) string {
	t.Helper()
	home := kit.NewNamespace(t, e.cs, "it-home-", nil)
	if e.environ == nil {
		e.environ = map[string]string{}
	}
	e.environ["POD_NAMESPACE"] = home
	return home
}

// jobRecordKey is where Ripple records the re-create of job: in its own
// namespace home, named after the Job's namespace and name.
func jobRecordKey(home string, job client.Object) types.NamespacedName {
	return types.NamespacedName{Namespace: home, Name: job.GetNamespace() + "." + job.GetName() + recreateSuffix}
}

// noRecordsIn fails unless the Job's own namespace holds no re-create
// record: Ripple writes ConfigMaps in its own namespace only.
func (e *env) noRecordsIn(t *testing.T, ns string) {
	t.Helper()
	var list corev1.ConfigMapList
	if err := e.c.List(t.Context(), &list, client.InNamespace(ns), client.HasLabels{recreateLabel}); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) > 0 {
		t.Errorf("a re-create record %s in the Job's namespace %s", list.Items[0].Name, ns)
	}
}

func (e *env) newBatch(t *testing.T, k *kit.WorkloadKind, name string, meta map[string]string, uses ...use) client.Object {
	t.Helper()
	w := k.New(metav1.ObjectMeta{Name: name, Namespace: e.ns, Annotations: meta}, corev1.PodTemplateSpec{Spec: podSpec(uses...)})
	if err := e.c.Create(t.Context(), w); err != nil {
		t.Fatal(err)
	}
	return w
}

// jobsOf lists the Jobs cj controls.
func (e *env) jobsOf(ctx context.Context, cj client.Object) ([]batchv1.Job, error) {
	var list batchv1.JobList
	if err := e.c.List(ctx, &list, client.InNamespace(e.ns)); err != nil {
		return nil, err
	}
	var out []batchv1.Job
	for _, j := range list.Items {
		if owner := metav1.GetControllerOf(&j); owner != nil && owner.UID == cj.GetUID() && owner.Kind == "CronJob" {
			out = append(out, j)
		}
	}
	return out, nil
}

// waitNewJob waits until cj controls exactly one Job besides those named in
// before, started by hand (the instantiate annotation), whose pod template
// satisfies cond; and checks a moment later that no further Job came.
func (e *env) waitNewJob(t *testing.T, cj client.Object, before []string, what string, cond func(*corev1.PodTemplateSpec) bool) *batchv1.Job {
	t.Helper()
	fresh := func(ctx context.Context) ([]batchv1.Job, error) {
		jobs, err := e.jobsOf(ctx, cj)
		return slices.DeleteFunc(jobs, func(j batchv1.Job) bool { return slices.Contains(before, j.Name) }), err
	}
	var jobs []batchv1.Job
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 15*time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		jobs, err = fresh(ctx)
		return len(jobs) > 0 && cond(&jobs[0].Spec.Template), err
	})
	if err != nil {
		t.Fatalf("waiting for a Job from CronJob %s with %s: %v (new Jobs: %+v)", cj.GetName(), what, err, jobs)
	}
	if len(jobs) != 1 {
		t.Fatalf("CronJob %s started %d Jobs, want 1", cj.GetName(), len(jobs))
	}
	job := jobs[0]
	// The job template's own annotations win over the marker.
	mark := "manual"
	if v, ok := cj.(*batchv1.CronJob).Spec.JobTemplate.Annotations[instantiateKey]; ok {
		mark = v
	}
	if job.Annotations[instantiateKey] != mark {
		t.Fatalf("Job %s has annotations %v, want %s=%s", job.Name, job.Annotations, instantiateKey, mark)
	}
	if !strings.HasPrefix(job.Name, cj.GetName()+"-") {
		t.Fatalf("Job %s is not named after CronJob %s", job.Name, cj.GetName())
	}
	time.Sleep(time.Second) // a duplicate Job would show by now
	if jobs, err := fresh(t.Context()); err != nil || len(jobs) != 1 {
		t.Fatalf("CronJob %s has %d new Jobs (err %v), want exactly 1", cj.GetName(), len(jobs), err)
	}
	return &job
}

// expectNoJob checks, for a while, that cj starts no Job.
func (e *env) expectNoJob(t *testing.T, cj client.Object) {
	t.Helper()
	time.Sleep(negativeWindow)
	jobs, err := e.jobsOf(t.Context(), cj)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) > 0 {
		t.Fatalf("CronJob %s started Job %s; want none", cj.GetName(), jobs[0].Name)
	}
}

// waitRecreated waits until the Job named like job exists with another UID
// than job and a pod template that satisfies cond. The Job is briefly
// absent while it is re-created.
func (e *env) waitRecreated(t *testing.T, job client.Object, what string, cond func(*corev1.PodTemplateSpec) bool) *batchv1.Job {
	t.Helper()
	cur := &batchv1.Job{}
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		err := e.c.Get(ctx, client.ObjectKeyFromObject(job), cur)
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil && cur.UID != job.GetUID() && cond(&cur.Spec.Template), err
	})
	if err != nil {
		t.Fatalf("waiting for Job %s to be re-created with %s: %v (now uid %s, was %s)", job.GetName(), what, err, cur.UID, job.GetUID())
	}
	return cur
}

// expectNotRecreated checks, for a while, that job keeps its UID and
// template.
func (e *env) expectNotRecreated(t *testing.T, job client.Object) {
	t.Helper()
	before := job.(*batchv1.Job).Spec.Template.DeepCopy()
	time.Sleep(negativeWindow)
	cur := &batchv1.Job{}
	if err := e.c.Get(t.Context(), client.ObjectKeyFromObject(job), cur); err != nil {
		t.Fatal(err)
	}
	if cur.UID != job.GetUID() {
		t.Fatalf("Job %s was re-created; want it untouched", job.GetName())
	}
	if !equality.Semantic.DeepEqual(before, &cur.Spec.Template) {
		t.Fatalf("the template of Job %s changed\nbefore: %+v\nafter:  %+v", job.GetName(), before, &cur.Spec.Template)
	}
}

// shows is a pod-template condition: st records sum for r.
func shows(st strategy.Strategy, r refs.Ref, sum string) func(*corev1.PodTemplateSpec) bool {
	return func(tpl *corev1.PodTemplateSpec) bool {
		got, ok := st.Applied(tpl, r)
		return ok && got == sum
	}
}

// TestBatchReloadRules runs Reloader's rows C1, C2, C4 (for CronJobs C8,
// C9, C10) and a representative subset of the decision rules against
// CronJobs and Jobs, under both strategies. A CronJob reloads by starting
// exactly one Job from its template; a Job by being re-created under its
// name.
func TestBatchReloadRules(t *testing.T) {
	// For a CronJob, C1, C2 and C4 are Reloader's C8, C9 and C10.
	scenarios := pick("C1 named ConfigMap, data change", "C2 named Secret, data change", "C4 auto, ConfigMap change",
		"C5 ConfigMap labels only", "C13 no annotation", "C14 named list, unreferenced ConfigMap", "C18 auto false",
		"C21 auto on the pod template", "V11 regex pattern matches", "V12 regex pattern does not match",
		"N5 typed Secret auto", "typed auto of the other type does not trigger", "N31 search and match",
		"N32 search without match", "N14 auto, other ConfigMap than excluded", "exclude beats named",
		"N29 ignore on ConfigMap beats named", "N30 ignore on Secret beats auto")
	for _, st := range []string{"env-vars", "annotations"} {
		t.Run(st, func(t *testing.T) {
			t.Parallel()
			e := startRipple(t, "--reload-strategy="+st)
			for i, sc := range scenarios {
				for _, k := range []*kit.WorkloadKind{kit.CronJob, kit.Job} {
					t.Run(sc.name+"/"+k.Name, func(t *testing.T) {
						t.Parallel()
						e.runBatchScenario(t, fmt.Sprintf("s%d-%s-", i, strings.ToLower(k.Name[:3])), k, sc, st)
					})
				}
			}
		})
	}
}

// runBatchScenario is runScenario for a batch kind.
func (e *env) runBatchScenario(t *testing.T, p string, k *kit.WorkloadKind, sc scenario, strategyName string) {
	s, w, before, want := e.stageAndChange(t, p, k, sc)
	changed := s.changed

	st, _ := strategy.New(strategyName)
	what := fmt.Sprintf("the %s strategy recording %s = %s", strategyName, changed, want)
	switch {
	case k.Name == "Job" && sc.reload:
		e.waitRecreated(t, w, what, shows(st, changed, want))
	case k.Name == "Job":
		e.expectNotRecreated(t, w)
	case sc.reload:
		e.waitNewJob(t, w, nil, what, shows(st, changed, want))
		// The CronJob's own template is left as it is ("run" mode).
		e.expectNoRollout(t, w, k, before)
	default:
		e.expectNoJob(t, w)
		e.expectNoRollout(t, w, k, before)
	}
}

// The Job a CronJob starts is built as `kubectl create job --from=cronjob`
// builds it: the job template's spec, labels and annotations (over the
// instantiate annotation) and the CronJob as its controller.
func TestCronJobStartsJobLikeKubectl(t *testing.T) {
	t.Parallel()
	e := startRipple(t)
	r := refs.Ref{Kind: refs.ConfigMap, Name: "cfg"}
	e.newConfig(t, r)
	cj := kit.CronJob.New(metav1.ObjectMeta{Name: "nightly", Namespace: e.ns, Annotations: ann(autoKey, "true")},
		corev1.PodTemplateSpec{Spec: podSpec(envFrom(r.Kind, r.Name))}).(*batchv1.CronJob)
	cj.Spec.JobTemplate.Labels = map[string]string{"team": "a"}
	cj.Spec.JobTemplate.Annotations = map[string]string{"owner": "ops", instantiateKey: "by-template"}
	cj.Spec.JobTemplate.Spec.BackoffLimit = ptr.To[int32](2)
	if err := e.c.Create(t.Context(), cj); err != nil {
		t.Fatal(err)
	}
	e.waitFor(t, cj, "the baseline record", hasBaseline)

	sum := e.setConfig(t, r, "v2")
	job := e.waitNewJob(t, cj, nil, "the new digest", shows(strategy.EnvVars{}, r, sum))
	owner := metav1.GetControllerOf(job)
	if owner == nil || owner.UID != cj.UID || owner.Kind != "CronJob" || owner.APIVersion != "batch/v1" {
		t.Fatalf("Job %s is controlled by %+v, want CronJob %s", job.Name, owner, cj.Name)
	}
	if job.Labels["team"] != "a" || job.Annotations["owner"] != "ops" || job.Annotations[instantiateKey] != "by-template" {
		t.Fatalf("Job %s has labels %v and annotations %v, want the job template's", job.Name, job.Labels, job.Annotations)
	}
	if job.Spec.BackoffLimit == nil || *job.Spec.BackoffLimit != 2 {
		t.Fatalf("Job %s has backoffLimit %v, want the job template's 2", job.Name, job.Spec.BackoffLimit)
	}
	if err := e.c.Get(t.Context(), client.ObjectKeyFromObject(cj), cj); err != nil {
		t.Fatal(err)
	}
	if _, ok := cj.Annotations[pendingJobKey]; ok {
		t.Fatalf("CronJob %s still records a pending Job after it was created", cj.Name)
	}
	// A second change starts a second Job.
	sum = e.setConfig(t, r, "v3")
	e.waitNewJob(t, cj, []string{job.Name}, "the second digest", shows(strategy.EnvVars{}, r, sum))
}

// A suspended CronJob starts no Job: the change is recorded as seen, with a
// Normal ReloadSkipped event, so resuming it does not start a Job for the
// old change. (Reloader starts Jobs of suspended CronJobs.)
func TestSuspendedCronJobStartsNoJob(t *testing.T) {
	t.Parallel()
	e := startRipple(t)
	r := refs.Ref{Kind: refs.ConfigMap, Name: "cfg"}
	e.newConfig(t, r)
	cj := kit.CronJob.New(metav1.ObjectMeta{Name: "paused", Namespace: e.ns, Annotations: ann(autoKey, "true")},
		corev1.PodTemplateSpec{Spec: podSpec(envFrom(r.Kind, r.Name))}).(*batchv1.CronJob)
	cj.Spec.Suspend = ptr.To(true)
	if err := e.c.Create(t.Context(), cj); err != nil {
		t.Fatal(err)
	}
	e.waitFor(t, cj, "the baseline record", hasBaseline)

	e.setConfig(t, r, "v2")
	e.waitEvent(t, cj.Name, corev1.EventTypeNormal, "ReloadSkipped")
	e.expectNoJob(t, cj)

	if err := e.c.Get(t.Context(), client.ObjectKeyFromObject(cj), cj); err != nil {
		t.Fatal(err)
	}
	cj.Spec.Suspend = ptr.To(false)
	if err := e.c.Update(t.Context(), cj); err != nil {
		t.Fatal(err)
	}
	e.expectNoJob(t, cj)

	// Resumed, it reloads again.
	sum := e.setConfig(t, r, "v3")
	e.waitNewJob(t, cj, nil, "the new digest", shows(strategy.EnvVars{}, r, sum))
}

// waitEvent waits for an event of type and reason on the object named name.
func (e *env) waitEvent(t *testing.T, name, typ, reason string) []string {
	t.Helper()
	var notes []string
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 15*time.Second, true, func(ctx context.Context) (bool, error) {
		notes, _ = kit.EventNotes(ctx, e.cs, e.ns, kit.EventMatch{Name: name, Reason: reason, Type: typ})
		return len(notes) > 0, nil
	})
	if err != nil {
		t.Fatalf("no %s event %s on %s: %v", typ, reason, name, err)
	}
	return notes
}

// Template mode, by flag or per CronJob by annotation: the job template
// takes the reload and no Job starts now. An invalid annotation value is a
// Warning event and the flag's mode applies.
func TestCronJobTemplateMode(t *testing.T) {
	for _, tc := range []struct {
		name     string
		args     []string
		mode     string // the annotation, when set
		template bool
		warning  bool
	}{
		{name: "flag", args: []string{"--cronjob-reload=template"}, template: true},
		{name: "annotation", mode: "template", template: true},
		{name: "annotation run overrides the flag", args: []string{"--cronjob-reload=template"}, mode: "run"},
		{name: "invalid annotation", args: []string{"--cronjob-reload=template"}, mode: "later", template: true, warning: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := startRipple(t, tc.args...)
			r := refs.Ref{Kind: refs.ConfigMap, Name: "cfg"}
			e.newConfig(t, r)
			meta := ann(autoKey, "true")
			if tc.mode != "" {
				meta[cronJobModeKey] = tc.mode
			}
			cj := e.newBatch(t, kit.CronJob, "report", meta, envFrom(r.Kind, r.Name))
			e.waitFor(t, cj, "the baseline record", hasBaseline)
			sum := e.setConfig(t, r, "v2")
			if !tc.template {
				e.waitNewJob(t, cj, nil, "the new digest", shows(strategy.EnvVars{}, r, sum))
				return
			}
			e.waitFor(t, cj, "the new digest on the job template", func(o client.Object) bool {
				return shows(strategy.EnvVars{}, r, sum)(kit.CronJob.Template(o))
			})
			e.expectNoJob(t, cj)
			if tc.warning {
				notes := e.waitEvent(t, cj.GetName(), corev1.EventTypeWarning, "InvalidAnnotation")
				if !strings.Contains(notes[0], cronJobModeKey) {
					t.Fatalf("warning %q does not name %s", notes[0], cronJobModeKey)
				}
			}
		})
	}
}

// A Job a CronJob controls is left to the CronJob: it is not re-created,
// even with Reloader annotations of its own (Reloader re-runs it), and the
// CronJob starts a new Job instead.
func TestJobOfCronJobIsLeftToTheCronJob(t *testing.T) {
	t.Parallel()
	e := startRipple(t)
	r := refs.Ref{Kind: refs.ConfigMap, Name: "cfg"}
	e.newConfig(t, r)
	cj := e.newBatch(t, kit.CronJob, "hourly", ann(autoKey, "true"), envFrom(r.Kind, r.Name))
	e.waitFor(t, cj, "the baseline record", hasBaseline)
	child := kit.Job.New(metav1.ObjectMeta{
		Name: "hourly-1", Namespace: e.ns, Annotations: ann(autoKey, "true"),
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(cj, batchv1.SchemeGroupVersion.WithKind("CronJob"))},
	}, corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Annotations: ann(autoKey, "true")}, Spec: podSpec(envFrom(r.Kind, r.Name))})
	if err := e.c.Create(t.Context(), child); err != nil {
		t.Fatal(err)
	}

	sum := e.setConfig(t, r, "v2")
	e.waitNewJob(t, cj, []string{child.GetName()}, "the new digest", shows(strategy.EnvVars{}, r, sum))
	e.expectNotRecreated(t, child)
	if hasBaseline(child) {
		t.Fatalf("ripple wrote its record on Job %s, which its CronJob controls", child.GetName())
	}
}

// --ignored-workload-types, case-insensitive: the ignored kind is not
// touched at all (not even a baseline record), the other still reloads.
func TestIgnoredWorkloadTypes(t *testing.T) {
	for _, tc := range []struct {
		flag           string
		cronJobs, jobs bool // still reloaded
	}{
		{flag: "jobs", cronJobs: true},
		{flag: "cronjobs", jobs: true},
		{flag: "Jobs,CRONJOBS"}, // the Deployment still reloads
	} {
		t.Run(tc.flag, func(t *testing.T) {
			t.Parallel()
			e := startRipple(t, "--ignored-workload-types="+tc.flag)
			r := refs.Ref{Kind: refs.ConfigMap, Name: "cfg"}
			e.newConfig(t, r)
			cj := e.newBatch(t, kit.CronJob, "cj", ann(autoKey, "true"), envFrom(r.Kind, r.Name))
			job := e.newBatch(t, kit.Job, "job", ann(autoKey, "true"), envFrom(r.Kind, r.Name))
			deploy := kit.Deployment
			d := e.newWorkload(t, deploy, "d", ann(autoKey, "true"), envFrom(r.Kind, r.Name))
			e.waitFor(t, d, "the baseline record", hasBaseline)
			if tc.cronJobs {
				e.waitFor(t, cj, "the baseline record", hasBaseline)
			}
			if tc.jobs {
				e.waitFor(t, job, "the baseline record", hasBaseline)
			}

			sum := e.setConfig(t, r, "v2")
			st := strategy.EnvVars{}
			e.waitApplied(t, deploy, d, r, sum)
			if tc.cronJobs {
				e.waitNewJob(t, cj, nil, "the new digest", shows(st, r, sum))
			} else {
				e.expectNoJob(t, cj)
			}
			if tc.jobs {
				e.waitRecreated(t, job, "the new digest", shows(st, r, sum))
			} else {
				e.expectNotRecreated(t, job)
			}
			var ignored []client.Object
			if !tc.cronJobs {
				ignored = append(ignored, cj)
			}
			if !tc.jobs {
				ignored = append(ignored, job)
			}
			for _, o := range ignored {
				if err := e.c.Get(t.Context(), client.ObjectKeyFromObject(o), o); err != nil {
					t.Fatal(err)
				}
				if hasBaseline(o) {
					t.Fatalf("ripple wrote its record on %s, whose kind is ignored", o.GetName())
				}
			}
		})
	}
}

// denyJobCreates makes the API server refuse every Job create in e's
// namespace, through a ValidatingAdmissionPolicy, until the returned func
// lifts it. Both wait until the API server enforces the change.
func (e *env) denyJobCreates(t *testing.T) (lift func()) {
	t.Helper()
	ctx := t.Context()
	name := "ripple-it-deny-jobs-" + e.ns
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{"batch"}, APIVersions: []string{"v1"}, Resources: []string{"jobs"}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{Expression: "false", Message: "Job creation is blocked by the test", Reason: ptr.To(metav1.StatusReasonForbidden)}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources: &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{"kubernetes.io/metadata.name": e.ns},
			}},
		},
	}
	for _, o := range []client.Object{policy, binding} {
		if err := e.c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	remove := func() {
		for _, o := range []client.Object{binding, policy} {
			if err := e.c.Delete(context.WithoutCancel(t.Context()), o); client.IgnoreNotFound(err) != nil {
				t.Error(err)
			}
		}
	}
	t.Cleanup(remove)
	e.waitJobCreate(t, false)
	return func() {
		remove()
		e.waitJobCreate(t, true)
	}
}

// waitJobCreate waits until a dry-run Job create is allowed, or denied by
// the test's policy.
func (e *env) waitJobCreate(t *testing.T, allowed bool) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		probe := kit.Job.New(metav1.ObjectMeta{Name: "probe", Namespace: e.ns}, corev1.PodTemplateSpec{Spec: podSpec()})
		last = e.c.Create(ctx, probe, client.DryRunAll)
		if allowed {
			return last == nil, nil
		}
		return apierrors.IsForbidden(last) && strings.Contains(last.Error(), "blocked by the test"), nil
	})
	if err != nil {
		t.Fatalf("waiting for Job creates to be allowed=%v: %v (last: %v)", allowed, err, last)
	}
}

// A reload whose Job create fails, after the old Job is deleted or the
// CronJob's Job is decided, is finished by the next Ripple: a Job is
// re-created from its ConfigMap record, a CronJob starts its pending Job
// exactly once. (Reloader loses the Job.) The API server itself refuses
// the creates, through an admission policy.
func TestBatchReloadSurvivesCreateFailureAndRestart(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	home := e.withHome(t)
	stop := e.run(t)
	r := refs.Ref{Kind: refs.ConfigMap, Name: "cfg"}
	e.newConfig(t, r)
	job := e.newBatch(t, kit.Job, "victim", ann(autoKey, "true"), envFrom(r.Kind, r.Name))
	cj := e.newBatch(t, kit.CronJob, "sched", ann(autoKey, "true"), envFrom(r.Kind, r.Name))
	e.waitFor(t, job, "the baseline record", hasBaseline)
	e.waitFor(t, cj, "the baseline record", hasBaseline)

	lift := e.denyJobCreates(t)
	sum := e.setConfig(t, r, "v2")
	record := &corev1.ConfigMap{}
	recordKey := jobRecordKey(home, job)
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 15*time.Second, true, func(ctx context.Context) (bool, error) {
		gone := apierrors.IsNotFound(e.c.Get(ctx, client.ObjectKeyFromObject(job), &batchv1.Job{}))
		return gone && e.c.Get(ctx, recordKey, record) == nil, nil
	})
	if err != nil {
		t.Fatalf("waiting for Job %s to be deleted and recorded in %s: %v", job.GetName(), recordKey.Name, err)
	}
	if record.Labels[recreateLabel] != "true" || record.Annotations["ripple.dev/replaces-uid"] != string(job.GetUID()) {
		t.Fatalf("record %s has labels %v and annotations %v", record.Name, record.Labels, record.Annotations)
	}
	e.noRecordsIn(t, e.ns)
	e.waitFor(t, cj, "the pending Job", func(o client.Object) bool { return o.GetAnnotations()[pendingJobKey] != "" })
	e.waitEvent(t, job.GetName(), corev1.EventTypeWarning, "ReloadFail")

	stop()
	lift()
	if jobs, err := e.jobsOf(t.Context(), cj); err != nil || len(jobs) != 0 {
		t.Fatalf("CronJob %s has %d Jobs (err %v) while creates are denied", cj.GetName(), len(jobs), err)
	}
	e.run(t)

	st := strategy.EnvVars{}
	e.waitRecreated(t, job, "the new digest", shows(st, r, sum))
	e.waitNewJob(t, cj, nil, "the new digest", shows(st, r, sum))
	e.waitGone(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: recordKey.Name, Namespace: recordKey.Namespace}})
	e.waitFor(t, cj, "the pending record cleared", func(o client.Object) bool {
		_, ok := o.GetAnnotations()[pendingJobKey]
		return !ok
	})
}

// waitGone waits until obj no longer exists.
func (e *env) waitGone(t *testing.T, obj client.Object) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 15*time.Second, true, func(ctx context.Context) (bool, error) {
		return apierrors.IsNotFound(e.c.Get(ctx, client.ObjectKeyFromObject(obj), obj)), nil
	})
	if err != nil {
		t.Fatalf("waiting for %s to be gone: %v", obj.GetName(), err)
	}
}

// A Job whose delete leaves it terminating (a finalizer) cannot be created
// again until it is gone. Its record must survive retries and a restart in
// that state, and the Job is created once the old one is gone.
func TestJobRecreateWaitsForTerminatingJob(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	home := e.withHome(t)
	stop := e.run(t)
	r := refs.Ref{Kind: refs.ConfigMap, Name: "cfg"}
	e.newConfig(t, r)
	job := kit.Job.New(metav1.ObjectMeta{Name: "held", Namespace: e.ns, Annotations: ann(autoKey, "true"), Finalizers: []string{"example.com/hold"}},
		corev1.PodTemplateSpec{Spec: podSpec(envFrom(r.Kind, r.Name))})
	if err := e.c.Create(t.Context(), job); err != nil {
		t.Fatal(err)
	}
	e.waitFor(t, job, "the baseline record", hasBaseline)

	sum := e.setConfig(t, r, "v2")
	old := &batchv1.Job{}
	if err := e.c.Get(t.Context(), client.ObjectKeyFromObject(job), old); err != nil {
		t.Fatal(err)
	}
	e.waitFor(t, old, "the delete of the old Job", func(o client.Object) bool { return o.GetDeletionTimestamp() != nil })
	recordKey := jobRecordKey(home, job)
	e.waitEvent(t, job.GetName(), corev1.EventTypeWarning, "ReloadFail")
	if err := e.c.Get(t.Context(), recordKey, &corev1.ConfigMap{}); err != nil {
		t.Fatalf("no record of Job %s while the old Job terminates: %v", job.GetName(), err)
	}

	// A restart finds the record while the old Job is still terminating.
	stop()
	e.run(t)
	time.Sleep(negativeWindow)
	if err := e.c.Get(t.Context(), recordKey, &corev1.ConfigMap{}); err != nil {
		t.Fatalf("the record of Job %s is gone while the old Job terminates: %v", job.GetName(), err)
	}

	old.Finalizers = nil
	if err := e.c.Update(t.Context(), old); err != nil {
		t.Fatal(err)
	}
	e.waitRecreated(t, job, "the new digest", shows(strategy.EnvVars{}, r, sum))
	e.waitGone(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: recordKey.Name, Namespace: recordKey.Namespace}})
}

// A Job is re-created on a data change only, never on a restart (a
// relist), also when it has completed; a completed Job is re-run on a
// change, as Reloader does.
func TestJobRecreatedOnDataChangeOnly(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	args := []string{"--reload-strategy=annotations"}
	stop := e.run(t, args...)
	r := refs.Ref{Kind: refs.ConfigMap, Name: "cfg"}
	e.newConfig(t, r)
	job := e.newBatch(t, kit.Job, "done", ann(autoKey, "true"), envFrom(r.Kind, r.Name)).(*batchv1.Job)
	e.waitFor(t, job, "the baseline record", hasBaseline)
	e.complete(t, job)

	stop()
	stop = e.run(t, args...)
	e.expectNotRecreated(t, job)

	sum := e.setConfig(t, r, "v2")
	st, _ := strategy.New("annotations")
	job = e.waitRecreated(t, job, "the new digest", shows(st, r, sum))

	stop()
	e.run(t, args...)
	e.expectNotRecreated(t, job)
}

// complete marks job as succeeded, as the Job controller (not running
// here) would.
func (e *env) complete(t *testing.T, job *batchv1.Job) {
	t.Helper()
	now := metav1.Now()
	job.Status = batchv1.JobStatus{
		StartTime: &now, CompletionTime: &now, Succeeded: 1,
		Conditions: []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: now}},
	}
	// From 1.31 (Job success policies) a Job completes once its success
	// criteria are met, and the API server wants that condition first;
	// 1.30 refuses it.
	if serverMinor(t, e.cs) >= 31 {
		job.Status.Conditions = append([]batchv1.JobCondition{
			{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: now},
		}, job.Status.Conditions...)
	}
	if err := e.c.Status().Update(t.Context(), job); err != nil {
		t.Fatal(err)
	}
}

// A Job re-created for a reload keeps every field Ripple did not set:
// fields the types know but Ripple never sets on the Job, its pod and a
// container (the API server would prune a field it does not know; that a
// newer cluster's survive is proven by workload's
// TestJobRecreateKeepsEveryField). The new Job is the old one with the
// strategy's env var added, and only the selector and labels the API
// server derives from the new UID differ.
func TestJobRecreateKeepsFieldsRippleNeverSets(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.withHome(t)
	e.run(t)
	r := refs.Ref{Kind: refs.ConfigMap, Name: "cfg"}
	e.newConfig(t, r)
	spec := podSpec(envFrom(r.Kind, r.Name))
	spec.RestartPolicy = corev1.RestartPolicyOnFailure
	spec.TerminationGracePeriodSeconds = ptr.To[int64](7)
	spec.NodeSelector = map[string]string{"disk": "ssd"}
	spec.Tolerations = []corev1.Toleration{{Key: "batch", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	spec.SecurityContext = &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](1000)}
	spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	c := &spec.Containers[0]
	c.Env = []corev1.EnvVar{{Name: "POD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}
	c.VolumeMounts = []corev1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}}
	c.Args = []string{"--once"}
	c.SecurityContext = &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false)}
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "keep", Namespace: e.ns, Labels: map[string]string{"team": "shop"},
			Annotations: map[string]string{autoKey: "true", "owner": "shop"}},
		Spec: batchv1.JobSpec{
			BackoffLimit: ptr.To[int32](2), ActiveDeadlineSeconds: ptr.To[int64](600), TTLSecondsAfterFinished: ptr.To[int32](3600),
			Completions: ptr.To[int32](3), Parallelism: ptr.To[int32](2),
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"tier": "batch"},
				Annotations: map[string]string{"note": "kept"}}, Spec: spec},
		},
	}
	if err := e.c.Create(t.Context(), job); err != nil {
		t.Fatal(err)
	}
	e.waitFor(t, job, "the baseline record", hasBaseline)
	before := &batchv1.Job{}
	if err := e.c.Get(t.Context(), client.ObjectKeyFromObject(job), before); err != nil {
		t.Fatal(err)
	}

	st := strategy.EnvVars{}
	sum := e.setConfig(t, r, "v2")
	after := e.waitRecreated(t, job, "the new digest", shows(st, r, sum))

	// The old Job with the reload's env var, and the new UID's selector
	// and labels, is the new one.
	want := before.Spec.DeepCopy()
	want.Template.Spec.Containers[0].Env = after.Spec.Template.Spec.Containers[0].Env
	if n := len(after.Spec.Template.Spec.Containers[0].Env); n != len(before.Spec.Template.Spec.Containers[0].Env)+1 {
		t.Errorf("%d env vars after the reload, want the Job's own and the reload's", n)
	}
	want.Selector, want.Template.Labels = after.Spec.Selector, after.Spec.Template.Labels
	if !equality.Semantic.DeepEqual(want, &after.Spec) {
		t.Errorf("the re-created Job's spec:\n%+v\nwant the old one's with the reload:\n%+v", after.Spec, *want)
	}
	if after.Spec.Template.Labels["tier"] != "batch" || after.Labels["team"] != "shop" || after.Annotations["owner"] != "shop" {
		t.Errorf("the re-created Job lost its labels or annotations: %v, %v, template %v", after.Labels, after.Annotations, after.Spec.Template.Labels)
	}
}
