package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// writeReport writes report.md and report.svg to o.out.
func writeReport(o options, r *results) error {
	var svg strings.Builder
	plot(&svg, r)
	if err := os.WriteFile(filepath.Join(o.out, "report.svg"), []byte(svg.String()), 0o644); err != nil {
		return err
	}
	var csv strings.Builder
	csv.WriteString("seconds,run,live_heap_bytes,rss_bytes,goroutines\n")
	for _, s := range r.Mem {
		fmt.Fprintf(&csv, "%.1f,%d,%.0f,%.0f,%.0f\n", s.At.Sub(r.Start).Seconds(), s.Run, s.Live, s.RSS, s.Goroutine)
	}
	if err := os.WriteFile(filepath.Join(o.out, "memory.csv"), []byte(csv.String()), 0o644); err != nil {
		return err
	}
	var md strings.Builder
	report(&md, o, r)
	return os.WriteFile(filepath.Join(o.out, "report.md"), []byte(md.String()), 0o644)
}

func verdict(ok bool) string {
	if ok {
		return "pass"
	}
	return "**FAIL**"
}

// report writes the one-page summary.
func report(w *strings.Builder, o options, r *results) {
	kinds := map[string]int{}
	for _, f := range r.Faults {
		kinds[f.Kind]++
	}
	fmt.Fprintf(w, "# Soak: %s\n\n", verdict(r.passed()))
	fmt.Fprintf(w, "%s to %s UTC, %s of faults (`go run ./hack/soak --duration %s --seed %d`), on a local cluster (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, one kwok node) on %d cores (load average %s at the start, %s at the end; anything else running on the machine counts in it): the latencies are this machine's, not Ripple's alone.\n\n",
		r.Start.UTC().Format("2006-01-02 15:04"), r.End.UTC().Format("15:04"), o.duration, o.duration, o.seed, runtime.NumCPU(), r.Load[0], r.Load[1])
	fmt.Fprintf(w, "%d Deployments (no replicas) over %d ConfigMaps in %d namespaces, each read by %d. Ripple with `%s` and otherwise its default flags (settle window 1 s).\n\n",
		o.workloads, o.configs, o.namespaces, o.workloads/o.configs, o.rippleFlags)
	fmt.Fprintf(w, "| what | count |\n|---|---|\n")
	fmt.Fprintf(w, "| config changes (one every %s, a config at most once a minute) | %d |\n", o.changeEvery, len(r.Changes))
	fmt.Fprintf(w, "| Ripple killed with SIGKILL / crashed by itself | %d / %d |\n", kinds["kill"], kinds["crash"])
	fmt.Fprintf(w, "| API server killed and restarted | %d |\n", kinds["api-restart"])
	fmt.Fprintf(w, "| competing writer (manager soak-writer): annotations / pod-template edits / failed | %d / %d / %d |\n", r.Writes.meta, r.Writes.template, r.Writes.failed)
	fmt.Fprintf(w, "| `kubectl rollout undo` made / seen changing the digest | %d / %d |\n\n", r.UndosMade, r.UndosSeen)
	fmt.Fprintf(w, "## Exactly once\n\nRead, after Ripple caught up (%s), twice: from every Deployment's ReplicaSets (its revisions, all kept; the Deployment controller makes none for a template replaced before it synced) and from the soak's watch of the Deployments (every version it delivered; a relist after the API server's restart skips some). A change is applied when either shows it; twice, undone or a wrong record in either fails.\n\n", yes(r.CaughtUp, "within 3 minutes", "**not within 3 minutes**"))
	fmt.Fprintf(w, "| check | result | |\n|---|---|---|\n")
	fmt.Fprintf(w, "| changes × readers applied | %d of %d | %s |\n", r.Once, r.Expected, verdict(r.Once == r.Expected))
	fmt.Fprintf(w, "| of which by another writer's pod-template change after the config's (Ripple records it, ReloadSkipped) | %d | |\n", r.ByOtherWriter)
	fmt.Fprintf(w, "| lost (never applied) | %d | %s |\n", r.Lost, verdict(r.Lost == 0))
	fmt.Fprintf(w, "| applied twice (an earlier digest back, not by an undo), by revision / by watch | %d / %d | %s |\n", r.Twice[0], r.Twice[1], verdict(r.Twice == [2]int{}))
	fmt.Fprintf(w, "| undos rolled forward by Ripple, by revision / by watch | %d / %d | %s |\n", r.Undone[0], r.Undone[1], verdict(r.Undone == [2]int{}))
	fmt.Fprintf(w, "| rollouts whose applied record is not their digest, by revision / by watch | %d / %d | %s |\n", r.Records[0], r.Records[1], verdict(r.Records == [2]int{}))
	fmt.Fprintf(w, "| Deployments whose pods Ripple records reading other than their config's last data (record, or alias) | %d | %s |\n\n", r.RecordStale, verdict(r.RecordStale == 0))
	for _, p := range r.Problems {
		fmt.Fprintf(w, "- %s\n", p)
	}
	latencyTable(w, r)
	memoryTable(w, r)
	fmt.Fprintf(w, "\n![latency and memory over time](report.svg)\n")
	if len(r.Notes) > 0 {
		fmt.Fprintf(w, "\n## Notes\n\n")
		for _, n := range r.Notes {
			fmt.Fprintf(w, "- %s\n", n)
		}
	}
}

