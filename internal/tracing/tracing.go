// Package tracing exports one OpenTelemetry trace per change of a config
// over OTLP/HTTP, configured by OpenTelemetry's standard OTEL_* variables
// (docs/tracing.md). It is off unless an OTLP endpoint is set (On): the
// change controller then holds no tracer and spends nothing on spans.
//
// Its pure part reads what a trace is rebuilt from: a W3C traceparent
// (Parent, the tracing.k8s.io/traceparent annotation a tenant puts on a
// config) and the ids a ConfigRollout's status keeps (Rebuild), so that
// a restart or a failover mid-change goes on with the same trace.
package tracing

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/ripple-dev/ripple/internal/version"
)

// Annotation is KEP-5915's annotation: the W3C traceparent of the change
// that wrote the object (a CI run's, say). Ripple links a change's root
// span to it.
const Annotation = "tracing.k8s.io/traceparent"

// The variables that turn tracing on (On).
const (
	EnvEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	EnvExporter       = "OTEL_TRACES_EXPORTER"
	EnvSDKDisabled    = "OTEL_SDK_DISABLED"
)

// On reports whether the environment lookup reads turns tracing on: an
// OTLP endpoint is set, or OTEL_TRACES_EXPORTER is otlp (the SDK's
// default endpoint, localhost:4318); OTEL_TRACES_EXPORTER=none and
// OTEL_SDK_DISABLED=true turn it off. Another exporter is an error:
// Ripple exports over OTLP/HTTP only.
func On(lookup func(string) string) (bool, error) {
	exporter := strings.TrimSpace(lookup(EnvExporter))
	if strings.EqualFold(strings.TrimSpace(lookup(EnvSDKDisabled)), "true") {
		return false, nil
	}
	switch exporter {
	case "none":
		return false, nil
	case "otlp":
		return true, nil
	case "":
		return strings.TrimSpace(lookup(EnvEndpoint)) != "" || strings.TrimSpace(lookup(EnvTracesEndpoint)) != "", nil
	}
	return false, fmt.Errorf("$%s: %q is not an exporter Ripple has; use otlp (OTLP/HTTP) or none", EnvExporter, exporter)
}

// ShutdownTimeout bounds the flush of the spans not yet exported at a
// clean shutdown.
const ShutdownTimeout = 5 * time.Second

// Provider is the tracer provider of a Ripple that exports traces.
type Provider struct {
	tp *sdktrace.TracerProvider
}

// Start is the provider that exports over OTLP/HTTP as the OTEL_*
// variables say (endpoint, headers, TLS, timeouts, batching); the
// service is named ripple unless OTEL_SERVICE_NAME or
// OTEL_RESOURCE_ATTRIBUTES name it.
func Start(ctx context.Context) (*Provider, error) {
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("the OTLP trace exporter: %w", err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "ripple"), attribute.String("service.version", version.Version)),
		resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("the trace resource ($OTEL_RESOURCE_ATTRIBUTES): %w", err)
	}
	return &Provider{tp: sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))}, nil
}

// Tracer is the change controller's tracer; nil for a nil provider
// (tracing off).
func (p *Provider) Tracer() trace.Tracer {
	if p == nil {
		return nil
	}
	return p.tp.Tracer("github.com/ripple-dev/ripple/internal/change")
}

// Shutdown exports the spans still queued and stops the exporter, within
// ShutdownTimeout: a collector that does not answer delays no exit longer.
func (p *Provider) Shutdown(ctx context.Context) error {
	if p == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ShutdownTimeout)
	defer cancel()
	return p.tp.Shutdown(ctx)
}

// maxTraceparent bounds the annotation read: a later version may add
// fields, but no traceparent needs more.
const maxTraceparent = 256

// Parent is the span context of value, a W3C traceparent
// (version-traceid-parentid-flags, lowercase hex), as a remote parent; an
// error says what is wrong with it. Version ff and all-zero ids are
// invalid; a version above 00 may carry more fields after the flags.
func Parent(value string) (trace.SpanContext, error) {
	if len(value) > maxTraceparent {
		return trace.SpanContext{}, fmt.Errorf("longer than %d characters", maxTraceparent)
	}
	const fixed = 55 // 2 + 1 + 32 + 1 + 16 + 1 + 2
	if len(value) < fixed || (len(value) > fixed && (value[:2] == "00" || value[fixed] != '-')) {
		return trace.SpanContext{}, errors.New("not version-traceid-parentid-flags (00-<32 hex>-<16 hex>-<2 hex>)")
	}
	parts := strings.Split(value[:fixed], "-")
	if len(parts) != 4 || len(parts[0]) != 2 || len(parts[1]) != 32 || len(parts[2]) != 16 || len(parts[3]) != 2 {
		return trace.SpanContext{}, errors.New("not version-traceid-parentid-flags (00-<32 hex>-<16 hex>-<2 hex>)")
	}
	for _, p := range parts {
		if !lowerHex(p) {
			return trace.SpanContext{}, fmt.Errorf("%q is not lowercase hex", p)
		}
	}
	if parts[0] == "ff" {
		return trace.SpanContext{}, errors.New("version ff is invalid")
	}
	flags, _ := hex.DecodeString(parts[3])
	sc, ok := rebuild(parts[1], parts[2], trace.TraceFlags(flags[0])&trace.FlagsSampled)
	if !ok {
		return trace.SpanContext{}, errors.New("an all-zero trace id or parent id is invalid")
	}
	return sc, nil
}

// Rebuild is the span context of a span an earlier look (or another
// Ripple) started, from the ids a ConfigRollout keeps, as a remote,
// sampled parent; false when they are not valid ids.
func Rebuild(traceID, spanID string) (trace.SpanContext, bool) {
	if !lowerHex(traceID) || !lowerHex(spanID) {
		return trace.SpanContext{}, false
	}
	return rebuild(traceID, spanID, trace.FlagsSampled)
}

func rebuild(traceID, spanID string, flags trace.TraceFlags) (trace.SpanContext, bool) {
	tid, err := trace.TraceIDFromHex(traceID)
	if err != nil {
		return trace.SpanContext{}, false
	}
	sid, err := trace.SpanIDFromHex(spanID)
	if err != nil {
		return trace.SpanContext{}, false
	}
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: flags, Remote: true})
	return sc, sc.IsValid()
}

func lowerHex(s string) bool {
	for _, r := range s {
		if (r < '0' || r > '9') && (r < 'a' || r > 'f') {
			return false
		}
	}
	return s != ""
}
