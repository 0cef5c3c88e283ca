package change

import (
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ripple-dev/ripple/api/v1alpha1"
	"github.com/ripple-dev/ripple/internal/canary"
	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/reason"
	"github.com/ripple-dev/ripple/internal/rollout"
	"github.com/ripple-dev/ripple/internal/tracing"
)

const ciTrace, ciSpan = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"

func tracer(t *testing.T) (trace.Tracer, *tracetest.SpanRecorder) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(t.Context()) })
	return tp.Tracer("test"), rec
}

func tracedConfig(annotation string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "db", Annotations: map[string]string{tracing.Annotation: annotation}}}
}

func waiting(name string, why reason.Reason) Consumer {
	c := managed(name, plan.Changed, rollout.Complete)
	c.Verdict = why
	return c
}

// spansNamed are the ended spans called name, by their workload.
func spansNamed(rec *tracetest.SpanRecorder, name string) map[string]sdktrace.ReadOnlySpan {
	out := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		if s.Name() != name {
			continue
		}
		w := ""
		for _, a := range s.Attributes() {
			if a.Key == "ripple.workload.name" {
				w = a.Value.AsString()
			}
		}
		out[w] = s
	}
	return out
}

// A change's trace, look by look: the root span when it is seen (linked
// to the config's traceparent), a wait span per wait a consumer left, a
// rollout span per consumer from when its write was seen (or its last
// wait) to its completion, each a child of the root; a Keeper that never
// saw the change (a restart) parents its spans to the root rebuilt from
// the status, and says they were resumed.
func TestTraceOfAChange(t *testing.T) {
	tr, rec := tracer(t)
	k := &Keeper{Tracer: tr}
	key := Key{Namespace: "shop", Config: config}
	cr := &v1alpha1.ConfigRollout{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "db-1"}, Status: v1alpha1.ConfigRolloutStatus{SeenAt: metav1.NewTime(t0)}}
	cr.Status.Trace = k.traceBegin(t.Context(), key, tracedConfig("00-"+ciTrace+"-"+ciSpan+"-01"), cr, t0)
	if cr.Status.Trace == nil {
		t.Fatal("no trace begun")
	}
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	looks := []struct {
		at int
		cs []Consumer
	}{
		{0, []Consumer{waiting("a", reason.SettleWindow), waiting("b", reason.ReloadDeferred), managed("c", plan.Unchanged, rollout.Complete)}},
		{2, []Consumer{managed("a", plan.Unchanged, rollout.Progressing), waiting("b", reason.ReloadDeferred), managed("c", plan.Unchanged, rollout.Complete)}},
		{5, []Consumer{managed("a", plan.Unchanged, rollout.Complete), managed("b", plan.Changed, rollout.Complete), managed("c", plan.Unchanged, rollout.Complete)}},
		{6, []Consumer{managed("a", plan.Unchanged, rollout.Complete), managed("b", plan.Unchanged, rollout.Complete), managed("c", plan.Unchanged, rollout.Complete)}},
	}
	for i, l := range looks {
		k.traceLook(t.Context(), key, cr.Name, cr.Status, l.cs, i == 0, at(l.at))
	}
	root := spansNamed(rec, "change")[""]
	if root == nil || root.Parent().IsValid() || len(root.Links()) != 1 || root.Links()[0].SpanContext.TraceID().String() != ciTrace {
		t.Fatalf("root span %v: want one, with no parent and a link to trace %s", root, ciTrace)
	}
	if root.SpanContext().TraceID().String() != cr.Status.Trace.TraceID || root.SpanContext().SpanID().String() != cr.Status.Trace.SpanID {
		t.Errorf("status.trace %+v is not the root span's %v", cr.Status.Trace, root.SpanContext())
	}
	want := map[string][2]int{"rollout/a": {2, 5}, "rollout/b": {5, 6}, "rollout/c": {0, 0}, "wait: settle window/a": {0, 2}, "wait: reload window/b": {0, 5}}
	got := 0
	for _, name := range []string{"rollout", "wait: settle window", "wait: reload window"} {
		for w, s := range spansNamed(rec, name) {
			got++
			span, ok := want[name+"/"+w]
			if !ok || !s.StartTime().Equal(at(span[0])) || !s.EndTime().Equal(at(span[1])) {
				t.Errorf("span %s of %s from %s to %s, want %v s", name, w, s.StartTime().Sub(t0), s.EndTime().Sub(t0), span)
			}
			if s.Parent().SpanID() != root.SpanContext().SpanID() || s.SpanContext().TraceID() != root.SpanContext().TraceID() {
				t.Errorf("span %s of %s is not the root's child", name, w)
			}
		}
	}
	if got != len(want) {
		t.Errorf("%d spans of consumers, want %d", got, len(want))
	}

	// Another Ripple goes on with the change: the trace is the status'.
	rec2Tracer, rec2 := tracer(t)
	other := &Keeper{Tracer: rec2Tracer}
	other.traceLook(t.Context(), key, cr.Name, cr.Status, []Consumer{managed("d", plan.Unchanged, rollout.Progressing)}, false, at(10))
	other.traceLook(t.Context(), key, cr.Name, cr.Status, []Consumer{managed("d", plan.Unchanged, rollout.Complete)}, false, at(12))
	d := spansNamed(rec2, "rollout")["d"]
	if d == nil || d.Parent().SpanID().String() != cr.Status.Trace.SpanID || d.SpanContext().TraceID().String() != cr.Status.Trace.TraceID {
		t.Fatalf("after a restart, rollout span %v: want a child of the root %+v", d, cr.Status.Trace)
	}
	resumed := false
	for _, a := range d.Attributes() {
		resumed = resumed || a.Key == "ripple.resumed" && a.Value.AsBool()
	}
	if !resumed {
		t.Error("a span begun by a Ripple that took the change over does not say it was resumed")
	}
}

