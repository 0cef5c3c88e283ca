package change

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ripple-dev/ripple/api/v1alpha1"
	"github.com/ripple-dev/ripple/internal/digest"
	"github.com/ripple-dev/ripple/internal/metrics"
	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/rollout"
	"github.com/ripple-dev/ripple/internal/source"
	"github.com/ripple-dev/ripple/internal/workload"
)

type fleet []Consumer

func (f *fleet) Consumers(context.Context, string, refs.Ref) ([]Consumer, error) { return *f, nil }

type world struct {
	t      *testing.T
	c      client.Client
	k      *Keeper
	clk    *clocktesting.FakeClock
	fleet  *fleet
	writes map[string]int
	reg    *prometheus.Registry
	// refuse, when set, is what the API server answers a create of a
	// ConfigRollout.
	refuse error
}

func newWorld(t *testing.T) *world {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	w := &world{t: t, clk: clocktesting.NewFakeClock(t0), fleet: &fleet{}, writes: map[string]int{}}
	w.c = fake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&v1alpha1.ConfigRollout{}).
		WithIndex(&v1alpha1.ConfigRollout{}, ConfigIndex, func(o client.Object) []string { return []string{IndexValue(o.(*v1alpha1.ConfigRollout))} }).
		WithInterceptorFuncs(interceptor.Funcs{
			Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				if _, ok := obj.(*v1alpha1.ConfigRollout); ok {
					if w.refuse != nil {
						return w.refuse
					}
					w.writes["create"]++
					// The fake client sets no creation time; the keeper orders by it.
					obj.SetCreationTimestamp(metav1.Time{Time: w.clk.Now()})
				}
				return c.Create(ctx, obj, opts...)
			},
			SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
				w.writes["status"]++
				return c.SubResource(sub).Update(ctx, obj, opts...)
			},
		}).Build()
	w.reg = prometheus.NewRegistry()
	m, err := metrics.New(w.reg, false)
	if err != nil {
		t.Fatal(err)
	}
	w.k = &Keeper{
		Client: w.c, Reader: w.c, Fleet: w.fleet, Clock: w.clk, Metrics: m,
		InScope: func(context.Context, string) (bool, error) { return true, nil },
		Kinds:   []refs.Kind{refs.ConfigMap, refs.Secret},
		Ring:    func() digest.Ring { return digest.Ring{Current: []byte("key")} },
	}
	return w
}

// setData writes the ConfigMap db with data v, as the cache keeps it.
func (w *world) setData(v string) {
	w.t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "db", UID: "uid-db"}, Data: map[string]string{"v": v}}
	obj, err := source.Transform(digest.Digester{}, cm)
	if err != nil {
		w.t.Fatal(err)
	}
	cm = obj.(*corev1.ConfigMap)
	var cur corev1.ConfigMap
	if w.c.Get(w.t.Context(), client.ObjectKeyFromObject(cm), &cur) == nil {
		cm.ResourceVersion = cur.ResourceVersion
		err = w.c.Update(w.t.Context(), cm)
	} else {
		err = w.c.Create(w.t.Context(), cm)
	}
	if err != nil {
		w.t.Fatal(err)
	}
}

func (w *world) reconcile() time.Duration {
	w.t.Helper()
	res, err := w.k.Reconcile(w.t.Context(), Key{Namespace: "shop", Config: config})
	if err != nil {
		w.t.Fatal(err)
	}
	return res.RequeueAfter
}

func (w *world) rollouts() []v1alpha1.ConfigRollout {
	w.t.Helper()
	var l v1alpha1.ConfigRolloutList
	if err := w.c.List(w.t.Context(), &l, client.InNamespace("shop")); err != nil {
		w.t.Fatal(err)
	}
	newestFirst(l.Items)
	return l.Items
}

func TestNoChangeNoObject(t *testing.T) {
	w := newWorld(t)
	w.setData("v1")
	*w.fleet = fleet{managed("a", plan.Unchanged, rollout.Complete)}
	if w.reconcile(); len(w.rollouts()) != 0 {
		t.Errorf("a config every consumer runs made %d ConfigRollouts, want none", len(w.rollouts()))
	}
}

