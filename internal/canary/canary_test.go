package canary

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/ripple-dev/ripple/internal/config"
	"github.com/ripple-dev/ripple/internal/metrics"
	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/reason"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/rollout"
	"github.com/ripple-dev/ripple/internal/workload"
)

const (
	ns       = "shop"
	rippleNS = "ripple"
)

var cfg = refs.Ref{Kind: refs.ConfigMap, Name: "cfg"}

// fleet is a Fleet of Deployments a and b on cfg, whose statuses and
// gone workloads the test sets; it records what it is told and queued.
type fleet struct {
	status   map[workload.Ref]rollout.Status
	gone     map[workload.Ref]bool
	told     []plan.Notice
	enqueued []workload.Ref
}

func ref(name string) workload.Ref {
	return workload.Ref{Kind: "Deployment", Namespace: ns, Name: name}
}

func (f *fleet) Candidates(context.Context, string, refs.Ref) ([]plan.CanaryCandidate, error) {
	return []plan.CanaryCandidate{{Ref: ref("a")}, {Ref: ref("b")}}, nil
}

func (f *fleet) Status(_ context.Context, k workload.Ref) (rollout.Status, bool, error) {
	return f.status[k], f.gone[k], nil
}

func (f *fleet) Tell(_ context.Context, _ refs.Kind, _ client.Object, n plan.Notice) {
	f.told = append(f.told, n)
}

func (f *fleet) Enqueue(k workload.Ref) { f.enqueued = append(f.enqueued, k) }

// canaries are Canaries of one canary with a 10s bake, on a fake client
// that holds cfg and whose calls f intercepts.
func canaries(t *testing.T, f interceptor.Funcs, objs ...client.Object) (*Canaries, *fleet, client.Client) {
	t.Helper()
	c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithInterceptorFuncs(f).
		WithObjects(append(objs, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: cfg.Name}})...).Build()
	opts, err := config.NewOptions().Config()
	if err != nil {
		t.Fatal(err)
	}
	m, err := metrics.New(prometheus.NewRegistry(), false)
	if err != nil {
		t.Fatal(err)
	}
	fl := &fleet{status: map[workload.Ref]rollout.Status{}, gone: map[workload.Ref]bool{}}
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	cs := &Canaries{Fleet: fl, Client: c, Reader: c, Namespace: rippleNS, Settings: opts.PlanSettings(clk.Now()), Clock: clk, Metrics: m}
	return cs, fl, c
}

var ask = plan.CanaryAsk{Config: cfg, Digest: "d2", Spec: plan.CanarySpec{Count: 1, Bake: 10 * time.Second}}

// record is the change the record of cfg holds.
func record(t *testing.T, c client.Client) plan.Canary {
	t.Helper()
	cm := &corev1.ConfigMap{}
	if err := c.Get(t.Context(), types.NamespacedName{Namespace: rippleNS, Name: plan.CanaryRecordName(ns, cfg)}, cm); err != nil {
		t.Fatalf("the record: %v", err)
	}
	got, err := plan.ParseCanaryRecord(cm.Data[plan.CanaryRecordKey], ns, cfg)
	if err != nil {
		t.Fatalf("the record: %v", err)
	}
	return got
}

// A record that is not a canary record (edited, or another config's) is
// never acted on: the change starts anew and overwrites it.
func TestUnreadableRecordIsReplaced(t *testing.T) {
	bad := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: rippleNS, Name: plan.CanaryRecordName(ns, cfg)},
		Data: map[string]string{plan.CanaryRecordKey: `{"namespace":"other","config":{"kind":"ConfigMap","name":"cfg"},"phase":"Passed"}`}}
	cs, _, c := canaries(t, interceptor.Funcs{}, bad)
	got, err := cs.For(t.Context(), ref("b"), []plan.CanaryAsk{ask})
	if err != nil {
		t.Fatal(err)
	}
	if ch := got[cfg]; ch.Phase != plan.CanaryRolling || !ch.IsCanary(ref("a")) || ch.IsCanary(ref("b")) {
		t.Fatalf("change %+v, want rolling on the canary a", ch)
	}
	if r := record(t, c); r.Namespace != ns || r.Digest != "d2" || r.Phase != plan.CanaryRolling {
		t.Errorf("record %+v, want the new change of %s/cfg", r, ns)
	}
}

// A record that cannot be written is kept in memory and written by the
// next Check: the change goes on meanwhile.
func TestRecordWrittenOnTheNextCheck(t *testing.T) {
	fail := true
	cs, _, c := canaries(t, interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
		if fail {
			return apierrors.NewServiceUnavailable("etcd is down")
		}
		return c.Create(ctx, obj, opts...)
	}})
	if _, err := cs.For(t.Context(), ref("b"), []plan.CanaryAsk{ask}); err != nil {
		t.Fatal(err)
	}
	err := c.Get(t.Context(), types.NamespacedName{Namespace: rippleNS, Name: plan.CanaryRecordName(ns, cfg)}, &corev1.ConfigMap{})
	if !apierrors.IsNotFound(err) {
		t.Fatalf("the record after a failed write: %v, want none", err)
	}
	fail = false
	cs.Check(t.Context())
	if r := record(t, c); r.Phase != plan.CanaryRolling || !r.IsCanary(ref("a")) {
		t.Errorf("record %+v after the next check, want the rolling change", r)
	}
}

// A canary deleted while its change rolls halts it: the config is told
// once, with RolloutHalted, and the workloads that wait are queued.
func TestDeletedCanaryHalts(t *testing.T) {
	cs, fl, c := canaries(t, interceptor.Funcs{})
	if _, err := cs.For(t.Context(), ref("b"), []plan.CanaryAsk{ask}); err != nil {
		t.Fatal(err)
	}
	fl.gone[ref("a")] = true
	cs.Check(t.Context())
	cs.Check(t.Context())
	if len(fl.told) != 1 || fl.told[0].Reason != reason.RolloutHalted {
		t.Fatalf("told %+v, want one RolloutHalted", fl.told)
	}
	if len(fl.enqueued) != 1 || fl.enqueued[0] != ref("b") {
		t.Errorf("queued %v, want the waiting b", fl.enqueued)
	}
	if r := record(t, c); r.Phase != plan.CanaryHalted {
		t.Errorf("record phase %s, want Halted", r.Phase)
	}
}

// A halted change an operator resumes (the config's resume annotation of
// its data) passes, and the waiting workloads are queued.
func TestResumeContinuesAHaltedChange(t *testing.T) {
	cs, fl, c := canaries(t, interceptor.Funcs{})
	if _, err := cs.For(t.Context(), ref("b"), []plan.CanaryAsk{ask}); err != nil {
		t.Fatal(err)
	}
	fl.gone[ref("a")] = true
	cs.Check(t.Context())
	cm := &corev1.ConfigMap{}
	if err := c.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: cfg.Name}, cm); err != nil {
		t.Fatal(err)
	}
	cm.Annotations = map[string]string{cs.Settings.Keys.CanaryResume: plan.ShortDigest("d2")}
	if err := c.Update(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	cs.Check(t.Context())
	if len(fl.told) != 2 || fl.told[1].Reason != reason.CanaryPassed {
		t.Fatalf("told %+v, want RolloutHalted then CanaryPassed", fl.told)
	}
	if r := record(t, c); r.Phase != plan.CanaryPassed || !r.Resumed {
		t.Errorf("record %+v, want passed, resumed", r)
	}
	if len(fl.enqueued) != 2 {
		t.Errorf("queued %v, want b at the halt and again at the resume", fl.enqueued)
	}
}
