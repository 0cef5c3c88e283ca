package change

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/api/v1alpha1"
	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/reason"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/rollout"
)

// configVersion is the ConfigMap db's resourceVersion.
func (w *world) configVersion() string {
	w.t.Helper()
	var cm corev1.ConfigMap
	if err := w.c.Get(w.t.Context(), client.ObjectKey{Namespace: "shop", Name: "db"}, &cm); err != nil {
		w.t.Fatal(err)
	}
	return cm.ResourceVersion
}

// relabel writes the ConfigMap db's labels only: a new resourceVersion,
// the same data.
func (w *world) relabel(v string) {
	w.t.Helper()
	var cm corev1.ConfigMap
	if err := w.c.Get(w.t.Context(), client.ObjectKey{Namespace: "shop", Name: "db"}, &cm); err != nil {
		w.t.Fatal(err)
	}
	cm.Labels = map[string]string{"edit": v}
	if err := w.c.Update(w.t.Context(), &cm); err != nil {
		w.t.Fatal(err)
	}
}

// countingFleet counts the looks that planned the consumers.
type countingFleet struct {
	fleet *fleet
	n     int
}

func (f *countingFleet) Consumers(ctx context.Context, ns string, cfg refs.Ref) ([]Consumer, error) {
	f.n++
	return f.fleet.Consumers(ctx, ns, cfg)
}

// The receipt: each change carries the config's resourceVersion it was
// seen at, the newest is the one labelled latest, a write that leaves the
// data raises the newest change's observed version without planning a
// consumer, and a superseded change turns Propagated with the change that
// superseded it.
func TestReceiptOnTheObjects(t *testing.T) {
	w := newWorld(t)
	cf := &countingFleet{fleet: w.fleet}
	w.k.Fleet = cf
	key := Key{Namespace: "shop", Config: config}
	*w.fleet = fleet{managed("a", plan.Changed, rollout.Complete)}
	w.setData("v1")
	first := w.configVersion()
	w.k.Notice(key)
	w.reconcile()
	w.clk.Step(time.Second)
	w.setData("v2")
	second := w.configVersion()
	w.k.Notice(key)
	w.reconcile()

	got := w.rollouts()
	if len(got) != 2 {
		t.Fatalf("%d ConfigRollouts, want 2", len(got))
	}
	newest, older := got[0], got[1]
	if newest.Spec.Config.ResourceVersion != second || newest.Labels[v1alpha1.LabelConfigVersion] != second || newest.Labels[v1alpha1.LabelLatest] != "true" {
		t.Errorf("newest change: version %q, labels %v; want version %s, labelled latest", newest.Spec.Config.ResourceVersion, newest.Labels, second)
	}
	if older.Spec.Config.ResourceVersion != first || older.Labels[v1alpha1.LabelLatest] != "" || older.Status.SupersededBy != newest.Name {
		t.Errorf("older change: version %q, labels %v, superseded by %q; want version %s, not latest, superseded by %s",
			older.Spec.Config.ResourceVersion, older.Labels, older.Status.SupersededBy, first, newest.Name)
	}

	// A label edit: the newest change carries the data at the new version,
	// with no consumer planned for it once the change is done.
	*w.fleet = fleet{managed("a", plan.Unchanged, rollout.Complete)}
	w.clk.Step(time.Second)
	w.reconcile()
	planned := cf.n
	w.relabel("x")
	third := w.configVersion()
	w.clk.Step(time.Second)
	w.reconcile()
	got = w.rollouts()
	if got[0].Status.ObservedConfigVersion != third || cf.n != planned {
		t.Errorf("after a label edit: observed %q (want %s), %d more looks planned consumers (want none)", got[0].Status.ObservedConfigVersion, third, cf.n-planned)
	}
	// The newest propagated: so did the change it superseded, for a wait
	// on it.
	if !apimeta.IsStatusConditionTrue(got[0].Status.Conditions, v1alpha1.Propagated) {
		t.Fatalf("the newest change is not Propagated: %+v", got[0].Status)
	}
	c := apimeta.FindStatusCondition(got[1].Status.Conditions, v1alpha1.Propagated)
	if c == nil || c.Status != "True" || c.Reason != v1alpha1.ReasonSuperseded || got[1].Status.Phase != v1alpha1.PhaseSuperseded {
		t.Errorf("superseded change: phase %s, Propagated %+v; want Superseded, True with reason %s", got[1].Status.Phase, c, v1alpha1.ReasonSuperseded)
	}
}

// A property of the receipt over random sequences of writes (of data, of
// the same data, of labels only), consumers rolling, completing and
// halting, looks, and restarts (kill -9: the keeper's memory lost, its
// objects kept): after every look exactly one change of the config is
// labelled latest, the newest; each change's versions name a write of
// its data; the newest change records the config's current version when
// it carries its data; and no change is Propagated before every managed
// consumer ran its data (or, superseded, the data of the change that
// superseded it).
func TestReceiptProperty(t *testing.T) {
	for seed := range uint64(50) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { receiptRun(t, seed) })
	}
}

