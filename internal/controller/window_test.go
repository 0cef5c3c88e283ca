package controller

import (
	"strings"
	"testing"
	"time"

	"github.com/ripple-dev/ripple/internal/reason"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/internal/notify"
	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/strategy"
	"github.com/ripple-dev/ripple/internal/workload"
)

// A change outside the reload window is deferred: a ReloadDeferred Event
// (once per change set) naming the configs and the next opening, the
// gauge, an alert, no rollout; at the opening it rolls once with the
// latest data. A restart (a fresh store) during the deferral rolls nothing
// early. The fake clock starts on Thursday 2026-01-01 00:00 UTC.
func TestReloadWindowDefers(t *testing.T) {
	w := newWorld(t, []workload.Kind{workload.Deployment}, noSettle,
		withSettings(func(s *plan.Settings) { s.ReloadWindow = "Fri 00:00-01:00 UTC" }))
	var alerts []notify.Alert
	w.deps.Alert = func(r notify.Alert) { alerts = append(alerts, r) }
	w.create(configMap(), deployment("web"))
	w.clk.Step(time.Hour) // Thursday 01:00: closed
	w.baseline("web")

	w.change("Deployment", "v2")
	if res := w.reconcile("Deployment", "web"); res.RequeueAfter != 23*time.Hour || w.applied("web") != "" {
		t.Fatalf("outside the window: requeue %s, applied %q; want 23h and nothing", res.RequeueAfter, w.applied("web"))
	}
	ev := w.wantEvent(w.drain(), string(reason.ReloadDeferred))
	for _, want := range []string{`ConfigMap "cfg"`, `"Fri 00:00-01:00 UTC" (from the flag)`, "Fri 2026-01-02 00:00 UTC (2026-01-02T00:00:00Z)"} {
		if !strings.Contains(ev, want) {
			t.Errorf("ReloadDeferred Event %q does not say %q", ev, want)
		}
	}
	if got := w.metric("ripple_reloads_deferred"); got != 1 {
		t.Errorf("ripple_reloads_deferred = %v, want 1", got)
	}
	if len(alerts) != 1 || !strings.Contains(notify.AlertText(alerts[0], ""), "*web* of type *Deployment* in namespace *shop*: Reload for changes in ConfigMap \"cfg\" deferred") {
		t.Errorf("alerts %+v, want one deferral", alerts)
	}

	// a requeue reports nothing new
	w.clk.Step(time.Hour)
	w.reconcile("Deployment", "web")
	if got := w.drain(); len(got) != 0 {
		t.Errorf("requeue of the same change set: Events %q", got)
	}

	// another change: one more Event; a restart forgets the memory
	sum := w.change("Deployment", "v3")
	w.reconcile("Deployment", "web")
	w.wantEvent(w.drain(), string(reason.ReloadDeferred))
	w.deps.Memory = &Store{Metrics: w.deps.Metrics}
	if res := w.reconcile("Deployment", "web"); res.RequeueAfter != 22*time.Hour || w.applied("web") != "" {
		t.Fatalf("after a restart: requeue %s, applied %q; want 22h and nothing", res.RequeueAfter, w.applied("web"))
	}
	w.wantEvent(w.drain(), string(reason.ReloadDeferred))

	w.clk.Step(22 * time.Hour) // Friday 00:00: open
	w.reconcile("Deployment", "web")
	if got := w.applied("web"); got != sum {
		t.Fatalf("in the window: applied %q, want the latest %q", got, sum)
	}
	w.wantEvent(w.drain(), string(reason.Reloaded))
	if got := w.metric("ripple_reloads_deferred"); got != 0 {
		t.Errorf("ripple_reloads_deferred = %v after the rollout, want 0", got)
	}
	if got := w.metric("ripple_reloads_total", "result=success"); got != 1 {
		t.Errorf("ripple_reloads_total = %v, want 1", got)
	}
}

