// Command ripple-bench measures a reload controller (Ripple by default) on
// a local Kubernetes control plane it starts itself, or on any cluster given
// with --kubeconfig (`make bench`):
//
//	go run ./hack/bench --ripple bin/ripple            # the default set, ~6 min
//	go run ./hack/bench --ripple bin/ripple --quick    # a reduced set, < 3 min
//	go run ./hack/bench --compare A.json B.json        # two runs side by side
//
// Six scenarios, each against a fresh etcd and kube-apiserver (the burst
// scenario against the full local cluster, so rollouts create real
// ReplicaSets): fan-out of one ConfigMap to many Deployments, high
// cardinality, large Secrets, a burst of updates, no-op churn (metadata
// edits and forced relists) and cold start.
//
// The controller runs as a child process (--controller-cmd, so any binary
// can be measured with the same scenarios) and reaches the API server
// through a small proxy in this process, which counts its requests by verb
// and resource and times its PATCHes; a watch timestamps every template
// change. Reaction latency runs from an update's acknowledgement to the
// template change seen on that watch. Memory is read from /proc and the Go
// heap from the controller's /metrics.
//
// Each run writes results.md, results.json and chart.svg to a results
// directory (default ./bench-results/<timestamp>/) with the controller's
// logs, checks the acceptance targets of issue 8, and stops everything it
// started on every path.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/ripple-dev/ripple/test/cluster"
)

func main() {
	// The first SIGINT or SIGTERM cancels the run, which then cleans up;
	// later ones are ignored so a second Ctrl-C cannot leave processes
	// behind.
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sigs
		fmt.Fprintf(os.Stderr, "\n%s: stopping the benchmark and cleaning up...\n", s)
		cancel(fmt.Errorf("interrupted (%s)", s))
	}()
	// envtest logs through controller-runtime's logger and warns, with a
	// stack trace, when none is set; the benchmark has nothing to learn
	// from it.
	ctrllog.SetLogger(logr.Discard())
	err := run(ctx, os.Args[1:], os.Stdout)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "ripple-bench: %v\n", err)
		os.Exit(1)
	}
}

// scenarioNames are the scenarios in the order they run.
func scenarioNames() []string {
	return []string{"fan-out", "high-cardinality", "large-objects", "burst", "no-op", "cold-start"}
}