// A malformed traceparent (tenant input) links nothing, and the trace
// begins all the same; with tracing off, nothing is traced.
func TestTraceMalformedAndOff(t *testing.T) {
	tr, rec := tracer(t)
	k := &Keeper{Tracer: tr}
	key := Key{Namespace: "shop", Config: config}
	cr := &v1alpha1.ConfigRollout{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "db-1"}}
	if st := k.traceBegin(t.Context(), key, tracedConfig("00-"+ciTrace+"-XYZ-01"), cr, t0); st == nil {
		t.Fatal("a malformed traceparent stopped the trace")
	}
	if spans := rec.Ended(); len(spans) != 1 || len(spans[0].Links()) != 0 {
		t.Errorf("spans %v: want the root span with no link", spans)
	}
	off := &Keeper{}
	if st := off.traceBegin(t.Context(), key, tracedConfig(""), cr, t0); st != nil {
		t.Errorf("tracing off began a trace %+v", st)
	}
	cr.Status.Trace = &v1alpha1.TraceStatus{TraceID: ciTrace, SpanID: ciSpan}
	off.traceLook(t.Context(), key, cr.Name, cr.Status, []Consumer{managed("a", plan.Unchanged, rollout.Complete)}, true, t0)
	if off.marks != nil {
		t.Error("tracing off keeps marks")
	}
}

// The bake's end: a span of the bake from its start, and a span per gate
// with its verdict, children of the bake; the gate that halted it fails.
func TestTraceCanaryBake(t *testing.T) {
	tr, rec := tracer(t)
	k := &Keeper{Tracer: tr}
	canaries := []v1alpha1.CanaryWorkload{{Kind: "Deployment", Name: "a"}}
	cr := &v1alpha1.ConfigRollout{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "db-1"}, Status: v1alpha1.ConfigRolloutStatus{
		Trace:  &v1alpha1.TraceStatus{TraceID: ciTrace, SpanID: ciSpan},
		Canary: &v1alpha1.CanaryStatus{Phase: string(canary.Halted), Gate: string(canary.GatePods), Workloads: canaries},
	}}
	baking := &v1alpha1.CanaryStatus{Phase: string(canary.Baking), Since: metav1.NewTime(t0), Workloads: canaries}
	k.traceCanary(t.Context(), cr, baking, []canary.Verdict{{Gate: canary.GatePods, Fail: "a pod restarted"}}, t0.Add(time.Minute))
	bake := spansNamed(rec, "canary bake")[""]
	if bake == nil || !bake.StartTime().Equal(t0) || bake.Parent().SpanID().String() != ciSpan || bake.Status().Description == "" {
		t.Fatalf("bake span %v: want one from the bake's start, the root's child, failed", bake)
	}
	pods, status := spansNamed(rec, "gate pods")[""], spansNamed(rec, "gate status")[""]
	if pods == nil || status == nil || pods.Parent().SpanID() != bake.SpanContext().SpanID() || pods.Status().Description == "" || status.Status().Description != "" {
		t.Errorf("gate spans pods %v, status %v: want both under the bake, pods failed", pods, status)
	}
	for _, s := range rec.Ended() {
		for _, a := range s.Attributes() {
			if a.Value.AsString() == "a pod restarted" {
				t.Errorf("span %s carries the gate's message %q", s.Name(), a.Value.AsString())
			}
		}
	}
}
