package e2e

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/ripple-dev/ripple/internal/explain"
	"github.com/ripple-dev/ripple/internal/tracing"
)

// A change of a ConfigMap read by 3 Deployments, with Ripple exporting to
// an OTLP/HTTP receiver of the test's: one trace, a root span ("change")
// linked to the config's tracing.k8s.io/traceparent annotation, and a
// rollout span per Deployment, children of the root; the ConfigRollout's
// status.trace names the trace, and `ripple explain` of the config and of
// a Deployment shows it.
func TestTracingOneTracePerChange(t *testing.T) {
	t.Parallel()
	cs := kubernetes.NewForConfigOrDie(kc.Config)
	ns := newNamespace(t, cs)
	rx := startOTLPReceiver(t)
	cm, err := cs.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: propagationConfig}, Data: map[string]string{"value": "v1"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		name := fmt.Sprintf("d%d", i)
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: auto(), Labels: map[string]string{"fleet": "traced"}},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](1),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
				Template: spec{configMaps: []string{propagationConfig}}.template(name),
			},
		}
		if _, err := cs.AppsV1().Deployments(ns).Create(t.Context(), d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	r := newRipple(t, ns)
	r.Env = []string{tracing.EnvEndpoint + "=" + rx.url, "OTEL_BSP_SCHEDULE_DELAY=100"}
	r.Start()
	waitChangeController(t, r)
	waitFleetBaseline(t, cs, ns, "fleet=traced", 3)

	const ciTrace, ciSpan = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
	cm.Data = map[string]string{"value": "v2"}
	cm.Annotations = map[string]string{tracing.Annotation: "00-" + ciTrace + "-" + ciSpan + "-01"}
	if _, err := cs.CoreV1().ConfigMaps(ns).Update(t.Context(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	name := waitConfigRollout(t, ns)
	if _, out, err := kubectlWait(t, ns, "--for=condition=Propagated", "configrollout/"+name, "--timeout=3m"); err != nil {
		t.Fatalf("kubectl wait: %v\n%s", err, out)
	}
	cr := getConfigRollout(t, ns, name)
	if cr.Status.Trace == nil || len(cr.Status.Trace.TraceID) != 32 {
		t.Fatalf("ConfigRollout %s: status.trace %+v, want the change's trace", name, cr.Status.Trace)
	}
	traceID, rootID := cr.Status.Trace.TraceID, cr.Status.Trace.SpanID

	var spans []*tracepb.Span
	waitFor(t, "the root span and 3 rollout spans at the receiver", func(context.Context) (bool, error) {
		spans = rx.spansOf(traceID)
		return len(named(spans, "change")) == 1 && len(named(spans, "rollout")) == 3, nil
	})
	root := named(spans, "change")[0]
	if hex.EncodeToString(root.SpanId) != rootID || len(root.ParentSpanId) != 0 {
		t.Errorf("root span %x (parent %x), want %s with no parent", root.SpanId, root.ParentSpanId, rootID)
	}
	if len(root.Links) != 1 || hex.EncodeToString(root.Links[0].TraceId) != ciTrace || hex.EncodeToString(root.Links[0].SpanId) != ciSpan {
		t.Errorf("root span's links %v, want one to %s/%s (the annotation's)", root.Links, ciTrace, ciSpan)
	}
	workloads := map[string]bool{}
	for _, s := range named(spans, "rollout") {
		if hex.EncodeToString(s.ParentSpanId) != rootID {
			t.Errorf("rollout span %x has parent %x, want the root %s", s.SpanId, s.ParentSpanId, rootID)
		}
		workloads[attr(s, "ripple.workload.name")] = true
	}
	if len(workloads) != 3 {
		t.Errorf("rollout spans of %v, want d0, d1 and d2", workloads)
	}
	if roots := rx.named("change"); len(roots) != 1 {
		t.Errorf("the receiver has %d root spans, want 1: one trace per change", len(roots))
	}

	out, err := runCommand(t, ns, "explain", "configmap/"+propagationConfig, "-o", "json")
	var ch explain.Change
	if err != nil || json.Unmarshal([]byte(out), &ch) != nil || ch.Rollout == nil || ch.Rollout.TraceID != traceID {
		t.Errorf("ripple explain of the config (%v):\n%s\nwant trace %s", err, out, traceID)
	}
	out, err = runCommand(t, ns, "explain", "deployment/d0")
	if err != nil || !strings.Contains(out, "its change's trace: "+traceID) {
		t.Errorf("ripple explain of d0 (%v):\n%s\nwant trace %s", err, out, traceID)
	}
}

// otlpReceiver is an OTLP/HTTP trace receiver on loopback: it keeps every
// span it is sent.
type otlpReceiver struct {
	url   string
	mu    sync.Mutex
	spans []*tracepb.Span
}

func startOTLPReceiver(t *testing.T) *otlpReceiver {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rx := &otlpReceiver{url: "http://" + ln.Addr().String()}
	srv := &http.Server{Handler: http.HandlerFunc(rx.serve), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return rx
}

func (rx *otlpReceiver) serve(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	var in coltracepb.ExportTraceServiceRequest
	if err != nil || req.URL.Path != "/v1/traces" || proto.Unmarshal(body, &in) != nil {
		http.Error(w, "not an OTLP/HTTP protobuf trace export", http.StatusBadRequest)
		return
	}
	rx.mu.Lock()
	for _, rs := range in.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			rx.spans = append(rx.spans, ss.Spans...)
		}
	}
	rx.mu.Unlock()
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// spansOf are the spans received of trace id (hex).
func (rx *otlpReceiver) spansOf(id string) []*tracepb.Span {
	rx.mu.Lock()
	defer rx.mu.Unlock()
	var out []*tracepb.Span
	for _, s := range rx.spans {
		if hex.EncodeToString(s.TraceId) == id {
			out = append(out, s)
		}
	}
	return out
}

// named are the spans received called name.
func (rx *otlpReceiver) named(name string) []*tracepb.Span {
	rx.mu.Lock()
	defer rx.mu.Unlock()
	return named(rx.spans, name)
}

func named(spans []*tracepb.Span, name string) []*tracepb.Span {
	var out []*tracepb.Span
	for _, s := range spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// attr is span s's string attribute key.
func attr(s *tracepb.Span, key string) string {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			return kv.GetValue().GetStringValue()
		}
	}
	return ""
}
