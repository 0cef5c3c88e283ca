package main

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Latency summarises reaction latencies in milliseconds.
type Latency struct {
	Count int     `json:"count"`
	P50   float64 `json:"p50_ms"`
	P95   float64 `json:"p95_ms"`
	P99   float64 `json:"p99_ms"`
	Max   float64 `json:"max_ms"`
	Mean  float64 `json:"mean_ms"`
}

// percentile returns the p-th percentile (0 < p <= 100) of sorted values by
// the nearest-rank method: the smallest value such that at least p% of the
// values are at or below it. Nearest rank never invents a value that was not
// measured, which matters for tails built from few samples: the p99 of 50
// samples is the maximum, not an interpolation towards it.
func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

// summarize returns the percentiles of the given latencies.
func summarize(samples []time.Duration) Latency {
	if len(samples) == 0 {
		return Latency{}
	}
	ms := make([]float64, len(samples))
	sum := 0.0
	for i, d := range samples {
		ms[i] = float64(d) / float64(time.Millisecond)
		sum += ms[i]
	}
	slices.Sort(ms)
	return Latency{
		Count: len(ms),
		P50:   round3(percentile(ms, 50)),
		P95:   round3(percentile(ms, 95)),
		P99:   round3(percentile(ms, 99)),
		Max:   round3(ms[len(ms)-1]),
		Mean:  round3(sum / float64(len(ms))),
	}
}

// round3 keeps microsecond resolution in milliseconds: enough for every
// number the benchmark reports, and it keeps the JSON readable.
func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// ChangeSet is one set of config updates the benchmark made and the
// workloads it expects to be rolled once because of them.
type ChangeSet struct {
	// Start is the acknowledgement of the first update of the set and End
	// that of the last; they are equal for a single update. Patches from
	// Start on are attributed to the set; latency is measured from End,
	// because a controller that coalesces changes can only act on the set
	// once its last change exists.
	Start, End time.Time
	// Workloads are the keys ("namespace/name") of the workloads that use
	// the changed configs.
	Workloads []string
}

// PatchCount is the outcome of attributing a controller's workload patches
// to the change sets that caused them.
type PatchCount struct {
	// Expected is the number of (change set, workload) pairs: the patches
	// a controller that rolls once per change set makes.
	Expected int `json:"expected"`
	// Patches is the number of patches attributed to change sets.
	Patches int `json:"patches"`
	// Missing counts pairs with no patch; Extra counts patches beyond the
	// first for a pair.
	Missing int `json:"missing"`
	Extra   int `json:"extra"`
	// Unrelated counts patches of workloads that no change set affected
	// (at that time): spurious rollouts.
	Unrelated int `json:"unrelated"`
}

// Exact reports whether every affected workload was patched exactly once
// per change set and nothing else was patched.
func (c PatchCount) Exact() bool {
	return c.Missing == 0 && c.Extra == 0 && c.Unrelated == 0 && c.Patches == c.Expected
}

// attributePatches assigns each patch (workload key -> times the API server
// acknowledged a PATCH of it) to the latest change set that had started by
// then and includes that workload, and counts the pairs that got no patch
// or more than one. Change sets must be in the order they were made.
func attributePatches(sets []ChangeSet, patches map[string][]time.Time) PatchCount {
	var c PatchCount
	// sets a workload belongs to, in order
	member := map[string][]int{}
	for i, s := range sets {
		for _, w := range s.Workloads {
			member[w] = append(member[w], i)
			c.Expected++
		}
	}
	type pair struct {
		set      int
		workload string
	}
	got := map[pair]int{}
	for w, times := range patches {
		idx := member[w]
		for _, t := range times {
			// The latest set of w that had started at t.
			// The comparison never reports equal, so the search lands on
			// the first set that started after t.
			k, _ := slices.BinarySearchFunc(idx, t, func(i int, t time.Time) int {
				if sets[i].Start.After(t) {
					return 1
				}
				return -1
			})
			k--
			if k < 0 {
				c.Unrelated++
				continue
			}
			got[pair{idx[k], w}]++
			c.Patches++
		}
	}
	for w, idx := range member {
		for _, i := range idx {
			switch n := got[pair{i, w}]; {
			case n == 0:
				c.Missing++
			case n > 1:
				c.Extra += n - 1
			}
		}
	}
	return c
}

// reactionLatencies returns, for every (change set, workload) pair, the
// time from the set's last acknowledged update to the first template change
// of the workload observed after the set started; pairs whose workload was
// not seen changing are counted as missed. changes holds, per workload, the
// times template changes were observed on the watch, in order.
func reactionLatencies(sets []ChangeSet, changes map[string][]time.Time) (lat []time.Duration, missed int) {
	for _, s := range sets {
		for _, w := range s.Workloads {
			times := changes[w]
			k, _ := slices.BinarySearchFunc(times, s.Start, time.Time.Compare)
			if k == len(times) {
				missed++
				continue
			}
			lat = append(lat, times[k].Sub(s.End))
		}
	}
	return lat, missed
}

// completionTimes returns, per change set, the time from its last update to
// the moment its last affected workload was seen changing: "all patched".
// Sets with a workload never seen changing are skipped.
func completionTimes(sets []ChangeSet, changes map[string][]time.Time) []time.Duration {
	var out []time.Duration
	for _, s := range sets {
		var last time.Time
		ok := len(s.Workloads) > 0
		for _, w := range s.Workloads {
			times := changes[w]
			k, _ := slices.BinarySearchFunc(times, s.Start, time.Time.Compare)
			if k == len(times) {
				ok = false
				break
			}
			if times[k].After(last) {
				last = times[k]
			}
		}
		if ok {
			out = append(out, last.Sub(s.End))
		}
	}
	return out
}

