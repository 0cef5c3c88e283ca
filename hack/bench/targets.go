package main

import (
	"fmt"
	"strings"
)

// evaluate checks the acceptance targets of issue 8 against a run's
// results. A target whose scenario did not run, or ran at another scale, is
// still reported, with the scale in its note, so a quick run says what it
// can.
func evaluate(results []Result, proxied bool) []Target {
	find := func(scenario string, match func(Result) bool) (Result, bool) {
		for _, r := range results {
			if r.Scenario == scenario && (match == nil || match(r)) {
				return r, true
			}
		}
		return Result{}, false
	}
	status := func(ok bool) string {
		if ok {
			return "PASS"
		}
		return "FAIL"
	}
	var out []Target

	// 1. Reaction latency at scale.
	t := Target{Name: "p99 reaction latency, settle window off, 5,000 workloads", Want: "< 100 ms", Status: "n/a"}
	if r, ok := find("high-cardinality", nil); ok && r.Latency.Count > 0 {
		t.Measured = fmt.Sprintf("p99 %s over %d changes (%d missed)", ms(r.Latency.P99), r.Latency.Count, r.Errors.Missed)
		t.Status = status(r.Latency.P99 < 100 && r.Errors.Missed == 0 && r.Errors.Failure == "")
		if r.Scale.Workloads != 5000 {
			t.Note = fmt.Sprintf("measured at %d workloads", r.Scale.Workloads)
		}
	}
	out = append(out, t)

	// 2. No workload LIST after start.
	t = Target{Name: "workload LIST requests after start", Want: "0", Status: "n/a"}
	if proxied {
		lists, scenarios := 0, 0
		var where []string
		for _, r := range results {
			// The no-op scenario forces relists on purpose; those are
			// the controller's informers doing their job.
			if (r.Errors.Failure != "" && r.RequestsTotal == 0) || r.ForcedRelists > 0 {
				continue
			}
			scenarios++
			lists += r.WorkloadLists
			if r.WorkloadLists > 0 {
				where = append(where, fmt.Sprintf("%s: %d", r.Name, r.WorkloadLists))
			}
		}
		if scenarios > 0 {
			t.Measured = fmt.Sprintf("%d across %d scenarios", lists, scenarios)
			t.Status = status(lists == 0)
			if len(where) > 0 {
				t.Note = strings.Join(where, "; ")
			}
			t.Note = joinNote(t.Note, "LIST and WatchList (streaming list) requests for Deployments, StatefulSets, DaemonSets after /readyz, excluding relists the no-op scenario forces")
		}
	} else {
		t.Note = "needs the proxy (--proxy) to tell LIST from GET and WATCH"
	}
	out = append(out, t)

	// 3. One PATCH per affected workload per change set.
	t = Target{Name: "PATCHes per affected workload per change set", Want: "exactly 1", Status: "n/a"}
	if proxied {
		var pc PatchCount
		var bad []string
		n := 0
		for _, r := range results {
			switch r.Scenario {
			case "fan-out", "high-cardinality", "large-objects", "burst":
			default:
				continue
			}
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
		if n > 0 {
			t.Measured = fmt.Sprintf("%d PATCHes for %d (workload, change set) pairs in %d scenarios; missing %d, extra %d, unrelated %d",
				pc.Patches, pc.Expected, n, pc.Missing, pc.Extra, pc.Unrelated)
			t.Status = status(pc.Exact())
			t.Note = strings.Join(bad, "; ")
		}
	} else {
		t.Note = "needs the proxy (--proxy) to count PATCH requests per workload"
	}
	out = append(out, t)

	// 4. Memory with large Secrets.
	t = Target{Name: "controller RSS with 1,000 Secrets of 500 KiB", Want: "< 64 MiB (peak)", Status: "n/a"}
	if r, ok := find("large-objects", func(r Result) bool { return r.Scale.ConfigBytes >= 500<<10 }); ok && r.Memory.RSSPeak > 0 {
		t.Measured = fmt.Sprintf("peak %s, steady %s", mib(r.Memory.RSSPeak), mib(r.Memory.RSSSteady))
		t.Status = status(r.Memory.RSSPeak < 64<<20)
		if r.Scale.Secrets != 1000 {
			t.Note = fmt.Sprintf("measured with %d Secrets", r.Scale.Secrets)
		}
	}
	out = append(out, t)

	// 5. No-op churn.
	t = Target{Name: "patches caused by label/annotation edits and relists", Want: "0", Status: "n/a"}
	if r, ok := find("no-op", nil); ok && r.Errors.Failure == "" {
		t.Measured = fmt.Sprintf("%d PATCH requests, %d template changes after %d edits and %d forced relists",
			r.PatchAttempts, r.TemplateChanges, r.Edits, r.ForcedRelists)
		t.Status = status(r.PatchAttempts == 0 && r.TemplateChanges == 0)
	}
	out = append(out, t)

	// 6. Fan-out with default flags.
	t = Target{Name: "one ConfigMap to 300 Deployments fully patched, default settings", Want: "< 3 s", Status: "n/a"}
	if r, ok := find("fan-out", func(r Result) bool { return len(r.Flags) == 0 }); ok && r.AllPatched.Count > 0 {
		t.Measured = fmt.Sprintf("%s (worst of %d change sets); first patch after %s, then %.1f patches/s",
			seconds(r.AllPatched.Max), r.AllPatched.Count, seconds(r.FirstPatch.Max), r.PatchRate)
		t.Status = status(r.AllPatched.Max < 3000 && r.Errors.Missed == 0)
		if r.Scale.Workloads != 300 {
			t.Note = fmt.Sprintf("measured at %d Deployments", r.Scale.Workloads)
		}
	}
	out = append(out, t)
	return out
}

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + ". " + b
}
