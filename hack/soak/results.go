package main

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// results is what the soak did and found.
type results struct {
	Start, End time.Time // the faults
	Load       [2]string // load average at the start and the end of the faults
	CaughtUp   bool
	Changes    []change
	Faults     []fault
	Writes     struct{ meta, template, failed int }
	Notes      []string
	Mem        []memSample

	Expected, Once, Lost   int
	Twice, Undone, Records [2]int // by revision, by watch: applied twice, undos rolled forward, records not the digest
	UndosMade, UndosSeen   int
	// ByOtherWriter counts changes applied by another writer's change of
	// the pod template after them (Ripple records it: ReloadSkipped).
	ByOtherWriter int
	// TemplateEdits are the competing writer's pod-template edits, by
	// workload.
	TemplateEdits map[string][]time.Time
	RecordStale   int
	Problems      []string // the first ones, for the report
	// Latency is, per change, the time from its write to the last of its
	// readers showing it, and NearFault whether a fault was within 30 s.
	Latency []changeLatency
}

// changeLatency is one change's time to every reader.
type changeLatency struct {
	At        time.Duration // since the faults started
	Max       time.Duration
	NearFault bool
	Complete  bool // every reader was seen with it
}

func (r *results) problem(format string, args ...any) {
	if len(r.Problems) < 30 {
		r.Problems = append(r.Problems, fmt.Sprintf(format, args...))
	}
}

// sources names the two readings of a Deployment's history.
var sources = [2]string{"revision", "watch"}

// addJudgement adds one Deployment's judgements: by its revisions, by the
// soak's watch.
func (r *results) addJudgement(wr workloadRef, js [2]judgement, undosMade int) {
	r.UndosMade += undosMade
	r.UndosSeen += js[0].Undos
	for i, j := range js {
		r.Twice[i] += len(j.Twice)
		r.Undone[i] += len(j.Undone)
		r.Records[i] += len(j.RecordMismatch)
		if len(j.Twice) > 0 {
			r.problem("%s: %s steps %v bring back an earlier digest (applied twice)", wr, sources[i], j.Twice)
		}
		if len(j.Undone) > 0 {
			r.problem("%s: %s steps %v roll an undo forward", wr, sources[i], j.Undone)
		}
		if len(j.RecordMismatch) > 0 {
			r.problem("%s: %s steps %v carry an applied record that is not their digest", wr, sources[i], j.RecordMismatch)
		}
	}
}

// count checks every change on every reader against the judgements (a
// change is applied when either reading shows it: the Deployment
// controller makes no ReplicaSet for a template replaced before it synced,
// and a relist skips versions), and measures each change's latency from
// the observer.
func (r *results) count(w *world, judged map[string][2]judgement, obs *observer) {
	last := map[configRef]string{}
	for _, ch := range r.Changes {
		last[ch.Config] = ch.Digest
		cl := changeLatency{At: ch.At.Sub(r.Start), NearFault: r.nearFault(ch.At), Complete: true}
		for _, wr := range w.readers[ch.Config] {
			r.Expected++
			js := judged[wr.String()]
			switch {
			case js[0].Applied[ch.Digest]+js[1].Applied[ch.Digest] > 0:
				r.Once++
			case obs.recorded(wr.String(), ch.Digest):
				r.Once++
				r.ByOtherWriter++
			default:
				r.Lost++
				r.problem("%s: the change to %s at %s (%.12s) was never applied%s", wr, ch.Config, ch.At.UTC().Format("15:04:05.000"), ch.Digest, r.editsAround(wr, ch.At))
			}
			seen, ok := obs.firstSeen(wr.String(), ch.Digest)
			if !ok {
				cl.Complete = false
				continue
			}
			cl.Max = max(cl.Max, seen.Sub(ch.At))
		}
		r.Latency = append(r.Latency, cl)
	}
	for _, wr := range w.workloads {
		if want, ok := last[wr.Config]; ok {
			if rec := obs.reads(wr.String()); rec != want {
				r.RecordStale++
				r.problem("%s: Ripple records its pods read %.12s, the config is at %.12s", wr, rec, want)
			}
		}
	}
}

// editsAround describes the competing writer's template edits of wr
// within a minute of t.
func (r *results) editsAround(wr workloadRef, t time.Time) string {
	var near []string
	for _, e := range r.TemplateEdits[wr.String()] {
		if d := e.Sub(t); d > -time.Minute && d < time.Minute {
			near = append(near, fmt.Sprintf("%+.1fs", d.Seconds()))
		}
	}
	if len(near) == 0 {
		return ""
	}
	return fmt.Sprintf(" (the competing writer edited its template at %s from the change)", strings.Join(near, ", "))
}

