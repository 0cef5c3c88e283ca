package change

import (
	"context"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/api/v1alpha1"
	"github.com/ripple-dev/ripple/internal/canary"
	"github.com/ripple-dev/ripple/internal/reason"
	"github.com/ripple-dev/ripple/internal/tracing"
	"github.com/ripple-dev/ripple/internal/workload"
)

// A change's trace (docs/tracing.md) outlives the process that began it:
// a span is exported when it ends, so a span open for the minutes a change
// takes would be lost to a kill or a failover. Every span here is made
// whole at the look that sees it end, with the start a look saw, and
// ended at once: the root span ("change") when the change is first seen,
// its ids kept on the ConfigRollout's status.trace; the others
// (each consumer's rollout and waits, the canary, its bake and the
// gates' verdicts) parented to the root span rebuilt from those ids
// (tracing.Rebuild), whichever Ripple looks. What a process keeps is only
// when it saw each consumer's rollout and wait begin (traceMarks); another
// process begins them at its first look, and says so (ripple.resumed).
//
// Spans carry what the Events show already: names, namespaces, kinds,
// states, reasons and counts; never data, digests or messages.

// traceMarks are what a process saw of one change's consumers.
type traceMarks struct {
	// name is the ConfigRollout they are of.
	name string
	// resumed is set when this process took the change over from another
	// (or from before a restart): its starts are its first look's.
	resumed   bool
	consumers map[workload.Ref]*traceMark
}

type traceMark struct {
	// wait is the wait it stands in since waitSince (none: "").
	wait      reason.Reason
	waitSince time.Time
	// last is the last look that saw it before its rollout; rolling when
	// one first saw it rolling: its write made.
	last, rolling time.Time
	// ended is set once its rollout span is exported.
	ended bool
}

// waitNames name the waits a consumer's span tells, by its reason.
var waitNames = map[reason.Reason]string{
	reason.SettleWindow: "settle window", reason.ReloadPending: "approval", reason.ReloadDeferred: "reload window",
	reason.WaitingForCanary: "canary", reason.ReloadHeld: "storm hold", reason.RolloutQueued: "rollout slot",
	reason.CanaryUnkept: "canary unkept", reason.RolloutHalted: "halted",
}

// traceBegin exports the root span of key's change cr, from when it was
// seen to now, linked to the traceparent annotation of cfg when it is
// valid (a malformed one, tenant input, is logged and ignored); nil when
// tracing is off or the span is not sampled.
func (k *Keeper) traceBegin(ctx context.Context, key Key, cfg client.Object, cr *v1alpha1.ConfigRollout, now time.Time) *v1alpha1.TraceStatus {
	if k.Tracer == nil {
		return nil
	}
	start := cr.Status.SeenAt.Time
	if start.IsZero() || start.After(now) {
		start = now
	}
	opts := []trace.SpanStartOption{trace.WithNewRoot(), trace.WithTimestamp(start), trace.WithAttributes(
		attribute.String("k8s.namespace.name", key.Namespace), attribute.String("ripple.config.kind", string(key.Config.Kind)),
		attribute.String("ripple.config.name", key.Config.Name), attribute.String("ripple.configrollout", cr.Name))}
	if value, ok := cfg.GetAnnotations()[tracing.Annotation]; ok {
		if sc, err := tracing.Parent(value); err != nil {
			ctrl.LoggerFrom(ctx).Info("ignoring the config's malformed trace annotation", "annotation", tracing.Annotation, "error", err.Error())
		} else {
			opts = append(opts, trace.WithLinks(trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{attribute.String("ripple.link", tracing.Annotation)}}))
		}
	}
	_, sp := k.Tracer.Start(ctx, "change", opts...)
	sp.End(trace.WithTimestamp(now))
	sc := sp.SpanContext()
	if !sc.IsValid() || !sc.IsSampled() {
		return nil
	}
	return &v1alpha1.TraceStatus{TraceID: sc.TraceID().String(), SpanID: sc.SpanID().String()}
}

