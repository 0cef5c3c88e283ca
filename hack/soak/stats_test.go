package main

import (
	"math"
	"testing"
	"time"
)

// The slope is taken within each run: two runs that each grow 2 per
// second, the second starting lower after a restart, grow 2 per second;
// the restart's drop is no trend. The run means show what each run
// settles at.
func TestSlope(t *testing.T) {
	var ps []point
	for x := range 10 {
		ps = append(ps, point{X: float64(x), Y: 100 + 2*float64(x), Run: 1})
		ps = append(ps, point{X: float64(20 + x), Y: 50 + 2*float64(x), Run: 2})
	}
	if got, se := slope(ps); math.Abs(got-2) > 1e-9 || se > 1e-9 {
		t.Errorf("slope = %v ± %v, want 2 ± 0", got, se)
	}
	flat := []point{{X: 0, Y: 5, Run: 1}, {X: 1, Y: 5, Run: 1}, {X: 2, Y: 7, Run: 2}, {X: 3, Y: 7, Run: 2}}
	if got, _ := slope(flat); got != 0 {
		t.Errorf("flat runs: slope = %v, want 0", got)
	}
	noisy := []point{{X: 0, Y: 0, Run: 1}, {X: 1, Y: 2, Run: 1}, {X: 2, Y: 0, Run: 1}, {X: 3, Y: 2, Run: 1}}
	if got, se := slope(noisy); math.Abs(got-0.4) > 1e-9 || math.Abs(se-math.Sqrt(3.2/2/5)) > 1e-9 {
		t.Errorf("noisy: slope = %v ± %v, want 0.4 ± %v", got, se, math.Sqrt(3.2/2/5))
	}
	if got, _ := slope([]point{{X: 1, Y: 1, Run: 1}}); !math.IsNaN(got) {
		t.Errorf("one point: slope = %v, want NaN", got)
	}
	m := runMeans(ps)
	if len(m) != 2 || m[0].Y != 109 || m[1].X != 24.5 || m[1].Y != 59 {
		t.Errorf("run means = %+v", m)
	}
}

func TestQuantile(t *testing.T) {
	v := []float64{5, 1, 4, 2, 3}
	for q, want := range map[float64]float64{0: 1, 0.5: 3, 0.99: 5, 1: 5} {
		if got := quantile(v, q); got != want {
			t.Errorf("quantile(%v) = %v, want %v", q, got, want)
		}
	}
	if quantile(nil, 0.5) != 0 {
		t.Error("quantile of nothing")
	}
}

// Growth is flat unless a slope's interval lies wholly above 10 % of the
// mean per hour; a slope with no standard error shows nothing; no run
// past its warm-up is no evidence, and not flat.
func TestFlat(t *testing.T) {
	for _, tt := range []struct {
		g    growth
		want bool
	}{
		{growth{Runs: 3, Mean: 100, WithinPerHour: 5, WithinSE: 1, AcrossPerHour: 1, AcrossSE: 1}, true},
		{growth{Runs: 3, Mean: 100, WithinPerHour: 30, WithinSE: 5, AcrossPerHour: 1, AcrossSE: 1}, false},
		{growth{Runs: 3, Mean: 100, WithinPerHour: 30, WithinSE: 15, AcrossPerHour: 1, AcrossSE: 1}, true},
		{growth{Runs: 3, Mean: 100, WithinPerHour: 1, WithinSE: 1, AcrossPerHour: 40, AcrossSE: 5}, false},
		{growth{Runs: 3, Mean: 100, WithinPerHour: 1, WithinSE: 1, AcrossPerHour: 40, AcrossSE: math.NaN()}, true},
		{growth{Mean: math.NaN(), WithinPerHour: math.NaN(), AcrossPerHour: math.NaN()}, false}, // no run past its warm-up
	} {
		if got := tt.g.Flat(); got != tt.want {
			t.Errorf("%+v: flat = %v, want %v", tt.g, got, tt.want)
		}
	}
}

// A run's warm-up lasts until every config changed in it, and its
// rollouts' margin: the heap's growth while Ripple fills what it keeps per
// workload is left out, and a run in which some config never changed has
// nothing past it.
func TestWarmedUp(t *testing.T) {
	start := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	a, b := configRef{Namespace: "ns", Name: "a"}, configRef{Namespace: "ns", Name: "b"}
	r := &results{Start: start,
		Faults:  []fault{{Kind: "api-restart", At: start.Add(2 * time.Minute), Back: start.Add(2*time.Minute + 10*time.Second)}, {Kind: "kill", At: start.Add(5 * time.Minute), Back: start.Add(5*time.Minute + time.Second)}},
		Changes: []change{{Config: b, At: start.Add(70 * time.Second)}, {Config: a, At: start.Add(10 * time.Second)}, {Config: a, At: start.Add(6 * time.Minute)}},
	}
	for sec := 0; sec < 600; sec += 5 {
		at, run, live := start.Add(time.Duration(sec)*time.Second), 1, 20.0
		if sec < 85 {
			live = 10 + float64(sec)/85*10 // filling
		}
		if sec >= 300 {
			run, live = 2, 10+float64(sec-300)/60
		}
		r.Mem = append(r.Mem, memSample{At: at, Run: run, Live: live, Goroutine: 50})
	}
	warm := r.warmedUp()
	if want := start.Add(85 * time.Second); len(warm) != 1 || !warm[1].Equal(want) {
		t.Fatalf("warmed up %v, want run 1 at %s only", warm, want)
	}
	g := r.growthOf(func(s memSample) float64 { return s.Live })
	if g.Runs != 1 || g.Samples != 43 || g.Mean != 20 || g.WithinPerHour != 0 || !g.Flat() {
		t.Errorf("growth %+v, want run 1's 43 samples past its warm-up, flat at 20", g)
	}
}