func yes(ok bool, a, b string) string {
	if ok {
		return a
	}
	return b
}

// latencyTable writes the quantiles of the changes' latencies: from the
// write to the last reader showing it, on the soak's own watch.
func latencyTable(w *strings.Builder, r *results) {
	var all, calm []float64
	incomplete := 0
	for _, l := range r.Latency {
		if !l.Complete {
			incomplete++
			continue
		}
		all = append(all, l.Max.Seconds())
		if !l.NearFault {
			calm = append(calm, l.Max.Seconds())
		}
	}
	fmt.Fprintf(w, "\n## Latency\n\nFrom a change's write to the last of its readers showing it (the soak's watch; %d changes not timed: a reader's version skipped by a relist, or undone first).\n\n", incomplete)
	fmt.Fprintf(w, "| changes | n | p50 | p95 | p99 | max |\n|---|---|---|---|---|---|\n")
	for _, row := range []struct {
		name string
		v    []float64
	}{{"all", all}, {"no fault within 30 s", calm}} {
		fmt.Fprintf(w, "| %s | %d | %.2f s | %.2f s | %.2f s | %.2f s |\n", row.name, len(row.v),
			quantile(row.v, 0.5), quantile(row.v, 0.95), quantile(row.v, 0.99), quantile(row.v, 1))
	}
}

// memoryTable writes the growth of Ripple's memory and goroutines.
func memoryTable(w *strings.Builder, r *results) {
	live := r.growthOf(func(s memSample) float64 { return s.Live })
	fmt.Fprintf(w, "\n## Memory and goroutines\n\nRipple's /metrics every 5 s (%d samples; %d of them, in %d runs, past their run's warm-up). A run's warm-up is left out: what Ripple keeps per workload (its memory of each, client-go's Event correlation caches, the work queues' maps) fills with each workload's first rollout in the run and is bounded by the workloads, so it lasts until every config has changed in the run (they change in turn) and %s more for their rollouts, and at least its first %s. The slope within runs is pooled over the runs (a restart's drop is no trend), the slope across runs is that of each run's mean; ± is two standard errors. Flat: neither slope shown to exceed 10 %% of the mean per hour (its interval reaches below that). The verdict judges the live heap and the goroutines, where anything Ripple kept would show; the resident memory follows the heap's goal (twice the live heap at GOGC=100) and when the Go runtime returns freed pages, and is shown, not judged.\n\n",
		len(r.Mem), live.Samples, live.Runs, rolloutMargin, warmUp)
	fmt.Fprintf(w, "| value | mean | slope within runs | slope across runs | |\n|---|---|---|---|---|\n")
	for _, row := range []struct {
		name   string
		value  func(memSample) float64
		unit   float64
		fmt    string
		judged bool
	}{
		{"live heap (go_gc_heap_live_bytes)", func(s memSample) float64 { return s.Live }, 1 << 20, "%.1f MiB", true},
		{"resident memory", func(s memSample) float64 { return s.RSS }, 1 << 20, "%.1f MiB", false},
		{"goroutines", func(s memSample) float64 { return s.Goroutine }, 1, "%.0f", true},
	} {
		g := r.growthOf(row.value)
		v := "not judged"
		if row.judged {
			v = verdict(g.Flat())
		}
		fmt.Fprintf(w, "| %s | "+row.fmt+" | "+row.fmt+" ± "+row.fmt+"/h | "+row.fmt+" ± "+row.fmt+"/h | %s |\n", row.name, g.Mean/row.unit,
			g.WithinPerHour/row.unit, 2*g.WithinSE/row.unit, g.AcrossPerHour/row.unit, 2*g.AcrossSE/row.unit, v)
	}
}

// The plot's geometry: two panels, latency above memory.
const (
	plotW, plotH       = 900, 560
	left, right        = 70, 20
	panelH             = 200
	latencyTop, memTop = 40, 320
)

