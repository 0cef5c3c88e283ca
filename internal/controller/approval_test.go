package controller

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ripple-dev/ripple/internal/reason"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/internal/digest"
	"github.com/ripple-dev/ripple/internal/notify"
	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/source"
	"github.com/ripple-dev/ripple/internal/strategy"
	"github.com/ripple-dev/ripple/internal/workload"
)

func manualDeployment(name string) *appsv1.Deployment {
	d := deployment(name)
	d.Annotations["ripple.dev/reload-policy"] = "manual"
	return d
}

// approveAs writes an approval of the digests on the Deployment, as
// `ripple approve` would.
func (w *world) approveAs(name string, digests map[string]string) {
	w.t.Helper()
	d := &appsv1.Deployment{}
	if err := w.c.Get(w.t.Context(), types.NamespacedName{Namespace: ns, Name: name}, d); err != nil {
		w.t.Fatal(err)
	}
	a := plan.Approval{By: "alice", At: w.clk.Now()}
	for c, sum := range digests {
		a.Changes = append(a.Changes, w.approved(c, sum))
	}
	b, _ := json.Marshal(a)
	d.Annotations[w.deps.Settings.Keys.Approval] = string(b)
	if err := w.c.Update(w.t.Context(), d); err != nil {
		w.t.Fatal(err)
	}
}

// approved is the config cfg at digest sum as `ripple approve` records it
// in an approval: when the API server says its data was written (the
// test's clock is not the fake client's) and the resourceVersion seen.
func (w *world) approved(config, sum string) plan.Approved {
	w.t.Helper()
	cm := &corev1.ConfigMap{}
	if err := w.c.Get(w.t.Context(), types.NamespacedName{Namespace: ns, Name: "cfg"}, cm); err != nil {
		w.t.Fatal(err)
	}
	version := cm.ResourceVersion
	if _, err := source.Transform(digest.Digester{}, cm); err != nil {
		w.t.Fatal(err)
	}
	return plan.Approved{Config: config, Digest: sum, Written: source.Written(cm), Version: version}
}

// A manual workload's change waits: ReloadPending once, the gauge, the
// alert; an approval of it rolls it once, says so and is removed; a later
// change waits again.
func TestManualPolicyWaitsForApproval(t *testing.T) {
	var alerts []notify.Alert
	w := newWorld(t, []workload.Kind{workload.Deployment}, noSettle)
	w.deps.Alert = func(r notify.Alert) { alerts = append(alerts, r) }
	w.create(configMap(), manualDeployment("web"))
	w.baseline("web")
	sum := w.change("Deployment", "v2")
	w.reconcile("Deployment", "web")
	w.reconcile("Deployment", "web")
	ev := w.wantEvent(w.drain(), string(reason.ReloadPending))
	if !strings.Contains(ev, `ConfigMap "cfg" `+sum[:12]) || !strings.Contains(ev, "ripple approve deployment/web -n shop") {
		t.Errorf("ReloadPending %q does not name the config, its digest and how to approve", ev)
	}
	if w.applied("web") != "" || w.metric("ripple_reloads_total") != 0 {
		t.Fatal("a manual workload rolled without an approval")
	}
	if got := w.metric("ripple_reloads_pending"); got != 1 {
		t.Errorf("ripple_reloads_pending = %v, want 1", got)
	}
	if len(alerts) != 1 || alerts[0].Level != reason.Warning || !strings.Contains(alerts[0].Headline.String(), "Reload pending approval") {
		t.Errorf("alerts %+v, want one telling of the pending reload", alerts)
	}

	w.approveAs("web", map[string]string{"ConfigMap/cfg": sum})
	w.reconcile("Deployment", "web")
	if got := w.applied("web"); got != sum {
		t.Fatalf("after the approval: applied %q, want %q", got, sum)
	}
	if ev := w.wantEvent(w.drain(), string(reason.Reloaded)); !strings.Contains(ev, "approved by alice") {
		t.Errorf("Reloaded %q does not say it was approved", ev)
	}
	d := &appsv1.Deployment{}
	if err := w.c.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "web"}, d); err != nil {
		t.Fatal(err)
	}
	if _, ok := d.Annotations[w.deps.Settings.Keys.Approval]; ok {
		t.Error("the spent approval is still on the workload")
	}
	if got := w.metric("ripple_reloads_pending"); got != 0 {
		t.Errorf("ripple_reloads_pending = %v after the approval, want 0", got)
	}

	w.change("Deployment", "v3")
	w.reconcile("Deployment", "web")
	w.wantEvent(w.drain(), string(reason.ReloadPending))
	if got := w.applied("web"); got != sum || w.metric("ripple_reloads_total") != 1 {
		t.Errorf("a later change rolled without its own approval: applied %q", got)
	}
}

