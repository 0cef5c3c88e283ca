// Command ripple-bench measures a reload controller (Ripple by default) on
// a local Kubernetes control plane it starts itself, or on any cluster given
// with --kubeconfig (`make bench`):
//
//	go run ./hack/bench --ripple bin/ripple            # the default set, ~10 min
//	go run ./hack/bench --ripple bin/ripple --quick    # a reduced set, ~8 min
//	go run ./hack/bench --ripple bin/ripple --large    # 10,000 and 50,000 workloads
//	go run ./hack/bench --compare A.json B.json        # two runs side by side
//
// Each scenario runs against a fresh etcd and kube-apiserver (burst, waves
// and storm against the full local cluster, so rollouts create real
// ReplicaSets): fan-out of one ConfigMap to many Deployments, high
// cardinality, large Secrets, a burst of updates, no-op churn (metadata
// edits and forced relists), cold start with a first reload, the rollout
// cap's waves, a storm of changes, and, in the large set, cold start,
// memory and latency at 10,000 and 50,000 workloads.
//
// The controller runs as a child process (--controller-cmd, so any binary
// can be measured with the same scenarios) and reaches the API server
// through a small proxy in this process, which counts its requests by verb
// and resource and times its PATCHes; a watch timestamps every template
// change. Reaction latency runs from an update's acknowledgement to the
// template change seen on that watch. Memory is read from /proc and the Go
// heap from the controller's /metrics.
//
// Each run writes results.md and results.json to a results directory
// (default ./bench-results/<timestamp>/) with the controller's logs, checks
// the acceptance targets of issue 8 that the scenario definitions state
// (plan.go), and stops everything it started on every path.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
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

	"github.com/ripple-dev/ripple/hack/cluster"
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
		newLogger(os.Stderr).Warn("stopping the benchmark and cleaning up", "signal", s)
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

// newLogger logs progress as text lines with the time of day: the
// benchmark's output is read by people while it runs.
func newLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey && len(groups) == 0 {
				a.Value = slog.StringValue(a.Value.Time().Format("15:04:05.000"))
			}
			return a
		},
	}))
}

// options are the command's flags.
type options struct {
	quick, large, proxy, failOnTarget, compare bool
	waves                                      int
	wavesCaps, fanOut, largeScales             string
	controllerFlags, workloadAnnotations       string
	only, outDir, ripple, controllerCmd        string
	kubeconfig, baseline, render               string
	warmup, timeout                            time.Duration
	seed                                       uint64
}

