package kit

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// AlertSink is an alert endpoint on 127.0.0.1 that records each request
// as "content-type body". It answers after hang (or when the client gives
// up), to show a slow endpoint; it is closed when the test ends.
type AlertSink struct {
	*httptest.Server
	mu   sync.Mutex
	got  []string
	hang time.Duration
}

// NewAlertSink starts an AlertSink.
func NewAlertSink(t *testing.T, hang time.Duration) *AlertSink {
	s := &AlertSink{hang: hang}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.got = append(s.got, r.Header.Get("Content-Type")+" "+string(b))
		s.mu.Unlock()
		select {
		case <-time.After(s.hang):
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(s.Close)
	return s
}

// Received is every request so far, in order.
func (s *AlertSink) Received() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.got...)
}