// A create the API server refuses (no right, a quota) is told for its
// namespace with the server's message, until a create there succeeds.
func TestRefusedCreateIsTold(t *testing.T) {
	w := newWorld(t)
	w.refuse = apierrors.NewForbidden(v1alpha1.GroupVersion.WithResource("configrollouts").GroupResource(), "",
		errors.New(`User "ripple" cannot create resource "configrollouts"`))
	w.setData("v2")
	*w.fleet = fleet{managed("a", plan.Changed, rollout.Complete)}
	key := Key{Namespace: "shop", Config: config}
	var woken []refs.Ref
	w.k.Wake = func(_ context.Context, _ string, cfg refs.Ref) { woken = append(woken, cfg) }
	for range 2 { // the retry is refused as the first try was
		w.k.Notice(key)
		if _, err := w.k.Reconcile(t.Context(), key); !apierrors.IsForbidden(err) {
			t.Fatalf("reconcile: %v, want the refusal", err)
		}
		w.clk.Step(time.Minute)
	}
	if len(woken) != 1 || woken[0] != config {
		t.Errorf("woke the workloads of %v, want those of %v once: they are told of the refusal", woken, config)
	}
	if why, ok := w.k.Refused("shop"); !ok || !strings.Contains(why, `cannot create resource "configrollouts"`) {
		t.Errorf("Refused(shop) = %q, %v; want the API server's message", why, ok)
	}
	if why, ok := w.k.Refused("other"); ok {
		t.Errorf("Refused(other) = %q: no create was refused there", why)
	}
	w.refuse = nil
	w.clk.Step(time.Minute) // past the namespace's budgets
	w.k.Notice(key)
	w.reconcile()
	if why, ok := w.k.Refused("shop"); ok || len(w.rollouts()) != 1 {
		t.Errorf("after a create succeeded: Refused(shop) = %q, %v, %d ConfigRollouts; want forgotten and one made", why, ok, len(w.rollouts()))
	}
}

func TestChangeIsTrackedToPropagated(t *testing.T) {
	w := newWorld(t)
	w.setData("v2")
	*w.fleet = fleet{managed("a", plan.Changed, rollout.Complete), managed("b", plan.Changed, rollout.Complete)}
	w.k.Notice(Key{Namespace: "shop", Config: config})
	if again := w.reconcile(); again != poll {
		t.Errorf("a change in flight is looked at again after %s, want %s", again, poll)
	}
	got := w.rollouts()
	if len(got) != 1 {
		t.Fatalf("%d ConfigRollouts, want 1", len(got))
	}
	cr := got[0]
	if cr.Labels[v1alpha1.LabelConfigName] != "db" || cr.Labels[v1alpha1.LabelConfigKind] != "configmap" ||
		len(cr.OwnerReferences) != 1 || cr.OwnerReferences[0].UID != "uid-db" || cr.Spec.Revision == "" {
		t.Errorf("ConfigRollout %+v: want labelled, owned by the ConfigMap, with a revision", cr.ObjectMeta)
	}
	if cr.Status.Phase != v1alpha1.PhaseRolling || cr.Status.Counts.Pending != 2 || !cr.Status.SeenAt.Time.Equal(t0) {
		t.Errorf("status %+v", cr.Status)
	}
	if w.k.Active(Key{Namespace: "shop", Config: config}) != true {
		t.Error("the change is not active")
	}

	// Looks at a config, and so its status writes, come at most every
	// lookInterval.
	(*w.fleet)[0] = managed("a", plan.Unchanged, rollout.Progressing)
	if again := w.reconcile(); again != lookInterval || w.writes["status"] != 1 {
		t.Errorf("a look at once wrote %d statuses, again in %s; want none more, again in %s", w.writes["status"], again, lookInterval)
	}
	w.clk.Step(lookInterval)
	w.reconcile()
	if st := w.rollouts()[0].Status; st.Counts.Rolling != 1 || w.writes["status"] != 2 {
		t.Errorf("after %s: counts %+v, %d writes", lookInterval, st.Counts, w.writes["status"])
	}
	// The last completes at the next look after a write: the done status
	// is not held back.
	*w.fleet = fleet{managed("a", plan.Unchanged, rollout.Complete), managed("b", plan.Unchanged, rollout.Complete)}
	w.clk.Step(lookInterval)
	if again := w.reconcile(); again != 0 {
		t.Errorf("a propagated change is looked at again after %s", again)
	}
	st := w.rollouts()[0].Status
	if !apimeta.IsStatusConditionTrue(st.Conditions, v1alpha1.Propagated) || !st.PropagatedAt.Time.Equal(t0.Add(time.Second)) /* the API keeps seconds: 1.6 s */ {
		t.Errorf("status %+v: want Propagated at once", st)
	}
	if w.k.Active(Key{Namespace: "shop", Config: config}) {
		t.Error("a propagated change is still active")
	}
	if w.writes["create"] != 1 || w.writes["status"] != 3 {
		t.Errorf("writes %v, want 1 create and 3 status writes", w.writes)
	}
}

