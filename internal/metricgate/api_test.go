package metricgate

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// A Prometheus that answers with a redirect gets no query sent on: the
// redirect's target never sees Ripple's bearer token (nor any request),
// and the query fails with an error that names the redirect, which the
// gate takes as inconclusive.
func TestNewAPIRefusesRedirects(t *testing.T) {
	for _, code := range []int{http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		t.Run(http.StatusText(code), func(t *testing.T) {
			var reached atomic.Int32
			var leaked atomic.Value
			elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				reached.Add(1)
				if a := r.Header.Get("Authorization"); a != "" {
					leaked.Store(a)
				}
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(`{"status":"success","data":{"resultType":"scalar","result":[0,"0"]}}`))
			}))
			defer elsewhere.Close()
			prometheus := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, elsewhere.URL+r.URL.Path, code) //nolint:gosec // the redirect under test, to the test's own server
			}))
			defer prometheus.Close()
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, TokenFile), []byte("s3cret"), 0o600); err != nil {
				t.Fatal(err)
			}
			api, err := NewAPI(prometheus.URL, dir)
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = api.Query(t.Context(), "up < 1", time.Time{})
			if err == nil || !strings.Contains(err.Error(), "redirect") || strings.Contains(err.Error(), "s3cret") {
				t.Errorf("query error %v: want one naming the redirect, and never the token", err)

			}
			if a, ok := leaked.Load().(string); ok {
				t.Errorf("the redirect's target received Authorization %q", a)
			}
			if n := reached.Load(); n != 0 {
				t.Errorf("the redirect's target received %d requests, want none", n)
			}
		})
	}
}
