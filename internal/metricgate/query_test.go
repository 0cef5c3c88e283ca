package metricgate

import (
	"math"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/ripple-dev/ripple/internal/workload"
)

func TestParseTakesConditionsOnly(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{"", "empty"},
		{strings.Repeat("x", MaxQuery+1) + " < 1", "over the bound"},
		{"sum(rate(errors[1m]) <", "not PromQL"},
		{"sum(rate(errors[1m]))", "must be a condition"},
		{"sum(rate(errors[1m])) < bool 0.1", "must be a condition"},
		{"sum(rate(errors[1m])) + 1", "must be a condition"},
		{"0.1 > sum(rate(errors[1m]))", "right side must be a number"},
		{"errors[5m] < 1", "not PromQL"},
		{`errors{namespace="$namespace"} < $threshold`, "not PromQL"},
		{`errors{pod=~"$pods("} < 1`, "not PromQL"},
	} {
		if _, err := Parse(c.text); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%.60q) = %v, want an error saying %q", c.text, err, c.want)
		}
	}
	q, err := Parse(` (sum(rate(http_requests_total{code=~"5..",pod=~"$pods"}[2m])) / sum(rate(http_requests_total{pod=~"$pods"}[2m]))) <= (0.05) `)
	if err != nil {
		t.Fatal(err)
	}
	if q.op != parser.LTE || q.threshold != 0.05 {
		t.Errorf("parsed %s %v, want <= 0.05", q.op, q.threshold)
	}
}

// Every selector of a query, wherever it is (a function's argument, a
// subquery, an or), reads the change's namespace only, whatever namespace
// the query names; a label_replace can rename what it read, not read more.
func TestBoundReadsTheChangesNamespaceOnly(t *testing.T) {
	q, err := Parse(`max_over_time(sum(errors{namespace="bank"} or errors{namespace=~".+"})[5m:1m]) + count(label_replace(up{namespace!="shop"}, "namespace", "bank", "", "")) + absent(x) < 1`)
	if err != nil {
		t.Fatal(err)
	}
	got, err := q.Bound("shop", []workload.Ref{{Kind: "Deployment", Namespace: "shop", Name: "web"}})
	if err != nil {
		t.Fatal(err)
	}
	expr, err := promql.ParseExpr(got)
	if err != nil {
		t.Fatalf("bound query %q does not parse: %v", got, err)
	}
	selectors := 0
	parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		selectors++
		var ns []string
		for _, m := range vs.LabelMatchers {
			if m.Name == namespaceLabel {
				ns = append(ns, m.String())
			}
		}
		if len(ns) != 1 || ns[0] != `namespace="shop"` {
			t.Errorf("selector %s has namespace matchers %v, want only namespace=\"shop\"", vs, ns)
		}
		return nil
	})
	if selectors != 4 {
		t.Errorf("found %d selectors in %s, want 4", selectors, got)
	}
}

func TestBoundNamesTheCanaries(t *testing.T) {
	q, err := Parse(`sum(up{pod=~"$pods", deployment=~"$workloads", ns="$namespace"}) >= 1`)
	if err != nil {
		t.Fatal(err)
	}
	got, err := q.Bound("shop", []workload.Ref{{Kind: "Deployment", Namespace: "shop", Name: "web.v2"}, {Kind: "StatefulSet", Namespace: "shop", Name: "api"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`pod=~"(?:web\\.v2-[bcdfghjklmnpqrstvwxz2456789]{1,10}-[bcdfghjklmnpqrstvwxz2456789]{5}|api-[0-9]{1,10})"`, `deployment=~"(?:web\\.v2|api)"`, `ns="shop"`, `namespace="shop"`} {
		if !strings.Contains(got, want) {
			t.Errorf("bound query %s does not hold %s", got, want)
		}
	}
}

func TestJudge(t *testing.T) {
	q, err := Parse("sum(errors) < 0.05")
	if err != nil {
		t.Fatal(err)
	}
	vec := func(vs ...float64) model.Vector {
		out := model.Vector{}
		for i, v := range vs {
			out = append(out, &model.Sample{Metric: model.Metric{"pod": model.LabelValue("web-" + string(rune('a'+i)))}, Value: model.SampleValue(v)})
		}
		return out
	}
	for _, c := range []struct {
		v          model.Value
		fail, none string
	}{
		{v: vec(0.01, 0.04)},
		{v: &model.Scalar{Value: 0.01}},
		{v: vec(0.01, 0.12), fail: `the query gave 0.12 for {pod="web-b"}, which is not < 0.05`},
		{v: &model.Scalar{Value: 0.05}, fail: "the query gave 0.05, which is not < 0.05"},
		{v: vec(), none: "no value"},
		{v: vec(0.01, math.NaN()), none: "NaN"},
		{v: model.Matrix{}, none: "not a value"},
		// A tenant's 20 KB of labels: the result stays short.
		{v: model.Vector{&model.Sample{Metric: model.Metric{"pod": "web-a", "junk": model.LabelValue(strings.Repeat("x", 20<<10))}, Value: 1}},
			fail: `the query gave 1 for {junk="xxx`},
	} {
		got := q.Judge(c.v)
		if (c.fail == "") != (got.Fail == "") || !strings.Contains(got.Fail, c.fail) || (c.none == "") != (got.None == "") || !strings.Contains(got.None, c.none) {
			t.Errorf("Judge(%v) = %+v, want fail %q, none %q", c.v, got, c.fail, c.none)
		}
		if len(got.Fail) > 400 {
			t.Errorf("Judge gave a result of %d bytes: a series' labels are not bounded", len(got.Fail))
		}
	}
}
