package controller

import (
	"context"
	"encoding/json"
	"maps"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ripple-dev/ripple/api/v1alpha1"
	"github.com/ripple-dev/ripple/internal/canary"
	"github.com/ripple-dev/ripple/internal/change"
	"github.com/ripple-dev/ripple/internal/digest"
	"github.com/ripple-dev/ripple/internal/gather"
	"github.com/ripple-dev/ripple/internal/notify"
	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/reason"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/source"
	"github.com/ripple-dev/ripple/internal/workload"
)

// rippleNS is Ripple's namespace in the canary tests: an earlier Ripple's
// canary records are there.
const rippleNS = "ripple"

var cfgRef = refs.Ref{Kind: refs.ConfigMap, Name: "cfg"}

// canaryWorld is a world whose changes are canaried on one Deployment
// (--canary=1, a 10s bake), with three Deployments a, b and c on the
// ConfigMap, baselined, the change controller on, and the alerts it sends.
func canaryWorld(t *testing.T, opts ...option) (*world, *[]notify.Alert) {
	t.Helper()
	w := newWorld(t, []workload.Kind{workload.Deployment}, append([]option{noSettle, withSettings(func(s *plan.Settings) {
		s.Canary = canary.Spec{Count: 1, Bake: 10 * time.Second}
	}), withChanges}, opts...)...)
	var alerts []notify.Alert
	w.deps.Alert = func(a notify.Alert) { alerts = append(alerts, a) }
	w.restartChanges()
	w.create(configMap(), deployment("a"), deployment("b"), deployment("c"))
	w.baseline("a", "b", "c")
	return w, &alerts
}

// withChanges gives the world's client what the change controller needs:
// the ConfigRollout API with its index, and configs digested as the
// cache keeps them.
func withChanges(_ *plan.Settings, b *fake.ClientBuilder) {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = v1alpha1.AddToScheme(scheme)
	digested := func(obj client.Object) client.Object {
		if cm, ok := obj.(*corev1.ConfigMap); ok && cm.Namespace == ns {
			cp := cm.DeepCopy()
			maps.DeleteFunc(cp.Annotations, func(k, _ string) bool { return strings.HasPrefix(k, "internal.ripple.dev/") })
			out, _ := source.Transform(digest.Digester{}, cp)
			cm.Annotations = out.(client.Object).GetAnnotations()
		}
		return obj
	}
	b.WithScheme(scheme).WithStatusSubresource(&v1alpha1.ConfigRollout{}).
		WithIndex(&v1alpha1.ConfigRollout{}, change.ConfigIndex, func(o client.Object) []string {
			return []string{change.IndexValue(o.(*v1alpha1.ConfigRollout))}
		}).
		WithInterceptorFuncs(interceptor.Funcs{
			Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				return c.Create(ctx, digested(obj), opts...)
			},
			Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
				return c.Update(ctx, digested(obj), opts...)
			},
		})
}

// restartChanges gives the world a new change controller, as a restart of
// Ripple does: it knows only what the ConfigRollouts (and an earlier
// Ripple's records) say.
func (w *world) restartChanges() {
	fl := &fleet{Deps: w.deps}
	r := w.recs["Deployment"]
	_ = r.start(w.t.Context(), w.queue)
	fl.add(r)
	ring := func() digest.Ring { return digest.Ring{Current: []byte("0123456789abcdef0123456789abcdef")} }
	w.keeper = &change.Keeper{Client: w.c, Reader: w.c, Fleet: fl, Tell: fl.Tell, Clock: w.clk, Metrics: w.deps.Metrics,
		Records:   &change.Records{Reader: w.c, Client: w.c, Namespace: rippleNS},
		ResumeKey: w.deps.Settings.Keys.CanaryResume, Timeout: w.deps.Settings.Rollouts.Timeout, Ring: ring,
		InScope: func(context.Context, string) (bool, error) { return true, nil }, Kinds: []refs.Kind{refs.ConfigMap}}
	w.deps.changes, w.fleet = change.Kept(w.c, ring), fl
}