func TestChangeSeenByAWorkloadOnly(t *testing.T) {
	w := newWorld(t)
	w.setData("v2")
	// Nothing noticed (a change made while Ripple was down), but a
	// consumer has not applied the data.
	*w.fleet = fleet{managed("a", plan.Unchanged, rollout.Progressing)}
	if w.reconcile(); len(w.rollouts()) != 1 {
		t.Fatalf("%d ConfigRollouts, want 1", len(w.rollouts()))
	}
	// A second look makes no other.
	w.clk.Step(lookInterval)
	w.reconcile()
	if len(w.rollouts()) != 1 || w.writes["create"] != 1 {
		t.Errorf("%d ConfigRollouts after %d creates, want 1", len(w.rollouts()), w.writes["create"])
	}
}

func TestNewChangeSupersedesAndHistoryIsBounded(t *testing.T) {
	w := newWorld(t)
	w.k.History = 2
	*w.fleet = fleet{managed("a", plan.Changed, rollout.Complete)}
	for i := range 4 {
		w.clk.Step(time.Second)
		w.setData(fmt.Sprint("v", i))
		w.k.Notice(Key{Namespace: "shop", Config: config})
		w.reconcile()
	}
	got := w.rollouts()
	if len(got) != 2 {
		t.Fatalf("%d ConfigRollouts kept, want 2", len(got))
	}
	if got[0].Status.Phase != v1alpha1.PhaseRolling || got[1].Status.Phase != v1alpha1.PhaseSuperseded {
		t.Errorf("phases %s, %s; want Rolling, Superseded", got[0].Status.Phase, got[1].Status.Phase)
	}
	// Data that comes back is a new change.
	w.clk.Step(time.Second)
	w.setData("v2")
	w.k.Notice(Key{Namespace: "shop", Config: config})
	w.reconcile()
	if now := w.rollouts(); now[0].Name == got[0].Name || now[0].Name == got[1].Name {
		t.Errorf("the data coming back reused %s", now[0].Name)
	}
}

// otherChange makes, a second after the last, the ConfigRollout of
// another ConfigMap of the namespace, name, in phase.
func (w *world) otherChange(name string, phase v1alpha1.Phase) *v1alpha1.ConfigRollout {
	w.t.Helper()
	cr := &v1alpha1.ConfigRollout{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name},
		Spec: v1alpha1.ConfigRolloutSpec{Config: v1alpha1.ConfigReference{Kind: "ConfigMap", Name: name}, Revision: "r"}}
	w.clk.Step(time.Second)
	if err := w.c.Create(w.t.Context(), cr); err != nil {
		w.t.Fatal(err)
	}
	cr.Status.Phase = phase
	if err := w.c.Status().Update(w.t.Context(), cr); err != nil {
		w.t.Fatal(err)
	}
	return cr
}

func TestNamespaceBound(t *testing.T) {
	w := newWorld(t)
	w.k.PerNamespace = 3
	for i := range 5 {
		phase := v1alpha1.PhasePropagated
		if i == 0 { // the oldest is halted, the next done: the done ones go
			phase = v1alpha1.PhaseHalted
		}
		w.otherChange(fmt.Sprint("other-", i), phase)
	}
	w.clk.Step(time.Second)
	w.setData("v2")
	*w.fleet = fleet{managed("a", plan.Changed, rollout.Complete)}
	w.k.Notice(Key{Namespace: "shop", Config: config})
	w.reconcile()
	var names []string
	for _, cr := range w.rollouts() {
		names = append(names, cr.Name)
	}
	if len(names) != 3 || names[1] != "other-4" || names[2] != "other-0" {
		t.Errorf("kept %v; want the new change, other-4 (the newest done) and other-0 (in flight)", names)
	}
}

