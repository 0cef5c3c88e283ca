package change

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/ripple-dev/ripple/internal/canary"
	"github.com/ripple-dev/ripple/internal/metricgate"
	"github.com/ripple-dev/ripple/internal/workload"
)

// queryGate is the canary's query gate (Gate): while a change
// bakes, its queries (the cluster's, and its Namespace's) are evaluated
// every interval for its canaries, bound to its namespace, and the first
// value that fails a condition fails it. A query that gives no value
// (Prometheus unreachable, no series) is inconclusive: it holds the
// change, or passes it with pass set.
type queryGate struct {
	api metricgate.Querier
	// queries are the conditions for a change in ns; hold says why they
	// cannot be told (the Namespace's is invalid).
	queries  func(ctx context.Context, ns string) (qs []metricgate.Query, hold string)
	interval time.Duration
	pass     bool
	// look queues a change whose query failed; base is the change
	// controller's context, which every evaluation ends with.
	look func(Key)
	base func() context.Context

	runs bakes[queryRun]
}

// queryRun is the evaluations of one baking change's queries: the first
// failure, and the last evaluation's lack of a value.
type queryRun struct {
	mu           sync.Mutex
	judged       bool
	fail, unsure string
}

// Judge starts evaluating key's queries, once, and returns what they
// said since.
func (g *queryGate) Judge(ctx context.Context, key Key, _ time.Time, canaries []workload.Ref) canary.Verdict {
	base := g.base()
	if base == nil {
		return canary.Verdict{Gate: canary.GateQuery, Hold: "the change controller has not started"}
	}
	qs, hold := g.queries(ctx, key.Namespace)
	switch {
	case hold != "":
		return canary.Verdict{Gate: canary.GateQuery, Hold: hold}
	case len(qs) == 0:
		return canary.Verdict{Gate: canary.GateQuery} // no query for this namespace
	}
	r, rctx, busy := g.runs.start(base, key, len(canaries), "the query gate evaluates the queries of")
	if busy != "" {
		return canary.Verdict{Gate: canary.GateQuery, Hold: busy}
	}
	if rctx != nil { // a new run
		go g.run(ctrl.LoggerInto(rctx, ctrl.LoggerFrom(ctx)), key, r, qs, slices.Clone(canaries))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	v := canary.Verdict{Gate: canary.GateQuery, Fail: r.fail}
	switch {
	case !r.judged:
		v.Hold = "its queries have not been evaluated yet"
	case r.unsure != "" && !g.pass:
		v.Hold = "inconclusive: " + r.unsure
	}
	return v
}

// Done ends the evaluations of key's change: its bake ended, or it is
// gone.
func (g *queryGate) Done(key Key) { g.runs.done(key) }

// run evaluates qs for the canaries of key's change every interval
// until ctx ends or one fails; each evaluation that changes what the gate
// says queues the change.
func (g *queryGate) run(ctx context.Context, key Key, r *queryRun, qs []metricgate.Query, canaries []workload.Ref) {
	t := time.NewTicker(g.interval)
	defer t.Stop()
	for {
		fail, unsure := g.evaluate(ctx, key.Namespace, qs, canaries)
		if ctx.Err() != nil {
			return
		}
		r.mu.Lock()
		changed := !r.judged || r.unsure != unsure || fail != ""
		r.judged, r.fail, r.unsure = true, fail, unsure
		r.mu.Unlock()
		if changed {
			g.look(key)
		}
		if fail != "" {
			return // the change halts: nothing more to evaluate
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// evaluate asks each of qs, bound to ns and the canaries (their names and
// kinds), once: the first failure, else why some gave no value.
func (g *queryGate) evaluate(ctx context.Context, ns string, qs []metricgate.Query, canaries []workload.Ref) (fail, unsure string) {
	var none []string
	for _, q := range qs {
		bound, err := q.Bound(ns, canaries)
		if err != nil {
			none = append(none, err.Error())
			continue
		}
		qctx, cancel := context.WithTimeout(ctx, min(g.interval, queryTimeout))
		v, _, err := g.api.Query(qctx, bound, time.Time{}) // at the server's time: no skew between the two clocks
		cancel()
		if err != nil {
			ctrl.LoggerFrom(ctx).Info("a canary query failed", "namespace", ns, "query", bound, "error", err.Error())
			none = append(none, fmt.Sprintf("%s: %v", shortQuery(q.Text), err))
			continue
		}
		res := q.Judge(v)
		if res.Fail != "" {
			return fmt.Sprintf("%s: %s", shortQuery(q.Text), res.Fail), ""
		}
		if res.None != "" {
			none = append(none, fmt.Sprintf("%s: %s", shortQuery(q.Text), res.None))
		}
	}
	return "", strings.Join(none, "; ")
}

// queryTimeout bounds one evaluation: a slow Prometheus is inconclusive,
// not a stuck gate.
const queryTimeout = 10 * time.Second

// shortQuery is a query as an Event and a status name it: its start,
// where a status keeps 1,024 bytes of why a change halted.
func shortQuery(text string) string {
	const most = 160
	if len(text) <= most {
		return text
	}
	return text[:most] + "…"
}
