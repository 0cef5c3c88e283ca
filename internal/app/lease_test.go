package app

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/ripple-dev/ripple/internal/config"
)

// The Lease is renewed even while the process's token bucket is empty: a
// renewal that waited behind a burst of reconcile reads missed the renew
// deadline, and the leader exited.
func TestLeaseLockHasItsOwnRateLimit(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`))
	}))
	defer srv.Close()
	spent := flowcontrol.NewTokenBucketRateLimiter(0.001, 1) // one token, then one per 1,000 s
	spent.Accept()
	rc := &rest.Config{Host: srv.URL, RateLimiter: spent}
	lock, err := newLeaseLock(rc, config.Config{Election: config.Election{LeaderElectionNamespace: "ripple", LeaderElectionID: "ripple", RenewDeadline: 2 * time.Second, RetryPeriod: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	if _, _, err := lock.Get(ctx); !apierrors.IsNotFound(err) {
		t.Fatalf("reading the Lease with the process's token bucket empty: %v, want the server's NotFound", err)
	}
}