// plot draws the latency of each change and Ripple's memory over time,
// with the faults as vertical lines.
func plot(w *strings.Builder, r *results) {
	span := max(r.End.Sub(r.Start).Seconds(), 1)
	x := func(sec float64) float64 { return left + (plotW-left-right)*sec/span }
	fmt.Fprintf(w, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", plotW, plotH)
	fmt.Fprintf(w, `<rect width="%d" height="%d" fill="white"/>`+"\n", plotW, plotH)
	var latMax float64
	for _, l := range r.Latency {
		latMax = max(latMax, l.Max.Seconds())
	}
	latMax = niceCeil(latMax)
	axes(w, latencyTop, "latency to every reader (s)", latMax, x, span)
	for _, l := range r.Latency {
		if !l.Complete {
			continue
		}
		color := "#1f77b4"
		if l.NearFault {
			color = "#ff7f0e"
		}
		fmt.Fprintf(w, `<circle cx="%.1f" cy="%.1f" r="1.6" fill="%s"/>`+"\n", x(l.At.Seconds()), latencyTop+panelH-panelH*l.Max.Seconds()/latMax, color)
	}
	memPanel(w, r, x, span)
	for _, f := range r.Faults {
		color := map[string]string{"kill": "#d62728", "api-restart": "#9467bd", "crash": "black"}[f.Kind]
		for _, top := range []float64{latencyTop, memTop} {
			fmt.Fprintf(w, `<line x1="%.1f" x2="%.1f" y1="%.0f" y2="%.0f" stroke="%s" stroke-dasharray="4 3"/>`+"\n", x(f.At.Sub(r.Start).Seconds()), x(f.At.Sub(r.Start).Seconds()), top, top+panelH, color)
		}
	}
	fmt.Fprintf(w, `<text x="%d" y="%d">dots: a change (orange: a fault within 30 s); dashed: Ripple killed (red), API server restarted (purple), crash (black); lines: live heap (blue), resident memory (grey)</text>`+"\n", left, plotH-12)
	fmt.Fprintln(w, "</svg>")
}

// memPanel draws the live heap and resident memory, one line per run.
func memPanel(w *strings.Builder, r *results, x func(float64) float64, span float64) {
	var memMax float64
	for _, s := range r.Mem {
		memMax = max(memMax, s.RSS/(1<<20), s.Live/(1<<20))
	}
	memMax = niceCeil(memMax)
	axes(w, memTop, "Ripple's memory (MiB)", memMax, x, span)
	y := func(bytes float64) float64 { return memTop + panelH - panelH*bytes/(1<<20)/memMax }
	for _, line := range []struct {
		color string
		value func(memSample) float64
	}{{"#7f7f7f", func(s memSample) float64 { return s.RSS }}, {"#1f77b4", func(s memSample) float64 { return s.Live }}} {
		var pts []string
		for i, s := range r.Mem {
			if i > 0 && s.Run != r.Mem[i-1].Run {
				polyline(w, pts, line.color)
				pts = nil
			}
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(s.At.Sub(r.Start).Seconds()), y(line.value(s))))
		}
		polyline(w, pts, line.color)
	}
}

func polyline(w *strings.Builder, pts []string, color string) {
	if len(pts) > 0 {
		fmt.Fprintf(w, `<polyline points="%s" fill="none" stroke="%s" stroke-width="1.2"/>`+"\n", strings.Join(pts, " "), color)
	}
}

// axes draws a panel's frame, its title, four y ticks up to top and a
// tick every five minutes (every minute under ten) on the time axis.
func axes(w *strings.Builder, y0 float64, title string, top float64, x func(float64) float64, span float64) {
	fmt.Fprintf(w, `<text x="%d" y="%.0f" font-weight="bold">%s</text>`+"\n", left, y0-10, title)
	fmt.Fprintf(w, `<rect x="%d" y="%.0f" width="%d" height="%d" fill="none" stroke="#333"/>`+"\n", left, y0, plotW-left-right, panelH)
	for i := 0; i <= 4; i++ {
		v := top * float64(i) / 4
		yy := y0 + panelH - panelH*float64(i)/4
		fmt.Fprintf(w, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", left-6, yy+4, trimFloat(v))
		fmt.Fprintf(w, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", left, plotW-right, yy, yy)
	}
	step := 5 * time.Minute
	if span < 600 {
		step = time.Minute
	}
	for t := time.Duration(0); t.Seconds() <= span; t += step {
		fmt.Fprintf(w, `<text x="%.1f" y="%.0f" text-anchor="middle">%dm</text>`+"\n", x(t.Seconds()), y0+panelH+16, int(t.Minutes()))
	}
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten (1 for nothing).
func niceCeil(v float64) float64 {
	if v <= 0 || math.IsNaN(v) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

func trimFloat(v float64) string {
	s := fmt.Sprintf("%.2f", v)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s
}
