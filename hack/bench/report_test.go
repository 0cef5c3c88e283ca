package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// sampleRun is a small run with one result per kind of target.
func sampleRun() Run {
	return Run{
		Set: "quick", Started: "2026-01-01T00:00:00Z", Proxy: true,
		Results: []Result{
			{Name: "fan-out/300-defaults", Scenario: "fan-out", ControlPlane: "api",
				Scale:      Scale{Workloads: 300, ConfigMaps: 1, ConfigBytes: 256},
				Latency:    Latency{Count: 300, P50: 7000, P95: 13000, P99: 14000, Max: 14500},
				AllPatched: Latency{Count: 1, P50: 14500, Max: 14500}, FirstPatch: Latency{Count: 1, Max: 1030}, PatchRate: 20,
				Patches: PatchCount{Expected: 300, Patches: 300}, PatchAttempts: 300,
				RolloutsPerChangeSet: -1, Reconciles: 900,
				Memory: Memory{RSSPeak: 50 << 20, RSSSteady: 49 << 20, LiveAfterSync: 6 << 20}},
			{Name: "high-cardinality/5000", Scenario: "high-cardinality", ControlPlane: "api",
				Scale:   Scale{Workloads: 5000, ConfigMaps: 10000, Secrets: 10000, ConfigBytes: 256},
				Latency: Latency{Count: 300, P50: 7, P95: 18, P99: 40, Max: 63},
				Patches: PatchCount{Expected: 300, Patches: 300}, PatchAttempts: 300, RolloutsPerChangeSet: -1,
				Memory: Memory{RSSPeak: 200 << 20, LiveAfterSync: 100 << 20}},
			{Name: "large-objects/1000x500KiB", Scenario: "large-objects", ControlPlane: "api",
				Scale:   Scale{Workloads: 100, Secrets: 1000, ConfigBytes: 500 << 10},
				Latency: Latency{Count: 20, P50: 39, P99: 182, Max: 182},
				Patches: PatchCount{Expected: 20, Patches: 21, Extra: 1}, PatchAttempts: 21, RolloutsPerChangeSet: -1,
				Memory: Memory{RSSPeak: 60 << 20, RSSSteady: 54 << 20, LiveAfterSync: 9 << 20}},
			{Name: "no-op/100", Scenario: "no-op", ControlPlane: "api", Edits: 1000, ForcedRelists: 20, WorkloadLists: 10,
				RolloutsPerChangeSet: -1, Memory: Memory{RSSPeak: 44 << 20, LiveAfterSync: 7 << 20}, Scale: Scale{Workloads: 100, ConfigMaps: 100, Secrets: 100}},
			{Name: "burst/50", Scenario: "burst", ControlPlane: "cluster", NewReplicaSets: 50, RolloutsPerChangeSet: 1,
				Scale:   Scale{Workloads: 50, ConfigMaps: 5, Secrets: 5},
				Latency: Latency{Count: 50, P50: 1240, Max: 1485}, Patches: PatchCount{Expected: 50, Patches: 50}},
		},
	}
}