func (o *options) bindFlags(fs *flag.FlagSet) {
	fs.BoolVar(&o.quick, "quick", false, "run the reduced set (smaller scales, about 8 minutes on 2 cores)")
	fs.BoolVar(&o.large, "large", false, "run the large set (10,000 and 50,000 Deployments, 5,000 configs; 4 to 6 minutes on 2 cores)")
	fs.StringVar(&o.fanOut, "fan-out", "", "run the fan-out scenario only at these numbers of Deployments, with the controller's default flags, e.g. 300,3000")
	fs.StringVar(&o.largeScales, "large-scales", "", "with --large, run the large-scale scenario only at these numbers of Deployments (multiples of 500), e.g. 10000")
	fs.StringVar(&o.controllerFlags, "controller-flags", "", "flags appended to every scenario's controller flags, e.g. --max-concurrent-reconciles=16")
	fs.StringVar(&o.workloadAnnotations, "workload-annotations", "", "annotations added to every Deployment the benchmark creates, as k=v,k=v, e.g. ripple.dev/pin=true (with --controller-flags=--pinning)")
	fs.IntVar(&o.waves, "waves", 0, "run the waves scenario at this many Deployments instead of the set's scale, e.g. 1000")
	fs.StringVar(&o.wavesCaps, "waves-caps", "", "run the waves scenario with these --max-concurrent-rollouts values instead of the set's, e.g. default,0,50; canary: the defaults with --canary=1 and a 10s bake")
	fs.StringVar(&o.only, "scenarios", strings.Join(scenarioNames(), ","), "comma-separated scenarios to run")
	fs.StringVar(&o.outDir, "out", "", "results directory (default ./bench-results/<timestamp>)")
	fs.StringVar(&o.ripple, "ripple", "bin/ripple", "the ripple binary, {ripple} in --controller-cmd")
	fs.StringVar(&o.controllerCmd, "controller-cmd", defaultControllerCmd,
		"controller command line; {kubeconfig}, {metrics-addr}, {health-addr} and {ripple} are substituted, and a word {flags} becomes the scenario's Ripple flags (omit it for another controller). KUBECONFIG is set too")
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "benchmark on this cluster instead of starting local control planes (objects are created in namespaces labelled "+benchLabel+"=true and deleted)")
	fs.BoolVar(&o.proxy, "proxy", true, "route the controller through the counting proxy (needed for per-verb request counts, per-workload PATCH counts and forced relists)")
	fs.StringVar(&o.baseline, "baseline-annotation", "ripple.dev/applied", "annotation the controller writes on a workload it has taken in; the benchmark waits for it on every workload before measuring (empty: wait --warmup instead)")
	fs.DurationVar(&o.warmup, "warmup", 10*time.Second, "wait after ready when --baseline-annotation is empty")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the random choices (which configs change)")
	fs.DurationVar(&o.timeout, "timeout", 0, "give up after this long (default 15m with --quick, 60m with --large, 30m otherwise)")
	fs.BoolVar(&o.failOnTarget, "fail-on-target", false, "exit 1 when a target is missed")
	fs.BoolVar(&o.compare, "compare", false, "compare two results files: ripple-bench --compare A.json B.json")
	fs.StringVar(&o.render, "render", "", "rewrite results.md beside this results.json, without running anything")
}

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("ripple-bench", flag.ContinueOnError)
	fs.SetOutput(out)
	var o options
	o.bindFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch {
	case o.render != "":
		run, err := readRun(o.render)
		if err != nil {
			return err
		}
		return writeReport(filepath.Dir(o.render), run)
	case o.compare:
		return compareFiles(out, fs.Args())
	case fs.NArg() > 0:
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	return benchmark(ctx, o, args, out)
}

// compareFiles prints two results files side by side.
func compareFiles(out io.Writer, paths []string) error {
	if len(paths) != 2 {
		return errors.New("--compare needs two results files: --compare A.json B.json")
	}
	a, err := readRun(paths[0])
	if err != nil {
		return err
	}
	b, err := readRun(paths[1])
	if err != nil {
		return err
	}
	_, err = io.WriteString(out, comparisonText(paths[0], paths[1], a, b))
	return err
}

// selected returns the definitions of the scenarios --scenarios names, in
// the order they run.
func (o options) selected() ([]scenario, error) {
	names := scenarioNames()
	want := map[string]bool{}
	for _, s := range strings.Split(o.only, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		if !slices.Contains(names, s) {
			return nil, fmt.Errorf("--scenarios: unknown scenario %q; known: %s", s, strings.Join(names, ", "))
		}
		want[s] = true
	}
	var out []scenario
	for _, s := range scenarios() {
		if want[s.name] {
			out = append(out, s)
		}
	}
	return out, nil
}

// controller returns the controller command line, split, and the values
// of its placeholders known before a scenario starts.
func (o options) controller() ([]string, map[string]string, error) {
	words, err := splitCommand(o.controllerCmd)
	if err != nil {
		return nil, nil, fmt.Errorf("--controller-cmd: %w", err)
	}
	vars := map[string]string{}
	if strings.Contains(o.controllerCmd, "{ripple}") {
		bin, err := filepath.Abs(o.ripple)
		if err != nil {
			return nil, nil, err
		}
		if info, err := os.Stat(bin); err != nil || info.IsDir() {
			return nil, nil, fmt.Errorf("the ripple binary %s is missing: run 'make build' or pass --ripple", bin)
		}
		vars["ripple"] = bin
	}
	return words, vars, nil
}

// plan returns the name of the set to run, its scales and its timeout.
func (o options) plan() (string, plan, time.Duration, error) {
	set, p, timeout := "default", defaultPlan(), 30*time.Minute
	switch {
	case o.quick && o.large:
		return "", plan{}, 0, errors.New("--quick and --large are two sets: pick one")
	case o.quick:
		set, p, timeout = "quick", quickPlan(), 15*time.Minute
	case o.large:
		set, p, timeout = "large", largeSetPlan(), 60*time.Minute
	}
	if o.timeout != 0 {
		timeout = o.timeout
	}
	if o.fanOut != "" {
		points, err := fanOutPoints(o.fanOut)
		if err != nil {
			return "", plan{}, 0, err
		}
		p.FanOut = points
	}
	if o.largeScales != "" {
		points, err := largeScalePoints(p.LargeScale, o.largeScales)
		if err != nil {
			return "", plan{}, 0, err
		}
		p.LargeScale = points
	}
	if len(p.Waves) > 0 {
		waves, err := wavesPoints(p.Waves, o.waves, o.wavesCaps)
		if err != nil {
			return "", plan{}, 0, err
		}
		p.Waves = waves
	}
	return set, p, timeout, nil
}

