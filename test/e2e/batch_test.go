package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/ripple-dev/ripple/hack/kit"
	"github.com/ripple-dev/ripple/internal/digest"
)

// These tests hold Ripple's batch kinds to their contract on a real
// cluster, where the CronJob, Job and garbage-collector controllers of
// kube-controller-manager act on what Ripple writes and kwok runs the pods:
// a CronJob takes a reload as a Job started from its template, a Job is
// re-created under its name with the new template.

// Keys of the batch contract, spelled out as the public contract.
const (
	instantiateAnnotation = "cronjob.kubernetes.io/instantiate"
	jobControllerUIDLabel = "batch.kubernetes.io/controller-uid"
	pendingJobAnnotation  = "ripple.dev/pending-job"
	recreateRecordSuffix  = ".ripple-recreate"
)

// podStartTimeout bounds how long a Job's pods may take to be created,
// scheduled and run on a kwok node on a busy 2-core machine.
const podStartTimeout = 90 * time.Second

// jobTemplate is the pod template of the test Jobs and CronJobs: the test
// pod template, envFrom the ConfigMap configMap, never restarted.
func jobTemplate(app, configMap string) corev1.PodTemplateSpec {
	tpl := spec{configMaps: []string{configMap}}.template(app)
	tpl.Spec.RestartPolicy = corev1.RestartPolicyNever
	return tpl
}

func createCronJob(t *testing.T, cs kubernetes.Interface, ns, name, configMap string, suspend bool) *batchv1.CronJob {
	t.Helper()
	cj, err := cs.BatchV1().CronJobs(ns).Create(t.Context(), &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: auto()},
		Spec: batchv1.CronJobSpec{
			Schedule: kit.NeverSchedule,
			Suspend:  ptr.To(suspend),
			JobTemplate: batchv1.JobTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{
					Labels:      map[string]string{"cronjob": name},
					Annotations: map[string]string{"example.com/from-template": "yes"},
				},
				Spec: batchv1.JobSpec{Template: jobTemplate(name, configMap)},
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating CronJob %s/%s: %v", ns, name, err)
	}
	return cj
}

func createJob(t *testing.T, cs kubernetes.Interface, ns, name, configMap string) *batchv1.Job {
	t.Helper()
	job, err := cs.BatchV1().Jobs(ns).Create(t.Context(), &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: auto(), Labels: map[string]string{"team": "e2e"}},
		Spec:       batchv1.JobSpec{Template: jobTemplate(name, configMap)},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating Job %s/%s: %v", ns, name, err)
	}
	return job
}

// waitApplied waits until the annotations get returns hold Ripple's applied
// record with every digest: Ripple has seen the object and its configs, so
// a config change from now on is a change, not a baseline.
func waitApplied(t *testing.T, what string, get func(context.Context) (map[string]string, error), digests ...string) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		ann, err := get(ctx)
		if err != nil {
			return false, err
		}
		last = ann[appliedAnnotation]
		return appliedHas(last, digests...)
	})
	if err != nil {
		t.Fatalf("waiting for Ripple's applied record on %s with digests %v: %v (last %s=%q)", what, digests, err, appliedAnnotation, last)
	}
}

// appliedHas tells whether an applied record holds every digest.
func appliedHas(record string, digests ...string) (bool, error) {
	if record == "" {
		return false, nil
	}
	rec := map[string]string{}
	if err := json.Unmarshal([]byte(record), &rec); err != nil {
		return false, fmt.Errorf("%s=%q is not a JSON object of digests: %w", appliedAnnotation, record, err)
	}
	values := slices.Collect(maps.Values(rec))
	for _, d := range digests {
		if !slices.Contains(values, d) {
			return false, nil
		}
	}
	return true, nil
}