func TestEvaluate(t *testing.T) {
	run := sampleRun()
	got := map[string]Target{}
	for _, tg := range evaluate(scenarios(), run.Results, true) {
		got[tg.Name] = tg
	}
	want := map[string]string{
		"p99 reaction latency, settle window off, 5,000 workloads":         "PASS",
		"workload LIST requests after start":                               "PASS", // the no-op's forced relists do not count
		"PATCHes per affected workload per change set":                     "FAIL", // the extra large-objects patch
		"controller RSS with 1,000 Secrets of 500 KiB":                     "PASS",
		"patches caused by label/annotation edits and relists":             "PASS",
		"one ConfigMap to 300 Deployments fully patched, default settings": "FAIL",
		// The sample has no waves or storm results (TestSafetyTargets).
		"Deployments rolling at once, one Secret shared by 300, default cap 100": "n/a",
		"rollouts per workload in a storm of changes every 300 ms, defaults":     "n/a",
		// The large set's (TestModelDeviation).
		"live heap after sync against the memory model, large set": "n/a",
	}
	if len(got) != len(want) {
		t.Errorf("%d targets, want %d", len(got), len(want))
	}
	for name, status := range want {
		if got[name].Status != status {
			t.Errorf("%s: %s (%s), want %s", name, got[name].Status, got[name].Measured, status)
		}
	}
	// Measured at the target's own scale: no caveat.
	if n := got["controller RSS with 1,000 Secrets of 500 KiB"].Note; n != "" {
		t.Errorf("note %q, want none", n)
	}
	if n := got["p99 reaction latency, settle window off, 5,000 workloads"].Note; n != "" {
		t.Errorf("note %q, want none", n)
	}

	// Without the proxy, what needs it is not guessed at.
	for _, tg := range evaluate(scenarios(), run.Results, false) {
		if strings.Contains(tg.Name, "LIST") || strings.Contains(tg.Name, "PATCHes per") {
			if tg.Status != "n/a" {
				t.Errorf("without the proxy, %s = %s, want n/a", tg.Name, tg.Status)
			}
		}
	}
	// Nothing run: every target n/a.
	for _, tg := range evaluate(scenarios(), nil, true) {
		if tg.Status != "n/a" {
			t.Errorf("no results: %s = %s, want n/a", tg.Name, tg.Status)
		}
	}
}

// A target is checked against the results its spec selects, at whatever
// scale they ran, and says so when that is not the target's own scale.
func TestTargetSpec(t *testing.T) {
	rss := targetSpec{Name: "rss", Measure: rssPeak, Limit: 64 << 20, At: Scale{Secrets: 1000, ConfigBytes: 500 << 10}}
	small := Result{Name: "large-objects/1000x1KiB", Scenario: "large-objects", Scale: Scale{Secrets: 1000, ConfigBytes: 1 << 10},
		Memory: Memory{RSSPeak: 100 << 20}}
	quick := Result{Name: "large-objects/200x500KiB", Scenario: "large-objects", Scale: Scale{Workloads: 20, Secrets: 200, ConfigBytes: 500 << 10},
		Memory: Memory{RSSPeak: 40 << 20}}
	got := rss.check([]string{"large-objects"}, []Result{small, quick}, true)
	if got.Status != "PASS" || got.Want != "< 64 MiB" || got.Note != "measured at 20 workloads, 200 Secrets, of 500KiB" {
		t.Errorf("small configs must not count, and the scale must be noted: %+v", got)
	}
	if got := rss.check([]string{"fan-out"}, []Result{small, quick}, true); got.Status != "n/a" {
		t.Errorf("a scenario that does not state the target was checked: %+v", got)
	}

	fanOut := targetSpec{Name: "fan-out", Measure: allPatched, Limit: 1500, AtMost: true, At: Scale{Workloads: 300}, DefaultFlags: true}
	tuned := Result{Scenario: "fan-out", Flags: []string{"--kube-api-qps=500"}, Scale: Scale{Workloads: 300}, AllPatched: Latency{Count: 1, Max: 900}}
	defaults := Result{Scenario: "fan-out", Scale: Scale{Workloads: 300}, AllPatched: Latency{Count: 1, Max: 1499}, Errors: Errors{Missed: 1},
		AddedFlags: []string{noRolloutCap}}
	if got := fanOut.check([]string{"fan-out"}, []Result{tuned, defaults}, true); got.Status != "FAIL" || got.Want != "≤ 1.5 s" {
		t.Errorf("only the default flags count (the benchmark's rollout cap flag aside), and a missed workload fails the target: %+v", got)
	}
	// The point at the target's scale is read, not the first with default
	// flags, and flags added with --controller-flags are noted.
	defaults.Errors.Missed = 0
	defaults.AddedFlags = []string{noRolloutCap, "--max-concurrent-reconciles=16"}
	big := Result{Scenario: "fan-out", Scale: Scale{Workloads: 3000}, AllPatched: Latency{Count: 1, Max: 4000}}
	got = fanOut.check([]string{"fan-out"}, []Result{big, defaults}, true)
	if got.Status != "PASS" || got.Note != "with --max-concurrent-reconciles=16" {
		t.Errorf("the 300 point must be read, with its extra flags noted: %+v", got)
	}
	// With the proxy, the last PATCH accepted is what counts, not the
	// template change seen on the watch later.
	defaults.AllPatched.Max, defaults.LastPatch = 1600, Latency{Count: 1, Max: 1450}
	if got := fanOut.check([]string{"fan-out"}, []Result{defaults}, true); got.Status != "PASS" || !strings.Contains(got.Measured, "last PATCH accepted after 1.45 s") {
		t.Errorf("the last PATCH accepted must be read when the proxy saw it: %+v", got)
	}
	defaults.LastPatch.Max = 1501
	if got := fanOut.check([]string{"fan-out"}, []Result{defaults}, true); got.Status != "FAIL" {
		t.Errorf("a last PATCH after 1.501 s must fail: %+v", got)
	}

	exact := targetSpec{Name: "patches", Measure: patchesPerChange, Limit: 1, Exact: true}
	if got := exact.want(); got != "exactly 1" {
		t.Errorf("want = %q", got)
	}
	doubled := Result{Scenario: "burst", Patches: PatchCount{Expected: 2, Patches: 2, Missing: 1, Extra: 1}}
	if got := exact.check([]string{"burst"}, []Result{doubled}, true); got.Status != "FAIL" {
		t.Errorf("a missing and an extra PATCH that add up must fail: %+v", got)
	}
}

