// Package metricgate is the canary's query gate: a PromQL condition that
// must hold for a change's canaries through the bake, evaluated against a
// Prometheus-compatible API with Ripple's own credentials. Since those
// credentials may read every namespace's series, a query is only taken
// from the operator (a flag, a Namespace annotation), and every selector
// of it is bound to the change's own namespace before it is sent.
package metricgate

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/ripple-dev/ripple/internal/workload"
)

// promql parses PromQL as Prometheus does by default: without its
// experimental functions and syntax.
var promql = parser.NewParser(parser.Options{})

// MaxQuery bounds a query's length: a condition an operator writes, not a
// program.
const MaxQuery = 4096

// The template variables a query may name; each is replaced before the
// query is parsed.
const (
	// VarNamespace is the change's namespace.
	VarNamespace = "$namespace"
	// VarWorkloads is a regular expression matching the canaries' names.
	VarWorkloads = "$workloads"
	// VarPods is a regular expression matching the canaries' pods' names:
	// the names each one's kind's controller gives its pods (podNames).
	VarPods = "$pods"
)

// namespaceLabel is the label every selector is bound by, as
// kube-state-metrics, cAdvisor and the Prometheus Operator's targets
// label series with the namespace of what they measure.
const namespaceLabel = "namespace"

// Query is a parsed condition: the value an expression gives must compare
// to Threshold by Op for every series it returns.
type Query struct {
	// Text is the query as written, with its template variables.
	Text string
	// value is the expression before the comparison, as the parser
	// prints it.
	value     string
	op        parser.ItemType
	threshold float64
}

// Parse reads text, a condition of the form `<expression> <op> <number>`
// with op one of <, <=, >, >=, == and !=, such as
// `sum(rate(http_requests_total{code=~"5..",pod=~"$pods"}[2m])) / sum(rate(http_requests_total{pod=~"$pods"}[2m])) < 0.05`.
// The comparison is Ripple's, not PromQL's: Ripple asks for the value and
// compares it, so that a value that fails is told, and a missing value is
// told apart from a failing one.
func Parse(text string) (Query, error) {
	text = strings.TrimSpace(text)
	switch {
	case text == "":
		return Query{}, fmt.Errorf("the query is empty")
	case len(text) > MaxQuery:
		return Query{}, fmt.Errorf("the query is %d bytes, over the bound of %d", len(text), MaxQuery)
	}
	// The template variables stand in strings (matchers' values), where
	// the parser takes them as they are.
	expr, err := promql.ParseExpr(text)
	if err != nil {
		return Query{}, fmt.Errorf("the query is not PromQL: %w", err)
	}
	cmp, ok := unparen(expr).(*parser.BinaryExpr)
	if !ok || !cmp.Op.IsComparisonOperator() || cmp.ReturnBool {
		return Query{}, fmt.Errorf("the query must be a condition, <expression> <op> <number> (op one of < <= > >= == !=, without bool), such as %s", example)
	}
	num, ok := unparen(cmp.RHS).(*parser.NumberLiteral)
	if !ok {
		return Query{}, fmt.Errorf("the query's right side must be a number, as in %s", example)
	}
	if t := cmp.LHS.Type(); t != parser.ValueTypeVector && t != parser.ValueTypeScalar {
		return Query{}, fmt.Errorf("the query's left side gives a %s; it must give an instant vector or a scalar", t)
	}
	q := Query{Text: text, value: cmp.LHS.String(), op: cmp.Op, threshold: num.Val}
	if _, err := q.Bound("default", []workload.Ref{{Kind: "Deployment", Namespace: "default", Name: "canary"}}); err != nil {
		return Query{}, err
	}
	return q, nil
}

const example = `sum(rate(http_requests_total{code=~"5..",pod=~"$pods"}[2m])) / sum(rate(http_requests_total{pod=~"$pods"}[2m])) < 0.05`

func unparen(e parser.Expr) parser.Expr {
	for {
		p, ok := e.(*parser.ParenExpr)
		if !ok {
			return e
		}
		e = p.Expr
	}
}

// Bound is q's expression for the canaries of a change in ns: its
// template variables replaced and every selector bound to ns, what Ripple
// sends.
func (q Query) Bound(ns string, canaries []workload.Ref) (string, error) {
	expr, err := promql.ParseExpr(expand(q.value, ns, canaries))
	if err != nil {
		return "", fmt.Errorf("the query for namespace %s is not PromQL: %w", ns, err)
	}
	bind := labels.MustNewMatcher(labels.MatchEqual, namespaceLabel, ns)
	parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			ms := vs.LabelMatchers[:0]
			for _, m := range vs.LabelMatchers {
				if m.Name != namespaceLabel {
					ms = append(ms, m)
				}
			}
			vs.LabelMatchers = append(ms, bind)
		}
		return nil
	})
	return expr.String(), nil
}

// expand replaces the template variables of text for the canaries of a
// change in ns. Names are DNS names: quoted for a regular expression and
// for a PromQL string, they cannot close the string they are in.
func expand(text, ns string, canaries []workload.Ref) string {
	names, pods := make([]string, len(canaries)), make([]string, len(canaries))
	for i, c := range canaries {
		names[i], pods[i] = regexp.QuoteMeta(c.Name), podNames(c)
	}
	quote := func(re string) string { return strings.ReplaceAll(re, `\`, `\\`) }
	return strings.NewReplacer(
		VarNamespace, ns,
		VarWorkloads, quote("(?:"+strings.Join(names, "|")+")"),
		VarPods, quote("(?:"+strings.Join(pods, "|")+")"),
	).Replace(text)
}

// Result is what a value says of the condition: Fail names the value
// that failed it, None says why there is no value to judge (an empty
// result, NaN).
type Result struct {
	Fail, None string
}

// Judge is q's result for v, the value of its bound expression: every
// series must meet the condition.
func (q Query) Judge(v model.Value) Result {
	var samples []*model.Sample
	switch v := v.(type) {
	case model.Vector:
		samples = v
	case *model.Scalar:
		samples = []*model.Sample{{Value: v.Value}}
	default:
		return Result{None: fmt.Sprintf("the query gave a %s, not a value", v.Type())}
	}
	if len(samples) == 0 {
		return Result{None: "the query gave no value (no series matched)"}
	}
	for _, s := range samples {
		f := float64(s.Value)
		if math.IsNaN(f) {
			return Result{None: "the query gave NaN (a ratio of no requests?)"}
		}
		if !q.holds(f) {
			of := ""
			if len(s.Metric) > 0 {
				of = " for " + clipSeries(s.Metric.String())
			}
			return Result{Fail: fmt.Sprintf("the query gave %s%s, which is not %s %s", strconv.FormatFloat(f, 'g', 6, 64), of, q.op, strconv.FormatFloat(q.threshold, 'g', -1, 64))}
		}
	}
	return Result{}
}

// maxSeries bounds a failing series' labels in a result: they are the
// tenant's to choose, and the result goes into Events, a ConfigRollout's
// status and an alert.
const maxSeries = 256

func clipSeries(s string) string {
	if len(s) <= maxSeries {
		return s
	}
	return strings.ToValidUTF8(s[:maxSeries], "") + "…}"
}

func (q Query) holds(v float64) bool {
	switch q.op {
	case parser.LSS:
		return v < q.threshold
	case parser.LTE:
		return v <= q.threshold
	case parser.GTR:
		return v > q.threshold
	case parser.GTE:
		return v >= q.threshold
	case parser.EQLC:
		return v == q.threshold
	default: // NEQ: Parse takes comparisons only
		return v != q.threshold
	}
}
