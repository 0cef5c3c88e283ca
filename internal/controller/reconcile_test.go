package controller

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ripple-dev/ripple/internal/dependents/dependentstest"
	"github.com/ripple-dev/ripple/internal/reason"

	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ripple-dev/ripple/internal/change"
	"github.com/ripple-dev/ripple/internal/config"
	"github.com/ripple-dev/ripple/internal/dependents"
	"github.com/ripple-dev/ripple/internal/digest"
	"github.com/ripple-dev/ripple/internal/metrics"
	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/source"
	"github.com/ripple-dev/ripple/internal/strategy"
	"github.com/ripple-dev/ripple/internal/workload"
)

// The reconcile paths, on controller-runtime's fake client with a fake
// clock: no API server. What the API server decides (patch semantics,
// watches, RBAC) is the integration tier's.

const ns = "shop"

// world is one Ripple on a fake client: the reconcilers of its kinds and
// their rollout followers, sharing one Deps.
type world struct {
	t      *testing.T
	c      client.Client
	clk    *clocktesting.FakeClock
	events *events.FakeRecorder
	reg    *prometheus.Registry
	deps   *Deps
	recs   map[string]*Reconciler
	fols   map[string]*follower
	queue  *recordingQueue
	// fleet is the change controller's view of the workloads, once it is
	// on, and keeper its Keeper, whose looks the test makes
	// (canary_test.go).
	fleet  *fleet
	keeper *change.Keeper
}

// option changes a world's settings or client before it starts.
type option func(*plan.Settings, *fake.ClientBuilder)

func withSettings(f func(*plan.Settings)) option {
	return func(s *plan.Settings, _ *fake.ClientBuilder) { f(s) }
}

func withInterceptor(f interceptor.Funcs) option {
	return func(_ *plan.Settings, b *fake.ClientBuilder) { b.WithInterceptorFuncs(f) }
}

func newWorld(t *testing.T, kinds []workload.Kind, opts ...option) *world {
	t.Helper()
	cfg, err := config.NewOptions().Config()
	if err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	settings := cfg.PlanSettings(clk.Now().Add(-time.Hour))
	b := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithReturnManagedFields()
	for _, o := range opts {
		o(&settings, b)
	}
	finder := &dependents.Finder{Index: dependents.Index{Keys: settings.Keys, SourceKinds: settings.SourceKinds}}
	for _, k := range kinds {
		if err := finder.Register(t.Context(), dependentstest.Indexer(b), k); err != nil {
			t.Fatal(err)
		}
	}
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg, false)
	if err != nil {
		t.Fatal(err)
	}
	w := &world{t: t, clk: clk, events: events.NewFakeRecorder(100), reg: reg, queue: &recordingQueue{},
		recs: map[string]*Reconciler{}, fols: map[string]*follower{}}
	w.c = b.Build()
	finder.Index.Reader = w.c
	finder.Scope.Reader = w.c
	w.deps = &Deps{Client: w.c, Settings: settings, Finder: finder, Recorder: w.events, Metrics: m, Clock: clk,
		Priors: &source.Priors{}, Memory: &Store{Metrics: m}, configsTold: &configsTold{}}
	w.deps.restarts = &restarter{Deps: w.deps, recs: map[string]*Reconciler{}}
	for _, k := range kinds {
		w.addKind(k)
	}
	return w
}

// addKind adds the reconciler and follower of k; the fake client does not
// need k's indexes for a kind whose source events are not mapped.
func (w *world) addKind(k workload.Kind) {
	w.fols[k.Name()] = &follower{Deps: w.deps, Kind: k}
	w.recs[k.Name()] = &Reconciler{Deps: w.deps, Kind: k, follow: func(n types.NamespacedName) { w.queue.followed = append(w.queue.followed, n) }}
	w.deps.restarts.add(w.recs[k.Name()])
}

// recordingQueue records what the handlers queue.
type recordingQueue struct {
	queue
	added    []reconcile.Request
	after    []time.Duration
	followed []types.NamespacedName
}

func (q *recordingQueue) Add(r reconcile.Request) { q.AddAfter(r, 0) }
func (q *recordingQueue) AddAfter(r reconcile.Request, d time.Duration) {
	q.added, q.after = append(q.added, r), append(q.after, d)
}

