//go:build bench

// Starts a server, so it runs with the proxy's tests (-tags bench).

package main

import (
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/model"
)

// The sampler reads the heap from a page of its two series only, which the
// controller's exposition filters by name; the whole page is still read
// where all of it is kept.
func TestSamplerScrapesItsSeriesOnly(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(collectors.MetricsGC)))
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()
	p := &controllerProc{metricsURL: srv.URL + "/metrics"}

	m, err := p.scrape(t.Context(), heapSeries...)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range heapSeries {
		if _, ok := m.value(name); !ok {
			t.Errorf("the sampler's scrape has no %s", name)
		}
	}
	for _, s := range m {
		if name := string(s.Metric[model.MetricNameLabel]); !slices.Contains(heapSeries, name) {
			t.Errorf("the sampler's scrape has %s, want only %v", name, heapSeries)
		}
	}
	all, err := p.scrape(t.Context())
	if err != nil || len(all) <= len(m) {
		t.Errorf("the whole page: %d samples (%v), want more than the sampler's %d", len(all), err, len(m))
	}
}
