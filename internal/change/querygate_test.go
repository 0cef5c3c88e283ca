package change

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/ripple-dev/ripple/internal/canary"
	"github.com/ripple-dev/ripple/internal/metricgate"
	"github.com/ripple-dev/ripple/internal/workload"
)

// fakeProm answers every query with its value (or err), once ready is
// closed (if set), and keeps the queries it was asked.
type fakeProm struct {
	ready chan struct{}
	mu    sync.Mutex
	value model.Value
	err   error
	asked []string
}

func (f *fakeProm) Query(ctx context.Context, q string, _ time.Time, _ ...promv1.Option) (model.Value, promv1.Warnings, error) {
	if f.ready != nil {
		select {
		case <-f.ready:
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, q)
	return f.value, nil, f.err
}

func (f *fakeProm) set(v model.Value, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.value, f.err = v, err
}

func (f *fakeProm) queries() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.asked...)
}

func scalar(v float64) model.Value { return &model.Scalar{Value: model.SampleValue(v)} }

// newQueryGate is a query gate over prom evaluating q every few
// milliseconds, and the looks it asks for.
func newQueryGate(t *testing.T, prom *fakeProm, q string, pass bool) (*queryGate, <-chan Key) {
	t.Helper()
	parsed, err := metricgate.Parse(q)
	if err != nil {
		t.Fatal(err)
	}
	looks := make(chan Key, 100)
	ctx := t.Context()
	return &queryGate{
		api: prom, interval: 5 * time.Millisecond, pass: pass,
		queries: func(context.Context, string) ([]metricgate.Query, string) { return []metricgate.Query{parsed}, "" },
		look:    func(k Key) { looks <- k },
		base:    func() context.Context { return ctx },
	}, looks
}

func waitLook(t *testing.T, looks <-chan Key, key Key) {
	t.Helper()
	select {
	case k := <-looks:
		if k != key {
			t.Fatalf("looked at %v, want %v", k, key)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the gate never asked for a look")
	}
}

// The gate holds a change until its query was evaluated, passes it while
// the value meets the condition, and fails it with the value once it does
// not; every selector it sends reads the change's namespace only.
func TestQueryGateFailsOnTheValue(t *testing.T) {
	prom := &fakeProm{value: scalar(0.01), ready: make(chan struct{})}
	g, looks := newQueryGate(t, prom, `sum(rate(errors{namespace="bank",pod=~"$pods"}[1m])) < 0.05`, false)
	key := changeKey("shop", 0)
	canaries := []workload.Ref{{Kind: "Deployment", Namespace: "shop", Name: "web"}}

	if v := g.Judge(t.Context(), key, time.Time{}, canaries); v.Gate != canary.GateQuery || v.Hold == "" || v.Fail != "" {
		t.Errorf("before an evaluation: %+v, want a hold", v)
	}
	close(prom.ready)
	waitLook(t, looks, key)
	if v := g.Judge(t.Context(), key, time.Time{}, canaries); v.Hold != "" || v.Fail != "" {
		t.Errorf("with 0.01 < 0.05: %+v, want neither hold nor fail", v)
	}
	prom.set(scalar(0.2), nil)
	waitLook(t, looks, key)
	v := g.Judge(t.Context(), key, time.Time{}, canaries)
	if !strings.Contains(v.Fail, "the query gave 0.2, which is not < 0.05") {
		t.Errorf("with 0.2: %+v, want a failure naming the value", v)
	}
	for _, q := range prom.queries() {
		if !strings.Contains(q, `namespace="shop"`) || strings.Contains(q, "bank") || !strings.Contains(q, `pod=~"(?:web-[bcdfghjklmnpqrstvwxz2456789]{1,10}-[bcdfghjklmnpqrstvwxz2456789]{5})"`) {
			t.Errorf("asked %s, want it bound to namespace shop and the pods of the canary Deployment web", q)
		}
	}
	asked := len(prom.queries())
	time.Sleep(50 * time.Millisecond)
	if n := len(prom.queries()); n != asked {
		t.Errorf("the gate asked %d more queries after a failure", n-asked)
	}
}

// A query without a value holds the change, or passes it when
// inconclusive results pass; the gate ends its evaluations with the bake.
func TestQueryGateInconclusive(t *testing.T) {
	for _, pass := range []bool{false, true} {
		prom := &fakeProm{err: errors.New("connection refused")}
		g, looks := newQueryGate(t, prom, "sum(up) >= 1", pass)
		key := changeKey("shop", 0)
		canaries := []workload.Ref{{Kind: "Deployment", Namespace: "shop", Name: "web"}}
		g.Judge(t.Context(), key, time.Time{}, canaries)
		waitLook(t, looks, key)
		v := g.Judge(t.Context(), key, time.Time{}, canaries)
		if v.Fail != "" || (v.Hold == "") == !pass || (!pass && !strings.Contains(v.Hold, "connection refused")) {
			t.Errorf("pass=%t, Prometheus unreachable: %+v", pass, v)
		}
		prom.set(model.Vector{}, nil)
		waitLook(t, looks, key) // what it says changed: why there is no value
		if v := g.Judge(t.Context(), key, time.Time{}, canaries); !pass && !strings.Contains(v.Hold, "no value") {
			t.Errorf("no series: %+v, want a hold saying so", v)
		}
		g.Done(key)
		asked := len(prom.queries())
		time.Sleep(50 * time.Millisecond)
		if n := len(prom.queries()); n > asked+1 {
			t.Errorf("the gate asked %d more queries after the bake ended", n-asked)
		}
	}
}

// One namespace's bakes evaluate the queries of at most maxBaking
// canaries at once; another namespace's are not held by them.
func TestQueryGateBoundPerNamespace(t *testing.T) {
	g, _ := newQueryGate(t, &fakeProm{value: scalar(1)}, "sum(up) >= 1", false)
	many := make([]workload.Ref, maxBaking)
	for i := range many {
		many[i] = workload.Ref{Kind: "Deployment", Namespace: "tenant", Name: "w"}
	}
	g.Judge(t.Context(), changeKey("tenant", 0), time.Time{}, many)
	if v := g.Judge(t.Context(), changeKey("tenant", 1), time.Time{}, many[:1]); !strings.Contains(v.Hold, "at most 100 canaries") {
		t.Errorf("the tenant's next bake: %+v, want held by the bound", v)
	}
	if v := g.Judge(t.Context(), changeKey("shop", 0), time.Time{}, many[:1]); strings.Contains(v.Hold, "at most") {
		t.Errorf("another namespace's bake: %+v, want not held by the tenant's", v)
	}
	g.Done(changeKey("tenant", 0))
	if v := g.Judge(t.Context(), changeKey("tenant", 1), time.Time{}, many[:1]); strings.Contains(v.Hold, "at most") {
		t.Errorf("after the tenant's bake ended: %+v, want its next bake evaluated", v)
	}
}
