package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
)

func ms(v float64) string {
	switch {
	case v >= 1000:
		return fmt.Sprintf("%.2f s", v/1000)
	case v >= 10:
		return fmt.Sprintf("%.0f ms", v)
	default:
		return fmt.Sprintf("%.1f ms", v)
	}
}

// roundDuration formats a round number of milliseconds: 1 ms, 100 ms, 3 s.
func roundDuration(msec float64) string {
	if msec >= 1000 {
		return fmt.Sprintf("%g s", msec/1000)
	}
	return fmt.Sprintf("%g ms", msec)
}

func seconds(msec float64) string { return fmt.Sprintf("%.2f s", msec/1000) }

func mib(b float64) string { return fmt.Sprintf("%.1f MiB", b/(1<<20)) }

// flagsText shows a scenario's controller flags, or that it ran with the
// controller's defaults, and the flags the benchmark added to them.
func flagsText(flags, added []string) string {
	out := "defaults"
	if len(flags) > 0 {
		out = strings.Join(flags, " ")
	}
	if len(added) > 0 {
		out += " (+ " + strings.Join(added, " ") + ")"
	}
	return out
}

// requestsText lists request counts, largest first, as "n verb resource".
func requestsText(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if m[a] != m[b] {
			return m[b] - m[a]
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%d %s", m[k], k)
	}
	return strings.Join(parts, ", ")
}

// scaleText describes a scale in a table cell.
func scaleText(s Scale) string {
	parts := tallies(tally{s.Workloads, "workloads"}, tally{s.ConfigMaps, "CMs"}, tally{s.Secrets, "Secrets"})
	if s.ConfigBytes >= 1<<10 {
		parts = append(parts, "of "+sizeName(s.ConfigBytes))
	}
	return strings.Join(parts, ", ")
}

// tally is a number of things, for text.
type tally struct {
	n    int
	noun string
}

// tallies formats the tallies that are not zero, as "n noun".
func tallies(ts ...tally) []string {
	var out []string
	for _, t := range ts {
		if t.n > 0 {
			out = append(out, fmt.Sprintf("%d %s", t.n, t.noun))
		}
	}
	return out
}

// markdown renders the run as Markdown tables. The parts are built in
// memory, where writes cannot fail, so that the caller checks the one write
// to the file or terminal.
func markdown(run Run) string {
	var w strings.Builder
	writeHeader(&w, run)
	writeTargets(&w, run.Targets)
	writeMeasures(&w, run.Results)
	writeFloor(&w, run.Results)
	writeSafety(&w, run.Results)
	writeLargeScale(&w, run.Results)
	writeScaling(&w, run.Results)
	writeMemoryModel(&w, run.MemoryModel)
	writeStartup(&w, run.Results)
	writeRequests(&w, run.Results)
	writeNotes(&w, run.Results)
	return w.String()
}

func writeHeader(w *strings.Builder, run Run) {
	fmt.Fprintf(w, "# Ripple benchmark, %s set\n\n", run.Set)
	fmt.Fprintf(w, "- started: %s, took %.1f s\n", run.Started, run.DurationS)
	fmt.Fprintf(w, "- command: `%s`\n", run.Command)
	fmt.Fprintf(w, "- controller: `%s`", strings.Join(run.Controller, " "))
	if run.ControllerVersion != "" {
		fmt.Fprintf(w, " (%s)", run.ControllerVersion)
	}
	fmt.Fprintf(w, "\n- machine: %d CPUs (%s), %d GiB, %s; load average %.1f before, %.1f after\n",
		run.Machine.CPUs, run.Machine.CPUModel, run.Machine.MemoryGiB, run.Machine.GoVersion, run.Machine.LoadBefore, run.Machine.LoadAfter)
	if run.Machine.BenchRSSPeak > 0 {
		fmt.Fprintf(w, "- the benchmark process itself peaked at %s RSS\n", mib(run.Machine.BenchRSSPeak))
	}
	if run.Proxy {
		fmt.Fprintf(w, "- the controller reached the API server through the benchmark's counting proxy (HTTP/2 over TLS, as to an API server)\n")
	}
}

func writeTargets(w *strings.Builder, targets []Target) {
	fmt.Fprintf(w, "\n## Targets\n\n| target | want | measured | result |\n|---|---|---|---|\n")
	for _, t := range targets {
		fmt.Fprintf(w, "| %s | %s | %s | **%s** |\n", t.Name, t.Want, cell(joinNote(t.Measured, t.Note)), t.Status)
	}
}

