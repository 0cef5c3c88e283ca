package controller

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/internal/metrics"
	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/podrestart"
	"github.com/ripple-dev/ripple/internal/rollout"
	"github.com/ripple-dev/ripple/internal/workload"
)

// lines is a Store with the admission, write and following transitions
// the reconcilers and followers apply, for the tests of the rollout line.
type lines struct {
	*Store
	limits plan.RolloutLimits
	clk    *clocktesting.FakePassiveClock
}

func newLines(t *testing.T, l plan.RolloutLimits) (*lines, *clocktesting.FakePassiveClock) {
	t.Helper()
	m, err := metrics.New(prometheus.NewRegistry(), false)
	if err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	return &lines{Store: &Store{Metrics: m}, limits: l, clk: clk}, clk
}

func (l *lines) Admit(kind string, n types.NamespacedName, seen time.Time) plan.Admission {
	k := workload.RefFor(kind, n)
	a := plan.Admission{}
	l.Store.Admit(k, l.clk.Now(), func(m plan.Memory, line plan.Line) plan.Memory {
		m, a = plan.Admit(k, m, line, l.limits, seen, l.clk.Now())
		return m
	})
	return a
}

// Start is a write that started obj's rollout at resourceVersion rv.
func (l *lines) Start(kind string, obj client.Object, rv string) {
	p := plan.Plan{Update: workload.Update{Template: &corev1.PodTemplateSpec{}}}
	w := plan.Write{StaleVersion: rv, Instant: rollout.Instant(obj)}
	l.Update(workload.RefFor(kind, client.ObjectKeyFromObject(obj)), func(m plan.Memory) plan.Memory {
		return m.Wrote(p, w, l.clk.Now())
	})
}

func (l *lines) Observe(kind string, obj client.Object) (plan.Progress, bool) {
	var p plan.Progress
	var ok bool
	o := plan.Observed{ResourceVersion: obj.GetResourceVersion(), Status: rollout.Of(obj)}
	l.Update(workload.RefFor(kind, client.ObjectKeyFromObject(obj)), func(m plan.Memory) plan.Memory {
		m, p, ok = m.Follow(o, l.limits.Timeout, l.clk.Now())
		return m
	})
	return p, ok
}

func key(ns, name string) types.NamespacedName {
	return types.NamespacedName{Namespace: ns, Name: name}
}

// dep is a Deployment at resourceVersion rv whose rollout is complete or
// in progress.
func dep(ns, name, rv string, complete bool) *appsv1.Deployment {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: rv, Generation: 2},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1)}}
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 2, UpdatedReplicas: 1, AvailableReplicas: 1}
	if complete {
		d.Status.Replicas = 1
	}
	return d
}

func TestLineTurnsInOrder(t *testing.T) {
	tr, clk := newLines(t, plan.RolloutLimits{Max: 1})
	t0 := clk.Now()
	tr.Admit("Deployment", key("ns", "x"), t0)
	tr.Start("Deployment", dep("ns", "x", "1", false), "1")
	// c was seen first, then a and b together (a before b by name); they
	// ask in another order, which does not matter.
	seen := map[string]time.Time{"c": t0, "a": t0.Add(time.Second), "b": t0.Add(time.Second)}
	for _, n := range []string{"b", "a", "c"} {
		a := tr.Admit("Deployment", key("ns", n), seen[n])
		if a.OK || !a.First || !strings.Contains(a.Why, "waiting for a rollout slot: 1 of 1 in progress") {
			t.Fatalf("%s: %+v, want a first wait for a slot, 1 of 1 in progress", n, a)
		}
	}
	for _, next := range []string{"c", "a", "b"} {
		// The rollout in progress completes: the slot goes to next.
		var done string
		for k := range tr.following {
			done = k.Name
		}
		if p, ok := tr.Observe("Deployment", dep("ns", done, "2", true)); !ok || p.State != rollout.Complete {
			t.Fatalf("Observe(%s) = %+v %v, want complete", done, p, ok)
		}
		for _, n := range []string{"b", "a", "c"} {
			if _, waits := tr.waiting[workload.RefFor("Deployment", key("ns", n))]; !waits {
				continue
			}
			if a := tr.Admit("Deployment", key("ns", n), seen[n]); a.OK != (n == next) {
				t.Fatalf("turn of %s: %s admitted = %v", next, n, a.OK)
			}
		}
		tr.Start("Deployment", dep("ns", next, "1", false), "1")
	}
}

