package integration

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
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

// hostile is the Job a forged record asks for: hostPID and privileged.
func hostile(ns, name string) *batchv1.Job {
	spec := podSpec()
	spec.HostPID = true
	spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
	return kit.Job.New(metav1.ObjectMeta{Name: name, Namespace: ns}, corev1.PodTemplateSpec{Spec: spec}).(*batchv1.Job)
}

// forgeRecord writes, in home, a re-create record of job as a hand-made
// one would be: the Job in clear.
func (e *env) forgeRecord(t *testing.T, home string, job *batchv1.Job) types.NamespacedName {
	t.Helper()
	b, err := json.Marshal(job)
	if err != nil {
		t.Fatal(err)
	}
	key := jobRecordKey(home, job)
	record := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: home, Labels: map[string]string{recreateLabel: "true"},
			Annotations: map[string]string{"ripple.dev/replaces-uid": "forged"}},
		Data:       map[string]string{"job.json": string(b)},
		BinaryData: map[string][]byte{"job.sealed": b},
	}
	if err := e.c.Create(t.Context(), record); err != nil {
		t.Fatal(err)
	}
	return key
}

// expectNoJobNamed fails if the Job key exists, and deletes it if so.
func (e *env) expectNoJobNamed(t *testing.T, key types.NamespacedName) {
	t.Helper()
	j := &batchv1.Job{}
	err := e.c.Get(t.Context(), key, j)
	if err == nil {
		_ = e.c.Delete(context.WithoutCancel(t.Context()), j)
		t.Errorf("Job %s was created from a forged record (hostPID %v)", key, j.Spec.Template.Spec.HostPID)
	} else if !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
}

// A hand-made re-create record in Ripple's namespace creates no Job at
// Ripple's start, neither in kube-system (outside the namespace selector:
// the reproduction of the report) nor in a namespace Ripple reloads: the
// recovery drops it and logs why, naming it.
func TestForgedJobRecordCreatesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	home := e.withHome(t)
	sel := "ripple-it-forged=" + e.ns
	nsObj := &corev1.Namespace{}
	if err := e.c.Get(t.Context(), types.NamespacedName{Name: e.ns}, nsObj); err != nil {
		t.Fatal(err)
	}
	nsObj.Labels["ripple-it-forged"] = e.ns
	if err := e.c.Update(t.Context(), nsObj); err != nil {
		t.Fatal(err)
	}
	jobs := []*batchv1.Job{hostile("kube-system", "pwn-"+e.ns), hostile(e.ns, "forged")}
	var records []types.NamespacedName
	for _, j := range jobs {
		records = append(records, e.forgeRecord(t, home, j))
	}
	e.run(t, "--namespace-selector="+sel)

	for _, r := range records {
		e.waitGone(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: r.Name, Namespace: r.Namespace}})
		e.waitLog(t, 10*time.Second, r.Name, "not sealed with Ripple's record key")
	}
	for _, j := range jobs {
		e.expectNoJobNamed(t, client.ObjectKeyFromObject(j))
	}
}

