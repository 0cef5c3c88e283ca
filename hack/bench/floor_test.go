package main

import (
	"strings"
	"testing"
)

// The floor's table shows each fan-out's floor runs, the controller's
// time beyond the settle window and the ratio; nothing without a floor.
func TestWriteFloor(t *testing.T) {
	var w strings.Builder
	writeFloor(&w, []Result{{Name: "burst/10"}})
	if w.Len() != 0 {
		t.Errorf("no floor measured, yet: %q", w.String())
	}
	writeFloor(&w, []Result{{Name: "fan-out/300-defaults", Floor: &Floor{Writes: 300, Concurrency: 32, Ms: []float64{412.4, 430}, ControllerMs: 560, Ratio: 1.302}}})
	if want := "| fan-out/300-defaults | 300 at 32 at a time | 412, 430 ms | 560 ms | 1.30 |"; !strings.Contains(w.String(), want) {
		t.Errorf("floor table:\n%s\nwant the row %s", w.String(), want)
	}
}