// rate returns events per second between the first and last of the given
// times: how fast a controller issued its patches, which exposes client-side
// rate limiting (a flat 20/s is client-go's default QPS at work).
func rate(times []time.Time) float64 {
	if len(times) < 2 {
		return 0
	}
	first, last := slices.MinFunc(times, time.Time.Compare), slices.MaxFunc(times, time.Time.Compare)
	d := last.Sub(first).Seconds()
	if d <= 0 {
		return 0
	}
	return float64(len(times)-1) / d
}

// median returns the median of values, or 0.
func median(values []float64) float64 {
	if len(values) == 0 {
		return 0
	}
	s := slices.Clone(values)
	slices.Sort(s)
	return percentile(s, 50)
}

// MemoryModel is a least-squares fit, across scenarios, of the controller's
// live heap once its caches are synced:
//
//	live heap = Base + PerWorkload*workloads + PerConfig*(ConfigMaps+Secrets)
//
// fitted on scenarios with small configs only. Checks then compares the
// fit with scenarios whose configs are large: if the controller kept config
// data, they would sit far above the line.
type MemoryModel struct {
	BaseBytes        float64       `json:"base_bytes"`
	PerWorkloadBytes float64       `json:"per_workload_bytes"`
	PerConfigBytes   float64       `json:"per_config_bytes"`
	Points           int           `json:"points"`
	Checks           []MemoryCheck `json:"checks,omitempty"`
}

// MemoryCheck is the model against a scenario it was not fitted on.
type MemoryCheck struct {
	Name           string  `json:"name"`
	ConfigBytes    int     `json:"config_bytes"`
	PredictedBytes float64 `json:"predicted_bytes"`
	MeasuredBytes  float64 `json:"measured_bytes"`
}

// largeConfig is the payload size from which a scenario checks the memory
// model instead of feeding it.
const largeConfig = 64 << 10

// fitMemory fits the memory model to the results' live heap after sync.
// It needs three scenarios that vary workloads and configs independently.
func fitMemory(results []Result) (MemoryModel, bool) {
	var xs [][3]float64
	var ys []float64
	for _, r := range results {
		if r.Memory.LiveAfterSync <= 0 || r.Scale.ConfigBytes >= largeConfig || r.ControlPlane == "cluster" {
			continue // the full cluster's extra objects are not the same setup
		}
		xs = append(xs, [3]float64{1, float64(r.Scale.Workloads), float64(r.Scale.ConfigMaps + r.Scale.Secrets)})
		ys = append(ys, r.Memory.LiveAfterSync)
	}
	beta, ok := leastSquares3(xs, ys)
	if !ok {
		return MemoryModel{}, false
	}
	m := MemoryModel{BaseBytes: beta[0], PerWorkloadBytes: beta[1], PerConfigBytes: beta[2], Points: len(ys)}
	for _, r := range results {
		if r.Memory.LiveAfterSync > 0 && r.Scale.ConfigBytes >= largeConfig {
			m.Checks = append(m.Checks, MemoryCheck{
				Name:           r.Name,
				ConfigBytes:    r.Scale.ConfigBytes,
				PredictedBytes: m.predict(r.Scale),
				MeasuredBytes:  r.Memory.LiveAfterSync,
			})
		}
	}
	return m, true
}

func (m MemoryModel) predict(s Scale) float64 {
	return m.BaseBytes + m.PerWorkloadBytes*float64(s.Workloads) + m.PerConfigBytes*float64(s.ConfigMaps+s.Secrets)
}

// text is the model as the docs write it.
func (m MemoryModel) text() string {
	return fmt.Sprintf("%s + %.2f KiB per workload + %.2f KiB per ConfigMap or Secret", mib(m.BaseBytes), m.PerWorkloadBytes/1024, m.PerConfigBytes/1024)
}

// leastSquares3 solves the normal equations (XᵀX)β = Xᵀy for three
// parameters by Gaussian elimination with partial pivoting; ok is false
// when the points do not determine them.
func leastSquares3(xs [][3]float64, ys []float64) ([3]float64, bool) {
	var a [3][4]float64 // augmented XᵀX | Xᵀy
	for k, x := range xs {
		for i := range 3 {
			for j := range 3 {
				a[i][j] += x[i] * x[j]
			}
			a[i][3] += x[i] * ys[k]
		}
	}
	for col := range 3 {
		pivot := col
		for row := col + 1; row < 3; row++ {
			if math.Abs(a[row][col]) > math.Abs(a[pivot][col]) {
				pivot = row
			}
		}
		a[col], a[pivot] = a[pivot], a[col]
		// Relative to the column's scale: workloads and configs run to
		// the tens of thousands, so their squares are large.
		if math.Abs(a[col][col]) < 1e-9*(1+math.Abs(a[col][col])+rowNorm(a[col])) {
			return [3]float64{}, false
		}
		for row := range 3 {
			if row == col {
				continue
			}
			f := a[row][col] / a[col][col]
			for j := col; j < 4; j++ {
				a[row][j] -= f * a[col][j]
			}
		}
	}
	var beta [3]float64
	for i := range 3 {
		beta[i] = a[i][3] / a[i][i]
	}
	return beta, true
}

func rowNorm(r [4]float64) float64 {
	return math.Abs(r[0]) + math.Abs(r[1]) + math.Abs(r[2])
}