// look is the change controller's look at the config, a second after the
// last, and the wake its ConfigRollout watch gives the workloads when the
// canary moved on.
func (w *world) look() {
	w.t.Helper()
	w.clk.Step(time.Second)
	before := w.canary()
	if _, err := w.keeper.Reconcile(w.t.Context(), change.Key{Namespace: ns, Config: cfgRef}); err != nil {
		w.t.Fatal(err)
	}
	if change.CanaryMoved(before, w.canary()) {
		w.fleet.Wake(w.t.Context(), ns, cfgRef)
	}
}

// canary is the canary of the config's newest ConfigRollout; nil when
// none.
func (w *world) canary() *v1alpha1.CanaryStatus {
	w.t.Helper()
	items, err := change.List(w.t.Context(), w.c, ns, cfgRef, true)
	if err != nil {
		w.t.Fatal(err)
	}
	if len(items) == 0 {
		return nil
	}
	return items[0].Status.Canary
}

// canaryPhase is the phase of the change of the config as its
// ConfigRollout says.
func (w *world) canaryPhase() canary.Phase {
	w.t.Helper()
	c := w.canary()
	if c == nil {
		w.t.Fatal("no canary on the ConfigRollout")
	}
	return canary.Phase(c.Phase)
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

// A good change: the first workload to plan it waits for its canaries;
// the change controller chooses a on the ConfigRollout and wakes the
// workloads; a rolls, b and c wait, told once; a's rollout completes and
// the bake starts; a restart in the bake keeps it (the ConfigRollout);
// when the bake ends the config is told, b and c are woken and roll.
func TestCanaryBakesThenTheRestRoll(t *testing.T) {
	w, alerts := canaryWorld(t)
	sum := w.change("Deployment", "v2")
	w.reconcile("Deployment", "b")
	if w.applied("b") != "" || w.canary() != nil {
		t.Fatal("b rolled, or a canary was chosen, before the change controller looked")
	}
	w.queue.added = nil
	w.look()
	if got := w.canaryPhase(); got != canary.Rolling {
		t.Fatalf("the canary's phase %s, want Rolling", got)
	}
	if !w.queued("a") || !w.queued("b") {
		t.Fatal("the workloads were not woken when the canary was chosen")
	}
	w.reconcile("Deployment", "b")
	if ev := w.wantEvent(w.drain(), string(reason.WaitingForCanary)); !strings.Contains(ev, `waits for its canary Deployment "a": rolling since`) {
		t.Errorf("WaitingForCanary %q does not name the canary", ev)
	}
	w.reconcile("Deployment", "b")
	if got := w.drain(); len(got) != 0 {
		t.Errorf("a second reconcile of b told %q, want nothing: the wait is told once", got)
	}
	w.reconcile("Deployment", "a")
	if w.applied("a") != sum {
		t.Fatal("the canary a did not roll")
	}
	w.look()
	if c := w.canary(); c.Phase != string(canary.Rolling) || c.Workloads[0].AppliedAt == nil {
		t.Fatalf("a in progress: canary %+v, want Rolling, a applied", c)
	}
	w.complete("a")
	w.look()
	if got := w.canaryPhase(); got != canary.Baking {
		t.Fatalf("a complete: phase %s, want Baking", got)
	}

	w.restartChanges()
	w.queue.added = nil
	w.clk.Step(4 * time.Second)
	w.reconcile("Deployment", "c")
	w.look()
	if w.applied("c") != "" || w.queued("c") {
		t.Fatal("c rolled or was queued in the bake, after a restart")
	}
	w.clk.Step(4 * time.Second)
	w.look()
	if ev := w.wantEvent(w.drain(), string(reason.CanaryPassed)); !strings.Contains(ev, `passed its canary Deployment "a" (healthy for 10s)`) {
		t.Errorf("CanaryPassed %q", ev)
	}
	if !w.queued("c") {
		t.Error("c waited and was not woken when the change passed")
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
	w.look()
	w.reconcile("Deployment", "a")
	w.reconcile("Deployment", "b")
	w.drain()
	w.look()
	d := &appsv1.Deployment{}
	if err := w.c.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "a"}, d); err != nil {
		t.Fatal(err)
	}
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 2, UpdatedReplicas: 1, UnavailableReplicas: 1,
		Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded"}}}
	if err := w.c.Status().Update(t.Context(), d); err != nil {
		t.Fatal(err)
	}
	w.look()
	if ev := w.wantEvent(w.drain(), string(reason.RolloutHalted)); !strings.Contains(ev, `halted by its canary: Deployment "a" stalled: progress deadline exceeded`) ||
		!strings.Contains(ev, "2 other workloads hold it") {
		t.Errorf("RolloutHalted on the config: %q", ev)
	}
	if got := halts(*alerts); len(got) != 1 || got[0].Kind != "ConfigMap" {
		t.Errorf("alerts of the halt %+v, want one, about the ConfigMap", got)
	}
	if got := w.metric("ripple_changes_halted_total", "kind=ConfigMap"); got != 1 {
		t.Errorf("ripple_changes_halted_total = %v, want 1", got)
	}

	w.restartChanges()
	w.look()
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
	items, err := change.List(t.Context(), w.c, ns, cfgRef, true)
	if err != nil || len(items) == 0 {
		t.Fatalf("no ConfigRollout of the change (%v)", err)
	}
	// A resume left from an earlier change of the same data (A, B, then A
	// again) names that change, or the data: it continues nothing.
	for _, leftover := range []string{change.Name(cfgRef, cm.UID, items[0].Spec.Revision, "1"), plan.ShortDigest(sum), sum} {
		cm.Annotations[w.deps.Settings.Keys.CanaryResume] = leftover
		if err := w.c.Update(t.Context(), cm); err != nil {
			t.Fatal(err)
		}
		w.look()
		if got := w.canaryPhase(); got != canary.Halted {
			t.Fatalf("the resume %q of another change continued this one: %s", leftover, got)
		}
	}
	cm.Annotations[w.deps.Settings.Keys.CanaryResume] = items[0].Name
	if err := w.c.Update(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	w.look()
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

// A change halted by an earlier Ripple, kept in its record in Ripple's
// namespace, is carried over to the change's ConfigRollout: still halted,
// nothing more rolls, and the record is deleted.
func TestCanaryRecordIsCarriedOver(t *testing.T) {
	w, _ := canaryWorld(t)
	sum := w.change("Deployment", "v2")
	rec := canary.State{Namespace: ns, Config: cfgRef, Digest: sum, Bake: 10 * time.Second, Phase: canary.Halted, Since: w.clk.Now(),
		Why:     `Deployment "a" stalled: progress deadline exceeded`,
		Members: []canary.Member{{Ref: workload.Ref{Kind: "Deployment", Namespace: ns, Name: "a"}, Applied: w.clk.Now()}}}
	data, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	w.create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: rippleNS, Name: canary.RecordName(ns, cfgRef)},
		Data: map[string]string{canary.RecordKey: string(data)}})
	w.look()
	if c := w.canary(); c == nil || c.Phase != string(canary.Halted) || c.Why != rec.Why {
		t.Fatalf("canary %+v, want the record's halt", c)
	}
	for _, n := range []string{"a", "b", "c"} {
		w.reconcile("Deployment", n)
		if w.applied(n) != "" {
			t.Errorf("%s rolled a change halted before the upgrade", n)
		}
	}
	err = w.c.Get(t.Context(), types.NamespacedName{Namespace: rippleNS, Name: canary.RecordName(ns, cfgRef)}, &corev1.ConfigMap{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("the record carried over is still there (%v)", err)
	}
}