// The large set's memory target holds every scale to the documented
// model, and the worst deviation decides.
func TestModelDeviation(t *testing.T) {
	var spec targetSpec
	for _, s := range scenarios() {
		if s.name == "large-scale" {
			spec = s.targets[len(s.targets)-1]
		}
	}
	scale := Scale{Workloads: 10000, ConfigMaps: 2501, Secrets: 2500}
	predicted := documentedModel.predict(scale) // 4.5 + 52.2 + 9.0 MiB
	if predicted < 65<<20 || predicted > 66<<20 {
		t.Fatalf("the model predicts %s at %+v", mib(predicted), scale)
	}
	near := Result{Name: "large-scale/10000", Scenario: "large-scale", Scale: scale, Memory: Memory{LiveAfterSync: 1.1 * predicted}}
	far := Result{Name: "large-scale/50000", Scenario: "large-scale", Scale: Scale{Workloads: 50000, ConfigMaps: 2501, Secrets: 2500}}
	far.Memory.LiveAfterSync = 0.7 * documentedModel.predict(far.Scale)
	got := spec.check([]string{"large-scale"}, []Result{near}, true)
	if got.Status != "PASS" || got.Want != "≤ 20%" || !strings.Contains(got.Measured, "(+10%)") {
		t.Errorf("10%% over the model must pass: %+v", got)
	}
	got = spec.check([]string{"large-scale"}, []Result{near, far}, true)
	if got.Status != "FAIL" || !strings.Contains(got.Measured, "(-30%)") {
		t.Errorf("30%% under the model at one scale must fail: %+v", got)
	}
}

func TestCompareRuns(t *testing.T) {
	a := sampleRun()
	b := sampleRun()
	b.Results[0].AllPatched.Max = 1450 // ten times faster
	b.Results = b.Results[:2]          // B lacks the rest
	b.Results[1].Name = "high-cardinality/500"
	var got comparison
	n := 0
	for _, c := range compareRuns(a, b) {
		if c.scenario == "fan-out/300-defaults" && c.metric == "all patched" {
			got = c
		}
		if c.scenario == "large-objects/1000x500KiB" {
			t.Errorf("compared a scenario B does not have: %+v", c)
		}
		n++
	}
	if !strings.Contains(fmt.Sprint(compareRuns(a, b)), "high-cardinality/5000 vs high-cardinality/500") {
		t.Error("results of one scenario at two scales were not paired")
	}
	if got.a != 14500 || got.b != 1450 || ratio(got.a, got.b) != "0.10x" {
		t.Errorf("all patched: %+v, ratio %s", got, ratio(got.a, got.b))
	}
	if n == 0 {
		t.Fatal("no comparisons")
	}
	if ratio(0, 0) != "=" || ratio(0, 5) != "–" {
		t.Errorf("ratio with zero: %q %q", ratio(0, 0), ratio(0, 5))
	}

	a.Results[1].Startup.FirstReload = &FirstReload{Ms: 20}
	b.Results[1].Startup.FirstReload = &FirstReload{Missed: true}
	if !strings.Contains(comparisonText("A.json", "B.json", a, b), "| first reload after start | 20 ms | missed | – |") {
		t.Errorf("a missed first reload is not compared as such:\n%s", comparisonText("A.json", "B.json", a, b))
	}

	text := comparisonText("A.json", "B.json", a, b)
	if !strings.Contains(text, "| fan-out/300-defaults | all patched | 14.50 s | 1.45 s | 0.10x |") {
		t.Errorf("comparison output:\n%s", text)
	}
}

