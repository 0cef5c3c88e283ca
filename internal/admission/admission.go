// Package admission is Ripple's validating admission webhook: it tells,
// at the write of a ConfigMap or Secret, what the write will roll, as
// warnings that kubectl prints (apply, diff and --dry-run=server alike),
// and with a limit (the guard) denies a write that rolls more workloads
// than its writer acknowledged.
//
// The verdict is impact's, made from the replica's own caches: every
// replica answers, leader or not, and nothing is written. It is made
// from the write alone (impact.Assessor.Blind): a review can be forged
// for any namespace's Secret, so its answer must not depend on what the
// readers run, or a guess of the data could be tested against it. The webhook is
// registered with failurePolicy Ignore, so a Ripple that is down, slow
// or unsure never blocks a write; it denies only a write it has judged
// above the limit. Warnings and denials hold key names and workload names
// of the config's own namespace, never a value nor a digest.
package admission

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/time/rate"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/ripple-dev/ripple/internal/annotation"
	"github.com/ripple-dev/ripple/internal/config"
	"github.com/ripple-dev/ripple/internal/gather"
	"github.com/ripple-dev/ripple/internal/impact"
)

// Path is where the webhook is served.
const Path = "/validate-configs"

// DefaultBudget is how long a verdict may take: under the 2 s the
// webhook's registration allows, so that Ripple answers (without a
// verdict) before the API server gives up on it.
const DefaultBudget = 1500 * time.Millisecond

// Handler answers the admission reviews of ConfigMap and Secret writes.
type Handler struct {
	// Assessor makes the verdicts. It is called per review: its digester
	// is known only once the manager has started.
	Assessor func() impact.Assessor
	// InScope reports whether Ripple acts in a namespace
	// (--namespace-selector); nil is every namespace.
	InScope func(ctx context.Context, ns string) (bool, error)
	// Selector is --resource-label-selector: the configs Ripple watches
	// (nil is all).
	Selector labels.Selector
	// Keys name the acknowledgement (on the config) and a Namespace's
	// limit.
	Keys annotation.Keys
	// MaxRollouts is the guard's cluster limit; 0 is none.
	MaxRollouts int
	// NamespaceLimits reads a Namespace's own limit (with
	// --namespace-defaults, whose cache holds the Namespaces).
	NamespaceLimits bool
	// ReloadOnCreate and ReloadOnDelete: a create or delete rolls nothing
	// without them, so it gets no verdict.
	ReloadOnCreate, ReloadOnDelete bool
	Clock                          clock.PassiveClock
	// Budget bounds a verdict; zero is DefaultBudget.
	Budget time.Duration
	Log    logr.Logger

	// slots holds a token per verdict in flight (MaxInFlight), big one
	// per verdict of more than BigVerdict readers (MaxBigInFlight).
	slots, big chan struct{}
	once       sync.Once
	// sometimes thins the log lines of reviews let through unchecked:
	// whoever reaches the port chooses how many there are.
	sometimes rate.Sometimes
	// memo remembers the latest verdicts for MemoTTL: the same write
	// judged again costs nothing (memo.go).
	memo memo
}

// MaxInFlight is how many verdicts a replica makes at once; a review
// past it is let through unchecked at once. A verdict plans every reader
// of a config on every CPU, and anyone who reaches the port may send
// reviews: more at once would only wait, and take the CPUs the reloads
// need.
const MaxInFlight = 2

// BigVerdict is how many workloads may read a config before its verdict
// is a big one, and MaxBigInFlight how many big verdicts a replica makes
// at once (each also takes one of MaxInFlight); a review past it is let
// through unchecked at once. A verdict holds a few hundred bytes per
// reader and allocates about 35 KB per reader as it goes: two of a config
// read by 5,000 at once grew Ripple's memory by twice what one did.
const (
	BigVerdict     = 1000
	MaxBigInFlight = 1
)

// Webhook is h served as an admission webhook.
func (h *Handler) Webhook() *admission.Webhook {
	return &admission.Webhook{Handler: h, RecoverPanic: new(true)}
}

