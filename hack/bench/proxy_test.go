package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		method, url string
		want        request
	}{
		{"GET", "/api/v1/namespaces/ns/configmaps/cm", request{"get", "configmaps", "ns", "cm"}},
		{"GET", "/api/v1/configmaps?limit=500", request{"list", "configmaps", "", ""}},
		{"GET", "/api/v1/secrets?watch=true&resourceVersion=12", request{"watch", "secrets", "", ""}},
		{"GET", "/api/v1/secrets?watch=1", request{"watch", "secrets", "", ""}},
		{"GET", "/apis/apps/v1/deployments?allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&sendInitialEvents=true&watch=true",
			request{"watchlist", "deployments.apps", "", ""}},
		{"GET", "/apis/apps/v1/namespaces/ns/deployments", request{"list", "deployments.apps", "ns", ""}},
		{"PATCH", "/apis/apps/v1/namespaces/ns/deployments/web", request{"patch", "deployments.apps", "ns", "web"}},
		{"PUT", "/apis/apps/v1/namespaces/ns/deployments/web/status", request{"update", "deployments.apps/status", "ns", "web"}},
		{"POST", "/apis/events.k8s.io/v1/namespaces/ns/events", request{"create", "events.events.k8s.io", "ns", ""}},
		{"DELETE", "/api/v1/namespaces/ns/pods", request{"deletecollection", "pods", "ns", ""}},
		{"DELETE", "/api/v1/namespaces/ns/pods/p", request{"delete", "pods", "ns", "p"}},
		// A namespace object itself, not a namespaced resource.
		{"GET", "/api/v1/namespaces/ns", request{"get", "namespaces", "", "ns"}},
		{"GET", "/api/v1/namespaces", request{"list", "namespaces", "", ""}},
		{"GET", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/ripple", request{"get", "leases.coordination.k8s.io", "kube-system", "ripple"}},
		{"GET", "/apis", request{"discovery", "/apis", "", ""}},
		{"GET", "/api", request{"discovery", "/api", "", ""}},
		{"GET", "/version", request{"discovery", "/version", "", ""}},
		{"GET", "/apis/apps/v1", request{"discovery", "/apis/apps/v1", "", ""}},
	} {
		u, err := url.Parse(tc.url)
		if err != nil {
			t.Fatal(err)
		}
		if got := classify(tc.method, u); got != tc.want {
			t.Errorf("%s %s = %+v, want %+v", tc.method, tc.url, got, tc.want)
		}
	}
}

func TestCounts(t *testing.T) {
	before := counts{"patch deployments.apps 200": 3, "watchlist configmaps 200": 1}
	after := counts{
		"patch deployments.apps 200":      10,
		"patch deployments.apps 409":      2,
		"watchlist configmaps 200":        1,
		"create events.events.k8s.io 201": 7,
		"watch secrets 410":               4,
		"get configmaps 403":              1,
	}
	d := after.sub(before)
	if d.total() != 7+2+7+4+1 {
		t.Errorf("total = %d, want 21: %v", d.total(), d)
	}
	byVerb := d.byVerb(false)
	if byVerb["patch"] != 7 || byVerb["patch 409"] != 2 || byVerb["create"] != 7 {
		t.Errorf("byVerb = %v", byVerb)
	}
	byRes := d.byVerb(true)
	if byRes["patch deployments.apps"] != 7 || byRes["patch deployments.apps 409"] != 2 {
		t.Errorf("byVerb(resource) = %v", byRes)
	}
	// 409s are optimistic locking and the 410s are the proxy's own forced
	// relists; the 403 is a real failure.
	if got := d.failed(); got != 1 {
		t.Errorf("failed = %d, want 1", got)
	}
	lists := after.matching(func(verb, res, _ string) bool { return isList(verb) && res == "configmaps" })
	if lists != 1 {
		t.Errorf("configmap lists = %d, want 1", lists)
	}
}

// TestProxy runs the proxy against a fake API server: requests are counted
// by verb, workload PATCHes timed, and a forced relist closes the open watch
// and answers its resumption with 410 Gone.
func TestProxy(t *testing.T) {
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
	defer upstream.Close()

	px, err := startProxy(&rest.Config{Host: upstream.URL, BearerToken: "bench"}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer px.Close()
	// A client built from the proxy's kubeconfig, as the controller's is.
	cfg, err := clientcmd.BuildConfigFromFlags("", px.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	base := cfg.Host
	do := func(method, path string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader("{}"))
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}

	t0 := time.Now()
	first := do("PATCH", "/apis/apps/v1/namespaces/ns/deployments/web")
	first.Body.Close()
	// The controller must see what it sees from an API server: HTTP/2.
	if first.ProtoMajor != 2 {
		t.Errorf("the proxy speaks %s, want HTTP/2", first.Proto)
	}
	do("GET", "/api/v1/configmaps").Body.Close()

	watch := do("GET", "/api/v1/configmaps?watch=true&resourceVersion=5")
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
	resumed := do("GET", "/api/v1/configmaps?watch=true&resourceVersion=5")
	body, _ := io.ReadAll(resumed.Body)
	resumed.Body.Close()
	if resumed.StatusCode != http.StatusGone || !strings.Contains(string(body), `"reason":"Expired"`) {
		t.Errorf("resumed watch: %d %s, want 410 Expired", resumed.StatusCode, body)
	}
	// Only the next resumption is expired, not every watch after.
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/api/v1/configmaps?watch=true&resourceVersion=6", nil)
	if resp, err := client.Do(req); err == nil {
		if resp.StatusCode != http.StatusOK {
			t.Errorf("second resumption: %d, want 200", resp.StatusCode)
		}
		resp.Body.Close()
	}

	c := px.snapshot()
	for key, want := range map[string]int{
		"patch deployments.apps 200": 1,
		"list configmaps 200":        1,
		"watch configmaps 410":       1,
	} {
		if c[key] != want {
			t.Errorf("count %q = %d, want %d (all: %v)", key, c[key], want, c)
		}
	}
	if px.forcedRelists() != 1 {
		t.Errorf("forced relists = %d, want 1", px.forcedRelists())
	}
	patches := px.patchesSince(t0)
	if len(patches["ns/web"]) != 1 {
		t.Errorf("patches = %v, want one of ns/web", patches)
	}
	if len(px.patchesSince(time.Now().Add(time.Hour))) != 0 {
		t.Error("patchesSince(future) is not empty")
	}
}