func cronJobAnnotations(cs kubernetes.Interface, ns, name string) func(context.Context) (map[string]string, error) {
	return func(ctx context.Context) (map[string]string, error) {
		cj, err := cs.BatchV1().CronJobs(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		return cj.Annotations, nil
	}
}

func jobAnnotations(cs kubernetes.Interface, ns, name string, uid types.UID) func(context.Context) (map[string]string, error) {
	return func(ctx context.Context) (map[string]string, error) {
		job, err := cs.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		if job.UID != uid {
			return nil, fmt.Errorf("Job %s/%s was re-created (UID %s -> %s) before any change", ns, name, uid, job.UID)
		}
		return job.Annotations, nil
	}
}

// jobsOf returns the Jobs in ns controlled by the object with uid.
func jobsOf(ctx context.Context, cs kubernetes.Interface, ns string, owner types.UID) ([]batchv1.Job, error) {
	list, err := cs.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []batchv1.Job
	for _, j := range list.Items {
		if ref := metav1.GetControllerOf(&j); ref != nil && ref.UID == owner {
			out = append(out, j)
		}
	}
	return out, nil
}

// allJobs returns the names of every Job in ns.
func allJobs(ctx context.Context, cs kubernetes.Interface, ns string) ([]string, error) {
	list, err := cs.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var names []string
	for _, j := range list.Items {
		names = append(names, fmt.Sprintf("%s (uid %s, owner %v)", j.Name, j.UID, metav1.GetControllerOf(&j)))
	}
	return names, nil
}

// podHistory records, from a watch of every pod of a namespace, what each
// pod went through: kwok completes a Job's pods moments after they become
// Running and Ready, too soon for a poll to be sure to see it.
type podHistory struct {
	mu    sync.Mutex
	seen  map[types.UID][]corev1.PodPhase // phases in order, without repeats
	ready map[types.UID]bool              // was Ready at some time
	err   error
}

// watchPods starts recording the pods of ns; the watch ends with the test.
// Start it before the pods it must see are created.
func watchPods(t *testing.T, cs kubernetes.Interface, ns string) *podHistory {
	t.Helper()
	list, err := cs.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h := &podHistory{seen: map[types.UID][]corev1.PodPhase{}, ready: map[types.UID]bool{}}
	for i := range list.Items {
		h.add(&list.Items[i])
	}
	rv := list.ResourceVersion
	ctx := t.Context()
	done := make(chan struct{})
	t.Cleanup(func() { <-done })
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			w, err := cs.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
			if err != nil {
				if ctx.Err() == nil {
					time.Sleep(100 * time.Millisecond)
				}
				continue
			}
			for ev := range w.ResultChan() {
				switch ev.Type {
				case watch.Added, watch.Modified, watch.Deleted:
					if p, ok := ev.Object.(*corev1.Pod); ok {
						rv = p.ResourceVersion
						h.add(p)
					}
				case watch.Error:
					// A resourceVersion that expired: the history can no
					// longer be complete.
					h.mu.Lock()
					h.err = fmt.Errorf("watching the pods of %s: %w", ns, apierrors.FromObject(ev.Object))
					h.mu.Unlock()
					w.Stop()
					return
				}
			}
			w.Stop()
		}
	}()
	return h
}

func (h *podHistory) add(p *corev1.Pod) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if ph := h.seen[p.UID]; len(ph) == 0 || ph[len(ph)-1] != p.Status.Phase {
		h.seen[p.UID] = append(ph, p.Status.Phase)
	}
	if kit.PodReady(p) {
		h.ready[p.UID] = true
	}
}

// ran tells whether the pod with uid was seen Running and Ready, and
// returns the phases it went through.
func (h *podHistory) ran(uid types.UID) (bool, []corev1.PodPhase, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ready[uid] && slices.Contains(h.seen[uid], corev1.PodRunning), slices.Clone(h.seen[uid]), h.err
}