// A namespace whose bound is taken by changes in flight loses none of
// them, a halted one least of all, to a new change: the new change gets
// no ConfigRollout, and is told (Refused, which holds a canaried change
// with CanaryUnkept) and counted, until one of them ends.
func TestNamespaceFullRefusesTheNewChange(t *testing.T) {
	w := newWorld(t)
	w.k.PerNamespace = 3
	var flight []*v1alpha1.ConfigRollout
	for i, phase := range []v1alpha1.Phase{v1alpha1.PhaseHalted, v1alpha1.PhaseRolling, v1alpha1.PhaseRolling} {
		flight = append(flight, w.otherChange(fmt.Sprint("other-", i), phase))
	}
	woken := 0
	w.k.Wake = func(context.Context, string, refs.Ref) { woken++ }
	w.clk.Step(time.Second)
	w.setData("v2")
	*w.fleet = fleet{managed("a", plan.Changed, rollout.Complete)}
	key := Key{Namespace: "shop", Config: config}
	for range 2 {
		w.k.Notice(key)
		if again := w.reconcile(); again != fullRetry {
			t.Errorf("a refused change is looked at again after %s, want %s", again, fullRetry)
		}
		w.clk.Step(time.Minute)
	}
	if n := len(w.rollouts()); n != 3 {
		t.Fatalf("%d ConfigRollouts, want the 3 in flight and no new one", n)
	}
	if why, ok := w.k.Refused("shop"); !ok || !strings.Contains(why, "--config-rollouts-per-namespace") {
		t.Errorf("Refused(shop) = %q, %v; want why, naming the flag", why, ok)
	}
	if woken != 1 {
		t.Errorf("the config's workloads were woken %d times, want once: the refusal is news once", woken)
	}
	if n := refusedCount(t, w.reg, "full"); n != 2 {
		t.Errorf("ripple_config_rollouts_refused_total{why=full} = %v, want 2", n)
	}
	// A change in flight ends: the next look makes the new change's.
	flight[1].Status.Phase = v1alpha1.PhasePropagated
	if err := w.c.Status().Update(t.Context(), flight[1]); err != nil {
		t.Fatal(err)
	}
	w.k.Notice(key)
	w.reconcile()
	var names []string
	for _, cr := range w.rollouts() {
		names = append(names, cr.Name)
	}
	if _, ok := w.k.Refused("shop"); ok || len(names) != 3 || slices.Contains(names, "other-1") || !slices.Contains(names, "other-0") {
		t.Errorf("kept %v; want the new change and the two in flight, the halted other-0 among them, and the refusal forgotten", names)
	}
}