func (w *world) create(objs ...client.Object) {
	w.t.Helper()
	for _, o := range objs {
		if err := w.c.Create(w.t.Context(), o); err != nil {
			w.t.Fatal(err)
		}
	}
}

// reconcile reconciles the workload of kind named name, and fails the
// test on an error. The reload-action calls it started (which run beside
// the reconcile) end before it returns, so that a test reads what they did.
func (w *world) reconcile(kind, name string) ctrl.Result {
	w.t.Helper()
	res, err := w.recs[kind].Reconcile(w.t.Context(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}})
	if err != nil {
		w.t.Fatalf("reconciling %s %s: %v", kind, name, err)
	}
	if pods := w.restart(kind, name); pods.RequeueAfter > 0 && (res.RequeueAfter == 0 || pods.RequeueAfter < res.RequeueAfter) {
		res.RequeueAfter = pods.RequeueAfter
	}
	w.deps.Memory.calls.Wait()
	return res
}

// restart runs the pod restarter on the workload, as its queue would
// after a reconcile fed it a restart in progress; nothing when none was.
func (w *world) restart(kind, name string) ctrl.Result {
	w.t.Helper()
	k := workload.Ref{Kind: kind, Namespace: ns, Name: name}
	if _, _, ok := w.deps.Memory.Restart(k); !ok {
		return ctrl.Result{}
	}
	res, err := w.deps.restarts.Reconcile(w.t.Context(), k)
	if err != nil {
		w.t.Fatalf("restarting the pods of %s %s: %v", kind, name, err)
	}
	return res
}

// follow runs the Deployments' rollout follower on name.
func (w *world) follow(name string) ctrl.Result {
	w.t.Helper()
	res, err := w.fols["Deployment"].Reconcile(w.t.Context(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}})
	if err != nil {
		w.t.Fatalf("following Deployment %s: %v", name, err)
	}
	return res
}

// change sets the data of ConfigMap cfg and tells the reconciler of kind,
// as its source handler would; it returns the new digest.
func (w *world) change(kind, value string) string {
	w.t.Helper()
	cm := &corev1.ConfigMap{}
	if err := w.c.Get(w.t.Context(), types.NamespacedName{Namespace: ns, Name: "cfg"}, cm); err != nil {
		w.t.Fatal(err)
	}
	cm.Data = map[string]string{"k": value}
	if err := w.c.Update(w.t.Context(), cm); err != nil {
		w.t.Fatal(err)
	}
	w.recs[kind].enqueueDependents(w.t.Context(), ns, refs.Ref{Kind: refs.ConfigMap, Name: "cfg"}, w.queue, true)
	return digest.ConfigMap(cm)
}

// events drains the recorded Events, "Type Reason note" each.
func (w *world) drain() []string {
	var out []string
	for {
		select {
		case e := <-w.events.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// wantEvent fails unless exactly one of the drained Events has reason,
// and returns it.
func (w *world) wantEvent(got []string, reason string) string {
	w.t.Helper()
	var found []string
	for _, e := range got {
		if strings.Fields(e)[1] == reason {
			found = append(found, e)
		}
	}
	if len(found) != 1 {
		w.t.Fatalf("%s Events: %q, want one (all: %q)", reason, found, got)
	}
	return found[0]
}

// metric is the sum of the samples of the metric family name whose
// labels include labels ("k=v" each).
func (w *world) metric(name string, labels ...string) float64 {
	w.t.Helper()
	families, err := w.reg.Gather()
	if err != nil {
		w.t.Fatal(err)
	}
	var sum float64
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			have := map[string]bool{}
			for _, l := range m.GetLabel() {
				have[l.GetName()+"="+l.GetValue()] = true
			}
			match := true
			for _, l := range labels {
				match = match && have[l]
			}
			if !match {
				continue
			}
			switch {
			case m.GetCounter() != nil:
				sum += m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				sum += m.GetGauge().GetValue()
			case m.GetHistogram() != nil:
				sum += float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return sum
}

// applied is the digest of ConfigMap cfg on the Deployment's template.
func (w *world) applied(name string) string {
	w.t.Helper()
	d := &appsv1.Deployment{}
	if err := w.c.Get(w.t.Context(), types.NamespacedName{Namespace: ns, Name: name}, d); err != nil {
		w.t.Fatal(err)
	}
	got, _ := strategy.EnvVars{}.Applied(&d.Spec.Template, refs.Ref{Kind: refs.ConfigMap, Name: "cfg"})
	return got
}

// configMap is ConfigMap cfg at its first value.
func configMap() *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cfg"}, Data: map[string]string{"k": "v1"}}
}

// deployment is an auto-reloading Deployment that takes its env from
// ConfigMap cfg.
func deployment(name string) *appsv1.Deployment {
	a := map[string]string{"reloader.stakater.com/auto": "true"}
	c := corev1.Container{Name: "app", Image: "app", EnvFrom: []corev1.EnvFromSource{
		{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}},
	}}
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: a, CreationTimestamp: metav1.Time{Time: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{c}}}},
	}
}