// waitJobPodsRan waits until the Job with uid has at least one pod and
// every one of its pods is controlled by it, runs on a kwok node, passes
// the checks, and was Running and Ready (kwok then completes it: it is
// still Ready or has Succeeded). It returns the pods.
func waitJobPodsRan(t *testing.T, cs kubernetes.Interface, h *podHistory, ns string, job *batchv1.Job, checks ...templateCheck) []corev1.Pod {
	t.Helper()
	nodes := map[string]bool{}
	for _, n := range kc.Nodes {
		nodes[n] = true
	}
	selector := jobControllerUIDLabel + "=" + string(job.UID)
	var pods []corev1.Pod
	var why string
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, podStartTimeout, true, func(ctx context.Context) (bool, error) {
		list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, err
		}
		pods = list.Items
		if len(pods) == 0 {
			why = "no pods yet"
			return false, nil
		}
		for i := range pods {
			p := &pods[i]
			if ref := metav1.GetControllerOf(p); ref == nil || ref.UID != job.UID {
				return false, fmt.Errorf("pod %s labelled %s is controlled by %v, not Job %s", p.Name, selector, ref, job.Name)
			}
			tpl := corev1.PodTemplateSpec{ObjectMeta: p.ObjectMeta, Spec: p.Spec}
			for _, c := range checks {
				if err := c(&tpl); err != nil {
					return false, fmt.Errorf("pod %s of Job %s: %w", p.Name, job.Name, err)
				}
			}
			if !nodes[p.Spec.NodeName] {
				why = fmt.Sprintf("pod %s is on node %q, not a kwok node", p.Name, p.Spec.NodeName)
				return false, nil
			}
			ran, phases, err := h.ran(p.UID)
			if err != nil {
				return false, err
			}
			if !ran || (!kit.PodReady(p) && p.Status.Phase != corev1.PodSucceeded) {
				why = fmt.Sprintf("pod %s: phase %s, ready %v, phases seen %v", p.Name, p.Status.Phase, kit.PodReady(p), phases)
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("waiting for the pods of Job %s/%s (uid %s) to run: %v (last: %s)", ns, job.Name, job.UID, err, why)
	}
	return pods
}

// reloadSkippedEvent returns the message of a ReloadSkipped event about
// the object kind/name, or "" when there is none.
func reloadSkippedEvent(ctx context.Context, cs kubernetes.Interface, ns, kind, name string) (string, error) {
	notes, err := kit.EventNotes(ctx, cs, ns, kit.EventMatch{Kind: kind, Name: name, Reason: "ReloadSkipped"})
	if err != nil || len(notes) == 0 {
		return "", err
	}
	return notes[0], nil
}

// A ConfigMap change starts one Job from the CronJob's template, as
// `kubectl create job --from=cronjob` would, carrying the new hash; the
// Job controller runs its pod on a kwok node. Creating the CronJob starts
// nothing.
func TestCronJobStartsJobOnChange(t *testing.T) {
	t.Parallel()
	cs := kubernetes.NewForConfigOrDie(kc.Config)
	ns := newNamespace(t, cs)
	pods := watchPods(t, cs, ns)
	startRipple(t, ns)
	cm := createConfigMap(t, cs, ns, configName, "v1")
	cj := createCronJob(t, cs, ns, "report", configName, false)
	waitApplied(t, "CronJob "+ns+"/report", cronJobAnnotations(cs, ns, "report"), digest.ConfigMap(cm))
	consistently(t, "no Job before any change", quiet, func(ctx context.Context) error {
		jobs, err := allJobs(ctx, cs, ns)
		if err != nil {
			return fmt.Errorf("listing Jobs: %w", err)
		}
		if len(jobs) > 0 {
			return fmt.Errorf("Jobs %v", jobs)
		}
		return nil
	})

	sum := setConfigMapValue(t, cs, ns, configName, "v2")
	job := waitJobOf(t, cs, cj)
	if job.GenerateName != cj.Name+"-" || !strings.HasPrefix(job.Name, cj.Name+"-") {
		t.Errorf("Job %s has generateName %q, want %q", job.Name, job.GenerateName, cj.Name+"-")
	}
	if v := job.Annotations[instantiateAnnotation]; v != "manual" {
		t.Errorf("Job %s: annotation %s=%q, want \"manual\" (annotations %v)", job.Name, instantiateAnnotation, v, job.Annotations)
	}
	if v := job.Annotations["example.com/from-template"]; v != "yes" {
		t.Errorf("Job %s does not carry the job template's annotations: %v", job.Name, job.Annotations)
	}
	if v := job.Labels["cronjob"]; v != cj.Name {
		t.Errorf("Job %s does not carry the job template's labels: %v", job.Name, job.Labels)
	}
	ref := metav1.GetControllerOf(&job)
	if ref == nil || ref.Kind != "CronJob" || ref.Name != cj.Name || ref.UID != cj.UID {
		t.Errorf("Job %s is controlled by %v, want CronJob %s (uid %s)", job.Name, ref, cj.Name, cj.UID)
	}
	checks := []templateCheck{envIs(configEnv, sum), envOnce(configEnv)}
	for _, c := range checks {
		if err := c(&job.Spec.Template); err != nil {
			t.Errorf("Job %s: %v", job.Name, err)
		}
	}

	// The CronJob keeps its template (run mode): the change is recorded as
	// applied, the pending record is cleared, and one Job only is started.
	waitApplied(t, "CronJob "+ns+"/report", cronJobAnnotations(cs, ns, "report"), sum)
	waitFor(t, "the CronJob's pending-Job record to be cleared", func(ctx context.Context) (bool, error) {
		ann, err := cronJobAnnotations(cs, ns, cj.Name)(ctx)
		_, pending := ann[pendingJobAnnotation]
		return err == nil && !pending, err
	})
	consistently(t, "one Job of the CronJob, and the CronJob's template unchanged", afterRollout+time.Second, func(ctx context.Context) error {
		jobs, err := jobsOf(ctx, cs, ns, cj.UID)
		if err != nil {
			return err
		}
		if len(jobs) != 1 {
			all, _ := allJobs(ctx, cs, ns)
			return fmt.Errorf("%d Jobs of the CronJob, want 1: %v", len(jobs), all)
		}
		now, err := cs.BatchV1().CronJobs(ns).Get(ctx, cj.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if v, ok := envValue(&now.Spec.JobTemplate.Spec.Template, configEnv); ok {
			return fmt.Errorf("the CronJob's job template was patched: %s=%s", configEnv, v)
		}
		if _, ok := now.Annotations[pendingJobAnnotation]; ok {
			return fmt.Errorf("the CronJob records a pending Job again")
		}
		return nil
	})

	// The Job is real: the Job controller runs its pod on a kwok node,
	// with the new hash in its environment.
	waitJobPodsRan(t, cs, pods, ns, &job, checks...)
}

// A suspended CronJob runs nothing on a change: Ripple records the change
// as applied and says why in a ReloadSkipped event. Resuming it starts no
// Job for that old change; the next change after the resume starts one.
func TestSuspendedCronJobStartsNoJob(t *testing.T) {
	t.Parallel()
	cs := kubernetes.NewForConfigOrDie(kc.Config)
	ns := newNamespace(t, cs)
	startRipple(t, ns)
	cm := createConfigMap(t, cs, ns, configName, "v1")
	cj := createCronJob(t, cs, ns, "report", configName, true)
	waitApplied(t, "CronJob "+ns+"/report", cronJobAnnotations(cs, ns, "report"), digest.ConfigMap(cm))

	sum := setConfigMapValue(t, cs, ns, configName, "v2")
	var note string
	waitFor(t, "a ReloadSkipped event for CronJob "+cj.Name, func(ctx context.Context) (bool, error) {
		var err error
		note, err = reloadSkippedEvent(ctx, cs, ns, "CronJob", cj.Name)
		return note != "", err
	})
	if !strings.Contains(note, configName) {
		t.Errorf("ReloadSkipped event %q does not name ConfigMap %s", note, configName)
	}
	waitApplied(t, "CronJob "+ns+"/report", cronJobAnnotations(cs, ns, "report"), sum)
	noJobs := func(what string) {
		t.Helper()
		consistently(t, what, 5*time.Second, func(ctx context.Context) error {
			jobs, err := allJobs(ctx, cs, ns)
			if err != nil {
				return fmt.Errorf("listing Jobs: %w", err)
			}
			if len(jobs) > 0 {
				return fmt.Errorf("Jobs %v", jobs)
			}
			return nil
		})
	}
	noJobs("no Job of the suspended CronJob")

	// Resuming it starts nothing for the change made while suspended...
	if _, err := cs.BatchV1().CronJobs(ns).Patch(t.Context(), cj.Name, types.MergePatchType,
		[]byte(`{"spec":{"suspend":false}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	noJobs("no Job after the CronJob is resumed")

	// ...and the next change starts exactly one Job, with the new hash.
	sum = setConfigMapValue(t, cs, ns, configName, "v3")
	job := waitJobOf(t, cs, cj)
	if err := envIs(configEnv, sum)(&job.Spec.Template); err != nil {
		t.Errorf("Job %s: %v", job.Name, err)
	}
	consistently(t, "one Job of the resumed CronJob", afterRollout, func(ctx context.Context) error {
		jobs, err := allJobs(ctx, cs, ns)
		if err != nil {
			return fmt.Errorf("listing Jobs: %w", err)
		}
		if len(jobs) != 1 {
			return fmt.Errorf("Jobs %v, want one", jobs)
		}
		return nil
	})
}

// A ConfigMap change re-creates a Job under its name with the new hash in
// its template: a new UID, whose pods the Job controller runs, while the
// garbage collector removes the old Job's pods. Creating the Job re-creates
// nothing, and the re-created Job is not re-created again.
func TestJobRecreatedOnChange(t *testing.T) {
	t.Parallel()
	cs := kubernetes.NewForConfigOrDie(kc.Config)
	ns := newNamespace(t, cs)
	pods := watchPods(t, cs, ns)
	startRipple(t, ns)
	cm := createConfigMap(t, cs, ns, configName, "v1")
	old := createJob(t, cs, ns, "migrate", configName)
	oldPods := waitJobPodsRan(t, cs, pods, ns, old, noEnv(configEnv))
	waitApplied(t, "Job "+ns+"/migrate", jobAnnotations(cs, ns, old.Name, old.UID), digest.ConfigMap(cm))
	consistently(t, "the Job is not re-created before any change", quiet, func(ctx context.Context) error {
		_, err := jobAnnotations(cs, ns, old.Name, old.UID)(ctx)
		return err
	})

	sum := setConfigMapValue(t, cs, ns, configName, "v2")
	var job *batchv1.Job
	waitFor(t, "Job "+old.Name+" re-created", func(ctx context.Context) (bool, error) {
		j, err := cs.BatchV1().Jobs(ns).Get(ctx, old.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil // between the delete and the create
		}
		if err != nil {
			return false, err
		}
		job = j
		return j.UID != old.UID, nil
	})
	checks := []templateCheck{envIs(configEnv, sum), envOnce(configEnv)}
	for _, c := range checks {
		if err := c(&job.Spec.Template); err != nil {
			t.Errorf("re-created Job %s: %v", job.Name, err)
		}
	}
	if job.Annotations[autoAnnotation] != "true" || job.Labels["team"] != "e2e" {
		t.Errorf("re-created Job %s lost the old one's metadata: labels %v, annotations %v", job.Name, job.Labels, job.Annotations)
	}
	// The API server derives these from the UID: the new Job has its own.
	if v := job.Spec.Template.Labels[jobControllerUIDLabel]; v != string(job.UID) {
		t.Errorf("re-created Job %s: template label %s=%q, want its own UID %s", job.Name, jobControllerUIDLabel, v, job.UID)
	}

	// The new Job's pods run with the new hash...
	waitJobPodsRan(t, cs, pods, ns, job, checks...)
	// ...and the old Job's pods are garbage collected.
	waitFor(t, "the old Job's pods to be gone", func(ctx context.Context) (bool, error) {
		list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: jobControllerUIDLabel + "=" + string(old.UID)})
		if err != nil {
			return false, err
		}
		return len(list.Items) == 0, nil
	})
	for _, p := range oldPods {
		if _, err := cs.CoreV1().Pods(ns).Get(t.Context(), p.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("old pod %s: %v, want NotFound", p.Name, err)
		}
	}
	// The record of the re-create, in Ripple's own namespace (default: it
	// runs out of the cluster without $POD_NAMESPACE), is dropped once the
	// Job exists.
	waitFor(t, "the re-create record to be deleted", func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().ConfigMaps(metav1.NamespaceDefault).Get(ctx, ns+"."+old.Name+recreateRecordSuffix, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	consistently(t, "the re-created Job is not re-created again", afterRollout+time.Second, func(ctx context.Context) error {
		_, err := jobAnnotations(cs, ns, job.Name, job.UID)(ctx)
		return err
	})
}

// waitJobOf waits for a Job controlled by the CronJob and returns the first.
func waitJobOf(t *testing.T, cs kubernetes.Interface, cj *batchv1.CronJob) batchv1.Job {
	t.Helper()
	var job batchv1.Job
	waitFor(t, "a Job of CronJob "+cj.Name, func(ctx context.Context) (bool, error) {
		jobs, err := jobsOf(ctx, cs, cj.Namespace, cj.UID)
		if err != nil || len(jobs) == 0 {
			return false, err
		}
		job = jobs[0]
		return true, nil
	})
	return job
}