// refusedCount is ripple_config_rollouts_refused_total{why} in reg.
func refusedCount(t *testing.T, reg *prometheus.Registry, why string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			if f.GetName() == "ripple_config_rollouts_refused_total" && m.GetLabel()[0].GetValue() == why {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func TestSecretWithoutKeyHasNoObject(t *testing.T) {
	w := newWorld(t)
	w.k.Ring = func() digest.Ring { return digest.Ring{} }
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "db"}}
	if err := w.c.Create(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	*w.fleet = fleet{managed("a", plan.Changed, rollout.Complete)}
	key := Key{Namespace: "shop", Config: refs.Ref{Kind: refs.Secret, Name: "db"}}
	w.k.Notice(key)
	if _, err := w.k.Reconcile(w.t.Context(), key); err != nil {
		t.Fatal(err)
	}
	if n := len(w.rollouts()); n != 0 {
		t.Errorf("a Secret's change without a digest key made %d ConfigRollouts: its revision would be an unkeyed digest", n)
	}
}

func TestRevisions(t *testing.T) {
	ring := digest.Ring{Current: []byte("new"), Previous: []byte("old")}
	a := Revisions(ring, "shop", config, "sum")
	if len(a) != 2 || a[0] == a[1] || len(a[0]) != revisionLen {
		t.Fatalf("revisions %v", a)
	}
	if b := Revisions(ring, "dev", config, "sum"); b[0] == a[0] {
		t.Error("equal data in two namespaces has one revision")
	}
	if b := Revisions(digest.Ring{Current: []byte("old")}, "shop", config, "sum"); b[0] != a[1] {
		t.Error("the previous key's revision is not recognised")
	}
	if r := Revisions(digest.Ring{}, "shop", refs.Ref{Kind: refs.Secret, Name: "db"}, "sum"); r != nil {
		t.Errorf("a Secret without a key has revisions %v", r)
	}
	long := refs.Ref{Kind: refs.ConfigMap, Name: string(make([]byte, 0)) + fmt.Sprintf("%0253d", 0)}
	if n := Name(long, types.UID("u"), "r", "1"); len(n) > 253 {
		t.Errorf("name of %d characters", len(n))
	}
}

func metaTime(t time.Time) metav1.Time { return metav1.Time{Time: t} }

// A ConfigRollout of a kind this Ripple does not watch (another Ripple's,
// or its own from before --resources-to-ignore) is not looked at: reading
// its config would start a cache it may not list.
func TestUnwatchedKindIsLeftAlone(t *testing.T) {
	w := newWorld(t)
	w.k.Kinds = []refs.Kind{refs.Secret}
	w.setData("v2")
	*w.fleet = fleet{managed("a", plan.Changed, rollout.Complete)}
	w.k.Notice(Key{Namespace: "shop", Config: config})
	if w.reconcile(); len(w.rollouts()) != 0 {
		t.Errorf("a ConfigMap's change made %d ConfigRollouts with ConfigMaps not watched", len(w.rollouts()))
	}
}

// A ConfigRollout of an earlier config of the same name (deleted and
// made again: another UID) is not this config's, even for the same data:
// the change gets one of its own.
func TestEarlierConfigOfTheName(t *testing.T) {
	w := newWorld(t)
	w.setData("v2")
	*w.fleet = fleet{managed("a", plan.Changed, rollout.Complete)}
	w.k.Notice(Key{Namespace: "shop", Config: config})
	w.reconcile()
	var cm corev1.ConfigMap
	if err := w.c.Get(t.Context(), client.ObjectKey{Namespace: "shop", Name: "db"}, &cm); err != nil {
		t.Fatal(err)
	}
	if err := w.c.Delete(t.Context(), &cm); err != nil {
		t.Fatal(err)
	}
	cm.UID, cm.ResourceVersion = "uid-db-again", ""
	if err := w.c.Create(t.Context(), &cm); err != nil {
		t.Fatal(err)
	}
	w.clk.Step(time.Second)
	w.reconcile()
	if got := w.rollouts(); len(got) != 2 || got[0].Spec.Config.UID != "uid-db-again" {
		t.Errorf("%d ConfigRollouts, the newest of UID %q; want a new one of the config made again", len(got), got[0].Spec.Config.UID)
	}
}

// The completion of the last consumer left, seen rolling at the last
// look, is looked at at once; that of a consumer not seen to apply the
// change (pending at the last look) waits for the next look.
func TestLastCompletionIsLookedAtOnce(t *testing.T) {
	w := newWorld(t)
	w.setData("v2")
	key := Key{Namespace: "shop", Config: config}
	a, b := managed("a", plan.Unchanged, rollout.Progressing), managed("b", plan.Changed, rollout.Complete)
	*w.fleet = fleet{a, b}
	w.k.Notice(key)
	w.reconcile()
	if w.k.Completed(key, b.Ref) || w.k.Completed(key, a.Ref) {
		t.Fatal("a completion ended the wait while a pending consumer was left")
	}
	if again := w.reconcile(); again != lookInterval {
		t.Errorf("looked at again in %s, want %s", again, lookInterval)
	}
	w.clk.Step(lookInterval)
	(*w.fleet)[1] = managed("b", plan.Unchanged, rollout.Progressing)
	w.reconcile()
	if w.k.Completed(key, a.Ref) {
		t.Fatal("the first of two rolling consumers ended the wait")
	}
	if !w.k.Completed(key, b.Ref) {
		t.Fatal("the last rolling consumer's completion did not end the wait")
	}
	*w.fleet = fleet{managed("a", plan.Unchanged, rollout.Complete), managed("b", plan.Unchanged, rollout.Complete)}
	w.clk.Step(10 * time.Millisecond)
	if again := w.reconcile(); again != 0 || w.rollouts()[0].Status.Phase != v1alpha1.PhasePropagated {
		t.Errorf("after the last completion: again in %s, phase %s; want Propagated at once", again, w.rollouts()[0].Status.Phase)
	}
}

// A namespace's new ConfigRollouts come at most namespaceRate a second
// after a burst of namespaceBurst: past it the change waits, and the data
// then gets the object.
func TestNamespaceBudget(t *testing.T) {
	w := newWorld(t)
	for range namespaceBurst {
		if d := w.k.budget("shop"); d != 0 {
			t.Fatalf("within the burst: wait %s", d)
		}
	}
	if d := w.k.budget("shop"); d <= 0 || d > time.Second/namespaceRate {
		t.Errorf("past the burst: wait %s, want up to %s", d, time.Second/namespaceRate)
	}
	if d := w.k.budget("other"); d != 0 {
		t.Errorf("another namespace waits %s for the first's changes", d)
	}
	w.setData("v2")
	*w.fleet = fleet{managed("a", plan.Changed, rollout.Complete)}
	w.k.Notice(Key{Namespace: "shop", Config: config})
	if again := w.reconcile(); again <= 0 || len(w.rollouts()) != 0 {
		t.Errorf("past the budget: %d ConfigRollouts, again in %s; want none yet", len(w.rollouts()), again)
	}
	w.clk.Step(time.Second)
	w.reconcile()
	if len(w.rollouts()) != 1 {
		t.Errorf("a second later: %d ConfigRollouts, want 1", len(w.rollouts()))
	}
}

// A namespace's configs are looked at at most lookRate times a second
// together, after a burst: its 41st config waits, another namespace's
// does not.
func TestLookBudget(t *testing.T) {
	w := newWorld(t)
	for i := range lookBurst {
		if d := w.k.untilLook(Key{Namespace: "shop", Config: refs.Ref{Kind: refs.ConfigMap, Name: fmt.Sprint("c", i)}}); d != 0 {
			t.Fatalf("look %d within the burst waits %s", i, d)
		}
	}
	if d := w.k.untilLook(Key{Namespace: "shop", Config: config}); d <= 0 || d > time.Second/lookRate {
		t.Errorf("past the burst: wait %s, want up to %s", d, time.Second/lookRate)
	}
	if d := w.k.untilLook(Key{Namespace: "other", Config: config}); d != 0 {
		t.Errorf("another namespace's look waits %s", d)
	}
}

// A burst of consumer updates is looked at once, lookInterval after its
// first update (a fan-out's writes are not slowed by plans of every
// consumer as they begin), and a later update of the burst does not push
// the look back; the last consumer's completion is looked at at once.
func TestRolloutBurstLookedAtAfter(t *testing.T) {
	w := newWorld(t)
	key := Key{Namespace: "shop", Config: config}
	w.k.Rolled(key)
	if d := w.k.untilLook(key); d != lookInterval {
		t.Errorf("at the burst's first update: look in %s, want %s", d, lookInterval)
	}
	w.clk.Step(lookInterval / 2)
	w.k.Rolled(key)
	if d := w.k.untilLook(key); d != lookInterval/2 {
		t.Errorf("a later update of the burst: look in %s, want the same look, in %s", d, lookInterval/2)
	}
	w.clk.Step(lookInterval / 2)
	if d := w.k.untilLook(key); d != 0 {
		t.Errorf("after the burst: look in %s, want now", d)
	}
	w.k.Rolled(key) // within lookInterval of that look
	w.k.mu.Lock()
	w.k.left = map[Key]map[workload.Ref]bool{key: {managed("a", plan.Unchanged, rollout.Complete).Ref: true}}
	w.k.mu.Unlock()
	if !w.k.Completed(key, managed("a", plan.Unchanged, rollout.Complete).Ref) {
		t.Fatal("the last consumer's completion does not end the change")
	}
	if d := w.k.untilLook(key); d != 0 {
		t.Errorf("the last completion: look in %s, want now", d)
	}
}
