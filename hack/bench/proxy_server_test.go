//go:build bench

// The proxy's tests start servers (a fake API server and the proxy), so
// they are not unit tests: `make bench` runs them (-tags bench) before it
// measures anything.

package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// startTestProxy starts the proxy in front of a fake API server that
// checks the proxy's credentials and streams watches until they are cut,
// and returns it with a function that sends a request through it as the
// controller would, with a client built from the proxy's kubeconfig.
func startTestProxy(t *testing.T) (*proxy, func(ctx context.Context, method, path string) (*http.Response, error)) {
	t.Helper()
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer bench" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		if r.URL.Query().Get("watch") == "true" {
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			<-r.Context().Done() // a watch streams until cut
			return
		}
		_, _ = io.WriteString(w, `{}`)
	}))
	t.Cleanup(upstream.Close)
	px, err := startProxy(t.Context(), &rest.Config{Host: upstream.URL, BearerToken: "bench"}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = px.shutdown(t.Context()) })
	cfg, err := clientcmd.BuildConfigFromFlags("", px.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return px, func(ctx context.Context, method, path string) (*http.Response, error) {
		req, err := http.NewRequestWithContext(ctx, method, cfg.Host+path, strings.NewReader("{}"))
		if err != nil {
			return nil, err
		}
		return client.Do(req)
	}
}

// TestProxyCounts: requests are counted by verb and workload PATCHes timed,
// over HTTP/2 as from an API server.
func TestProxyCounts(t *testing.T) {
	px, do := startTestProxy(t)
	t0 := time.Now()
	for _, path := range []string{"PATCH /apis/apps/v1/namespaces/ns/deployments/web", "GET /api/v1/configmaps"} {
		method, path, _ := strings.Cut(path, " ")
		resp, err := do(t.Context(), method, path)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		// The controller must see what it sees from an API server.
		if resp.ProtoMajor != 2 {
			t.Errorf("the proxy speaks %s, want HTTP/2", resp.Proto)
		}
	}
	c := px.snapshot()
	for key, want := range map[string]int{"patch deployments.apps 200": 1, "list configmaps 200": 1} {
		if c[key] != want {
			t.Errorf("count %q = %d, want %d (all: %v)", key, c[key], want, c)
		}
	}
	if patches := px.patchesSince(t0); len(patches["ns/web"]) != 1 {
		t.Errorf("patches = %v, want one of ns/web", patches)
	}
	if len(px.patchesSince(time.Now().Add(time.Hour))) != 0 {
		t.Error("patchesSince(future) is not empty")
	}
}

// TestProxyForcedRelist: a forced relist closes the open watch and answers
// its resumption, and only that one, with 410 Gone.
func TestProxyForcedRelist(t *testing.T) {
	px, do := startTestProxy(t)
	watch, err := do(t.Context(), "GET", "/api/v1/configmaps?watch=true&resourceVersion=5")
	if err != nil {
		t.Fatal(err)
	}
	ended := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, watch.Body); close(ended) }()
	// The proxy cuts only watches that have streamed for a while.
	deadline := time.Now().Add(5 * time.Second)
	for px.forceRelist("configmaps") == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the watch never showed up in the proxy")
		}
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		t.Fatal("forceRelist did not close the watch")
	}
	resumed, err := do(t.Context(), "GET", "/api/v1/configmaps?watch=true&resourceVersion=5")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resumed.Body)
	_ = resumed.Body.Close()
	if resumed.StatusCode != http.StatusGone || !strings.Contains(string(body), `"reason":"Expired"`) {
		t.Errorf("resumed watch: %d %s, want 410 Expired", resumed.StatusCode, body)
	}
	// Only the next resumption is expired, not every watch after.
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	if resp, err := do(ctx, "GET", "/api/v1/configmaps?watch=true&resourceVersion=6"); err == nil {
		if resp.StatusCode != http.StatusOK {
			t.Errorf("second resumption: %d, want 200", resp.StatusCode)
		}
		_ = resp.Body.Close()
	}
	if c := px.snapshot(); c["watch configmaps 410"] != 1 {
		t.Errorf("count of 410 watches = %d, want 1 (all: %v)", c["watch configmaps 410"], c)
	}
	if px.forcedRelists() != 1 {
		t.Errorf("forced relists = %d, want 1", px.forcedRelists())
	}
}
