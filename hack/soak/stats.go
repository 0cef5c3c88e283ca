package main

import (
	"math"
	"slices"
)

// point is one value at a time (seconds since the soak started) of one run
// of Ripple (each kill -9 starts a new run, its memory from scratch).
type point struct {
	X   float64
	Y   float64
	Run int
}

// slope is the least-squares slope of Y over X within each run, pooled
// over the runs (each run's own mean taken out, so that a restart's drop
// is no trend): how fast a value grows while Ripple runs; and its standard
// error. NaN with fewer than two distinct times in any run.
func slope(points []point) (b, se float64) {
	type sums struct{ n, x, y float64 }
	means := map[int]*sums{}
	for _, p := range points {
		s := means[p.Run]
		if s == nil {
			s = &sums{}
			means[p.Run] = s
		}
		s.n++
		s.x += p.X
		s.y += p.Y
	}
	var sxy, sxx float64
	for _, p := range points {
		s := means[p.Run]
		dx := p.X - s.x/s.n
		sxy += dx * (p.Y - s.y/s.n)
		sxx += dx * dx
	}
	if sxx == 0 {
		return math.NaN(), math.NaN()
	}
	b = sxy / sxx
	var ssr float64
	for _, p := range points {
		s := means[p.Run]
		e := (p.Y - s.y/s.n) - b*(p.X-s.x/s.n)
		ssr += e * e
	}
	dof := float64(len(points) - len(means) - 1)
	if dof <= 0 {
		return b, math.NaN()
	}
	return b, math.Sqrt(ssr / dof / sxx)
}

// runMeans returns, for each run in order, the time and value of its mean:
// what each new run settles at, whose trend shows growth that a restart
// would hide (state kept outside the process, in the cluster).
func runMeans(points []point) []point {
	type sums struct{ n, x, y float64 }
	by := map[int]*sums{}
	var runs []int
	for _, p := range points {
		s := by[p.Run]
		if s == nil {
			s = &sums{}
			by[p.Run] = s
			runs = append(runs, p.Run)
		}
		s.n++
		s.x += p.X
		s.y += p.Y
	}
	out := make([]point, 0, len(runs))
	for _, r := range runs {
		s := by[r]
		out = append(out, point{X: s.x / s.n, Y: s.y / s.n, Run: 0})
	}
	return out
}

// quantile returns the q-quantile (0..1) of values by the nearest rank; 0
// for none.
func quantile(values []float64, q float64) float64 {
	if len(values) == 0 {
		return 0
	}
	s := slices.Clone(values)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}
