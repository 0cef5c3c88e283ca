package main

import (
	"math"
	"testing"
	"time"
)

func TestPercentileNearestRank(t *testing.T) {
	hundred := make([]float64, 100)
	for i := range hundred {
		hundred[i] = float64(i + 1)
	}
	for _, tc := range []struct {
		name   string
		sorted []float64
		p      float64
		want   float64
	}{
		{"empty", nil, 99, 0},
		{"single", []float64{7}, 50, 7},
		{"single p99", []float64{7}, 99, 7},
		{"p50 of 1..100", hundred, 50, 50},
		{"p95 of 1..100", hundred, 95, 95},
		{"p99 of 1..100", hundred, 99, 99},
		{"p100 of 1..100", hundred, 100, 100},
		// Of 50 samples, the p99 is the largest: nearest rank never
		// interpolates between measured values.
		{"p99 of 50", hundred[:50], 99, 50},
		{"p50 of two", []float64{1, 2}, 50, 1},
		{"tiny p", hundred, 0.0001, 1},
	} {
		if got := percentile(tc.sorted, tc.p); got != tc.want {
			t.Errorf("%s: percentile(p%v) = %v, want %v", tc.name, tc.p, got, tc.want)
		}
	}
}

func TestSummarize(t *testing.T) {
	if got := summarize(nil); got != (Latency{}) {
		t.Errorf("summarize(nil) = %+v, want zero", got)
	}
	var samples []time.Duration
	// 1..100 ms, shuffled order: summarize must sort.
	for i := 100; i >= 1; i-- {
		samples = append(samples, time.Duration(i)*time.Millisecond)
	}
	got := summarize(samples)
	want := Latency{Count: 100, P50: 50, P95: 95, P99: 99, Max: 100, Mean: 50.5}
	if got != want {
		t.Errorf("summarize = %+v, want %+v", got, want)
	}
	// Sub-millisecond values keep microsecond resolution.
	if got := summarize([]time.Duration{1500 * time.Microsecond}); got.P50 != 1.5 {
		t.Errorf("p50 of 1.5ms = %v, want 1.5", got.P50)
	}
}

func at(base time.Time, ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }

func TestAttributePatches(t *testing.T) {
	base := time.Unix(1000, 0)
	sets := []ChangeSet{
		{Start: at(base, 0), End: at(base, 5), Workloads: []string{"ns/a", "ns/b"}},
		{Start: at(base, 1000), End: at(base, 1005), Workloads: []string{"ns/a", "ns/b"}},
		{Start: at(base, 2000), End: at(base, 2005), Workloads: []string{"ns/c"}},
	}
	for _, tc := range []struct {
		name    string
		patches map[string][]time.Time
		want    PatchCount
		exact   bool
	}{
		{
			name: "one patch per workload per set",
			patches: map[string][]time.Time{
				"ns/a": {at(base, 10), at(base, 1010)},
				"ns/b": {at(base, 20), at(base, 1020)},
				"ns/c": {at(base, 2010)},
			},
			want:  PatchCount{Expected: 5, Patches: 5},
			exact: true,
		},
		{
			name: "a second rollout for one change set",
			patches: map[string][]time.Time{
				"ns/a": {at(base, 10), at(base, 900), at(base, 1010)},
				"ns/b": {at(base, 20), at(base, 1020)},
				"ns/c": {at(base, 2010)},
			},
			want: PatchCount{Expected: 5, Patches: 6, Extra: 1},
		},
		{
			name: "a workload left out of a change set",
			patches: map[string][]time.Time{
				"ns/a": {at(base, 10), at(base, 1010)},
				"ns/b": {at(base, 20)},
				"ns/c": {at(base, 2010)},
			},
			want: PatchCount{Expected: 5, Patches: 4, Missing: 1},
		},
		{
			name: "a workload no change set touched, and one patched before its change",
			patches: map[string][]time.Time{
				"ns/a": {at(base, 10), at(base, 1010)},
				"ns/b": {at(base, 20), at(base, 1020)},
				"ns/c": {at(base, 1500), at(base, 2010)},
				"ns/z": {at(base, 30)},
			},
			want: PatchCount{Expected: 5, Patches: 5, Unrelated: 2},
		},
		{
			name: "a late patch of the first set lands after the second started",
			patches: map[string][]time.Time{
				// Both of a's patches fall in set 2's window: set 1
				// missing, set 2 extra.
				"ns/a": {at(base, 1001), at(base, 1010)},
				"ns/b": {at(base, 20), at(base, 1020)},
				"ns/c": {at(base, 2010)},
			},
			want: PatchCount{Expected: 5, Patches: 5, Missing: 1, Extra: 1},
		},
	} {
		got := attributePatches(sets, tc.patches)
		if got != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
		if got.Exact() != tc.exact {
			t.Errorf("%s: Exact() = %v, want %v", tc.name, got.Exact(), tc.exact)
		}
	}
}

