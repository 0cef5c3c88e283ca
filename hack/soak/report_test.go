package main

import (
	"encoding/xml"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// The plot is well-formed SVG with a dot per timed change, a line per run
// and value, and a dashed line per fault and panel; the report fails a
// soak that lost a change and says which.
func TestReport(t *testing.T) {
	start := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	r := &results{Start: start, End: start.Add(10 * time.Minute), CaughtUp: true,
		Faults:  []fault{{Kind: "kill", At: start.Add(2 * time.Minute), Back: start.Add(2*time.Minute + time.Second)}},
		Changes: []change{{Config: configRef{Namespace: "ns", Name: "c"}, At: start.Add(10 * time.Second)}, {Config: configRef{Namespace: "ns", Name: "c"}, At: start.Add(3 * time.Minute)}},
		Latency: []changeLatency{{At: time.Minute, Max: 1200 * time.Millisecond, Complete: true}, {At: 2 * time.Minute, Max: 3 * time.Second, NearFault: true, Complete: true}, {At: 3 * time.Minute}},
	}
	for i := range 20 {
		run := 1 + i/10
		r.Mem = append(r.Mem, memSample{At: start.Add(time.Duration(i) * 30 * time.Second), Run: run, Live: 20 << 20, RSS: 60 << 20, Goroutine: 80})
	}
	var svg strings.Builder
	plot(&svg, r)
	counts := map[string]int{}
	d := xml.NewDecoder(strings.NewReader(svg.String()))
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("the SVG is not well-formed: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok {
			counts[se.Name.Local]++
		}
	}
	if counts["circle"] != 2 || counts["polyline"] != 4 || counts["svg"] != 1 {
		t.Errorf("elements = %v; want 2 circles (timed changes), 4 polylines (2 runs × heap and RSS)", counts)
	}

	var md strings.Builder
	report(&md, options{duration: 10 * time.Minute, workloads: 10, configs: 1, namespaces: 1, changeEvery: time.Second}, r)
	if !strings.HasPrefix(md.String(), "# Soak: pass") {
		t.Errorf("a clean soak: %s", md.String()[:40])
	}
	r.Lost = 1
	r.problem("ns/w-1: the change was never applied")
	md.Reset()
	report(&md, options{duration: 10 * time.Minute, workloads: 10, configs: 1, namespaces: 1, changeEvery: time.Second}, r)
	if !strings.HasPrefix(md.String(), "# Soak: **FAIL**") || !strings.Contains(md.String(), "- ns/w-1: the change was never applied") {
		t.Errorf("a lost change: %s", md.String())
	}
}
