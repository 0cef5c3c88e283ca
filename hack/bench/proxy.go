package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"
)

// request is what the benchmark knows about one API request: its
// Kubernetes verb, the resource it addressed and, for a single object, its
// namespace and name.
type request struct {
	Verb      string // get, list, watch, watchlist, create, update, patch, delete, deletecollection, discovery
	Resource  string // "deployments.apps", "configmaps", ...
	Namespace string
	Name      string
}

// classify maps an HTTP request to the Kubernetes verb and resource, as the
// API server's request-info resolver does. The controller's own
// rest_client_requests_total only knows HTTP methods, where a LIST, a WATCH
// and a GET are all "GET"; targets such as "no workload LIST after start"
// need the real verb.
func classify(method string, u *url.URL) request {
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	var rest []string
	group := ""
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		rest = parts[2:] // /api/v1/...
	case len(parts) >= 3 && parts[0] == "apis":
		group, rest = parts[1], parts[3:] // /apis/<group>/<version>/...
	default:
		return request{Verb: "discovery", Resource: "/" + strings.Join(parts, "/")}
	}
	var r request
	if len(rest) >= 2 && rest[0] == "namespaces" && len(rest) != 2 {
		// /namespaces/<ns>/<resource>[/<name>[/<subresource>]]; a bare
		// /namespaces/<ns> is the namespace object itself.
		r.Namespace, rest = rest[1], rest[2:]
	}
	if len(rest) == 0 {
		return request{Verb: "discovery", Resource: u.Path}
	}
	r.Resource = rest[0]
	if group != "" {
		r.Resource += "." + group
	}
	if len(rest) >= 2 {
		r.Name = rest[1]
	}
	if len(rest) >= 3 {
		r.Resource += "/" + rest[2]
	}
	r.Verb = verbOf(method, u.Query(), r.Name != "")
	return r
}

// verbOf maps an HTTP method to the Kubernetes verb of a request for a
// named object or for a collection.
func verbOf(method string, q url.Values, named bool) string {
	switch method {
	case http.MethodGet:
		switch {
		case q.Get("watch") == "true" || q.Get("watch") == "1":
			// A watch that replays the current state first is a
			// streaming list (client-go's WatchList): it costs the API
			// server what a LIST costs.
			if q.Get("sendInitialEvents") == "true" {
				return "watchlist"
			}
			return "watch"
		case named:
			return "get"
		}
		return "list"
	case http.MethodPost:
		return "create"
	case http.MethodPut:
		return "update"
	case http.MethodPatch:
		return "patch"
	case http.MethodDelete:
		if named {
			return "delete"
		}
		return "deletecollection"
	}
	return strings.ToLower(method)
}

// isWorkload reports whether a resource is one of the workload kinds the
// benchmark creates or a controller rolls.
func isWorkload(resource string) bool {
	switch resource {
	case "deployments.apps", "statefulsets.apps", "daemonsets.apps":
		return true
	}
	return false
}

// isList reports whether a verb reads a whole collection.
func isList(verb string) bool { return verb == "list" || verb == "watchlist" }

// counts are request counts keyed "verb resource code", e.g.
// "patch deployments.apps 200".
type counts map[string]int

