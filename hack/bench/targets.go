package main

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// targetSpec is an acceptance target as a scenario definition states it:
// a limit on one measure of the scenario's results. The numbers live with
// the scenarios (see scenarios); this file only knows how to read and
// compare a measure.
type targetSpec struct {
	// Name is reported as is and is the key by which --compare pairs the
	// targets of two runs: keep it stable.
	Name    string
	Measure measure
	// Limit is what the measure must stay below, or equal when Exact, in
	// the measure's unit.
	Limit float64
	Exact bool
	// AtMost lets the measure equal the limit.
	AtMost bool
	// At is the scale the target is stated at. A result at another scale
	// is still checked, with its scale in a note, so that a quick run says
	// what it can; a result whose configs are smaller than At.ConfigBytes
	// does not count.
	At Scale
	// DefaultFlags counts only results of the controller run with its
	// default flags.
	DefaultFlags bool
}

// measure is what a target limits.
type measure int

const (
	// p99Latency is the p99 reaction latency of one result, in ms; it
	// passes only when no workload was missed.
	p99Latency measure = iota
	// allPatched is the worst time until a change set's last workload
	// was patched (readAllPatched), of one result, in ms; it passes only
	// when none was missed.
	allPatched
	// rssPeak is the controller's peak RSS in one result, in bytes.
	rssPeak
	// noOpWrites is the workload PATCH requests and template changes of
	// one result.
	noOpWrites
	// workloadLists is the workload LIST and WatchList requests after
	// start, summed over every result the target applies to.
	workloadLists
	// patchesPerChange is the PATCHes per affected workload per change set
	// over every result the target applies to; it passes only when no
	// pair is missing, doubled or unrelated.
	patchesPerChange
	// peakInProgress is the most workloads rolling at once in one result.
	peakInProgress
	// rolloutsPerChange is the new ReplicaSets per workload per change
	// set (or storm) of one result.
	rolloutsPerChange
	// modelDeviation is how far the live heap after sync lies from what
	// documentedModel predicts at the result's scale, in percent of the
	// prediction: the worst over every result the target applies to.
	modelDeviation
)

// reading is a measure read from the results a target applies to.
type reading struct {
	value float64
	// clean is false when something the value does not show went wrong
	// (missed workloads, a failed scenario): the target then fails.
	clean    bool
	measured string
	note     string
}

// format writes a value of the measure with its unit.
func (m measure) format(v float64) string {
	switch m {
	case p99Latency, allPatched:
		return roundDuration(v)
	case rssPeak:
		return fmt.Sprintf("%g MiB", v/(1<<20))
	case patchesPerChange:
		return fmt.Sprintf("exactly %g", v)
	case modelDeviation:
		return fmt.Sprintf("%g%%", v)
	default:
		return fmt.Sprintf("%g", v)
	}
}

// proxyNote says why the measure needs the counting proxy; "" when it
// does not.
func (m measure) proxyNote() string {
	switch m {
	case workloadLists:
		return "needs the proxy (--proxy) to tell LIST from GET and WATCH"
	case patchesPerChange:
		return "needs the proxy (--proxy) to count PATCH requests per workload"
	}
	return ""
}

// aggregate reports whether the measure sums over every result rather
// than reading the first.
func (m measure) aggregate() bool {
	return m == workloadLists || m == patchesPerChange || m == modelDeviation
}

// read reads the measure from the results a target applies to; false when
// they do not have it.
func (m measure) read(rs []Result) (reading, bool) {
	switch m {
	case workloadLists:
		return readWorkloadLists(rs)
	case patchesPerChange:
		return readPatchesPerChange(rs)
	case modelDeviation:
		return readModelDeviation(rs)
	}
	r := rs[0]
	switch m {
	case p99Latency:
		return reading{
			value:    r.Latency.P99,
			clean:    r.Errors.Missed == 0 && r.Errors.Failure == "",
			measured: fmt.Sprintf("p99 %s over %d changes (%d missed)", ms(r.Latency.P99), r.Latency.Count, r.Errors.Missed),
		}, r.Latency.Count > 0
	case allPatched:
		return readAllPatched(r)
	case rssPeak:
		return reading{
			value:    r.Memory.RSSPeak,
			clean:    true,
			measured: fmt.Sprintf("peak %s, steady %s", mib(r.Memory.RSSPeak), mib(r.Memory.RSSSteady)),
		}, r.Memory.RSSPeak > 0
	case peakInProgress, rolloutsPerChange:
		return readSafety(m, r)
	case noOpWrites:
		return reading{
			value: float64(r.PatchAttempts + r.TemplateChanges),
			clean: true,
			measured: fmt.Sprintf("%d PATCH requests, %d template changes after %d edits and %d forced relists",
				r.PatchAttempts, r.TemplateChanges, r.Edits, r.ForcedRelists),
		}, r.Errors.Failure == ""
	}
	return reading{}, false
}