func TestAttributePatchesNoChangeSets(t *testing.T) {
	// The no-op scenario: nothing was changed, so every patch is spurious.
	got := attributePatches(nil, map[string][]time.Time{"ns/a": {time.Now()}})
	if want := (PatchCount{Unrelated: 1}); got != want || got.Exact() {
		t.Errorf("got %+v (exact %v), want %+v, not exact", got, got.Exact(), want)
	}
	if got := attributePatches(nil, nil); !got.Exact() {
		t.Errorf("no change sets and no patches must be exact, got %+v", got)
	}
}

func TestReactionLatenciesAndCompletion(t *testing.T) {
	base := time.Unix(1000, 0)
	sets := []ChangeSet{
		// A burst: acknowledged from 0 to 2000 ms; latency runs from the end.
		{Start: at(base, 0), End: at(base, 2000), Workloads: []string{"a", "b"}},
		{Start: at(base, 5000), End: at(base, 5001), Workloads: []string{"a", "c"}},
	}
	changes := map[string][]time.Time{
		"a": {at(base, 3000), at(base, 5011)},
		"b": {at(base, 3500)},
		// c never changed
	}
	lat, missed := reactionLatencies(sets, changes)
	want := []time.Duration{1000 * time.Millisecond, 1500 * time.Millisecond, 10 * time.Millisecond}
	if missed != 1 || len(lat) != len(want) {
		t.Fatalf("got %v latencies, %d missed; want %v, 1 missed", lat, missed, want)
	}
	for i := range want {
		if lat[i] != want[i] {
			t.Errorf("latency %d = %v, want %v", i, lat[i], want[i])
		}
	}
	// The second set is incomplete (c missed), so only the first counts.
	done := completionTimes(sets, changes)
	if len(done) != 1 || done[0] != 1500*time.Millisecond {
		t.Errorf("completion times = %v, want [1.5s]", done)
	}
}

func TestRate(t *testing.T) {
	base := time.Unix(1000, 0)
	var times []time.Time
	// 21 patches 50 ms apart: 20 intervals in 1 s, client-go's default QPS.
	for i := range 21 {
		times = append(times, at(base, 50*i))
	}
	if got := rate(times); math.Abs(got-20) > 1e-9 {
		t.Errorf("rate = %v, want 20", got)
	}
	if got := rate(times[:1]); got != 0 {
		t.Errorf("rate of one = %v, want 0", got)
	}
}

func TestMedian(t *testing.T) {
	if got := median([]float64{5, 1, 3}); got != 3 {
		t.Errorf("median = %v, want 3", got)
	}
	if got := median(nil); got != 0 {
		t.Errorf("median(nil) = %v, want 0", got)
	}
}

func TestFitMemory(t *testing.T) {
	const base, perWorkload, perConfig = 6 << 20, 8000.0, 2000.0
	mk := func(name string, workloads, configs, bytes int, extra float64) Result {
		return Result{
			Name:         name,
			ControlPlane: "api",
			Scale:        Scale{Workloads: workloads, ConfigMaps: configs / 2, Secrets: configs - configs/2, ConfigBytes: bytes},
			Memory:       Memory{LiveAfterSync: base + perWorkload*float64(workloads) + perConfig*float64(configs) + extra},
		}
	}
	results := []Result{
		mk("small", 1, 1, 256, 0),
		mk("workloads", 10000, 1000, 256, 0),
		mk("configs", 5000, 20000, 256, 0),
		mk("mixed", 100, 200, 256, 0),
		// Large configs are checked, not fitted: here the controller
		// would be keeping 100 MiB of data.
		mk("large", 100, 1000, 500<<10, 100<<20),
	}
	m, ok := fitMemory(results)
	if !ok {
		t.Fatal("fitMemory failed")
	}
	if m.Points != 4 {
		t.Errorf("fitted on %d points, want 4", m.Points)
	}
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"base", m.BaseBytes, base},
		{"per workload", m.PerWorkloadBytes, perWorkload},
		{"per config", m.PerConfigBytes, perConfig},
	} {
		if math.Abs(c.got-c.want) > 1e-6*math.Max(1, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if len(m.Checks) != 1 || m.Checks[0].Name != "large" {
		t.Fatalf("checks = %+v, want the large scenario", m.Checks)
	}
	if d := m.Checks[0].MeasuredBytes - m.Checks[0].PredictedBytes; math.Abs(d-100<<20) > 1 {
		t.Errorf("measured - predicted = %v, want 100 MiB", d)
	}

	// Workloads and configs growing together cannot be told apart.
	if _, ok := fitMemory([]Result{mk("a", 1, 1, 0, 0), mk("b", 10, 10, 0, 0), mk("c", 100, 100, 0, 0)}); ok {
		t.Error("fitMemory succeeded on collinear scales")
	}
}
