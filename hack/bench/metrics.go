package main

import (
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// metrics is one scrape of a /metrics endpoint, one sample per series.
type metrics model.Vector

// parseMetrics reads the Prometheus text exposition format, which every Go
// controller built on client_golang serves.
func parseMetrics(r io.Reader) (metrics, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(r)
	if err != nil {
		return nil, err
	}
	samples, err := expfmt.ExtractSamples(&expfmt.DecodeOptions{}, slices.Collect(maps.Values(families))...)
	return metrics(samples), err
}

// value returns the sum of the samples of name, and whether there was any.
func (m metrics) value(name string) (float64, bool) {
	sum, found := 0.0, false
	for _, s := range m {
		if string(s.Metric[model.MetricNameLabel]) != name {
			continue
		}
		sum += float64(s.Value)
		found = true
	}
	return sum, found
}

// by returns the sum of the samples of name grouped by the values of the
// given labels, joined with a space.
func (m metrics) by(name string, labels ...model.LabelName) map[string]float64 {
	out := map[string]float64{}
	for _, s := range m {
		if string(s.Metric[model.MetricNameLabel]) != name {
			continue
		}
		values := make([]string, len(labels))
		for i, l := range labels {
			values[i] = string(s.Metric[l])
		}
		out[strings.Join(values, " ")] += float64(s.Value)
	}
	return out
}

// restClientCounts reads client-go's request counter by "METHOD code".
func restClientCounts(m metrics) map[string]float64 {
	return m.by("rest_client_requests_total", "method", "code")
}

// counterDelta returns after - before per key, keeping only keys that grew:
// counters only grow, so a missing key in before counts as zero.
func counterDelta(before, after map[string]float64) map[string]int {
	out := map[string]int{}
	for k, v := range after {
		if d := int(v - before[k] + 0.5); d > 0 {
			out[k] = d
		}
	}
	return out
}