// A genuine interrupted re-create completes after a restart, but its
// record altered, or copied under another Job's name, creates nothing.
func TestAlteredJobRecordCreatesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	home := e.withHome(t)
	stop := e.run(t)
	r := refs.Ref{Kind: refs.ConfigMap, Name: "cfg"}
	e.newConfig(t, r)
	genuine := e.newBatch(t, kit.Job, "genuine", ann(autoKey, "true"), envFrom(r.Kind, r.Name))
	altered := e.newBatch(t, kit.Job, "altered", ann(autoKey, "true"), envFrom(r.Kind, r.Name))
	e.waitFor(t, genuine, "the baseline record", hasBaseline)
	e.waitFor(t, altered, "the baseline record", hasBaseline)

	lift := e.denyJobCreates(t)
	sum := e.setConfig(t, r, "v2")
	records := map[string]*corev1.ConfigMap{}
	for _, j := range []client.Object{genuine, altered} {
		rec := &corev1.ConfigMap{}
		err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 15*time.Second, true, func(ctx context.Context) (bool, error) {
			gone := apierrors.IsNotFound(e.c.Get(ctx, client.ObjectKeyFromObject(j), &batchv1.Job{}))
			return gone && e.c.Get(ctx, jobRecordKey(home, j), rec) == nil, nil
		})
		if err != nil {
			t.Fatalf("waiting for Job %s to be deleted and recorded: %v", j.GetName(), err)
		}
		if len(rec.Data) > 0 || len(rec.BinaryData["job.sealed"]) == 0 {
			t.Fatalf("record %s is not sealed: data keys %v", rec.Name, rec.Data)
		}
		records[j.GetName()] = rec
	}
	stop()
	// Ripple may have written a record again after it was read above (its
	// retries while Job creates are denied): read them once it stopped.
	for name, rec := range records {
		if err := e.c.Get(t.Context(), client.ObjectKeyFromObject(rec), rec); err != nil {
			t.Fatalf("reading the record of Job %s: %v", name, err)
		}
	}

	// The altered one: one bit of its sealed Job flipped.
	rec := records["altered"]
	rec.BinaryData["job.sealed"][len(rec.BinaryData["job.sealed"])/2] ^= 1
	if err := e.c.Update(t.Context(), rec); err != nil {
		t.Fatal(err)
	}
	// The genuine one, also copied under another Job's name.
	other := kit.Job.New(metav1.ObjectMeta{Name: "other", Namespace: e.ns}, corev1.PodTemplateSpec{})
	copied := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: jobRecordKey(home, other).Name, Namespace: home,
		Labels: records["genuine"].Labels, Annotations: records["genuine"].Annotations}, BinaryData: records["genuine"].BinaryData}
	if err := e.c.Create(t.Context(), copied); err != nil {
		t.Fatal(err)
	}
	lift()
	e.run(t)

	e.waitRecreated(t, genuine, "the new digest", shows(strategy.EnvVars{}, r, sum))
	for _, name := range []string{rec.Name, copied.Name} {
		e.waitGone(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: home}})
		e.waitLog(t, 10*time.Second, name, "not sealed with Ripple's record key")
	}
	e.expectNoJobNamed(t, client.ObjectKeyFromObject(altered))
	e.expectNoJobNamed(t, client.ObjectKeyFromObject(other))
}

// A pending-job annotation on a CronJob that Ripple did not write starts
// no Job from its content: one that sets anything but a reload env var is
// a Warning naming the annotation, and no Job starts; a whole privileged
// pod template (the format of earlier Ripples) starts a Job of the
// CronJob's own template, with only the reload env var taken from it.
func TestTamperedPendingJobAnnotation(t *testing.T) {
	t.Parallel()
	e := startRipple(t)
	bad := e.newBatch(t, kit.CronJob, "bad", map[string]string{pendingJobKey: `{"env":{"app":{"LD_PRELOAD":"/evil.so"}}}`})
	notes := e.waitEvent(t, bad.GetName(), corev1.EventTypeWarning, "InvalidAnnotation")
	if !strings.Contains(notes[0], pendingJobKey) {
		t.Errorf("warning %q does not name %s", notes[0], pendingJobKey)
	}
	e.expectNoJob(t, bad)

	evil := hostile(e.ns, "x").Spec.Template
	evil.Spec.Containers[0].Image = "registry.invalid/evil:1"
	evil.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "STAKATER_CFG_CONFIGMAP", Value: "abc"}}
	b, err := json.Marshal(evil)
	if err != nil {
		t.Fatal(err)
	}
	old := e.newBatch(t, kit.CronJob, "old", map[string]string{pendingJobKey: string(b)})
	job := e.waitNewJob(t, old, nil, "the reload env var", func(tpl *corev1.PodTemplateSpec) bool {
		return len(tpl.Spec.Containers[0].Env) == 1 && tpl.Spec.Containers[0].Env[0].Value == "abc"
	})
	spec := job.Spec.Template.Spec
	if spec.HostPID || spec.Containers[0].SecurityContext != nil || spec.Containers[0].Image != "registry.invalid/app:1" {
		t.Errorf("the Job took the annotation's pod template: hostPID %v, securityContext %v, image %s",
			spec.HostPID, spec.Containers[0].SecurityContext, spec.Containers[0].Image)
	}
	e.waitFor(t, old, "the pending record cleared", func(o client.Object) bool {
		_, ok := o.GetAnnotations()[pendingJobKey]
		return !ok
	})
}