// readAllPatched reads the time until a change set's last workload was
// patched: the API server's acknowledgement of the last PATCH, seen by the
// proxy, or without the proxy the template change seen on the watch, which
// comes a little later.
func readAllPatched(r Result) (reading, bool) {
	if r.LastPatch.Count == 0 {
		return reading{
			value: r.AllPatched.Max,
			clean: r.Errors.Missed == 0,
			measured: fmt.Sprintf("%s until seen on the watch (worst of %d change sets; no proxy: PATCH times unknown)",
				seconds(r.AllPatched.Max), r.AllPatched.Count),
		}, r.AllPatched.Count > 0
	}
	return reading{
		value: r.LastPatch.Max,
		clean: r.Errors.Missed == 0,
		measured: fmt.Sprintf("last PATCH accepted after %s (worst of %d change sets; seen on the watch after %s): first after %s, then %.1f patches/s",
			seconds(r.LastPatch.Max), r.LastPatch.Count, seconds(r.AllPatched.Max), seconds(r.FirstPatch.Max), r.PatchRate),
	}, true
}

// readSafety reads a measure of the waves and storm scenarios.
func readSafety(m measure, r Result) (reading, bool) {
	if r.Safety == nil {
		return reading{}, false
	}
	if m == peakInProgress {
		return reading{
			value:    float64(r.Safety.PeakInProgress),
			clean:    r.Errors.Missed == 0 && r.Errors.Failure == "",
			measured: fmt.Sprintf("peak %d, all %d complete after %.1f s", r.Safety.PeakInProgress, r.Scale.Workloads, r.Safety.CompleteS),
		}, true
	}
	return reading{
		value:    r.RolloutsPerChangeSet,
		clean:    r.RolloutsPerChangeSet > 0 && r.Errors.Failure == "",
		measured: fmt.Sprintf("%g (%d ReplicaSets, %d updates); last rollout %.1f s after the last change", r.RolloutsPerChangeSet, r.NewReplicaSets, r.Updates, r.Safety.FinalS),
	}, r.RolloutsPerChangeSet >= 0
}

func readWorkloadLists(rs []Result) (reading, bool) {
	lists, n := 0, 0
	var where []string
	for _, r := range rs {
		if r.Errors.Failure != "" && r.RequestsTotal == 0 {
			continue // it never got as far as a controller
		}
		n++
		lists += r.WorkloadLists
		if r.WorkloadLists > 0 {
			where = append(where, fmt.Sprintf("%s: %d", r.Name, r.WorkloadLists))
		}
	}
	return reading{
		value:    float64(lists),
		clean:    true,
		measured: fmt.Sprintf("%d across %d scenarios", lists, n),
		note: joinNote(strings.Join(where, "; "),
			"LIST and WatchList (streaming list) requests for Deployments, StatefulSets, DaemonSets after /readyz, excluding relists the no-op scenario forces"),
	}, n > 0
}

func readPatchesPerChange(rs []Result) (reading, bool) {
	var pc PatchCount
	var bad []string
	n := 0
	for _, r := range rs {
		if r.Patches.Expected <= 0 {
			continue
		}
		n++
		pc.Expected += r.Patches.Expected
		pc.Patches += r.Patches.Patches
		pc.Missing += r.Patches.Missing
		pc.Extra += r.Patches.Extra
		pc.Unrelated += r.Patches.Unrelated
		if !r.Patches.Exact() {
			bad = append(bad, fmt.Sprintf("%s: %d patches for %d (missing %d, extra %d, unrelated %d)",
				r.Name, r.Patches.Patches, r.Patches.Expected, r.Patches.Missing, r.Patches.Extra, r.Patches.Unrelated))
		}
	}
	if n == 0 {
		return reading{}, false
	}
	return reading{
		value: float64(pc.Patches) / float64(pc.Expected),
		clean: pc.Missing == 0 && pc.Extra == 0 && pc.Unrelated == 0,
		measured: fmt.Sprintf("%d PATCHes for %d (workload, change set) pairs in %d scenarios; missing %d, extra %d, unrelated %d",
			pc.Patches, pc.Expected, n, pc.Missing, pc.Extra, pc.Unrelated),
		note: strings.Join(bad, "; "),
	}, true
}