func TestLineStaleCacheAndTimeout(t *testing.T) {
	tr, clk := newLines(t, plan.RolloutLimits{Max: 1, Timeout: time.Minute})
	tr.Start("Deployment", dep("ns", "a", "5", true), "5")
	// The cache still shows the object the write was made on: complete by
	// its status, but not yet the rollout Ripple started.
	if p, _ := tr.Observe("Deployment", dep("ns", "a", "5", true)); p.State != rollout.Progressing || p.Left != time.Minute {
		t.Fatalf("Observe at the written resourceVersion = %+v, want in progress, a minute left", p)
	}
	if a := tr.Admit("Deployment", key("ns", "b"), clk.Now()); a.OK {
		t.Fatal("b admitted while a holds the only slot")
	}
	clk.SetTime(clk.Now().Add(time.Minute))
	p, _ := tr.Observe("Deployment", dep("ns", "a", "6", false))
	if p.State != rollout.Stalled || !strings.Contains(p.Reason, "--rollout-timeout") {
		t.Fatalf("Observe after the timeout = %+v, want stalled by --rollout-timeout", p)
	}
	if a := tr.Admit("Deployment", key("ns", "b"), clk.Now()); !a.OK {
		t.Fatalf("b not admitted once a stalled: %s", a.Why)
	}
	if _, ok := tr.Observe("Deployment", dep("ns", "a", "7", false)); ok {
		t.Fatal("a stalled rollout is still followed")
	}
}

func TestLinePerNamespace(t *testing.T) {
	tr, clk := newLines(t, plan.RolloutLimits{MaxPerNamespace: 1})
	now := clk.Now()
	tr.Admit("Deployment", key("x", "a"), now)
	tr.Start("Deployment", dep("x", "a", "1", false), "1")
	if a := tr.Admit("Deployment", key("x", "b"), now); a.OK || !strings.Contains(a.Why, "in the namespace") {
		t.Fatalf("x/b: %+v, want waiting for the namespace's slot", a)
	}
	// Another namespace is not held up by x, even behind x/b in line.
	if a := tr.Admit("Deployment", key("y", "c"), now.Add(time.Second)); !a.OK {
		t.Fatalf("y/c not admitted: %s", a.Why)
	}
}

func TestLineLineForgetsLeavers(t *testing.T) {
	tr, clk := newLines(t, plan.RolloutLimits{Max: 1})
	now := clk.Now()
	tr.Admit("Deployment", key("ns", "gone"), now)
	if a := tr.Admit("Deployment", key("ns", "next"), now.Add(time.Second)); a.OK {
		t.Fatal("next admitted ahead of gone")
	}
	// gone stops asking (deleted, or no longer needs a rollout).
	clk.SetTime(now.Add(5*plan.WaitPoll + time.Second))
	if a := tr.Admit("Deployment", key("ns", "next"), now.Add(time.Second)); !a.OK {
		t.Fatalf("next still waits behind a workload that left the line: %s", a.Why)
	}
}