// An approval of data that changed again since is reported, not applied.
func TestSupersededApproval(t *testing.T) {
	w := newWorld(t, []workload.Kind{workload.Deployment}, noSettle)
	w.create(configMap(), manualDeployment("web"))
	w.baseline("web")
	old := w.change("Deployment", "v2")
	w.reconcile("Deployment", "web")
	w.wantEvent(w.drain(), string(reason.ReloadPending))
	w.approveAs("web", map[string]string{"ConfigMap/cfg": old})
	w.change("Deployment", "v3")
	w.reconcile("Deployment", "web")
	got := w.drain()
	if ev := w.wantEvent(got, string(reason.ApprovalSuperseded)); !strings.Contains(ev, "Warning") || !strings.Contains(ev, `ConfigMap "cfg" `+old[:12]) {
		t.Errorf("ApprovalSuperseded %q", ev)
	}
	w.wantEvent(got, string(reason.ReloadPending))
	if w.applied("web") != "" {
		t.Error("a superseded approval rolled the workload")
	}
	if w.metric("ripple_reloads_pending") != 1 {
		t.Error("the new change does not wait")
	}
}

// The notify policy never rolls: WouldReload, the counter and an alert.
func TestNotifyPolicy(t *testing.T) {
	var alerts []notify.Alert
	w := newWorld(t, []workload.Kind{workload.Deployment}, noSettle)
	w.deps.Alert = func(r notify.Alert) { alerts = append(alerts, r) }
	d := deployment("web")
	d.Annotations["ripple.dev/reload-policy"] = "notify"
	w.create(configMap(), d)
	w.baseline("web")
	w.change("Deployment", "v2")
	w.reconcile("Deployment", "web")
	if ev := w.wantEvent(w.drain(), string(reason.WouldReload)); !strings.Contains(ev, "reload policy notify") {
		t.Errorf("WouldReload %q", ev)
	}
	if w.applied("web") != "" || w.metric("ripple_would_reload_total", "kind=Deployment") != 1 {
		t.Errorf("applied %q, would reload %v", w.applied("web"), w.metric("ripple_would_reload_total"))
	}
	if len(alerts) != 1 || !strings.Contains(alerts[0].Headline.String(), "Would reload for changes in ConfigMap \"cfg\" (reload policy notify)") {
		t.Errorf("alerts %+v", alerts)
	}
}

// A manual CronJob starts no Job until approved; the approval starts
// exactly one, with the approved data, and is removed.
func TestManualCronJob(t *testing.T) {
	w := newWorld(t, []workload.Kind{workload.NewCronJob(workload.CronJobOptions{Mode: workload.CronJobRun})}, noSettle)
	k := w.deps.Settings.Keys
	w.addKind(workload.NewCronJob(workload.CronJobOptions{Mode: workload.CronJobRun, ModeKey: k.CronJobReload, PendingKey: k.PendingJob, Reader: w.c}))
	meta := batchMeta("nightly")
	meta.Annotations[k.ReloadPolicy] = "manual"
	w.create(configMap(), &batchv1.CronJob{ObjectMeta: meta,
		Spec: batchv1.CronJobSpec{Schedule: "0 0 * * *", JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: jobPod()}}}})
	w.reconcile("CronJob", "nightly")
	sum := w.change("CronJob", "v2")
	w.reconcile("CronJob", "nightly")
	w.wantEvent(w.drain(), string(reason.ReloadPending))
	jobs := &batchv1.JobList{}
	if err := w.c.List(t.Context(), jobs, client.InNamespace(ns)); err != nil || len(jobs.Items) != 0 {
		t.Fatalf("Jobs: %d (%v), want none before the approval", len(jobs.Items), err)
	}

	cj := &batchv1.CronJob{}
	if err := w.c.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "nightly"}, cj); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(plan.Approval{Changes: []plan.Approved{w.approved("ConfigMap/cfg", sum)}, At: w.clk.Now()})
	cj.Annotations[k.Approval] = string(b)
	if err := w.c.Update(t.Context(), cj); err != nil {
		t.Fatal(err)
	}
	w.reconcile("CronJob", "nightly")
	w.reconcile("CronJob", "nightly")
	if err := w.c.List(t.Context(), jobs, client.InNamespace(ns)); err != nil || len(jobs.Items) != 1 {
		t.Fatalf("Jobs: %d (%v), want the one approved", len(jobs.Items), err)
	}
	if applied, _ := (strategy.EnvVars{}).Applied(&jobs.Items[0].Spec.Template, refs.Ref{Kind: refs.ConfigMap, Name: "cfg"}); applied != sum {
		t.Errorf("started Job: applied %q, want %q", applied, sum)
	}
	if err := w.c.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "nightly"}, cj); err != nil || cj.Annotations[k.Approval] != "" {
		t.Errorf("the approval stays on the CronJob (%v)", err)
	}
}