// traceSpan exports a span of the trace parent names, from start to end;
// a failure (not empty) is its error status. It returns the span's context,
// the parent of what it holds.
func (k *Keeper) traceSpan(ctx context.Context, parent trace.SpanContext, name string, start, end time.Time, failure string, attrs ...attribute.KeyValue) trace.SpanContext {
	if start.After(end) {
		start = end
	}
	_, sp := k.Tracer.Start(trace.ContextWithRemoteSpanContext(ctx, parent), name, trace.WithTimestamp(start), trace.WithAttributes(attrs...))
	if failure != "" {
		sp.SetStatus(codes.Error, failure)
	}
	sp.End(trace.WithTimestamp(end))
	return sp.SpanContext()
}

// root is the root span of the change whose status is st, rebuilt from
// the ids it keeps; false when it has none (tracing was off when it was
// seen) or tracing is off.
func (k *Keeper) root(st v1alpha1.ConfigRolloutStatus) (trace.SpanContext, bool) {
	if k.Tracer == nil || st.Trace == nil {
		return trace.SpanContext{}, false
	}
	return tracing.Rebuild(st.Trace.TraceID, st.Trace.SpanID)
}

// traceLook exports the spans of key's change cr (status st) that its
// consumers, read at now, ended since the last look: a wait left, a
// rollout complete or stalled. first is set on the look that began the
// trace: a consumer that completed before it rolled this change.
func (k *Keeper) traceLook(ctx context.Context, key Key, name string, st v1alpha1.ConfigRolloutStatus, cs []Consumer, first bool, now time.Time) {
	parent, ok := k.root(st)
	if !ok {
		return
	}
	k.traceMu.Lock()
	defer k.traceMu.Unlock()
	ms := k.marks[key]
	if ms == nil || ms.name != name {
		if k.marks == nil {
			k.marks = map[Key]*traceMarks{}
		}
		ms = &traceMarks{name: name, resumed: !first, consumers: map[workload.Ref]*traceMark{}}
		k.marks[key] = ms
	}
	for _, c := range cs {
		s, why, ok := State(c, st.SeenAt.Time)
		if !ok || !rolled(s) {
			continue
		}
		m := ms.consumers[c.Ref]
		if m == nil {
			m = &traceMark{}
			ms.consumers[c.Ref] = m
		}
		k.traceConsumer(ctx, parent, ms, c.Ref, m, s, reason.Reason(why), st.SeenAt.Time, first, now)
	}
	if Done(st) {
		for ref, m := range ms.consumers {
			k.endWait(ctx, parent, ms, ref, m, now)
		}
		delete(k.marks, key)
	}
}

// rolled reports whether a consumer in state s is one Ripple rolls.
func rolled(s v1alpha1.ConsumerState) bool {
	return s != v1alpha1.ConsumerStale && s != v1alpha1.ConsumerNotifyOnly && s != v1alpha1.ConsumerExcluded
}

// traceConsumer moves consumer ref's mark m on to state s (reason why)
// seen at now, exporting the wait or the rollout it ended; k.traceMu is
// held.
func (k *Keeper) traceConsumer(ctx context.Context, parent trace.SpanContext, ms *traceMarks, ref workload.Ref, m *traceMark, s v1alpha1.ConsumerState, why reason.Reason, seen time.Time, first bool, now time.Time) {
	if _, waits := waitNames[why]; waits && (s == v1alpha1.ConsumerWaiting || s == v1alpha1.ConsumerPending || s == v1alpha1.ConsumerHalted) {
		if m.wait != why {
			k.endWait(ctx, parent, ms, ref, m, now)
			m.wait, m.waitSince = why, now
		}
		m.last = now
		return
	}
	k.endWait(ctx, parent, ms, ref, m, now)
	switch s {
	case v1alpha1.ConsumerRolling:
		if m.rolling.IsZero() {
			m.rolling = now
		}
	case v1alpha1.ConsumerComplete, v1alpha1.ConsumerStalled:
		if m.ended {
			return
		}
		m.ended = true
		start := m.rolling
		switch {
		case start.IsZero() && !m.last.IsZero():
			start = m.last // it rolled between two looks
		case start.IsZero() && first:
			start = seen // it rolled before the change's first look
		case start.IsZero():
			return // complete before this process looked: nothing seen of it
		}
		k.endRollout(ctx, parent, ms, ref, s, why, start, now)
	default:
		m.last = now
	}
}