// Handle answers one review: allowed, with the verdict as a warning when
// a workload reads the config; denied when the guard's limit holds it.
func (h *Handler) Handle(ctx context.Context, req admission.Request) admission.Response {
	h.once.Do(func() {
		h.slots, h.big = make(chan struct{}, MaxInFlight), make(chan struct{}, MaxBigInFlight)
		h.sometimes = rate.Sometimes{First: 1, Interval: 10 * time.Second}
	})
	old, cur, err := h.decode(req)
	if err != nil { // an error answer would deny: only the guard denies
		h.logSometimes(err, "reading a config write; it is let through", req)
		return admission.Allowed("").WithWarnings("ripple: could not read this write; it is not checked")
	}
	if old == nil && cur == nil {
		return admission.Allowed("")
	}
	key := h.memo.keyOf(req.Kind.Kind, old, cur)
	r, hit := h.memo.get(key, h.Clock.Now())
	if !hit {
		var resp *admission.Response
		if r, resp = h.judge(ctx, req, old, cur); resp != nil {
			return *resp
		}
		h.memo.put(key, r, h.Clock.Now())
	}
	if !r.ok {
		return admission.Allowed("")
	}
	warnings := []string{r.line}
	limit, source, bad := h.limit(ctx, r.namespace)
	if bad != "" {
		warnings = append(warnings, bad)
	}
	if limit > 0 && r.rolls > limit {
		either := cur
		if either == nil {
			either = old
		}
		if deny := h.guard(r, either, limit, source); deny != "" {
			return admission.Denied(deny).WithWarnings(warnings...)
		}
	}
	return admission.Allowed("").WithWarnings(warnings...)
}

// judge makes the verdict of the write of cur over old, in one of the
// MaxInFlight slots and within the budget; without one (busy, an error,
// too late) it is the answer that lets the write through unchecked,
// which is not remembered.
func (h *Handler) judge(ctx context.Context, req admission.Request, old, cur client.Object) (remembered, *admission.Response) {
	unchecked := func(warning string) (remembered, *admission.Response) {
		resp := admission.Allowed("").WithWarnings(warning)
		return remembered{}, &resp
	}
	select {
	case h.slots <- struct{}{}:
		defer func() { <-h.slots }()
	default:
		h.logSometimes(errBusy, "no verdict for a config write; it is let through", req)
		return unchecked("ripple: busy checking other writes; this one is not checked")
	}
	budget := h.Budget
	if budget <= 0 {
		budget = DefaultBudget
	}
	ctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	v, ok, err := h.verdict(ctx, old, cur)
	if err == nil {
		// A verdict past its budget is one the API server may have
		// stopped waiting for.
		err = ctx.Err()
	}
	if err != nil {
		h.logSometimes(err, "no verdict for a config write; it is let through", req)
		if errors.Is(err, errBusy) {
			return unchecked("ripple: busy checking other writes; this one is not checked")
		}
		why := "could not tell what this change rolls"
		if errors.Is(err, context.DeadlineExceeded) {
			why = "could not tell in time what this change rolls"
		}
		return unchecked("ripple: " + why + "; it is not checked")
	}
	if !ok {
		return remembered{}, nil
	}
	return remembered{ok: true, line: impact.Line(v), rolls: v.Rolls, namespace: v.Namespace, kind: v.Kind}, nil
}

// errBusy is why a review past MaxInFlight gets no verdict.
var errBusy = fmt.Errorf("%d verdicts in flight already", MaxInFlight)

// logSometimes logs err for req at most once in the sometimes interval.
func (h *Handler) logSometimes(err error, msg string, req admission.Request) {
	h.sometimes.Do(func() {
		h.Log.Error(err, msg+" (repeats within 10s are not logged)", "config", klog.KRef(req.Namespace, req.Name), "kind", req.Kind.Kind)
	})
}

// decode reads the config before and after the write, nil where there
// is none or where the write gets no verdict (a create or delete that
// rolls nothing, a config Ripple does not watch).
func (h *Handler) decode(req admission.Request) (old, cur client.Object, err error) {
	var mk func() client.Object
	switch req.Kind.Kind {
	case "ConfigMap":
		mk = func() client.Object { return &corev1.ConfigMap{} }
	case "Secret":
		mk = func() client.Object { return &corev1.Secret{} }
	default:
		return nil, nil, nil // registered for configs only
	}
	oldRaw, curRaw := h.judged(req)
	if old, err = read(oldRaw, mk); err == nil {
		cur, err = read(curRaw, mk)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("decoding the %s: %w", req.Kind.Kind, err)
	}
	if (old == nil || !h.watched(old)) && (cur == nil || !h.watched(cur)) {
		return nil, nil, nil
	}
	return old, cur, nil
}