func readModelDeviation(rs []Result) (reading, bool) {
	worst := 0.0
	var parts []string
	for _, r := range rs {
		if r.Memory.LiveAfterSync <= 0 {
			continue
		}
		predicted := documentedModel.predict(r.Scale)
		dev := 100 * (r.Memory.LiveAfterSync - predicted) / predicted
		worst = max(worst, math.Abs(dev))
		parts = append(parts, fmt.Sprintf("%s: %s, model %s (%+.0f%%)", r.Name, mib(r.Memory.LiveAfterSync), mib(predicted), dev))
	}
	return reading{
		value:    round3(worst),
		clean:    true,
		measured: strings.Join(parts, "; "),
		note:     "live heap once every workload is baselined, against " + documentedModel.text(),
	}, len(parts) > 0
}

// want is the target's limit as text.
func (t targetSpec) want() string {
	if t.Exact {
		return t.Measure.format(t.Limit)
	}
	if t.AtMost {
		return "≤ " + t.Measure.format(t.Limit)
	}
	return "< " + t.Measure.format(t.Limit)
}

// meets reports whether a value is within the limit.
func (t targetSpec) meets(v float64) bool {
	if t.Exact {
		return v == t.Limit
	}
	if t.AtMost {
		return v <= t.Limit
	}
	return v < t.Limit
}

// counts reports whether a result of one of the target's scenarios is one
// the target is about.
func (t targetSpec) counts(r Result) bool {
	return r.Scale.ConfigBytes >= t.At.ConfigBytes && (!t.DefaultFlags || len(r.Flags) == 0)
}

// scaleNote says at what scale a result was measured when that is not
// the scale the target is stated at.
func (t targetSpec) scaleNote(r Result) string {
	if (t.At.Workloads > 0 && r.Scale.Workloads != t.At.Workloads) || (t.At.Secrets > 0 && r.Scale.Secrets != t.At.Secrets) {
		return "measured at " + scaleText(r.Scale)
	}
	return ""
}

// check evaluates the target against the results of the named scenarios.
func (t targetSpec) check(scenarios []string, results []Result, proxied bool) Target {
	out := Target{Name: t.Name, Want: t.want(), Status: "n/a"}
	if why := t.Measure.proxyNote(); why != "" && !proxied {
		out.Note = why
		return out
	}
	var rs []Result
	for _, r := range results {
		if slices.Contains(scenarios, r.Scenario) && t.counts(r) {
			rs = append(rs, r)
		}
	}
	if len(rs) == 0 {
		return out
	}
	// A result at the target's own scale is the one to read, even when
	// one at another scale with the same flags ran first.
	if i := slices.IndexFunc(rs, func(r Result) bool { return r.Scale.Workloads == t.At.Workloads }); t.At.Workloads > 0 && i > 0 {
		rs[0], rs[i] = rs[i], rs[0]
	}
	rd, ok := t.Measure.read(rs)
	if !ok {
		return out
	}
	out.Measured, out.Note = rd.measured, rd.note
	out.Status = "FAIL"
	if rd.clean && t.meets(rd.value) {
		out.Status = "PASS"
	}
	if !t.Measure.aggregate() {
		out.Note = joinNote(out.Note, t.scaleNote(rs[0]))
		if extra := slices.DeleteFunc(slices.Clone(rs[0].AddedFlags), func(f string) bool { return f == noRolloutCap }); len(extra) > 0 {
			out.Note = joinNote(out.Note, "with "+strings.Join(extra, " "))
		}
	}
	return out
}

// evaluate checks the targets of the scenario definitions against a run's
// results, in the order the scenarios first state them. A target several
// scenarios state is checked once, over all of their results.
func evaluate(defs []scenario, results []Result, proxied bool) []Target {
	var order []targetSpec
	stating := map[string][]string{} // target name -> scenarios stating it
	for _, d := range defs {
		for _, t := range d.targets {
			if _, seen := stating[t.Name]; !seen {
				order = append(order, t)
			}
			stating[t.Name] = append(stating[t.Name], d.name)
		}
	}
	out := make([]Target, len(order))
	for i, t := range order {
		out[i] = t.check(stating[t.Name], results, proxied)
	}
	return out
}

func joinNote(a, b string) string {
	if a == "" || b == "" {
		return a + b
	}
	return a + ". " + b
}
