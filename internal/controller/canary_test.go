package controller

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ripple-dev/ripple/internal/canary"
	"github.com/ripple-dev/ripple/internal/notify"
	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/reason"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/workload"
)

// rippleNS is Ripple's namespace in the canary tests: its records go there.
const rippleNS = "ripple"

// canaryWorld is a world whose changes are canaried on one Deployment
// (--canary=1, a 10s bake), with three Deployments a, b and c on the
// ConfigMap, baselined, and the alerts it sends.
func canaryWorld(t *testing.T) (*world, *[]notify.Alert) {
	t.Helper()
	w := newWorld(t, []workload.Kind{workload.Deployment}, noSettle, withSettings(func(s *plan.Settings) {
		s.Canary = plan.CanarySpec{Count: 1, Bake: 10 * time.Second}
	}))
	var alerts []notify.Alert
	w.deps.Alert = func(a notify.Alert) { alerts = append(alerts, a) }
	w.restartCanaries()
	w.create(configMap(), deployment("a"), deployment("b"), deployment("c"))
	w.baseline("a", "b", "c")
	return w, &alerts
}

// restartCanaries gives the world a new Canaries, as a restart of Ripple
// does: it knows only what its records say.
func (w *world) restartCanaries() {
	fl := &fleet{Deps: w.deps}
	w.deps.Canaries = &canary.Canaries{Fleet: fl, Client: w.c, Reader: w.c, Namespace: rippleNS,
		Settings: w.deps.Settings, Clock: w.clk, Metrics: w.deps.Metrics}
	r := w.recs["Deployment"]
	_ = r.start(w.t.Context(), w.queue)
	fl.add(r)
}

// canaryPhase is the phase of the change of ConfigMap cfg as its record
// in Ripple's namespace says.
func (w *world) canaryPhase() plan.CanaryPhase {
	w.t.Helper()
	config := refs.Ref{Kind: refs.ConfigMap, Name: "cfg"}
	record := &corev1.ConfigMap{}
	if err := w.c.Get(w.t.Context(), types.NamespacedName{Namespace: rippleNS, Name: plan.CanaryRecordName(ns, config)}, record); err != nil {
		w.t.Fatalf("the canary record: %v", err)
	}
	c, err := plan.ParseCanaryRecord(record.Data[plan.CanaryRecordKey], ns, config)
	if err != nil {
		w.t.Fatal(err)
	}
	return c.Phase
}

// queued reports whether the Deployment name was queued.
func (w *world) queued(name string) bool {
	for _, r := range w.queue.added {
		if r == (reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}) {
			return true
		}
	}
	return false
}

// A good change: the canary a rolls, b and c wait, told once; a's
// rollout completes and the bake starts; a restart in the bake keeps it
// (the record); when the bake ends the config is told, b and c are queued
// and roll.
func TestCanaryBakesThenTheRestRoll(t *testing.T) {
	w, alerts := canaryWorld(t)
	sum := w.change("Deployment", "v2")
	w.reconcile("Deployment", "b")
	if w.applied("b") != "" {
		t.Fatal("b rolled before the canary")
	}
	if ev := w.wantEvent(w.drain(), string(reason.WaitingForCanary)); !strings.Contains(ev, `waits for its canary Deployment "a": rolling since`) {
		t.Errorf("WaitingForCanary %q does not name the canary", ev)
	}
	if got := w.canaryPhase(); got != plan.CanaryRolling {
		t.Fatalf("the canary record's phase %s, want Rolling", got)
	}
	w.reconcile("Deployment", "b")
	if got := w.drain(); len(got) != 0 {
		t.Errorf("a second reconcile of b told %q, want nothing: the wait is told once", got)
	}
	w.reconcile("Deployment", "a")
	if w.applied("a") != sum {
		t.Fatal("the canary a did not roll")
	}
	w.deps.Canaries.Check(t.Context())
	if got := w.canaryPhase(); got != plan.CanaryRolling {
		t.Fatalf("a in progress: phase %s, want Rolling", got)
	}
	w.complete("a")
	w.deps.Canaries.Check(t.Context())

	w.restartCanaries()
	w.queue.added = nil
	w.clk.Step(5 * time.Second)
	w.reconcile("Deployment", "c")
	w.deps.Canaries.Check(t.Context())
	if w.applied("c") != "" || w.queued("c") {
		t.Fatal("c rolled or was queued in the bake, after a restart")
	}
	w.clk.Step(5 * time.Second)
	w.deps.Canaries.Check(t.Context())
	if ev := w.wantEvent(w.drain(), string(reason.CanaryPassed)); !strings.Contains(ev, `passed its canary Deployment "a" (healthy for 10s)`) {
		t.Errorf("CanaryPassed %q", ev)
	}
	if !w.queued("c") {
		t.Error("c waited and was not queued when the change passed")
	}
	for _, n := range []string{"b", "c"} {
		w.reconcile("Deployment", n)
		if w.applied(n) != sum {
			t.Errorf("%s did not roll once the canary passed", n)
		}
	}
	if got := halts(*alerts); len(got) != 0 {
		t.Errorf("alerts %+v, want no halt", got)
	}
}

