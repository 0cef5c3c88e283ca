package notify

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
)

// capture is a logger whose lines a test can read.
type capture struct {
	mu    sync.Mutex
	lines []string
}

func (c *capture) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		c.mu.Lock()
		c.lines = append(c.lines, prefix+" "+args)
		c.mu.Unlock()
	}, funcr.Options{Verbosity: 2})
}

func (c *capture) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.lines, "\n")
}

// start runs q until the test ends.
func start(t *testing.T, q *Queue) {
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { _ = q.Start(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

func TestDelivers(t *testing.T) {
	var got atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got.Store(r.Method + " " + r.Header.Get("Content-Type") + " " + string(b))
	}))
	defer srv.Close()
	q, err := NewQueue(srv.URL+"/hook?token=s3cret", Options{}, logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	start(t, q)
	q.Send(Message{Body: []byte(`{"a":1}`), ContentType: "application/json"})
	waitUntil(t, "the delivery", func() bool { return got.Load() != nil })
	if want := `POST application/json {"a":1}`; got.Load() != want {
		t.Fatalf("got %q, want %q", got.Load(), want)
	}
}

func TestRetriesServerErrorsNotClientErrors(t *testing.T) {
	for _, tc := range []struct {
		status   int
		attempts int32
	}{
		{http.StatusInternalServerError, 3},
		{http.StatusTooManyRequests, 3},
		{http.StatusBadRequest, 1},
	} {
		t.Run(http.StatusText(tc.status), func(t *testing.T) {
			var n atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n.Add(1)
				w.WriteHeader(tc.status)
			}))
			defer srv.Close()
			logs := &capture{}
			q, _ := NewQueue(srv.URL, Options{Attempts: 3, Backoff: time.Millisecond}, logs.logger())
			start(t, q)
			q.Send(Message{Body: []byte("x"), What: "test"})
			waitUntil(t, "the final failure", func() bool { return strings.Contains(logs.String(), "not delivered") })
			if got := n.Load(); got != tc.attempts {
				t.Fatalf("%d attempts, want %d", got, tc.attempts)
			}
		})
	}
}

func TestRetrySucceeds(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	logs := &capture{}
	q, _ := NewQueue(srv.URL, Options{Backoff: time.Millisecond}, logs.logger())
	start(t, q)
	q.Send(Message{Body: []byte("x")})
	waitUntil(t, "the delivery", func() bool { return strings.Contains(logs.String(), "delivered") })
	if n.Load() != 2 || strings.Contains(logs.String(), "not delivered") {
		t.Fatalf("%d attempts; log:\n%s", n.Load(), logs)
	}
}

func TestRefusesRedirects(t *testing.T) {
	var hit atomic.Bool
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hit.Store(true) }))
	defer target.Close()
	redirector := httptest.NewServer(http.RedirectHandler(target.URL, http.StatusTemporaryRedirect))
	defer redirector.Close()
	logs := &capture{}
	q, _ := NewQueue(redirector.URL, Options{Backoff: time.Millisecond}, logs.logger())
	start(t, q)
	q.Send(Message{Body: []byte("x")})
	waitUntil(t, "the refusal", func() bool { return strings.Contains(logs.String(), "redirect refused") })
	if hit.Load() {
		t.Fatal("the redirect was followed")
	}
}

// A hung endpoint delays nothing: Send returns at once, and a full queue
// drops its oldest messages.
func TestHungEndpointNeverBlocksSend(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	q, _ := NewQueue(srv.URL, Options{Size: 5, Timeout: time.Minute, Flush: 100 * time.Millisecond}, logr.Discard())
	start(t, q)
	began := time.Now()
	for range 50 {
		q.Send(Message{Body: []byte("x")})
	}
	if d := time.Since(began); d > 100*time.Millisecond {
		t.Fatalf("50 sends to a hung endpoint took %s", d)
	}
	// One message is in flight; the queue holds the last five.
	if got := q.Dropped(); got < 44 || got > 45 {
		t.Fatalf("dropped %d messages, want 44 or 45", got)
	}
}

func TestNeverLogsTheURL(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer srv.Close()
	logs := &capture{}
	hook := srv.URL + "/services/T000/B000/s3cr3t-t0ken"
	q, _ := NewQueue(hook, Options{Attempts: 2, Backoff: time.Millisecond}, logs.logger())
	start(t, q)
	q.Send(Message{Body: []byte("x")})
	waitUntil(t, "the failure", func() bool { return strings.Contains(logs.String(), "not delivered") })
	// A dead endpoint: the transport error must not quote the URL either.
	srv.Close()
	q.Send(Message{Body: []byte("y")})
	waitUntil(t, "the second failure", func() bool { return strings.Count(logs.String(), "not delivered") == 2 })
	if strings.Contains(logs.String(), "s3cr3t") || strings.Contains(logs.String(), srv.URL) {
		t.Fatalf("the log quotes the URL:\n%s", logs)
	}
}