// baseline reconciles each Deployment once, which records what it runs.
func (w *world) baseline(names ...string) {
	w.t.Helper()
	for _, n := range names {
		w.reconcile("Deployment", n)
		if w.applied(n) != "" {
			w.t.Fatalf("%s rolled on its first reconcile", n)
		}
	}
	w.drain()
}

// A change rolls once the settle window has closed, not before: the event
// opens the window (the workload is queued for when it closes) and a
// reconcile inside it only waits.
func TestSettleWindowThenReload(t *testing.T) {
	w := newWorld(t, []workload.Kind{workload.Deployment})
	w.create(configMap(), deployment("web"))
	w.baseline("web")
	sum := w.change("Deployment", "v2")
	if len(w.queue.after) != 1 || w.queue.after[0] != time.Second {
		t.Fatalf("queued after %v, want once after the settle window of 1s", w.queue.after)
	}
	w.clk.Step(300 * time.Millisecond)
	if res := w.reconcile("Deployment", "web"); res.RequeueAfter != 700*time.Millisecond || w.applied("web") != "" {
		t.Fatalf("inside the window: requeue %s, applied %q; want 700ms and nothing", res.RequeueAfter, w.applied("web"))
	}
	w.clk.Step(700 * time.Millisecond)
	w.reconcile("Deployment", "web")
	if got := w.applied("web"); got != sum {
		t.Fatalf("after the window: applied %q, want %q", got, sum)
	}
	ev := w.wantEvent(w.drain(), string(reason.Reloaded))
	if !strings.Contains(ev, `ConfigMap "cfg"`) {
		t.Errorf("Reloaded Event %q does not name the ConfigMap", ev)
	}
	if got := w.metric("ripple_reloads_total", "result=success"); got != 1 {
		t.Errorf("ripple_reloads_total = %v, want 1", got)
	}
	if !w.deps.Memory.Load(workload.RefFor("Deployment", types.NamespacedName{Namespace: ns, Name: "web"})).Pending.First.IsZero() {
		t.Error("the settle window is still open after the rollout")
	}
	if len(w.queue.followed) != 1 || w.metric("ripple_rollouts_in_progress") != 1 {
		t.Errorf("rollout followed: queued %v, %v in progress; want web, 1", w.queue.followed, w.metric("ripple_rollouts_in_progress"))
	}
}

// A write that meets a newer object is retried 100 ms later, reports no
// failure, and the next reconcile converges.
func TestConflictConverges(t *testing.T) {
	conflicts := 1
	w := newWorld(t, []workload.Kind{workload.Deployment}, noSettle, withInterceptor(interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			// The reload is an apply patch naming the strategy's env var.
			if b, err := p.Data(obj); err == nil && p.Type() == types.ApplyPatchType && conflicts > 0 && strings.Contains(string(b), "STAKATER_CFG_CONFIGMAP") {
				conflicts--
				return apierrors.NewConflict(appsv1.Resource("deployments"), obj.GetName(), errors.New("the object has been modified"))
			}
			return c.Patch(ctx, obj, p, opts...)
		},
	}))
	w.create(configMap(), deployment("web"))
	w.baseline("web")
	sum := w.change("Deployment", "v2")
	if res := w.reconcile("Deployment", "web"); res.RequeueAfter != conflictRetry || w.applied("web") != "" {
		t.Fatalf("on a conflict: requeue %s, applied %q; want %s and nothing", res.RequeueAfter, w.applied("web"), conflictRetry)
	}
	if got := w.drain(); len(got) != 0 {
		t.Fatalf("Events on a conflict: %q, want none", got)
	}
	if got := w.metric("reloader_retries_total"); got != 1 {
		t.Errorf("reloader_retries_total = %v, want 1", got)
	}
	w.reconcile("Deployment", "web")
	if got := w.applied("web"); got != sum {
		t.Fatalf("after the retry: applied %q, want %q", got, sum)
	}
	w.wantEvent(w.drain(), string(reason.Reloaded))
	if got := w.metric("ripple_reloads_total"); got != 1 {
		t.Errorf("ripple_reloads_total = %v, want 1 (the conflict is no reload)", got)
	}
}