// largeScalePoints returns the large-scale points of --large-scales: the
// set's first point with n Deployments spread over its namespaces.
func largeScalePoints(set []coldStartPlan, list string) ([]coldStartPlan, error) {
	if len(set) == 0 {
		return nil, errors.New("--large-scales needs --large")
	}
	var out []coldStartPlan
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 || n%set[0].Namespaces != 0 {
			return nil, fmt.Errorf("--large-scales: %q is not a multiple of %d Deployments", f, set[0].Namespaces)
		}
		p := set[0]
		p.WorkloadsPerNS = n / p.Namespaces
		out = append(out, p)
	}
	return out, nil
}

// fanOutPoints returns the fan-out points of --fan-out: default flags at
// each of the comma-separated numbers of Deployments.
func fanOutPoints(list string) ([]fanOutPoint, error) {
	var out []fanOutPoint
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("--fan-out: %q is not a number of Deployments", f)
		}
		out = append(out, fanOutDefaults(n))
	}
	return out, nil
}

// wavesPoints returns the waves scenario's points: those of the set, at n
// Deployments when n > 0, with the caps in caps ("default", "canary" (the
// defaults with a canary of 1) or a number, comma-separated) when caps is
// not empty.
func wavesPoints(set []wavesPlan, n int, caps string) ([]wavesPlan, error) {
	var out []wavesPlan
	if caps == "" {
		out = slices.Clone(set)
	} else {
		for _, c := range strings.Split(caps, ",") {
			v, err := strconv.Atoi(strings.TrimSpace(c))
			switch {
			case strings.TrimSpace(c) == "canary":
				out = append(out, wavesPlan{Workloads: set[0].Workloads, Cap: -1, Canary: true})
				continue
			case strings.TrimSpace(c) == "default":
				v = -1
			case err != nil || v < 0:
				return nil, fmt.Errorf("--waves-caps: %q is neither default nor a cap", c)
			}
			out = append(out, wavesPlan{Workloads: set[0].Workloads, Cap: v})
		}
	}
	for i := range out {
		if n > 0 {
			out[i].Workloads = n
		}
	}
	return out, nil
}

// resultsDir creates the results directory and its logs directory.
func (o options) resultsDir(started time.Time) (dir, logDir string, err error) {
	dir = o.outDir
	if dir == "" {
		dir = filepath.Join("bench-results", started.Format("20060102-150405"))
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return "", "", err
	}
	logDir = filepath.Join(dir, "logs")
	return dir, logDir, os.MkdirAll(logDir, 0o755)
}

// benchmark runs the selected scenarios, writes the results and returns
// whether the benchmark itself (and, with --fail-on-target, every target)
// succeeded.
// extras are the flags --controller-flags adds; it also annotates the
// workloads as --workload-annotations says.
func (o options) extras() ([]string, error) {
	var extra []string
	if strings.TrimSpace(o.controllerFlags) != "" {
		var err error
		if extra, err = splitCommand(o.controllerFlags); err != nil {
			return nil, fmt.Errorf("--controller-flags: %w", err)
		}
	}
	if err := annotateWorkloads(o.workloadAnnotations); err != nil {
		return nil, fmt.Errorf("--workload-annotations: %w", err)
	}
	return extra, nil
}