// nearFault reports a time within 30 s after a fault began, or 5 s before.
func (r *results) nearFault(t time.Time) bool {
	for _, f := range r.Faults {
		if t.After(f.At.Add(-5*time.Second)) && t.Before(f.Back.Add(30*time.Second)) {
			return true
		}
	}
	return false
}

// growth is a value's slope within Ripple's runs and across them, per
// hour, with their standard errors.
type growth struct {
	// Runs and Samples are those past their warm-up.
	Runs, Samples                                          int
	Mean, WithinPerHour, WithinSE, AcrossPerHour, AcrossSE float64
}

// Flat is growth not shown to exceed 10 % of the mean per hour, within
// runs and across: each slope's 95 % interval (two standard errors)
// reaches below that. A slope without a standard error (too few runs or
// samples to tell) shows nothing either way; no run past its warm-up is
// not flat: nothing was measured.
func (g growth) Flat() bool {
	if g.Runs == 0 {
		return false
	}
	limit := 0.10 * g.Mean
	shown := func(slope, se float64) bool {
		return !math.IsNaN(slope) && !math.IsNaN(se) && math.Abs(slope)-2*se > limit
	}
	return !shown(g.WithinPerHour, g.WithinSE) && !shown(g.AcrossPerHour, g.AcrossSE)
}

// A run's warm-up is left out of its samples: what Ripple keeps per
// workload (its memory of each, client-go's Event correlation caches, the
// work queues' maps) fills with each workload's first rollout in the run,
// and then levels off, bounded by the workloads. It lasts until every
// config has changed since the run began (the configs change in turn) and
// rolloutMargin more for their rollouts, and at least warmUp (the first
// list and sync). A run that ends first has no samples past its warm-up.
const (
	warmUp        = time.Minute
	rolloutMargin = 15 * time.Second
)

// warmedUp is when each run's warm-up ended, by run; a run missing from it
// never warmed up.
func (r *results) warmedUp() map[int]time.Time {
	all := map[configRef]bool{}
	for _, ch := range r.Changes {
		all[ch.Config] = true
	}
	changes := slices.Clone(r.Changes)
	slices.SortFunc(changes, func(a, b change) int { return a.At.Compare(b.At) })
	out := map[int]time.Time{}
	for _, s := range r.Mem {
		if _, ok := out[s.Run]; ok {
			continue
		}
		start := r.runStart(s.Run)
		seen := map[configRef]bool{}
		for _, ch := range changes {
			if ch.At.Before(start) {
				continue
			}
			if seen[ch.Config] = true; len(seen) == len(all) {
				out[s.Run] = maxTime(ch.At.Add(rolloutMargin), start.Add(warmUp))
				break
			}
		}
	}
	return out
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// growthOf measures the growth of one value of the samples past their
// run's warm-up.
func (r *results) growthOf(value func(memSample) float64) growth {
	warm := r.warmedUp()
	var ps []point
	sum := 0.0
	for _, s := range r.Mem {
		if w, ok := warm[s.Run]; !ok || s.At.Before(w) {
			continue
		}
		ps = append(ps, point{X: s.At.Sub(r.Start).Seconds(), Y: value(s), Run: s.Run})
		sum += value(s)
	}
	if len(ps) == 0 {
		return growth{Mean: math.NaN(), WithinPerHour: math.NaN(), AcrossPerHour: math.NaN()}
	}
	within, withinSE := slope(ps)
	means := runMeans(ps)
	across, acrossSE := slope(means) // one run: NaN
	return growth{Runs: len(means), Samples: len(ps), Mean: sum / float64(len(ps)), WithinPerHour: within * 3600, WithinSE: withinSE * 3600,
		AcrossPerHour: across * 3600, AcrossSE: acrossSE * 3600}
}

// runStart is when run n began: run 1 before the faults (its warm-up is
// over when they start), each later one when a kill or a crash ended the
// run before.
func (r *results) runStart(n int) time.Time {
	run := 1
	for _, f := range r.Faults {
		if f.Kind == "api-restart" {
			continue
		}
		run++
		if run == n {
			return f.Back
		}
	}
	return time.Time{}
}

// passed reports a soak with nothing lost, repeated or undone, every
// record right, Ripple caught up, and memory and goroutines flat.
func (r *results) passed() bool {
	return r.CaughtUp && r.Lost == 0 && r.Twice == [2]int{} && r.Undone == [2]int{} && r.Records == [2]int{} && r.RecordStale == 0 &&
		r.growthOf(func(s memSample) float64 { return s.Live }).Flat() &&
		r.growthOf(func(s memSample) float64 { return s.Goroutine }).Flat()
}