// Without the change controller, a canaried change fails closed: no
// workload rolls it; each is told once why (CanaryUnkept, naming what is
// missing), and so is the config, once for the change, with the one
// alert. With --canary-unkept=roll it rolls as Reloader's would, with a
// Warning.
func TestCanaryWithoutConfigRollouts(t *testing.T) {
	w, alerts := canaryWorld(t)
	w.deps.changes = nil
	w.change("Deployment", "v2")
	for range 2 {
		for _, n := range []string{"a", "b", "c"} {
			w.reconcile("Deployment", n)
		}
	}
	for _, n := range []string{"a", "b", "c"} {
		if w.applied(n) != "" {
			t.Errorf("%s rolled a canaried change that no ConfigRollout can keep", n)
		}
	}
	var told []string
	for _, ev := range w.drain() {
		if strings.Fields(ev)[1] == string(reason.CanaryUnkept) {
			told = append(told, ev)
		}
	}
	if len(told) != 4 {
		t.Fatalf("CanaryUnkept Events %q, want 4: one on each of a, b and c and one on the config", told)
	}
	for _, ev := range told {
		if !strings.HasPrefix(ev, "Warning ") || !strings.Contains(ev, "--config-rollouts=false") || !strings.Contains(ev, "--canary-unkept=roll") {
			t.Errorf("%q is not a Warning naming what is missing and what to do", ev)
		}
	}
	if got := halts(*alerts); len(got) != 1 || got[0].Kind != string(refs.ConfigMap) || got[0].Level != reason.Warning {
		t.Errorf("alerts %+v, want one Warning, about the config", got)
	}

	w, _ = canaryWorld(t, withSettings(func(s *plan.Settings) { s.UnkeptRolls = true }))
	w.deps.changes = nil
	sum := w.change("Deployment", "v2")
	w.reconcile("Deployment", "b")
	if w.applied("b") != sum {
		t.Fatal("b did not roll a canaried change that no ConfigRollout can keep, with --canary-unkept=roll")
	}
	if ev := w.wantEvent(w.drain(), string(reason.InvalidAnnotation)); !strings.Contains(ev, "--config-rollouts=false") {
		t.Errorf("Warning %q does not name what is missing", ev)
	}
}