// sub returns c - before for every key that grew.
func (c counts) sub(before counts) counts {
	out := counts{}
	for k, v := range c {
		if d := v - before[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

// byVerb sums counts per verb, or per "verb resource" when withResource.
// Responses other than 2xx keep their code ("patch deployments.apps 409"),
// so failures and conflicts stay visible.
func (c counts) byVerb(withResource bool) map[string]int {
	out := map[string]int{}
	for k, v := range c {
		f := strings.Fields(k)
		if len(f) < 3 {
			continue
		}
		key := f[0]
		if withResource {
			key += " " + f[1]
		}
		if !strings.HasPrefix(f[2], "2") {
			key += " " + f[2]
		}
		out[key] += v
	}
	return out
}

// total returns the number of requests.
func (c counts) total() int {
	n := 0
	for _, v := range c {
		n += v
	}
	return n
}

// matching sums the requests for which keep returns true.
func (c counts) matching(keep func(verb, resource, code string) bool) int {
	n := 0
	for k, v := range c {
		f := strings.Fields(k)
		if len(f) == 3 && keep(f[0], f[1], f[2]) {
			n += v
		}
	}
	return n
}

// failed counts error responses, except 409 Conflict (optimistic locking
// doing its job; a controller retries on fresh data) and the 410 Gone the
// proxy itself answers to force a relist.
func (c counts) failed() int {
	return c.matching(func(verb, _, code string) bool {
		return len(code) == 3 && code >= "400" && code != "409" && (verb != "watch" || code != "410")
	})
}

// proxy is a reverse proxy between the controller and the API server. It
// sees every request the controller makes, whatever the controller is, so
// requests can be counted by verb and resource, workload patches can be
// timed as the API server acknowledges them, and relists can be forced.
type proxy struct {
	upstream *url.URL
	rp       *httputil.ReverseProxy
	srv      *http.Server
	ln       net.Listener
	// Kubeconfig points at the proxy, without credentials: the proxy adds
	// the benchmark's own.
	Kubeconfig string

	mu sync.Mutex
	// reqs counts requests by "verb resource code".
	reqs counts
	// patches holds, per workload ("namespace/name"), when the API server
	// acknowledged each successful PATCH of it.
	patches map[string][]time.Time
	// watches are the open (resumed) watch streams, so a relist can
	// close them.
	watches map[*openWatch]struct{}
	// expire lists the resources whose next resumed watch is answered with
	// 410 Gone, which makes a client-go reflector relist.
	expire map[string]bool
	// forced counts the watches the proxy cut to force a relist.
	forced int
}

type openWatch struct {
	resource string
	cancel   context.CancelFunc
	// streaming is when the API server started answering; zero before.
	streaming time.Time
}

// settledStream is how long a watch must have been streaming before a
// forced relist cuts it. A WatchList stream first replays the current
// state; cut during that replay, client-go falls back to a plain LIST,
// an artefact of the benchmark rather than the controller's behaviour.
// The benchmark's replays take milliseconds.
const settledStream = time.Second

// startProxy listens on a free loopback port and forwards to the API server
// of cfg with cfg's credentials; it writes a kubeconfig for the controller
// into dir.
func startProxy(ctx context.Context, cfg *rest.Config, dir string) (*proxy, error) {
	transport, err := rest.TransportFor(cfg)
	if err != nil {
		return nil, err
	}
	host := cfg.Host
	if !strings.Contains(host, "://") {
		host = "https://" + host
	}
	upstream, err := url.Parse(host)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &proxy{
		upstream: upstream,
		ln:       ln,
		reqs:     counts{},
		patches:  map[string][]time.Time{},
		watches:  map[*openWatch]struct{}{},
		expire:   map[string]bool{},
	}
	p.rp = reverseProxy(upstream, transport)
	// TLS, so that the controller speaks HTTP/2 to the proxy as it would to
	// an API server: over plain HTTP client-go falls back to HTTP/1.1, with
	// a connection per watch and other flow control, which changes how
	// fast a controller receives large objects and so its peak memory.
	caPEM, cert, err := selfSignedCert()
	if err != nil {
		_ = ln.Close()
		return nil, err
	}
	p.srv = &http.Server{
		Handler:           p,
		ReadHeaderTimeout: 10 * time.Second,
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
	}
	go func() { _ = p.srv.ServeTLS(ln, "", "") }()

	// No credentials: the proxy adds the benchmark's own.
	p.Kubeconfig = filepath.Join(dir, "proxy.kubeconfig")
	proxied := &rest.Config{Host: "https://" + ln.Addr().String(), TLSClientConfig: rest.TLSClientConfig{CAData: caPEM}}
	if err := writeKubeconfig(proxied, p.Kubeconfig); err != nil {
		_ = p.shutdown(ctx)
		return nil, err
	}
	return p, nil
}

// reverseProxy forwards to upstream with the benchmark's credentials.
func reverseProxy(upstream *url.URL, transport http.RoundTripper) *httputil.ReverseProxy {
	return &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(upstream)
			r.Out.Host = upstream.Host
			// The transport authenticates; whatever the controller sent
			// is not ours to forward.
			r.Out.Header.Del("Authorization")
		},
		Transport: transport,
		// Watches stream: pass every event on as soon as it arrives.
		FlushInterval: -1,
		// A watch the benchmark cuts to force a relist ends with a copy
		// error; that is expected and not worth a log line.
		ErrorLog: log.New(io.Discard, "", 0),
	}
}

// selfSignedCert returns a throw-away certificate for 127.0.0.1, which is
// also its own CA, and the certificate in PEM for the kubeconfig.
func selfSignedCert() ([]byte, tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: "ripple-bench proxy"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

// ServeHTTP forwards one request and records it.
func (p *proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	req := classify(r.Method, r.URL)
	if req.Verb == "watch" && r.URL.Query().Get("resourceVersion") != "" && p.takeExpire(req.Resource) {
		// What an API server answers when the resource version a client
		// resumes from has been compacted away.
		p.record(req, http.StatusGone)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusGone)
		_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",`+
			`"message":"too old resource version (relist forced by ripple-bench)","reason":"Expired","code":410}`)
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	var ow *openWatch
	if req.Verb == "watch" || req.Verb == "watchlist" {
		// After its replay a WatchList stream goes on as the informer's
		// watch: both kinds are cut by a forced relist.
		ow = &openWatch{resource: req.Resource, cancel: cancel}
		p.mu.Lock()
		p.watches[ow] = struct{}{}
		p.mu.Unlock()
		defer func() {
			p.mu.Lock()
			delete(p.watches, ow)
			p.mu.Unlock()
		}()
	}
	rw := &recordingWriter{ResponseWriter: w, onHeader: func(code int) {
		p.record(req, code)
		if ow != nil {
			p.mu.Lock()
			ow.streaming = time.Now()
			p.mu.Unlock()
		}
	}}
	p.rp.ServeHTTP(rw, r.WithContext(ctx))
	if !rw.wrote {
		// The handler gave up before any response (e.g. the client went
		// away); count it as a client-side close.
		p.record(req, 499)
	}
}

func (p *proxy) record(req request, code int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	// Taken under the lock, so each workload's times are in order.
	now := time.Now()
	p.reqs[fmt.Sprintf("%s %s %d", req.Verb, req.Resource, code)]++
	if req.Verb == "patch" && isWorkload(req.Resource) && code < 300 {
		key := req.Namespace + "/" + req.Name
		p.patches[key] = append(p.patches[key], now)
	}
}

func (p *proxy) takeExpire(resource string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.expire[resource] {
		return false
	}
	delete(p.expire, resource)
	return true
}

// forceRelist closes the open watches of the given resources and answers
// their resumption with 410 Gone, so that every informer of them relists,
// as after an API server restart or etcd compaction. It returns the number
// of watches closed.
func (p *proxy) forceRelist(resources ...string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, res := range resources {
		for ow := range p.watches {
			if ow.resource == res && !ow.streaming.IsZero() && time.Since(ow.streaming) >= settledStream {
				// Over HTTP/2 the cut stream alone makes client-go
				// relist; over HTTP/1.1 it resumes the watch, which
				// the 410 then sends to a relist.
				p.expire[res] = true
				ow.cancel()
				n++
			}
		}
	}
	p.forced += n
	return n
}

// snapshot returns a copy of the request counts.
func (p *proxy) snapshot() counts {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(counts, len(p.reqs))
	for k, v := range p.reqs {
		out[k] = v
	}
	return out
}

// patchesSince returns, per workload, the acknowledged PATCHes at or after t.
func (p *proxy) patchesSince(t time.Time) map[string][]time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string][]time.Time{}
	for k, times := range p.patches {
		i, _ := slices.BinarySearchFunc(times, t, time.Time.Compare)
		if i < len(times) {
			out[k] = append([]time.Time(nil), times[i:]...)
		}
	}
	return out
}

// forcedRelists returns how many relists the proxy has forced.
func (p *proxy) forcedRelists() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.forced
}

// shutdown stops the proxy and cuts every open stream. It is a cleanup, so
// it runs in full when ctx is already cancelled (an interrupted run).
func (p *proxy) shutdown(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	err := p.srv.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		// Open watches never finish on their own.
		err = p.srv.Close()
	}
	return err
}

// recordingWriter reports the status code when the response starts, so a
// watch is counted when it opens rather than when it ends minutes later.
type recordingWriter struct {
	http.ResponseWriter
	onHeader func(int)
	wrote    bool
}

func (w *recordingWriter) WriteHeader(code int) {
	if !w.wrote {
		w.wrote = true
		w.onHeader(code)
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *recordingWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the Flusher underneath, which
// the reverse proxy needs to stream watches.
func (w *recordingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
