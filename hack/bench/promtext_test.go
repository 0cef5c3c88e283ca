package main

import (
	"strings"
	"testing"
)

const metricsPage = `# HELP rest_client_requests_total Number of HTTP requests, partitioned by status code, method, and host.
# TYPE rest_client_requests_total counter
rest_client_requests_total{code="200",host="127.0.0.1:40177",method="GET"} 17
rest_client_requests_total{code="200",host="127.0.0.1:40177",method="PATCH"} 50
rest_client_requests_total{code="409",host="127.0.0.1:40177",method="PATCH"} 2
rest_client_requests_total{code="410",host="127.0.0.1:40177",method="GET"} 8
controller_runtime_reconcile_total{controller="Deployment",result="success"} 178
controller_runtime_reconcile_total{controller="StatefulSet",result="success"} 2
go_memstats_heap_inuse_bytes 9.723904e+06
go_gc_heap_live_bytes 5.882328e+06
weird{msg="a \"quoted\" \\ value, with {braces}",x="1"} 3 1700000000000
broken{unterminated="x} 1
no_value
`

func TestParseMetrics(t *testing.T) {
	m, err := parseMetrics(strings.NewReader(metricsPage))
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := m.value("go_memstats_heap_inuse_bytes", nil); !ok || got != 9723904 {
		t.Errorf("heap in use = %v, %v; want 9723904", got, ok)
	}
	if got, _ := m.value("controller_runtime_reconcile_total", nil); got != 180 {
		t.Errorf("reconciles = %v, want the sum 180", got)
	}
	if got, _ := m.value("rest_client_requests_total", map[string]string{"method": "PATCH"}); got != 52 {
		t.Errorf("PATCHes = %v, want 52", got)
	}
	if _, ok := m.value("absent", nil); ok {
		t.Error("an absent metric was found")
	}
	// Escaped quotes and backslashes, braces and a timestamp.
	if got, ok := m.value("weird", map[string]string{"msg": `a "quoted" \ value, with {braces}`, "x": "1"}); !ok || got != 3 {
		t.Errorf("escaped label: got %v, %v", got, ok)
	}
	for _, s := range m {
		if s.name == "broken" || s.name == "no_value" {
			t.Errorf("malformed line parsed: %+v", s)
		}
	}
	by := m.by("rest_client_requests_total", "method")
	if by["GET"] != 25 || by["PATCH"] != 52 {
		t.Errorf("by method = %v", by)
	}
	rc := restClientCounts(m)
	if rc["PATCH 409"] != 2 || rc["GET 200"] != 17 {
		t.Errorf("restClientCounts = %v", rc)
	}
}

func TestCounterDelta(t *testing.T) {
	before := map[string]float64{"GET 200": 10, "PATCH 200": 5}
	after := map[string]float64{"GET 200": 12, "PATCH 200": 5, "POST 201": 3}
	got := counterDelta(before, after)
	if len(got) != 2 || got["GET 200"] != 2 || got["POST 201"] != 3 {
		t.Errorf("counterDelta = %v, want GET 200: 2, POST 201: 3", got)
	}
}
