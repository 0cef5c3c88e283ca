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
# TYPE controller_runtime_reconcile_total counter
controller_runtime_reconcile_total{controller="Deployment",result="success"} 178
controller_runtime_reconcile_total{controller="StatefulSet",result="success"} 2
# TYPE go_memstats_heap_inuse_bytes gauge
go_memstats_heap_inuse_bytes 9.723904e+06
go_gc_heap_live_bytes 5.882328e+06
# TYPE workqueue_work_duration_seconds histogram
workqueue_work_duration_seconds_bucket{name="ripple",le="0.001"} 3
workqueue_work_duration_seconds_bucket{name="ripple",le="+Inf"} 4
workqueue_work_duration_seconds_sum{name="ripple"} 0.01
workqueue_work_duration_seconds_count{name="ripple"} 4
weird{msg="a \"quoted\" \\ value, with {braces}",x="1"} 3 1700000000000
`

func TestParseMetrics(t *testing.T) {
	m, err := parseMetrics(strings.NewReader(metricsPage))
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := m.value("go_memstats_heap_inuse_bytes"); !ok || got != 9723904 {
		t.Errorf("heap in use = %v, %v; want 9723904", got, ok)
	}
	if got, _ := m.value("controller_runtime_reconcile_total"); got != 180 {
		t.Errorf("reconciles = %v, want the sum 180", got)
	}
	if _, ok := m.value("absent"); ok {
		t.Error("an absent metric was found")
	}
	// A histogram's series are read too, under their own names.
	if got, ok := m.value("workqueue_work_duration_seconds_count"); !ok || got != 4 {
		t.Errorf("histogram count = %v, %v; want 4", got, ok)
	}
	// Escaped quotes and backslashes, braces and a timestamp.
	if got := m.by("weird", "msg"); got[`a "quoted" \ value, with {braces}`] != 3 {
		t.Errorf("escaped label: got %v", got)
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

// A page that is not the text format is an error, not a partial reading:
// the caller then counts the scrape as missing.
func TestParseMetricsMalformed(t *testing.T) {
	for _, page := range []string{
		"broken{unterminated=\"x} 1\n",
		"no_value\n",
	} {
		if m, err := parseMetrics(strings.NewReader(page)); err == nil {
			t.Errorf("%q parsed: %v", page, m)
		}
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