func TestReportFiles(t *testing.T) {
	run := sampleRun()
	run.Targets = evaluate(scenarios(), run.Results, true)
	if m, ok := fitMemory(run.Results); ok {
		run.MemoryModel = &m
	}
	run.Results = append(run.Results, Result{Name: "large-scale/10000", Scenario: "large-scale", Updates: 100, RequestsTotal: 450,
		Scale:   Scale{Workloads: 10000, ConfigMaps: 2501, Secrets: 2500},
		Startup: Startup{ReadyS: 3, BaselineS: 20, FirstReload: &FirstReload{Missed: true, TimeoutS: 60}},
		Restart: &Startup{ReadyS: 2.5, FirstReload: &FirstReload{Ms: 12}}})
	md := markdown(run)
	for _, want := range []string{"## Targets", "| fan-out/300-defaults |", "**FAIL**", "## Start-up", "## API requests",
		"## Large scale", "| large-scale/10000 | 3.00 s | 20.00 s | **missed** / 12 ms | 100 |", "| 4.5 |", "(restart) | 2.50 s |"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q", want)
		}
	}

	path := filepath.Join(t.TempDir(), "results.json")
	if err := writeJSON(path, run); err != nil {
		t.Fatal(err)
	}
	back, err := readRun(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Results) != len(run.Results) || back.Results[0].AllPatched.Max != 14500 {
		t.Errorf("JSON round trip lost data: %+v", back.Results[0])
	}
}

func TestSafetyTargets(t *testing.T) {
	var peak, storm targetSpec
	for _, s := range scenarios() {
		switch s.name {
		case "waves":
			peak = s.targets[0]
		case "storm":
			storm = s.targets[0]
		}
	}
	atCap := Result{Name: "waves/300-defaults", Scenario: "waves", Scale: Scale{Workloads: 300}, Safety: &Safety{PeakInProgress: 100, CompleteS: 20}}
	uncapped := Result{Name: "waves/300-cap0", Scenario: "waves", Flags: []string{"--max-concurrent-rollouts=0"}, Scale: Scale{Workloads: 300}, Safety: &Safety{PeakInProgress: 300}}
	if got := peak.check([]string{"waves"}, []Result{uncapped, atCap}, true); got.Status != "PASS" || got.Want != "≤ 100" {
		t.Errorf("a peak at the cap must pass, and only the defaults count: %+v", got)
	}
	atCap.Safety.PeakInProgress = 101
	if got := peak.check([]string{"waves"}, []Result{atCap}, true); got.Status != "FAIL" {
		t.Errorf("a peak over the cap must fail: %+v", got)
	}

	held := Result{Name: "storm/1-defaults", Scenario: "storm", NewReplicaSets: 3, RolloutsPerChangeSet: 3, Updates: 100, Safety: &Safety{FinalS: 10.5}}
	if got := storm.check([]string{"storm"}, []Result{held}, true); got.Status != "PASS" {
		t.Errorf("3 rollouts in a storm must pass: %+v", got)
	}
	held.NewReplicaSets, held.RolloutsPerChangeSet = 4, 4
	if got := storm.check([]string{"storm"}, []Result{held}, true); got.Status != "FAIL" {
		t.Errorf("4 rollouts in a storm must fail: %+v", got)
	}

	md := markdown(Run{Results: []Result{atCap, held}})
	for _, want := range []string{"## Safety at scale", "| waves/300-defaults | defaults | 0 | 101 of 300 | 20.0 s | – |", "| storm/1-defaults | defaults | 100 | – | – | 10.5 s | 4.00 (4 ReplicaSets) |"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
}