func TestRejectsBadURL(t *testing.T) {
	for _, u := range []string{"", "ftp://x", "not a url", "http://"} {
		if _, err := NewQueue(u, Options{}, logr.Discard()); err == nil {
			t.Errorf("%q accepted", u)
		}
	}
}

// On shutdown queued messages are still delivered, for a bounded time.
func TestFlushesOnShutdown(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { n.Add(1) }))
	defer srv.Close()
	q, _ := NewQueue(srv.URL, Options{Flush: 5 * time.Second}, logr.Discard())
	for range 3 {
		q.Send(Message{Body: []byte("x")})
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel() // already shutting down when the worker starts
	if err := q.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if got := n.Load(); got != 3 {
		t.Fatalf("delivered %d of 3 queued messages on shutdown", got)
	}
}

// A failed delivery names the sink, the host and what to check, never the
// URL's path or query (where tokens live).
func TestFailureNamesTheSink(t *testing.T) {
	for _, tc := range []struct {
		status int
		want   string
	}{
		{http.StatusForbidden, "status 403 from HOST: the endpoint refused the request; check the token in its URL"},
		{http.StatusNotFound, "status 404 from HOST: check its URL (and, for alerts, that ALERT_SINK matches the service)"},
		{http.StatusBadGateway, "status 502 from HOST: the endpoint failed or throttled"},
	} {
		t.Run(http.StatusText(tc.status), func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(tc.status) }))
			defer srv.Close()
			logs := &capture{}
			q, _ := NewQueue(srv.URL+"/services/s3cret", Options{Attempts: 1, Sink: "the slack alert sink (ALERT_WEBHOOK_URL)"}, logs.logger())
			start(t, q)
			q.Send(Message{Body: []byte("x"), What: "test"})
			waitUntil(t, "the failure", func() bool { return strings.Contains(logs.String(), "not delivered") })
			host := strings.TrimPrefix(srv.URL, "http://")
			got := logs.String()
			for _, want := range []string{"not delivered to the slack alert sink (ALERT_WEBHOOK_URL)",
				"posting to the slack alert sink (ALERT_WEBHOOK_URL): " + strings.ReplaceAll(tc.want, "HOST", host)} {
				if !strings.Contains(got, want) {
					t.Errorf("logs %q do not contain %q", got, want)
				}
			}
			if strings.Contains(got, "s3cret") {
				t.Errorf("logs %q show the URL's path", got)
			}
		})
	}
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close() // nothing listens there any more
	logs := &capture{}
	q, _ := NewQueue(srv.URL+"/hook", Options{Attempts: 1, Sink: "the --webhook-url endpoint"}, logs.logger())
	start(t, q)
	q.Send(Message{Body: []byte("x"), What: "test"})
	waitUntil(t, "the failure", func() bool { return strings.Contains(logs.String(), "not delivered") })
	if want := "posting to the --webhook-url endpoint: cannot reach " + strings.TrimPrefix(srv.URL, "http://"); !strings.Contains(logs.String(), want) {
		t.Errorf("logs %q do not contain %q", logs.String(), want)
	}
}

// A namespace whose workloads flood the queue loses its own oldest
// messages, never another namespace's, and the others are delivered in
// turn with its own.
func TestFairPerNamespace(t *testing.T) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, string(b))
		mu.Unlock()
	}))
	defer srv.Close()
	dropped := 0
	q, _ := NewQueue(srv.URL, Options{Size: 5, OnDrop: func() { dropped++ }}, logr.Discard())
	q.Send(Message{Body: []byte("shop"), Namespace: "shop"})
	for range 50 {
		q.Send(Message{Body: []byte("flood"), Namespace: "tenant"})
	}
	if q.Dropped() != 46 || dropped != 46 {
		t.Fatalf("dropped %d, counted %d; want 46", q.Dropped(), dropped)
	}
	start(t, q)
	waitUntil(t, "five deliveries", func() bool { mu.Lock(); defer mu.Unlock(); return len(got) == 5 })
	mu.Lock()
	defer mu.Unlock()
	if got[0] != "shop" || strings.Count(strings.Join(got, " "), "flood") != 4 {
		t.Errorf("delivered %q, want shop's message first and four of the flood", got)
	}
}