func benchmark(ctx context.Context, o options, args []string, out io.Writer) (err error) {
	selected, err := o.selected()
	if err != nil {
		return err
	}
	words, vars, err := o.controller()
	if err != nil {
		return err
	}
	extra, err := o.extras()
	if err != nil {
		return err
	}
	if o.kubeconfig == "" {
		if _, err := cluster.ToolsDir(); err != nil {
			return err
		}
	}
	set, p, timeout, err := o.plan()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, fmt.Errorf("the benchmark did not finish within %s", timeout))
	defer cancel()
	started := time.Now()
	dir, logDir, err := o.resultsDir(started)
	if err != nil {
		return err
	}
	// Registered first, so it runs after every cleanup: the benchmark must
	// leave no process behind.
	defer func() {
		if left := cluster.Descendants(); len(left) > 0 {
			err = errors.Join(err, fmt.Errorf("processes left behind after cleanup: %v", left))
		}
	}()
	log := newLogger(out)
	r := &runner{
		log: log, logDir: logDir, kubeconfig: o.kubeconfig, command: words, vars: vars,
		proxy: o.proxy, baseline: o.baseline, warmup: o.warmup, seed: o.seed, nsPrefix: "rb", extraFlags: extra,
	}
	if o.kubeconfig != "" {
		r.nsPrefix = "rb-" + started.Format("150405")
	}
	log.Info("benchmark starting", "set", set, "scenarios", o.only, "controller", o.controllerCmd, "controllerFlags", extra, "results", dir)
	runDoc := Run{
		Started: started.Format(time.RFC3339), Command: strings.Join(append([]string{"ripple-bench"}, args...), " "),
		Set: set, Controller: words, ControllerVersion: controllerVersion(ctx, vars["ripple"]), Proxy: o.proxy, Machine: machine(),
	}
	if runDoc.Machine.LoadBefore > float64(runDoc.Machine.CPUs) {
		log.Warn("other work on this machine will make the numbers noisy", "load", runDoc.Machine.LoadBefore, "cpus", runDoc.Machine.CPUs)
	}
	for _, s := range selected {
		runDoc.Results = append(runDoc.Results, s.run(ctx, r, p)...)
	}
	runDoc.finish(started)
	if err := writeResults(dir, runDoc, out); err != nil {
		return err
	}
	log.Info("benchmark finished", "seconds", runDoc.DurationS, "results", dir, "logs", logDir)
	return runDoc.status(ctx, o.failOnTarget)
}

// controllerVersion returns what `ripple version` prints; "" when the
// controller command does not run the ripple binary.
func controllerVersion(ctx context.Context, bin string) string {
	if bin == "" {
		return ""
	}
	b, err := exec.CommandContext(ctx, bin, "version").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// finish completes a run's document once its scenarios have run.
func (run *Run) finish(started time.Time) {
	run.DurationS = round3(time.Since(started).Seconds())
	// Every target, also those of scenarios not run (n/a), so that two
	// runs always compare target by target.
	run.Targets = evaluate(scenarios(), run.Results, run.Proxy)
	run.Machine.LoadAfter = loadAverage()
	if st, err := readStatus(os.Getpid()); err == nil {
		run.Machine.BenchRSSPeak = st["VmHWM"]
	}
	if m, ok := fitMemory(run.Results); ok {
		run.MemoryModel = &m
	}
}

// status is the benchmark's exit status: the run was cut short, a scenario
// could not finish or, with failOnTarget, a target was missed.
func (run Run) status(ctx context.Context, failOnTarget bool) error {
	if cause := context.Cause(ctx); cause != nil {
		return cause
	}
	var failed []string
	for _, res := range run.Results {
		if res.Errors.Failure != "" {
			failed = append(failed, res.Name)
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("scenarios that could not finish: %s", strings.Join(failed, ", "))
	}
	if failOnTarget && slices.ContainsFunc(run.Targets, func(t Target) bool { return t.Status == "FAIL" }) {
		return errors.New("targets missed (see the results)")
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
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for line := range strings.Lines(string(b)) {
			if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				if kb, err := strconv.Atoi(strings.Fields(v)[0]); err == nil {
					m.MemoryGiB = (kb + 1<<19) >> 20
				}
			}
		}
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.Lines(string(b)) {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	return m
}

// writeResults writes results.json and results.md into dir, and the
// report to out.
func writeResults(dir string, run Run, out io.Writer) error {
	if err := writeJSON(filepath.Join(dir, "results.json"), run); err != nil {
		return err
	}
	if err := writeReport(dir, run); err != nil {
		return err
	}
	_, err := io.WriteString(out, "\n"+markdown(run))
	return err
}

// writeReport writes results.md for a run into dir.
func writeReport(dir string, run Run) error {
	return os.WriteFile(filepath.Join(dir, "results.md"), []byte(markdown(run)), 0o644)
}
