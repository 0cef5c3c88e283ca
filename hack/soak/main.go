// Command ripple-soak runs Ripple for a long time on a local cluster under
// faults and checks that no change was lost or applied twice (`make
// soak`, not part of `make test`):
//
//	go run ./hack/soak --ripple bin/ripple --duration 30m
//
// It starts a local cluster (etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler, a kwok node), creates 1,000 Deployments reading 100
// ConfigMaps (ten each, no replicas: each revision is still a ReplicaSet),
// starts Ripple, and for the duration changes a config every second, kills
// Ripple with SIGKILL every 5 minutes, restarts the API server every 10,
// runs a competing writer (another field manager annotating Deployments
// and their pod templates) and a `kubectl rollout undo` every 30 seconds.
// Then it waits for Ripple to catch up and reads every Deployment's
// revisions from its ReplicaSets: every change applied exactly once to
// every Deployment that reads it (none lost, none twice, the applied
// record agreeing), no undo rolled forward by Ripple; it reports the
// latency of each change and the slope of Ripple's live heap, resident
// memory and goroutines (from its /metrics, sampled every 5 seconds), in
// report.md with a plot, report.svg, in the results directory.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctrllog.SetLogger(logr.Discard()) // envtest warns through it, with a stack trace, when none is set
	err := run(ctx, os.Args[1:], os.Stdout)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "ripple-soak: %v\n", err)
		os.Exit(1)
	}
}

// options are the command's flags.
type options struct {
	ripple, rippleFlags, out        string
	duration                        time.Duration
	workloads, configs, namespaces  int
	changeEvery, killEvery          time.Duration
	restartEvery, undoEvery, writer time.Duration
	seed                            uint64
}

func (o *options) bindFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.ripple, "ripple", "bin/ripple", "the Ripple binary")
	fs.StringVar(&o.rippleFlags, "ripple-flags", "--max-concurrent-rollouts=0",
		"Ripple's flags, blank-separated; the default lifts the rollout cap, whose slots the local Deployment controller frees more slowly than ten rollouts a second on a busy machine (the soak checks changes, not the cap)")
	fs.StringVar(&o.out, "out", "", "results directory (default ./soak-results/<timestamp>)")
	fs.DurationVar(&o.duration, "duration", 30*time.Minute, "how long the faults go on (SOAK_DURATION in make soak)")
	fs.IntVar(&o.workloads, "workloads", 1000, "Deployments")
	fs.IntVar(&o.configs, "configs", 100, "ConfigMaps, each read by workloads/configs Deployments")
	fs.IntVar(&o.namespaces, "namespaces", 10, "namespaces the configs and Deployments are spread over")
	fs.DurationVar(&o.changeEvery, "change-every", time.Second, "one config change this often")
	fs.DurationVar(&o.killEvery, "kill-every", 5*time.Minute, "kill -9 Ripple this often (the first after half of it)")
	fs.DurationVar(&o.restartEvery, "api-restart-every", 10*time.Minute, "restart the API server this often (the first after 40% of it)")
	fs.DurationVar(&o.undoEvery, "undo-every", 30*time.Second, "kubectl rollout undo of one Deployment this often")
	fs.DurationVar(&o.writer, "writer-every", 100*time.Millisecond, "the competing writer's pace")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the random choices")
}

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("ripple-soak", flag.ContinueOnError)
	fs.SetOutput(out)
	var o options
	o.bindFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if o.out == "" {
		o.out = filepath.Join("soak-results", time.Now().UTC().Format("20060102-150405"))
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	progress := log.New(out, "", log.Ltime|log.LUTC)
	res, err := soak(ctx, o, progress)
	if err != nil {
		return err
	}
	if err := writeReport(o, res); err != nil {
		return err
	}
	progress.Printf("report: %s", filepath.Join(o.out, "report.md"))
	if !res.passed() {
		return errors.New("the soak found lost, repeated or undone changes, or growth: see the report")
	}
	return nil
}