func writeMeasures(w *strings.Builder, results []Result) {
	fmt.Fprintf(w, "\n## Reaction, patches, memory\n\n")
	fmt.Fprintf(w, "Latency: from the acknowledgement of a change set's last update to the workload's template change seen on a watch. ")
	fmt.Fprintf(w, "All patched: until the last workload of a change set changed (worst change set).\n\n")
	fmt.Fprintf(w, "| scenario | scale | controller flags | changes | p50 | p95 | p99 | max | all patched | PATCHes (expected) | rollouts / change set | RSS peak | RSS steady | heap in use (live) | CPU | API requests | errors |\n")
	fmt.Fprintf(w, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range results {
		all := "–"
		if r.AllPatched.Count > 0 {
			all = seconds(r.AllPatched.Max)
		}
		rollouts := "–"
		if r.RolloutsPerChangeSet >= 0 {
			rollouts = fmt.Sprintf("%.2f (%d ReplicaSets)", r.RolloutsPerChangeSet, r.NewReplicaSets)
		}
		patches := fmt.Sprintf("%d (%d)", r.PatchAttempts, r.Patches.Expected)
		fmt.Fprintf(w, "| %s | %s | %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %.2f s | %d | %s |\n",
			r.Name, scaleText(r.Scale), flagsText(r.Flags, r.AddedFlags), r.Updates,
			latencyText(r.Latency, r.Latency.P50), latencyText(r.Latency, r.Latency.P95), latencyText(r.Latency, r.Latency.P99), latencyText(r.Latency, r.Latency.Max), all,
			patches, rollouts, mib(r.Memory.RSSPeak), mib(r.Memory.RSSSteady), mib(r.Memory.HeapSteady)+" ("+mib(r.Memory.LiveSteady)+")",
			r.CPU.Measure, r.RequestsTotal, cell(errorsText(r.Errors)))
	}
}

// writeSafety writes the waves and storm scenarios' own numbers, when the
// run has them.
func writeSafety(w *strings.Builder, results []Result) {
	var rs []Result
	for _, r := range results {
		if r.Safety != nil {
			rs = append(rs, r)
		}
	}
	if len(rs) == 0 {
		return
	}
	fmt.Fprintf(w, "\n## Safety at scale\n\n")
	fmt.Fprintf(w, "In progress: Deployments whose rollout is not complete by their status (sampled). Complete: from the change until every Deployment changed and finished rolling. Final: from the storm's last change to the last template change.\n\n")
	fmt.Fprintf(w, "| scenario | controller flags | changes | peak in progress | complete | final | rollouts / workload | template changes | errors |\n")
	fmt.Fprintf(w, "|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rs {
		peak, complete, final := "–", "–", "–"
		if r.Scenario == "waves" {
			peak = fmt.Sprintf("%d of %d", r.Safety.PeakInProgress, r.Scale.Workloads)
			complete = fmt.Sprintf("%.1f s", r.Safety.CompleteS)
		} else {
			final = fmt.Sprintf("%.1f s", r.Safety.FinalS)
		}
		fmt.Fprintf(w, "| %s | %s | %d | %s | %s | %s | %.2f (%d ReplicaSets) | %d | %s |\n",
			r.Name, flagsText(r.Flags, r.AddedFlags), r.Updates, peak, complete, final,
			r.RolloutsPerChangeSet, r.NewReplicaSets, r.TemplateChanges, cell(errorsText(r.Errors)))
	}
}

// latencyText formats v, a value of l, or "–" when l has no samples.
func latencyText(l Latency, v float64) string {
	if l.Count == 0 {
		return "–"
	}
	return ms(v)
}

// writeScaling lists latency and memory against scale, smallest first:
// how they grow with the workloads and the objects the controller caches.
func writeScaling(w *strings.Builder, results []Result) {
	rs := slices.Clone(results)
	slices.SortStableFunc(rs, func(a, b Result) int { return a.Scale.Objects() - b.Scale.Objects() })
	fmt.Fprintf(w, "\n## By scale\n\n| scenario | workloads | objects cached | p50 | p99 | max | RSS peak | RSS steady | live heap, steady |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rs {
		fmt.Fprintf(w, "| %s | %d | %d | %s | %s | %s | %s | %s | %s |\n", r.Name, r.Scale.Workloads, r.Scale.Objects(),
			latencyText(r.Latency, r.Latency.P50), latencyText(r.Latency, r.Latency.P99), latencyText(r.Latency, r.Latency.Max), mib(r.Memory.RSSPeak), mib(r.Memory.RSSSteady), mib(r.Memory.LiveSteady))
	}
}

func writeMemoryModel(w *strings.Builder, m *MemoryModel) {
	if m == nil {
		return
	}
	fmt.Fprintf(w, "\n## Memory model\n\nLive heap once the caches are synced (`go_gc_heap_live_bytes`), least-squares fit over %d scenarios with small configs: ", m.Points)
	fmt.Fprintf(w, "**%s**.\n", m.text())
	if len(m.Checks) > 0 {
		fmt.Fprintf(w, "\n| scenario with large configs | config size | live heap predicted by the model | measured |\n|---|---|---|---|\n")
		for _, c := range m.Checks {
			fmt.Fprintf(w, "| %s | %s | %s | %s |\n", c.Name, sizeName(c.ConfigBytes), mib(c.PredictedBytes), mib(c.MeasuredBytes))
		}
	}
}

func writeStartup(w *strings.Builder, results []Result) {
	fmt.Fprintf(w, "\n## Start-up\n\nReady: from the process's start to `/readyz`. Baseline written: from ready until every workload carried the baseline annotation. ")
	fmt.Fprintf(w, "First reload: a ConfigMap that only the last Deployment of the last namespace uses, changed as soon as the controller is ready; from the change's acknowledgement to that Deployment's template change (missed after %s).\n\n", roundDuration(float64(firstReloadTimeout.Milliseconds())))
	fmt.Fprintf(w, "| scenario | ready | requests to ready | baseline written | requests for the baseline | first reload | live heap after sync | RSS after sync |\n|---|---|---|---|---|---|---|---|\n")
	for _, r := range results {
		fmt.Fprintf(w, "| %s | %.2f s | %s | %.2f s | %s | %s | %s | %s |\n", r.Name, r.Startup.ReadyS, cell(requestsText(r.Startup.RequestsToReady)),
			r.Startup.BaselineS, cell(requestsText(r.Startup.RequestsToBaseline)), firstReloadText(r.Startup.FirstReload), mib(r.Memory.LiveAfterSync), mib(r.Memory.RSSAfterSync))
		if r.Restart != nil {
			fmt.Fprintf(w, "| %s (restart) | %.2f s | %s | – | %d PATCHes, %d template changes in the 3 s after ready (besides the first reload's) | %s | | |\n", r.Name, r.Restart.ReadyS,
				cell(requestsText(r.Restart.RequestsToReady)), r.Restart.PatchesAfter, r.Restart.TemplateChangesAfter, firstReloadText(r.Restart.FirstReload))
		}
	}
}

// firstReloadText formats a first reload; "–" when none was asked for.
func firstReloadText(fr *FirstReload) string {
	switch {
	case fr == nil:
		return "–"
	case fr.Missed:
		return "**missed**"
	}
	return ms(fr.Ms)
}

// writeLargeScale writes the large set's numbers per scale, when the run
// has them.
func writeLargeScale(w *strings.Builder, results []Result) {
	var rs []Result
	for _, r := range results {
		if r.Scenario == "large-scale" {
			rs = append(rs, r)
		}
	}
	if len(rs) == 0 {
		return
	}
	fmt.Fprintf(w, "\n## Large scale\n\nModel: the live heap the documented memory model predicts, %s. Requests per change: the controller's API requests during the single changes, divided by the changes.\n\n", documentedModel.text())
	fmt.Fprintf(w, "| scenario | ready | baseline written | first reload (cold / restart) | changes | p50 | p99 | RSS peak | RSS steady | live heap after sync | model | requests per change | restart ready |\n")
	fmt.Fprintf(w, "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rs {
		perChange, restart := "–", "–"
		if r.Updates > 0 {
			perChange = fmt.Sprintf("%.1f", float64(r.RequestsTotal)/float64(r.Updates))
		}
		var again *FirstReload
		if r.Restart != nil {
			again, restart = r.Restart.FirstReload, fmt.Sprintf("%.2f s", r.Restart.ReadyS)
		}
		fmt.Fprintf(w, "| %s | %.2f s | %.2f s | %s / %s | %d | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			r.Name, r.Startup.ReadyS, r.Startup.BaselineS, firstReloadText(r.Startup.FirstReload), firstReloadText(again), r.Updates,
			latencyText(r.Latency, r.Latency.P50), latencyText(r.Latency, r.Latency.P99), mib(r.Memory.RSSPeak), mib(r.Memory.RSSSteady),
			mib(r.Memory.LiveAfterSync), mib(documentedModel.predict(r.Scale)), perChange, restart)
	}
}

func writeRequests(w *strings.Builder, results []Result) {
	fmt.Fprintf(w, "\n## API requests during the measurement\n\nBy verb and resource as the proxy saw them; `rest_client_requests_total` deltas from the controller's metrics in brackets.\n\n")
	fmt.Fprintf(w, "| scenario | requests | rest_client_requests_total | reconciles | PATCH rate | first PATCH (p50 / max) | last PATCH (p50 / max) |\n|---|---|---|---|---|---|---|\n")
	for _, r := range results {
		rec := "n/a"
		if r.Reconciles >= 0 {
			rec = fmt.Sprint(r.Reconciles)
		}
		first, last := "–", "–"
		if r.FirstPatch.Count > 0 {
			first = ms(r.FirstPatch.P50) + " / " + ms(r.FirstPatch.Max)
			last = ms(r.LastPatch.P50) + " / " + ms(r.LastPatch.Max)
		}
		patchRate := "–"
		if r.PatchRate > 0 {
			patchRate = fmt.Sprintf("%.1f/s", r.PatchRate)
		}
		fmt.Fprintf(w, "| %s | %s | [%s] | %s | %s | %s | %s |\n", r.Name, cell(requestsText(r.Requests)), cell(requestsText(r.RestClient)), rec, patchRate, first, last)
	}
}

func writeNotes(w *strings.Builder, results []Result) {
	var notes []string
	for _, r := range results {
		if r.Errors.Failure != "" {
			notes = append(notes, fmt.Sprintf("- %s FAILED: %s", r.Name, r.Errors.Failure))
		}
		for _, n := range r.Errors.Notes {
			notes = append(notes, fmt.Sprintf("- %s: %s", r.Name, n))
		}
	}
	if len(notes) > 0 {
		fmt.Fprintf(w, "\n## Notes\n\n%s\n", strings.Join(notes, "\n"))
	}
}

func errorsText(e Errors) string {
	parts := tallies(tally{e.Missed, "missed"}, tally{e.FailedRequests, "failed requests"},
		tally{e.Conflicts, "conflicts"}, tally{e.LogErrors, "error log lines"})
	if e.Failure != "" {
		parts = append([]string{"FAILED"}, parts...)
	}
	if len(parts) == 0 {
		return "0"
	}
	return strings.Join(parts, ", ")
}

// cell makes text safe inside a Markdown table cell.
func cell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}

