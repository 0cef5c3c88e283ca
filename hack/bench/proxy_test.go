package main

import (
	"net/url"
	"testing"
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