// judged are the objects of req that a verdict reads: both of an update,
// the new one of a create with --reload-on-create, the old one of a
// delete with --reload-on-delete; none otherwise.
func (h *Handler) judged(req admission.Request) (old, cur runtime.RawExtension) {
	switch {
	case req.Operation == admissionv1.Update:
		return req.OldObject, req.Object
	case req.Operation == admissionv1.Create && h.ReloadOnCreate:
		return runtime.RawExtension{}, req.Object
	case req.Operation == admissionv1.Delete && h.ReloadOnDelete:
		return req.OldObject, runtime.RawExtension{}
	}
	return runtime.RawExtension{}, runtime.RawExtension{}
}

// read decodes raw into a new object of mk; nil when raw is empty.
func read(raw runtime.RawExtension, mk func() client.Object) (client.Object, error) {
	if len(raw.Raw) == 0 {
		return nil, nil
	}
	obj := mk()
	if err := decoder.DecodeRaw(raw, obj); err != nil {
		return nil, err
	}
	return obj, nil
}

// decoder decodes the built-in types the webhook reviews.
var decoder = admission.NewDecoder(clientgoscheme.Scheme)

// watched reports whether Ripple watches config obj
// (--resource-label-selector).
func (h *Handler) watched(obj client.Object) bool {
	return h.Selector == nil || h.Selector.Matches(labels.Set(obj.GetLabels()))
}

// verdict is the write's verdict; false when there is nothing to say:
// the data is the same, the namespace is not Ripple's, or no workload
// reads the config.
func (h *Handler) verdict(ctx context.Context, old, cur client.Object) (impact.Verdict, bool, error) {
	a := h.Assessor()
	a.Blind = true // whoever reaches the port may ask: never tell what a workload runs
	a.Admit = h.admit
	if old != nil && cur != nil && a.SameData(old, cur) {
		return impact.Verdict{}, false, nil
	}
	ns := cur
	if ns == nil {
		ns = old
	}
	if h.InScope != nil {
		in, err := h.InScope(ctx, ns.GetNamespace())
		if err != nil || !in {
			return impact.Verdict{}, false, err
		}
	}
	v, err := a.Assess(ctx, old, cur, h.Clock.Now())
	if err != nil {
		return v, false, err
	}
	return v, len(v.Workloads) > 0, nil
}

// admit lets a verdict of a config that readers may read be made: at
// once when it is not big, with one of the MaxBigInFlight tokens when it
// is, else errBusy.
func (h *Handler) admit(readers int) (func(), error) {
	if readers <= BigVerdict {
		return func() {}, nil
	}
	select {
	case h.big <- struct{}{}:
		restore := lowGC()
		return func() { restore(); <-h.big }, nil
	default:
		return nil, errBigBusy
	}
}

// bigGOGC is the GC target while a big verdict is made, unless $GOGC is
// set: the cache sync's (cmd/ripple's syncGOGC). A verdict of a config
// read by 5,000 workloads allocates about 175 MB in a second; at Go's
// 100 the heap then grows to twice the live heap, and a flood of forged
// reviews kept Ripple's memory 82 MiB above its rest, 46 MiB at 50
// (docs/performance.md), for more collections while it lasts.
const bigGOGC = 50

// lowGC sets the GC target to bigGOGC, when it is higher and $GOGC is not
// set, and returns what sets it back: to what it was, unless another has
// set it meanwhile (the end of the cache sync), whose value stands. Only
// one big verdict is made at once (MaxBigInFlight), so lowGC is never
// called again before it is restored.
func lowGC() (restore func()) {
	if os.Getenv("GOGC") != "" {
		return func() {}
	}
	prev := debug.SetGCPercent(bigGOGC)
	if prev <= bigGOGC {
		debug.SetGCPercent(prev)
		return func() {}
	}
	return func() {
		if cur := debug.SetGCPercent(prev); cur != bigGOGC {
			debug.SetGCPercent(cur)
		}
	}
}