// endRollout exports the rollout span of consumer ref, from start to now,
// where it stands in s (complete, or stalled: an error) for reason why.
func (k *Keeper) endRollout(ctx context.Context, parent trace.SpanContext, ms *traceMarks, ref workload.Ref, s v1alpha1.ConsumerState, why reason.Reason, start, now time.Time) {
	failure := ""
	if s == v1alpha1.ConsumerStalled {
		failure = string(why)
	}
	k.traceSpan(ctx, parent, "rollout", start, now, failure, append(workloadAttrs(ref, ms.resumed),
		attribute.String("ripple.consumer.state", string(s)), attribute.String("ripple.reason", string(why)))...)
}

// endWait exports the wait m stands in, if any, ended at now.
func (k *Keeper) endWait(ctx context.Context, parent trace.SpanContext, ms *traceMarks, ref workload.Ref, m *traceMark, now time.Time) {
	if m.wait == "" {
		return
	}
	k.traceSpan(ctx, parent, "wait: "+waitNames[m.wait], m.waitSince, now, "", append(workloadAttrs(ref, ms.resumed), attribute.String("ripple.reason", string(m.wait)))...)
	m.wait = ""
}

func workloadAttrs(ref workload.Ref, resumed bool) []attribute.KeyValue {
	out := []attribute.KeyValue{attribute.String("k8s.namespace.name", ref.Namespace), attribute.String("ripple.workload.kind", ref.Kind), attribute.String("ripple.workload.name", ref.Name)}
	if resumed {
		out = append(out, attribute.Bool("ripple.resumed", true))
	}
	return out
}

// traceCanary exports the span of the canary phase the status write of
// cr ended (stored: the canary it had): the canaries' rollout, their
// bake with each gate's last verdict, or a halt an operator resumed.
func (k *Keeper) traceCanary(ctx context.Context, cr *v1alpha1.ConfigRollout, stored *v1alpha1.CanaryStatus, verdicts []canary.Verdict, now time.Time) {
	parent, ok := k.root(cr.Status)
	was, is := stored, cr.Status.Canary
	if !ok || was == nil || is == nil || was.Phase == is.Phase {
		return
	}
	names := make([]string, 0, len(was.Workloads))
	for _, w := range was.Workloads {
		names = append(names, w.Kind+"/"+w.Name)
	}
	attrs := []attribute.KeyValue{attribute.String("k8s.namespace.name", cr.Namespace), attribute.Int("ripple.canaries", len(names)),
		attribute.String("ripple.canary.workloads", strings.Join(names, ",")), attribute.String("ripple.canary.outcome", is.Phase)}
	failure := ""
	if is.Phase == string(canary.Halted) {
		failure = "halted by the " + is.Gate + " gate"
		attrs = append(attrs, attribute.String("ripple.canary.gate", is.Gate))
	}
	switch canary.Phase(was.Phase) {
	case canary.Rolling:
		k.traceSpan(ctx, parent, "canary", was.Since.Time, now, failure, attrs...)
	case canary.Baking:
		bake := k.traceSpan(ctx, parent, "canary bake", was.Since.Time, now, failure, attrs...)
		k.traceSpan(ctx, bake, "gate status", now, now, gateFailure(is, canary.GateStatus, ""), attribute.String("ripple.gate", string(canary.GateStatus)))
		for _, v := range verdicts {
			k.traceSpan(ctx, bake, "gate "+string(v.Gate), now, now, gateFailure(is, v.Gate, v.Fail),
				attribute.String("ripple.gate", string(v.Gate)), attribute.Bool("ripple.gate.held", v.Hold != ""))
		}
	case canary.Halted:
		k.traceSpan(ctx, parent, "canary halt", was.Since.Time, now, "", append(attrs, attribute.Bool("ripple.canary.resumed", true))...)
	}
}

// gateFailure is the error status of gate's verdict span at the bake's
// end (is): the gate that halted it, by its name only.
func gateFailure(is *v1alpha1.CanaryStatus, gate canary.Gate, fail string) string {
	if fail != "" || is.Phase == string(canary.Halted) && is.Gate == string(gate) {
		return "halted the change"
	}
	return ""
}

// traceForget drops what this process saw of key's change.
func (k *Keeper) traceForget(key Key) {
	if k.Tracer == nil {
		return
	}
	k.traceMu.Lock()
	defer k.traceMu.Unlock()
	delete(k.marks, key)
}
