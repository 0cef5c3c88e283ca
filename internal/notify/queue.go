// Package notify delivers HTTP notifications (the --webhook-url calls and,
// later, alerts) from a bounded asynchronous queue, so that a slow or dead
// endpoint never delays a reload: Send never blocks, a full queue drops the
// oldest message of the namespace with the most messages waiting (so one
// tenant's flood never pushes out another namespace's alerts), namespaces
// are served in turn, and each delivery has a timeout and bounded retries.
//
// The URL of an endpoint is a secret of sorts (tokens live in it): it is
// never logged, and errors that would quote it are stripped of it.
package notify

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"

	"github.com/ripple-dev/ripple/internal/fairqueue"
)

// Message is one notification.
type Message struct {
	Body        []byte
	ContentType string
	// What is a short description for logs, e.g. `ConfigMap team-a/app`.
	What string
	// Namespace is the namespace the message is about: the queue is fair
	// per namespace.
	Namespace string
}

// Options tunes a Queue.
type Options struct {
	// Size is how many messages wait at most, in all namespaces; 0 means
	// 100.
	Size int
	// Timeout bounds one delivery attempt; 0 means 10s.
	Timeout time.Duration
	// Attempts is how many times a message is tried; 0 means 3.
	Attempts int
	// Backoff is the wait before the second attempt, doubled after each; 0
	// means 1s.
	Backoff time.Duration
	// Proxy, when set, is the HTTP proxy for every request.
	Proxy *url.URL
	// Flush bounds how long Start keeps delivering queued messages after
	// its context ends (graceful shutdown); 0 means 5s.
	Flush time.Duration
	// OnDrop is called for each message a full queue drops (a metric).
	OnDrop func()
	// OnFail is called for each message not delivered after its attempts
	// (a metric).
	OnFail func()
	// Clock is injected by tests; nil means the real clock.
	Clock clock.WithTicker
	// Sink names the endpoint in errors, with the setting that holds its
	// URL, e.g. `the slack alert sink (ALERT_WEBHOOK_URL)`; empty means
	// "the endpoint".
	Sink string
}

// Queue sends messages to one URL, in order, from one worker.
type Queue struct {
	url string
	// host is the URL's host, which errors name (the rest of the URL,
	// where tokens live, never is).
	host   string
	opts   Options
	client *http.Client
	log    logr.Logger

	pending *fairqueue.Queue[Message]

	mu      sync.Mutex
	dropped int
}

// NewQueue returns a queue for url; Start runs its worker.
func NewQueue(rawURL string, opts Options, log logr.Logger) (*Queue, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errors.New("not an http or https URL")
	}
	if opts.Size <= 0 {
		opts.Size = 100
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 10 * time.Second
	}
	if opts.Attempts <= 0 {
		opts.Attempts = 3
	}
	if opts.Backoff <= 0 {
		opts.Backoff = time.Second
	}
	if opts.Flush <= 0 {
		opts.Flush = 5 * time.Second
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Sink == "" {
		opts.Sink = "the endpoint"
	}
	base, ok := http.DefaultTransport.(*http.Transport)
	if !ok {
		return nil, errors.New("http.DefaultTransport is not an *http.Transport")
	}
	transport := base.Clone()
	if opts.Proxy != nil {
		transport.Proxy = http.ProxyURL(opts.Proxy)
	}
	return &Queue{
		url:     rawURL,
		host:    u.Host,
		opts:    opts,
		log:     log,
		pending: fairqueue.New[Message](opts.Size),
		client: &http.Client{
			Transport: transport,
			Timeout:   opts.Timeout,
			// A redirect could send the payload somewhere unexpected, as
			// Reloader's alerting also refuses.
			CheckRedirect: func(*http.Request, []*http.Request) error { return errRedirect },
		},
	}, nil
}

var errRedirect = errors.New("redirect refused")