// A canaried change held because the API server does not serve
// ConfigRollouts rolls once it does, with its canary: the change
// controller started by the discoverer looks at the configs the held
// workloads saw, chooses the canary, and only it rolls first.
func TestCanaryHeldUntilConfigRolloutsAreServed(t *testing.T) {
	w, _ := canaryWorld(t)
	kept := w.deps.changes
	w.deps.changes = change.New(change.Options{On: true}, change.Env{Client: w.c}) // not started
	w.deps.changes.API()[0].Missing(nil)
	sum := w.change("Deployment", "v2")
	w.reconcile("Deployment", "a")
	w.reconcile("Deployment", "b")
	if w.applied("a") != "" || w.applied("b") != "" {
		t.Fatal("a canaried change rolled while no ConfigRollout could keep its canary")
	}
	if ev := w.drain(); len(ev) != 3 || !strings.Contains(ev[0], "does not serve ConfigRollouts") {
		t.Fatalf("Events %q, want CanaryUnkept on a, on the config and on b, naming the CRD", ev)
	}

	w.deps.changes = kept // the CRD is served: the discoverer started the change controller
	w.look()
	if got := w.canaryPhase(); got != canary.Rolling {
		t.Fatalf("the canary's phase %s, want Rolling", got)
	}
	w.reconcile("Deployment", "b")
	w.reconcile("Deployment", "a")
	if w.applied("a") != sum || w.applied("b") != "" {
		t.Errorf("a applied %q and b %q, want the canary a alone to roll %s", w.applied("a"), w.applied("b"), sum)
	}
}