var noSettle = withSettings(func(s *plan.Settings) { s.SettleWindow = 0 })

// A config that keeps changing trips the flap breaker: the workload is
// held (one Warning, the gauge up) and, once quiet, rolls once with the
// latest data.
func TestStormHold(t *testing.T) {
	w := newWorld(t, []workload.Kind{workload.Deployment}, noSettle, withSettings(func(s *plan.Settings) {
		s.Flap = plan.Flap{Threshold: 2, Window: time.Minute, Quiet: 10 * time.Second}
	}))
	w.create(configMap(), deployment("web"))
	w.baseline("web")
	for _, v := range []string{"v2", "v3"} {
		sum := w.change("Deployment", v)
		w.clk.Step(time.Second)
		w.reconcile("Deployment", "web")
		if got := w.applied("web"); got != sum {
			t.Fatalf("%s: applied %q, want %q", v, got, sum)
		}
	}
	held := w.applied("web")
	w.drain()
	w.change("Deployment", "v4")
	w.clk.Step(time.Second)
	if res := w.reconcile("Deployment", "web"); res.RequeueAfter != 10*time.Second || w.applied("web") != held {
		t.Fatalf("third change in a minute: requeue %s, applied changed %v; want held for 10s", res.RequeueAfter, w.applied("web") != held)
	}
	ev := w.wantEvent(w.drain(), string(reason.ReloadHeld))
	if !strings.Contains(ev, "changed 3 times within 1m0s") {
		t.Errorf("ReloadHeld %q does not say why", ev)
	}
	if w.metric("ripple_reloads_held") != 1 || w.metric("ripple_reload_holds_total", "kind=Deployment") != 1 {
		t.Errorf("held gauge %v, holds %v; want 1, 1", w.metric("ripple_reloads_held"), w.metric("ripple_reload_holds_total"))
	}
	sum := w.change("Deployment", "v5") // still held: no second Warning
	w.clk.Step(time.Second)
	w.reconcile("Deployment", "web")
	if got := w.drain(); len(got) != 0 || w.applied("web") != held {
		t.Fatalf("a change during the hold: Events %q, rolled %v; want none", got, w.applied("web") != held)
	}
	w.clk.Step(10 * time.Second)
	w.reconcile("Deployment", "web")
	if got := w.applied("web"); got != sum {
		t.Fatalf("after the quiet period: applied %q, want the latest %q", got, sum)
	}
	got := w.drain()
	w.wantEvent(got, string(reason.ReloadResumed))
	w.wantEvent(got, string(reason.Reloaded))
	if w.metric("ripple_reloads_held") != 0 {
		t.Errorf("held gauge %v after the hold, want 0", w.metric("ripple_reloads_held"))
	}
}