// A canary that stalls halts the change: one RolloutHalted on the config,
// one alert, the metric; the held workloads are told and do not roll, also
// after a restart; `ripple resume` (the config's resume annotation of
// this data) lets them roll.
func TestCanaryStallHaltsTheChange(t *testing.T) {
	w, alerts := canaryWorld(t)
	sum := w.change("Deployment", "v2")
	w.reconcile("Deployment", "a")
	w.reconcile("Deployment", "b")
	w.drain()
	d := &appsv1.Deployment{}
	if err := w.c.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "a"}, d); err != nil {
		t.Fatal(err)
	}
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 2, UpdatedReplicas: 1, UnavailableReplicas: 1,
		Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded"}}}
	if err := w.c.Status().Update(t.Context(), d); err != nil {
		t.Fatal(err)
	}
	w.deps.Canaries.Check(t.Context())
	if ev := w.wantEvent(w.drain(), string(reason.RolloutHalted)); !strings.Contains(ev, `halted by its canary: Deployment "a" stalled: progress deadline exceeded`) ||
		!strings.Contains(ev, "1 other workloads hold it") {
		t.Errorf("RolloutHalted on the config: %q", ev)
	}
	if got := halts(*alerts); len(got) != 1 || got[0].Kind != "ConfigMap" {
		t.Errorf("alerts of the halt %+v, want one, about the ConfigMap", got)
	}
	if got := w.metric("ripple_changes_halted_total", "kind=ConfigMap"); got != 1 {
		t.Errorf("ripple_changes_halted_total = %v, want 1", got)
	}

	w.restartCanaries()
	for _, n := range []string{"b", "c"} {
		w.reconcile("Deployment", n)
		if w.applied(n) != "" {
			t.Fatalf("%s rolled a halted change", n)
		}
	}
	if got := w.drain(); len(got) != 2 || !strings.Contains(got[0], string(reason.RolloutHalted)) {
		t.Errorf("held workloads told %q, want a RolloutHalted each", got)
	}
	if got := halts(*alerts); len(got) != 1 {
		t.Errorf("%d alerts of the halt, want the config's one only", len(got))
	}

	cm := &corev1.ConfigMap{}
	if err := w.c.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "cfg"}, cm); err != nil {
		t.Fatal(err)
	}
	cm.Annotations = map[string]string{w.deps.Settings.Keys.CanaryResume: plan.ShortDigest(sum)}
	if err := w.c.Update(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	w.deps.Canaries.Check(t.Context())
	if ev := w.wantEvent(w.drain(), string(reason.CanaryPassed)); !strings.Contains(ev, "continued after its halt") {
		t.Errorf("CanaryPassed after the resume: %q", ev)
	}
	for _, n := range []string{"b", "c"} {
		w.reconcile("Deployment", n)
		if w.applied(n) != sum {
			t.Errorf("%s did not roll the resumed change", n)
		}
	}
}

// halts are the alerts that are not a rollout's.
func halts(alerts []notify.Alert) []notify.Alert {
	var out []notify.Alert
	for _, a := range alerts {
		if a.Level != reason.Good {
			out = append(out, a)
		}
	}
	return out
}