// writeJSON writes the run.
func writeJSON(path string, run Run) error {
	b, err := json.MarshalIndent(run, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// readRun reads a results file.
func readRun(path string) (Run, error) {
	var run Run
	b, err := os.ReadFile(path)
	if err != nil {
		return run, err
	}
	if err := json.Unmarshal(b, &run); err != nil {
		return run, fmt.Errorf("%s: %w", path, err)
	}
	return run, nil
}

// comparison is one metric of one scenario in two runs.
type comparison struct {
	scenario, metric string
	a, b             float64
	format           func(float64) string
}

// pairResults lines up the results of two runs: by name, then, for what
// is left, the n-th remaining result of a scenario in A with the n-th of the
// same scenario in B (a quick run against a default one).
func pairResults(a, b Run) [][2]Result {
	used := make([]bool, len(b.Results))
	var pairs [][2]Result
	var rest []Result
	for _, ra := range a.Results {
		found := false
		for j, rb := range b.Results {
			if !used[j] && rb.Name == ra.Name {
				used[j], found = true, true
				pairs = append(pairs, [2]Result{ra, rb})
				break
			}
		}
		if !found {
			rest = append(rest, ra)
		}
	}
	for _, ra := range rest {
		for j, rb := range b.Results {
			if !used[j] && rb.Scenario == ra.Scenario {
				used[j] = true
				pairs = append(pairs, [2]Result{ra, rb})
				break
			}
		}
	}
	return pairs
}

// compareRuns lists the metrics of paired results of two runs.
func compareRuns(a, b Run) []comparison {
	var out []comparison
	for _, pair := range pairResults(a, b) {
		ra, rb := pair[0], pair[1]
		name := ra.Name
		if rb.Name != ra.Name {
			name = ra.Name + " vs " + rb.Name
		}
		add := func(metric string, va, vb float64, f func(float64) string) {
			out = append(out, comparison{name, metric, va, vb, f})
		}
		count := func(v float64) string { return fmt.Sprintf("%.0f", v) }
		if ra.Latency.Count > 0 || rb.Latency.Count > 0 {
			add("latency p50", ra.Latency.P50, rb.Latency.P50, ms)
			add("latency p99", ra.Latency.P99, rb.Latency.P99, ms)
			add("latency max", ra.Latency.Max, rb.Latency.Max, ms)
		}
		if ra.AllPatched.Count > 0 || rb.AllPatched.Count > 0 {
			add("all patched", ra.AllPatched.Max, rb.AllPatched.Max, ms)
		}
		add("PATCH requests", float64(ra.PatchAttempts), float64(rb.PatchAttempts), count)
		if ra.RolloutsPerChangeSet >= 0 || rb.RolloutsPerChangeSet >= 0 {
			add("rollouts / change set", ra.RolloutsPerChangeSet, rb.RolloutsPerChangeSet, func(v float64) string { return fmt.Sprintf("%.2f", v) })
		}
		add("API requests", float64(ra.RequestsTotal), float64(rb.RequestsTotal), count)
		add("RSS peak", ra.Memory.RSSPeak, rb.Memory.RSSPeak, mib)
		add("RSS steady", ra.Memory.RSSSteady, rb.Memory.RSSSteady, mib)
		add("heap steady", ra.Memory.HeapSteady, rb.Memory.HeapSteady, mib)
		add("CPU (measurement)", ra.CPU.Measure, rb.CPU.Measure, func(v float64) string { return fmt.Sprintf("%.2f s", v) })
		add("ready after start", ra.Startup.ReadyS*1000, rb.Startup.ReadyS*1000, ms)
		add("baseline written", ra.Startup.BaselineS*1000, rb.Startup.BaselineS*1000, ms)
		if ra.Startup.FirstReload != nil && rb.Startup.FirstReload != nil {
			add("first reload after start", reloadMs(ra.Startup.FirstReload), reloadMs(rb.Startup.FirstReload), reloadText)
		}
		if ra.Restart != nil && rb.Restart != nil && ra.Restart.FirstReload != nil && rb.Restart.FirstReload != nil {
			add("first reload after restart", reloadMs(ra.Restart.FirstReload), reloadMs(rb.Restart.FirstReload), reloadText)
		}
	}
	return out
}

// reloadMs is a first reload's time, NaN when it was missed.
func reloadMs(fr *FirstReload) float64 {
	if fr.Missed {
		return math.NaN()
	}
	return fr.Ms
}

func reloadText(v float64) string {
	if math.IsNaN(v) {
		return "missed"
	}
	return ms(v)
}

// ratio is b/a as text; "–" when a is zero.
func ratio(a, b float64) string {
	if a == 0 || math.IsNaN(a) || math.IsNaN(b) {
		if b == 0 {
			return "="
		}
		return "–"
	}
	return fmt.Sprintf("%.2fx", b/a)
}

// comparisonText renders two runs side by side.
func comparisonText(pathA, pathB string, a, b Run) string {
	var w strings.Builder
	fmt.Fprintf(&w, "A: %s (%s set, %s)\nB: %s (%s set, %s)\n\n", pathA, a.Set, a.Started, pathB, b.Set, b.Started)
	fmt.Fprintf(&w, "| scenario | metric | A | B | B/A |\n|---|---|---|---|---|\n")
	for _, c := range compareRuns(a, b) {
		fmt.Fprintf(&w, "| %s | %s | %s | %s | %s |\n", c.scenario, c.metric, c.format(c.a), c.format(c.b), ratio(c.a, c.b))
	}
	statusOf := func(run Run, name string) string {
		for _, t := range run.Targets {
			if t.Name == name {
				return t.Status
			}
		}
		return "–"
	}
	fmt.Fprintf(&w, "\n| target | A | B |\n|---|---|---|\n")
	for _, t := range a.Targets {
		fmt.Fprintf(&w, "| %s | %s | %s |\n", t.Name, t.Status, statusOf(b, t.Name))
	}
	return w.String()
}