// With a cap of one rollout, a shared change rolls one Deployment; the
// other waits (RolloutQueued, once) until the follower sees the first
// complete, then rolls; its own rollout times out as stalled.
func TestWaves(t *testing.T) {
	w := newWorld(t, []workload.Kind{workload.Deployment}, noSettle, withSettings(func(s *plan.Settings) {
		s.Rollouts = plan.RolloutLimits{Max: 1, Timeout: time.Minute}
	}))
	w.create(configMap(), deployment("a"), deployment("b"))
	w.baseline("a", "b")
	sum := w.change("Deployment", "v2")
	w.reconcile("Deployment", "a")
	for range 2 {
		if res := w.reconcile("Deployment", "b"); res.RequeueAfter != plan.WaitPoll || w.applied("b") != "" {
			t.Fatalf("b over the cap: requeue %s, rolled %v; want a poll, not rolled", res.RequeueAfter, w.applied("b") != "")
		}
	}
	got := w.drain()
	w.wantEvent(got, string(reason.Reloaded))
	if ev := w.wantEvent(got, string(reason.RolloutQueued)); !strings.Contains(ev, "1 of 1 in progress (--max-concurrent-rollouts)") {
		t.Errorf("RolloutQueued %q does not name the cap", ev)
	}
	if w.metric("ripple_rollouts_waiting") != 1 || w.metric("ripple_rollouts_in_progress") != 1 {
		t.Fatalf("waiting %v, in progress %v; want 1, 1", w.metric("ripple_rollouts_waiting"), w.metric("ripple_rollouts_in_progress"))
	}
	w.clk.Step(2 * time.Second)
	if res := w.follow("a"); res.RequeueAfter <= 0 {
		t.Fatalf("a's rollout in progress: requeue %s, want the time left", res.RequeueAfter)
	}
	w.complete("a")
	w.follow("a")
	if ev := w.wantEvent(w.drain(), string(reason.RolloutComplete)); !strings.Contains(ev, "after 2s") {
		t.Errorf("RolloutComplete %q, want after 2s", ev)
	}
	w.reconcile("Deployment", "b")
	if got := w.applied("b"); got != sum {
		t.Fatalf("b once a completed: applied %q, want %q", got, sum)
	}
	if w.metric("ripple_rollouts_waiting") != 0 {
		t.Errorf("waiting %v, want 0", w.metric("ripple_rollouts_waiting"))
	}
	w.clk.Step(time.Minute)
	w.follow("b")
	if ev := w.wantEvent(w.drain(), string(reason.RolloutStalled)); !strings.Contains(ev, "not complete after 1m0s (--rollout-timeout)") {
		t.Errorf("RolloutStalled %q does not name the timeout", ev)
	}
	if w.metric("ripple_rollouts_in_progress") != 0 || w.metric("ripple_rollouts_stalled_total") != 1 {
		t.Errorf("in progress %v, stalled %v; want 0, 1", w.metric("ripple_rollouts_in_progress"), w.metric("ripple_rollouts_stalled_total"))
	}
	if res := w.follow("b"); res.RequeueAfter != 0 || len(w.drain()) != 0 {
		t.Error("a stalled rollout is still followed")
	}
}

// complete writes the status the Deployment controller would once name's
// current template is rolled out and available.
func (w *world) complete(name string) {
	w.t.Helper()
	d := &appsv1.Deployment{}
	if err := w.c.Get(w.t.Context(), types.NamespacedName{Namespace: ns, Name: name}, d); err != nil {
		w.t.Fatal(err)
	}
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1}
	if err := w.c.Status().Update(w.t.Context(), d); err != nil {
		w.t.Fatal(err)
	}
}

// In dry-run a change is a WouldReload Event and a count, and rolls
// nothing; the baseline record is all that is written.
func TestDryRun(t *testing.T) {
	w := newWorld(t, []workload.Kind{workload.Deployment}, noSettle, withSettings(func(s *plan.Settings) { s.DryRun = true }))
	w.create(configMap(), deployment("web"))
	w.baseline("web")
	d := &appsv1.Deployment{}
	if err := w.c.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "web"}, d); err != nil {
		t.Fatal(err)
	}
	record := d.Annotations[w.deps.Settings.Keys.Applied]
	if record == "" {
		t.Fatal("dry-run wrote no baseline record")
	}
	w.change("Deployment", "v2")
	w.reconcile("Deployment", "web")
	if ev := w.wantEvent(w.drain(), string(reason.WouldReload)); !strings.Contains(ev, "(--dry-run)") {
		t.Errorf("WouldReload %q", ev)
	}
	if err := w.c.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "web"}, d); err != nil {
		t.Fatal(err)
	}
	if w.applied("web") != "" || d.Annotations[w.deps.Settings.Keys.Applied] != record {
		t.Errorf("dry-run rolled or moved the record: applied %q, record %q (was %q)", w.applied("web"), d.Annotations[w.deps.Settings.Keys.Applied], record)
	}
	if w.metric("ripple_would_reload_total", "kind=Deployment") != 1 || w.metric("ripple_reloads_total") != 0 {
		t.Errorf("would reload %v, reloads %v; want 1, 0", w.metric("ripple_would_reload_total"), w.metric("ripple_reloads_total"))
	}
}