// Every reconcile plans once, from complete inputs: the canary's state
// and a pending Helm release are gathered before plan.For, never asked
// for after it. A canaried change waits for its canaries, rolls its
// canary, passes; the rest then wait for their Helm release, which holds
// them, and roll once it is deployed.
func TestOnePlanPerReconcile(t *testing.T) {
	w, _ := canaryWorld(t, withSettings(func(s *plan.Settings) { s.SettleWindow = time.Second }), func(_ *plan.Settings, b *fake.ClientBuilder) {
		b.WithIndex(&corev1.Secret{}, gather.ReleaseIndex, gather.ReleaseIndexValue)
	})
	calls, reconciles := 0, 0
	planFor = func(in plan.Input) plan.Plan { calls++; return plan.For(in) }
	t.Cleanup(func() { planFor = plan.For })
	reconcile := func(name string) {
		t.Helper()
		w.reconcile("Deployment", name)
		if reconciles++; calls != reconciles {
			t.Fatalf("%d plans in %d reconciles (the last of %s)", calls, reconciles, name)
		}
	}
	record := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sh.helm.release.v1.shop.v2",
		Labels: map[string]string{"owner": "helm", "name": "shop", "version": "2", "status": "pending-upgrade"}}}
	w.create(record)
	b := &appsv1.Deployment{}
	if err := w.c.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "b"}, b); err != nil {
		t.Fatal(err)
	}
	b.Annotations["meta.helm.sh/release-name"], b.Annotations["meta.helm.sh/release-namespace"] = "shop", ns
	if err := w.c.Update(t.Context(), b); err != nil {
		t.Fatal(err)
	}

	sum := w.change("Deployment", "v2")
	reconcile("b")
	w.look()
	w.clk.Step(2 * time.Second) // past the settle window
	reconcile("a")
	if w.applied("a") != sum {
		t.Fatal("the canary a did not roll")
	}
	w.complete("a")
	w.look()
	w.clk.Step(10 * time.Second)
	w.look()
	if got := w.canaryPhase(); got != canary.Passed {
		t.Fatalf("phase %s, want Passed", got)
	}
	reconcile("b")
	if w.applied("b") != "" {
		t.Fatal("b rolled while its Helm release was pending")
	}
	record.Labels["status"] = "deployed"
	if err := w.c.Update(t.Context(), record); err != nil {
		t.Fatal(err)
	}
	reconcile("b")
	reconcile("c")
	if w.applied("b") != sum || w.applied("c") != sum {
		t.Error("b and c did not roll once the canary passed and the release was deployed")
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

// fakeGate is a gate beside the status whose verdict the test sets; it
// records whom it judged and which changes it was told had ended.
type fakeGate struct {
	verdict canary.Verdict
	judged  [][]workload.Ref
	done    []change.Key
}

func (g *fakeGate) Judge(_ context.Context, _ change.Key, _ time.Time, canaries []workload.Ref) canary.Verdict {
	g.judged = append(g.judged, canaries)
	return g.verdict
}

func (g *fakeGate) Done(key change.Key) { g.done = append(g.done, key) }

// The change controller runs the gates while a change bakes: from the
// look that starts the bake (the pod gate's watch starts then), not
// before; a gate's failure halts the change and is told naming the gate,
// and the gates are told the bake ended.
func TestCanaryGatesJudgeTheBake(t *testing.T) {
	w, _ := canaryWorld(t)
	g := &fakeGate{}
	w.keeper.Gates = []change.Gate{g}
	w.change("Deployment", "v2")
	w.look()
	w.reconcile("Deployment", "a")
	w.look()
	if len(g.judged) != 0 {
		t.Fatalf("the gate judged a rolling change: %v", g.judged)
	}
	w.complete(w.canary().Workloads[0].Name)
	w.look()
	if w.canaryPhase() != canary.Baking || len(g.judged) != 1 || len(g.judged[0]) != 1 || g.judged[0][0].Name != "a" {
		t.Fatalf("the bake started (%s): the gate judged %v, want a, once", w.canaryPhase(), g.judged)
	}
	g.verdict = canary.Verdict{Gate: canary.GatePods, Fail: `Deployment "a": pod a-1 container app restarted (OOMKilled, exit code 137)`}
	w.look()
	if w.canaryPhase() != canary.Halted || w.canary().Gate != "pods" {
		t.Fatalf("the gate failed: canary %+v, want halted by the pods gate", w.canary())
	}
	if ev := w.wantEvent(w.drain(), string(reason.RolloutHalted)); !strings.Contains(ev, "the pods gate: Deployment \"a\": pod a-1 container app restarted (OOMKilled") {
		t.Errorf("RolloutHalted %q does not name the gate and the pod", ev)
	}
	if len(g.done) == 0 {
		t.Error("the gate was not told the bake ended")
	}
}