func TestLineUnlimitedAndInstant(t *testing.T) {
	tr, clk := newLines(t, plan.RolloutLimits{})
	for i := range 100 {
		if a := tr.Admit("Deployment", key("ns", string(rune('a'+i))), clk.Now()); !a.OK {
			t.Fatal("a cap of 0 held a rollout")
		}
	}
	tr.Start("CronJob", &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cj"}}, "1")
	if tr.Following(workload.RefFor("CronJob", key("ns", "cj"))) {
		t.Fatal("a CronJob's rollout (the Job it started) is followed")
	}
}

// A workload that joins the line after another got a slot, ahead of it by
// order, does not take that slot before the other's write starts its
// rollout: the cap holds.
func TestLineGrantHeldUntilStart(t *testing.T) {
	tr, clk := newLines(t, plan.RolloutLimits{Max: 1})
	now := clk.Now()
	if a := tr.Admit("Deployment", key("ns", "w010"), now); !a.OK {
		t.Fatalf("w010 not admitted: %s", a.Why)
	}
	if a := tr.Admit("Deployment", key("ns", "w005"), now); a.OK {
		t.Fatal("w005 took the slot w010 holds")
	}
	// w010's write met a conflict: it asks again and still holds its slot.
	if a := tr.Admit("Deployment", key("ns", "w010"), now); !a.OK {
		t.Fatalf("w010 lost its slot: %s", a.Why)
	}
	tr.Start("Deployment", dep("ns", "w010", "1", false), "1")
	if a := tr.Admit("Deployment", key("ns", "w005"), now); a.OK {
		t.Fatal("w005 admitted while w010's rollout is in progress")
	}
}

// Workers asking for the last slot at once: the store's lock gives it to
// one of them only.
func TestLineOneSlotUnderConcurrency(t *testing.T) {
	tr, clk := newLines(t, plan.RolloutLimits{Max: 1})
	var wg sync.WaitGroup
	var admitted atomic.Int32
	for i := range 50 {
		wg.Go(func() {
			if tr.Admit("Deployment", key("ns", fmt.Sprintf("w%02d", i)), clk.Now()).OK {
				admitted.Add(1)
			}
		})
	}
	wg.Wait()
	if n := admitted.Load(); n != 1 {
		t.Errorf("%d admitted at once, want 1", n)
	}
}

// A memory that holds only the pod template seen is kept apart, and loads
// back whole; one that holds more is kept whole, and returns to the small
// form when the rest is done.
func TestStoreKeepsATemplateAlone(t *testing.T) {
	m, err := metrics.New(prometheus.NewRegistry(), false)
	if err != nil {
		t.Fatal(err)
	}
	s := &Store{Metrics: m}
	k := workload.RefFor("Deployment", types.NamespacedName{Namespace: "shop", Name: "web"})
	seen := plan.TemplateSeen{Hash: "h1", Changed: time.Unix(100, 0), Version: "7"}
	s.Update(k, func(plan.Memory) plan.Memory { return plan.Memory{Template: seen} })
	if len(s.m) != 0 || s.templates[k] != seen || s.Load(k).Template != seen {
		t.Fatalf("memories %v, templates %v: want the template alone", s.m, s.templates)
	}
	s.Update(k, func(m plan.Memory) plan.Memory { return m.Notice(time.Unix(200, 0)) })
	if m := s.Load(k); len(s.templates) != 0 || m.Template != seen || m.Pending.First.IsZero() {
		t.Fatalf("memory %+v, templates %v: want the whole memory", m, s.templates)
	}
	s.Update(k, func(m plan.Memory) plan.Memory { m.Pending = plan.Pending{}; return m })
	if len(s.m) != 0 || s.templates[k] != seen {
		t.Fatalf("memories %v, templates %v: want the template alone again", s.m, s.templates)
	}
	s.Update(k, func(plan.Memory) plan.Memory { return plan.Memory{} })
	if len(s.m) != 0 || len(s.templates) != 0 {
		t.Fatalf("memories %v, templates %v: want nothing kept", s.m, s.templates)
	}
}

// The pods' memory of a restart is kept per workload and restart time: a
// newer restart starts afresh, an answer to a call of a forgotten restart
// keeps nothing, and every call dialled is counted until it is answered.
func TestStorePods(t *testing.T) {
	s := &Store{}
	k := workload.Ref{Kind: "Deployment", Namespace: ns, Name: "web"}
	at := time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)
	s.UpdatePod(k, at, "a", func(p podrestart.PodMemory) podrestart.PodMemory { return p.Refuse("invalid") })
	if got := s.Pod(k, at, "a").Refused; got != "invalid" {
		t.Errorf("refused %q, want kept", got)
	}
	if !s.Dial(k, at, "a") || s.Dial(k, at, "a") {
		t.Error("want one call of a in flight")
	}
	later := at.Add(time.Minute)
	s.UpdatePod(k, later, "b", func(p podrestart.PodMemory) podrestart.PodMemory { return p.Send(later) })
	if got := s.Pod(k, later, "a"); got != (podrestart.PodMemory{}) {
		t.Errorf("a newer restart reads %+v of the earlier one", got)
	}
	s.Answer(k, at, "a", later, "")
	s.ForgetPods(k)
	s.calls.Wait()
	if len(s.pods) != 0 || s.calling != 0 {
		t.Errorf("pods %v, calling %d after the answer and ForgetPods; want none", s.pods, s.calling)
	}
}