type receiptModel struct {
	w       *world
	key     Key
	data    string
	at      map[string]string // the config's data at each resourceVersion
	phase   string            // where the consumers stand on the current data
	wasDone map[string]bool   // the changes Propagated at the last look
}

func receiptRun(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 7)) //nolint:gosec // a seeded sequence of cases, to be repeatable.
	m := &receiptModel{w: newWorld(t), key: Key{Namespace: "shop", Config: config}, at: map[string]string{}, wasDone: map[string]bool{}}
	m.write("v0")
	for range 40 {
		switch op := rng.IntN(10); {
		case op < 3:
			m.write(fmt.Sprint("v", rng.IntN(4)))
		case op == 3:
			m.w.relabel(fmt.Sprint(rng.IntN(100)))
			m.at[m.w.configVersion()] = m.data
		case op < 7:
			m.phase = []string{"pending", "rolling", "complete", "complete", "halted"}[rng.IntN(5)]
		case op == 7:
			old := m.w.k
			m.w.k = &Keeper{Client: old.Client, Reader: old.Reader, Fleet: old.Fleet, Clock: old.Clock, Metrics: old.Metrics, InScope: old.InScope, Kinds: old.Kinds, Ring: old.Ring}
		default:
			m.look()
		}
	}
}

// write writes data v to the config, as a client would: the handler
// notices a change of the data.
func (m *receiptModel) write(v string) {
	m.w.setData(v)
	m.at[m.w.configVersion()] = v
	if v != m.data {
		m.w.k.Notice(m.key)
		m.phase = "pending"
	}
	m.data = v
}

func (m *receiptModel) fleet() fleet {
	c := managed("a", plan.Unchanged, rollout.Complete)
	switch m.phase {
	case "pending":
		c = managed("a", plan.Changed, rollout.Complete)
	case "rolling":
		c = managed("a", plan.Unchanged, rollout.Progressing)
	case "halted":
		c = managed("a", plan.Changed, rollout.Complete)
		c.Verdict = reason.RolloutHalted
	}
	return fleet{c, managed("b", plan.Unchanged, rollout.Complete)}
}

func (m *receiptModel) look() {
	t := m.w.t
	*m.w.fleet = m.fleet()
	m.w.clk.Step(time.Second)
	m.w.reconcile()
	items := m.w.rollouts()
	if len(items) == 0 {
		return
	}
	latest := 0
	for _, cr := range items {
		if cr.Labels[v1alpha1.LabelLatest] == "true" {
			latest++
		}
		seen, observed := cr.Spec.Config.ResourceVersion, cr.Status.ObservedConfigVersion
		if cr.Labels[v1alpha1.LabelConfigVersion] != seen || m.at[seen] == "" || m.at[observed] != m.at[seen] {
			t.Fatalf("%s: seen at %q (label %q) with %q, observed at %q with %q: the versions name other data",
				cr.Name, seen, cr.Labels[v1alpha1.LabelConfigVersion], m.at[seen], observed, m.at[observed])
		}
	}
	newest := items[0]
	if latest != 1 || newest.Labels[v1alpha1.LabelLatest] != "true" {
		t.Fatalf("%d changes labelled latest, the newest %v; want the newest alone", latest, newest.Labels)
	}
	if m.at[newest.Spec.Config.ResourceVersion] == m.data && newest.Status.ObservedConfigVersion != m.w.configVersion() {
		t.Fatalf("the newest change carries the current data but observed %q, the config is at %q", newest.Status.ObservedConfigVersion, m.w.configVersion())
	}
	m.checkPropagated(items)
}

// checkPropagated: a change that turned Propagated at this look carries
// the current data and its consumers all completed it; a superseded one,
// only once a newer change is Propagated.
func (m *receiptModel) checkPropagated(items []v1alpha1.ConfigRollout) {
	t := m.w.t
	newerDone := false
	for i := len(items) - 1; i >= 0; i-- {
		defer func(cr v1alpha1.ConfigRollout) {
			m.wasDone[cr.Name] = apimeta.IsStatusConditionTrue(cr.Status.Conditions, v1alpha1.Propagated)
		}(items[i])
	}
	for i, cr := range items {
		c := apimeta.FindStatusCondition(cr.Status.Conditions, v1alpha1.Propagated)
		if c == nil || c.Status != "True" || m.wasDone[cr.Name] {
			newerDone = newerDone || (c != nil && c.Status == "True" && i == 0)
			continue
		}
		switch c.Reason {
		case v1alpha1.ReasonSuperseded:
			if !newerDone {
				t.Fatalf("%s turned Propagated as superseded before a newer change propagated", cr.Name)
			}
		default:
			if i != 0 || m.at[cr.Spec.Config.ResourceVersion] != m.data || m.phase != "complete" {
				t.Fatalf("%s turned Propagated with the consumers %s on data %q (it carries %q, newest: %v)", cr.Name, m.phase, m.data, m.at[cr.Spec.Config.ResourceVersion], i == 0)
			}
			newerDone = true
		}
	}
}