// An invalid window on a workload is a Warning Event naming the annotation
// and the position; the reload waits (it neither rolls at an hour its
// owner meant to exclude nor goes unnoticed) and rolls once it is fixed.
func TestReloadWindowInvalid(t *testing.T) {
	w := newWorld(t, []workload.Kind{workload.Deployment}, noSettle)
	d := deployment("web")
	d.Annotations["ripple.dev/reload-window"] = "Mon-Fri 02:00-4:00"
	w.create(configMap(), d)
	w.baseline("web")
	sum := w.change("Deployment", "v2")
	if res := w.reconcile("Deployment", "web"); res.RequeueAfter != 5*time.Minute || w.applied("web") != "" {
		t.Fatalf("invalid window: requeue %s, applied %q; want 5m and nothing", res.RequeueAfter, w.applied("web"))
	}
	got := w.drain()
	warn := w.wantEvent(got, string(reason.InvalidAnnotation))
	if !strings.Contains(warn, `annotation "ripple.dev/reload-window" on the workload`) || !strings.Contains(warn, "at character 15 (window 1)") {
		t.Errorf("Warning %q does not name the annotation and the position", warn)
	}
	if ev := w.wantEvent(got, string(reason.ReloadDeferred)); !strings.Contains(ev, "the reload window is invalid") {
		t.Errorf("ReloadDeferred %q does not say the window is invalid", ev)
	}
	fixed := &appsv1.Deployment{}
	if err := w.c.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "web"}, fixed); err != nil {
		t.Fatal(err)
	}
	fixed.Annotations["ripple.dev/reload-window"] = "00:00-24:00 UTC"
	if err := w.c.Update(t.Context(), fixed); err != nil {
		t.Fatal(err)
	}
	w.reconcile("Deployment", "web")
	if w.applied("web") != sum {
		t.Errorf("fixed window: applied %q, want %q", w.applied("web"), sum)
	}
}

// A deferred CronJob reload starts its Job in the window, once, with the
// latest data: none outside it.
func TestReloadWindowCronJob(t *testing.T) {
	w := newWorld(t, []workload.Kind{workload.NewCronJob(workload.CronJobOptions{Mode: workload.CronJobRun})}, noSettle,
		withSettings(func(s *plan.Settings) { s.ReloadWindow = "Fri 00:00-01:00 UTC" }))
	k := w.deps.Settings.Keys
	w.addKind(workload.NewCronJob(workload.CronJobOptions{Mode: workload.CronJobRun, ModeKey: k.CronJobReload, PendingKey: k.PendingJob, Reader: w.c}))
	w.create(configMap(), &batchv1.CronJob{ObjectMeta: batchMeta("nightly"),
		Spec: batchv1.CronJobSpec{Schedule: "0 0 * * *", JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: jobPod()}}}})
	w.clk.Step(time.Hour) // Thursday 01:00: closed
	w.reconcile("CronJob", "nightly")
	w.change("CronJob", "v2")
	sum := w.change("CronJob", "v3")
	if res := w.reconcile("CronJob", "nightly"); res.RequeueAfter != 23*time.Hour {
		t.Errorf("requeue %s, want 23h", res.RequeueAfter)
	}
	jobs := func() []batchv1.Job {
		l := &batchv1.JobList{}
		if err := w.c.List(t.Context(), l, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		return l.Items
	}
	if n := len(jobs()); n != 0 {
		t.Fatalf("%d Jobs started outside the window", n)
	}
	w.wantEvent(w.drain(), string(reason.ReloadDeferred))
	w.clk.Step(23 * time.Hour)
	w.reconcile("CronJob", "nightly") // records the pending Job and starts it
	w.reconcile("CronJob", "nightly")
	got := jobs()
	if len(got) != 1 {
		t.Fatalf("%d Jobs in the window, want 1", len(got))
	}
	if applied, _ := (strategy.EnvVars{}).Applied(&got[0].Spec.Template, refs.Ref{Kind: refs.ConfigMap, Name: "cfg"}); applied != sum {
		t.Errorf("started Job: applied %q, want the latest %q", applied, sum)
	}
}