// Send queues m and returns at once. A full queue drops the oldest
// message of the namespace with the most messages waiting.
func (q *Queue) Send(m Message) {
	from, dropped := q.pending.Push(m.Namespace, m)
	if !dropped {
		return
	}
	q.mu.Lock()
	q.dropped++
	n := q.dropped
	q.mu.Unlock()
	q.log.Info("notification queue full: dropped the oldest message of the namespace with the most waiting", "dropped", n, "namespace", from)
	if q.opts.OnDrop != nil {
		q.opts.OnDrop()
	}
}

// Dropped is how many messages a full queue has dropped.
func (q *Queue) Dropped() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.dropped
}

// Start delivers messages until ctx ends; it implements manager.Runnable.
// Then it keeps delivering what is queued for at most Flush (the request in
// flight included), so a shutdown sends the last alerts but never waits
// long on a dead endpoint.
func (q *Queue) Start(ctx context.Context) error {
	sendCtx, cancelSend := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelSend()
	go func() {
		<-ctx.Done()
		select {
		case <-sendCtx.Done():
		case <-q.opts.Clock.After(q.opts.Flush):
			cancelSend()
		}
	}()
	for sendCtx.Err() == nil {
		m, ok := q.pending.Pop()
		if ok {
			q.deliver(sendCtx, m)
			continue
		}
		if ctx.Err() != nil {
			return nil // shutting down and nothing left
		}
		select {
		case <-ctx.Done():
		case <-q.pending.Ready():
		}
	}
	if n := q.pending.Len(); n > 0 {
		q.log.Info("shutting down with undelivered notifications", "dropped", n)
	}
	return nil
}

// NeedLeaderElection is false: replicas that do not lead send nothing anyway.
func (q *Queue) NeedLeaderElection() bool { return false }

// deliver tries m up to Attempts times with doubling backoff. Client errors
// (4xx) are not retried: the same request would fail again.
func (q *Queue) deliver(ctx context.Context, m Message) {
	backoff := q.opts.Backoff
	for attempt := 1; ; attempt++ {
		retry, status, err := q.post(ctx, m)
		if err == nil {
			q.log.V(1).Info("notification delivered", "what", m.What, "attempt", attempt)
			return
		}
		if !retry || attempt >= q.opts.Attempts {
			kv := []any{"what", m.What, "attempts", attempt, "host", q.host}
			if status != 0 {
				kv = append(kv, "status", status)
			}
			q.log.Error(err, "notification not delivered to "+q.opts.Sink, kv...)
			if q.opts.OnFail != nil {
				q.opts.OnFail()
			}
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-q.opts.Clock.After(backoff):
		}
		backoff *= 2
	}
}

// post sends m once; status is the HTTP status of the answer, 0 when
// there was none.
func (q *Queue) post(ctx context.Context, m Message) (retry bool, status int, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, q.url, bytes.NewReader(m.Body))
	if err != nil {
		return false, 0, errors.New("building the request failed")
	}
	req.Header.Set("Content-Type", m.ContentType)
	resp, err := q.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // drop the URL from the message
		}
		if errors.Is(err, errRedirect) {
			return false, 0, fmt.Errorf("posting to %s: %w: set the URL the endpoint redirects to", q.opts.Sink, err)
		}
		return true, 0, fmt.Errorf("posting to %s: cannot reach %s: %w", q.opts.Sink, q.host, err)
	}
	_ = resp.Body.Close() // only the status matters; the body is not read
	code := resp.StatusCode
	switch {
	case code >= 300 && code < 400:
		return false, code, fmt.Errorf("posting to %s: %w (status %d): set the URL the endpoint redirects to", q.opts.Sink, errRedirect, code)
	case code >= 500 || code == http.StatusTooManyRequests:
		return true, code, fmt.Errorf("posting to %s: status %d from %s: the endpoint failed or throttled", q.opts.Sink, code, q.host)
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		return false, code, fmt.Errorf("posting to %s: status %d from %s: the endpoint refused the request; check the token in its URL", q.opts.Sink, code, q.host)
	case code >= 400:
		return false, code, fmt.Errorf("posting to %s: status %d from %s: check its URL (and, for alerts, that ALERT_SINK matches the service)", q.opts.Sink, code, q.host)
	}
	return false, code, nil
}