// errBigBusy is why a big verdict past MaxBigInFlight is not made.
var errBigBusy = fmt.Errorf("%d verdicts of configs read by more than %d workloads in flight already: %w", MaxBigInFlight, BigVerdict, errBusy)

// limit is the guard's limit in namespace ns and what sets it; bad says
// why a Namespace's own limit was not taken.
func (h *Handler) limit(ctx context.Context, ns string) (limit int, source, bad string) {
	limit, source = h.MaxRollouts, "--admission-max-rollouts"
	if !h.NamespaceLimits {
		return limit, source, ""
	}
	ann, err := gather.Gatherer{Reader: h.Assessor().Reader}.NamespaceAnnotations(ctx, ns)
	raw, ok := ann[h.Keys.MaxRollouts]
	if err != nil || !ok {
		return limit, source, ""
	}
	n, err := strconv.Atoi(strings.TrimSpace(raw))
	if err != nil || n < 0 {
		return limit, source, fmt.Sprintf("ripple: the Namespace's %s %q is not a count of workloads; %s holds", h.Keys.MaxRollouts, clip(raw), source)
	}
	return n, "the Namespace's " + h.Keys.MaxRollouts, ""
}

// guard is the denial of a write above limit that config does not
// acknowledge, or "" when it does.
func (h *Handler) guard(v remembered, config client.Object, limit int, source string) string {
	ack := impact.AckOf(config, h.Keys.AckRollouts)
	if ack.Covers(v.rolls) {
		return ""
	}
	msg := fmt.Sprintf("ripple: this change rolls %d workloads in %s, above the limit of %d (%s); to apply it, annotate the %s %s: %q",
		v.rolls, v.namespace, limit, source, v.kind, h.Keys.AckRollouts, strconv.Itoa(v.rolls))
	switch {
	case ack.Set && !ack.Valid:
		msg += fmt.Sprintf(" (its %q is not a count)", clip(ack.Raw))
	case ack.Set:
		msg += fmt.Sprintf(" (it acknowledges %d)", ack.Count)
	}
	return msg
}

// clip is at most the first 32 characters of an annotation's value for a
// message: whoever wrote it, it must not make the answer long.
func clip(s string) string {
	if r := []rune(s); len(r) > 32 {
		return string(r[:32]) + "…"
	}
	return s
}

// Serve adds the webhook server to mgr: h on Path, at cfg.Addr, with the
// serving certificate of cfg.CertDir, which controller-runtime's
// certificate watcher reads again when the files change (a mounted
// Secret's update), and with cfg.ClientCA only for callers whose client
// certificate it signed. The server runs on every replica, not only the
// leader.
func Serve(mgr manager.Manager, cfg config.Admission, h *Handler) error {
	host, port, err := net.SplitHostPort(cfg.Addr)
	if err != nil {
		return fmt.Errorf("--admission-bind-address: %w", err)
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return fmt.Errorf("--admission-bind-address: port %q: %w", port, err)
	}
	// HTTP/1.1 only: HTTP/2's stream resets (CVE-2023-44487) cost a
	// server more than the API server's calls gain from it.
	opts := []func(*tls.Config){func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }}
	if cfg.ClientCA != "" {
		auth, err := ClientAuth(cfg.ClientCA)
		if err != nil {
			return err
		}
		opts = append(opts, auth)
	}
	srv := webhook.NewServer(webhook.Options{
		Host: host, Port: p, CertDir: cfg.CertDir, CertName: "tls.crt", KeyName: "tls.key", TLSOpts: opts,
	})
	srv.Register(Path, h.Webhook())
	return mgr.Add(srv)
}

// ClientAuth is the TLS option that asks every caller for a client
// certificate signed by a CA of the PEM file at path, and refuses the
// handshake of one that has none.
func ClientAuth(path string) (func(*tls.Config), error) {
	b, err := os.ReadFile(filepath.Clean(path))
	if err != nil {
		return nil, fmt.Errorf("--admission-client-ca: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("--admission-client-ca: %s holds no PEM certificate", path)
	}
	return func(c *tls.Config) {
		c.ClientCAs, c.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}, nil
}