func run(ctx context.Context, args []string, out io.Writer) (err error) {
	fs := flag.NewFlagSet("ripple-bench", flag.ContinueOnError)
	fs.SetOutput(out)
	quick := fs.Bool("quick", false, "run the reduced set (smaller scales, under 3 minutes on 2 cores)")
	only := fs.String("scenarios", strings.Join(scenarioNames(), ","), "comma-separated scenarios to run")
	outDir := fs.String("out", "", "results directory (default ./bench-results/<timestamp>)")
	ripple := fs.String("ripple", "bin/ripple", "the ripple binary, {ripple} in --controller-cmd")
	controllerCmd := fs.String("controller-cmd", defaultControllerCmd,
		"controller command line; {kubeconfig}, {metrics-addr}, {health-addr} and {ripple} are substituted, and a word {flags} becomes the scenario's Ripple flags (omit it for another controller). KUBECONFIG is set too")
	kubeconfig := fs.String("kubeconfig", "", "benchmark on this cluster instead of starting local control planes (objects are created in namespaces labelled "+benchLabel+"=true and deleted)")
	useProxy := fs.Bool("proxy", true, "route the controller through the counting proxy (needed for per-verb request counts, per-workload PATCH counts and forced relists)")
	baseline := fs.String("baseline-annotation", "ripple.dev/applied", "annotation the controller writes on a workload it has taken in; the benchmark waits for it on every workload before measuring (empty: wait --warmup instead)")
	warmup := fs.Duration("warmup", 10*time.Second, "wait after ready when --baseline-annotation is empty")
	seed := fs.Uint64("seed", 1, "seed of the random choices (which configs change)")
	timeout := fs.Duration("timeout", 0, "give up after this long (default 10m with --quick, 30m otherwise)")
	failOnTarget := fs.Bool("fail-on-target", false, "exit 1 when a target is missed")
	compare := fs.Bool("compare", false, "compare two results files: ripple-bench --compare A.json B.json")
	render := fs.String("render", "", "rewrite results.md and chart.svg beside this results.json, without running anything")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *render != "" {
		run, err := readRun(*render)
		if err != nil {
			return err
		}
		return writeReports(filepath.Dir(*render), run)
	}

	if *compare {
		if fs.NArg() != 2 {
			return errors.New("--compare needs two results files: --compare A.json B.json")
		}
		a, err := readRun(fs.Arg(0))
		if err != nil {
			return err
		}
		b, err := readRun(fs.Arg(1))
		if err != nil {
			return err
		}
		writeComparison(out, fs.Arg(0), fs.Arg(1), a, b)
		return nil
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}

	var selected []string
	for _, s := range strings.Split(*only, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		if !slices.Contains(scenarioNames(), s) {
			return fmt.Errorf("--scenarios: unknown scenario %q; known: %s", s, strings.Join(scenarioNames(), ", "))
		}
		selected = append(selected, s)
	}
	words, err := splitCommand(*controllerCmd)
	if err != nil {
		return fmt.Errorf("--controller-cmd: %w", err)
	}
	vars := map[string]string{}
	if strings.Contains(*controllerCmd, "{ripple}") {
		bin, err := filepath.Abs(*ripple)
		if err != nil {
			return err
		}
		if info, err := os.Stat(bin); err != nil || info.IsDir() {
			return fmt.Errorf("the ripple binary %s is missing: run 'make build' or pass --ripple", bin)
		}
		vars["ripple"] = bin
	}
	if *kubeconfig == "" {
		if _, err := cluster.ToolsDir(); err != nil {
			return err
		}
	}

	set, p := "default", defaultPlan()
	if *quick {
		set, p = "quick", quickPlan()
	}
	if *timeout == 0 {
		*timeout = 30 * time.Minute
		if *quick {
			*timeout = 10 * time.Minute
		}
	}
	ctx, cancel := context.WithTimeoutCause(ctx, *timeout, fmt.Errorf("the benchmark did not finish within %s", *timeout))
	defer cancel()

	started := time.Now()
	dir := *outDir
	if dir == "" {
		dir = filepath.Join("bench-results", started.Format("20060102-150405"))
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return err
	}
	logDir := filepath.Join(dir, "logs")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return err
	}
	// Registered first, so it runs after every cleanup: the benchmark must
	// leave no process behind.
	defer func() {
		if left := cluster.Descendants(); len(left) > 0 {
			err = errors.Join(err, fmt.Errorf("processes left behind after cleanup: %v", left))
		}
	}()

	nsPrefix := "rb"
	if *kubeconfig != "" {
		nsPrefix = "rb-" + started.Format("150405")
	}
	r := &runner{
		out: out, logDir: logDir, kubeconfig: *kubeconfig, command: words, vars: vars,
		proxy: *useProxy, baseline: *baseline, warmup: *warmup, seed: *seed, nsPrefix: nsPrefix,
	}
	fmt.Fprintf(out, "ripple-bench: %s set, scenarios %s\ncontroller: %s\nresults: %s\n", set, strings.Join(selected, ", "), *controllerCmd, dir)
	mach := machine()
	if mach.LoadBefore > float64(mach.CPUs) {
		fmt.Fprintf(out, "warning: load average %.1f on %d CPUs: other work on this machine will make the numbers noisy\n", mach.LoadBefore, mach.CPUs)
	}
	version := ""
	if bin := vars["ripple"]; bin != "" {
		if b, err := exec.CommandContext(ctx, bin, "version").Output(); err == nil {
			version = strings.TrimSpace(string(b))
		}
	}

	var results []Result
	for _, name := range selected {
		if ctx.Err() != nil {
			break
		}
		switch name {
		case "fan-out":
			for _, pt := range p.FanOut {
				results = append(results, r.fanOut(ctx, pt))
			}
		case "high-cardinality":
			results = append(results, r.highCardinality(ctx, p.HighCard))
		case "large-objects":
			for _, lp := range p.Large {
				results = append(results, r.largeObjects(ctx, lp))
			}
		case "burst":
			results = append(results, r.burst(ctx, p.Burst))
		case "no-op":
			results = append(results, r.noOp(ctx, p.NoOp))
		case "cold-start":
			results = append(results, r.coldStart(ctx, p.ColdStart))
		}
	}

	runDoc := Run{
		Started:           started.Format(time.RFC3339),
		Command:           strings.Join(append([]string{"ripple-bench"}, args...), " "),
		Set:               set,
		Controller:        words,
		ControllerVersion: version,
		Proxy:             *useProxy,
		Machine:           mach,
		DurationS:         round3(time.Since(started).Seconds()),
		Results:           results,
		Targets:           evaluate(results, *useProxy),
	}
	runDoc.Machine.LoadAfter = loadAverage()
	if st, err := readStatus(os.Getpid()); err == nil {
		runDoc.Machine.BenchRSSPeak = st["VmHWM"]
	}
	if m, ok := fitMemory(results); ok {
		runDoc.MemoryModel = &m
	}
	if err := writeJSON(filepath.Join(dir, "results.json"), runDoc); err != nil {
		return err
	}
	if err := writeReports(dir, runDoc); err != nil {
		return err
	}

	fmt.Fprintln(out)
	writeMarkdown(out, runDoc)
	fmt.Fprintf(out, "\nripple-bench finished in %.1fs. Results:\n  %s\n  %s\n  %s\n  logs: %s\n",
		runDoc.DurationS, filepath.Join(dir, "results.md"), filepath.Join(dir, "results.json"), filepath.Join(dir, "chart.svg"), logDir)

	if cause := context.Cause(ctx); cause != nil {
		return cause
	}
	var failed []string
	for _, res := range results {
		if res.Errors.Failure != "" {
			failed = append(failed, res.Name)
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("scenarios that could not finish: %s", strings.Join(failed, ", "))
	}
	if *failOnTarget {
		for _, t := range runDoc.Targets {
			if t.Status == "FAIL" {
				return errors.New("targets missed (see the results)")
			}
		}
	}
	return nil
}

// loadAverage returns the 1-minute load average.
func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}

// machine describes this machine for the record.
func machine() Machine {
	m := Machine{CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), LoadBefore: loadAverage()}
	if f, err := os.Open("/proc/meminfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
				if kb, err := strconv.Atoi(strings.Fields(v)[0]); err == nil {
					m.MemoryGiB = (kb + 1<<19) >> 20
				}
			}
		}
		f.Close()
	}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	return m
}

// writeReports writes results.md and chart.svg for a run into dir.
func writeReports(dir string, run Run) error {
	for name, write := range map[string]func(io.Writer, Run){"results.md": writeMarkdown, "chart.svg": writeChart} {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		write(f, run)
		if err := f.Close(); err != nil {
			return err
		}
	}
	return nil
}
