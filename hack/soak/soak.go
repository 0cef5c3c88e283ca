package main

import (
	"context"
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/ripple-dev/ripple/hack/cluster"
)

// soak sets up, runs the faults for o.duration, waits for Ripple to catch
// up and judges.
func soak(ctx context.Context, o options, log *log.Logger) (*results, error) {
	w, err := newWorld(o.workloads, o.configs, o.namespaces)
	if err != nil {
		return nil, err
	}
	tools, err := cluster.ToolsDir()
	if err != nil {
		return nil, err
	}
	log.Print("starting the local cluster")
	logDir := filepath.Join(o.out, "cluster")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return nil, err
	}
	fc, err := cluster.Start(ctx, cluster.Options{Nodes: 1, LogDir: logDir})
	if err != nil {
		return nil, err
	}
	defer func() {
		// The restarted API server's log is in the cluster's scratch
		// directory, which Stop removes.
		if b, err := os.ReadFile(filepath.Join(fc.Dir(), "kube-apiserver.log")); err == nil {
			_ = os.WriteFile(filepath.Join(logDir, "kube-apiserver-restarted.log"), b, 0o644)
		}
		_ = fc.Stop()
	}()
	cs := kubernetes.NewForConfigOrDie(fc.Config)
	log.Printf("creating %d Deployments over %d configs", len(w.workloads), len(w.configs))
	if _, err := w.create(ctx, cs); err != nil {
		return nil, err
	}
	r, err := newRipple(o.ripple, fc.Kubeconfig, filepath.Join(o.out, "ripple.log"), strings.Fields(o.rippleFlags))
	if err != nil {
		return nil, err
	}
	defer r.stop()
	if err := r.start(); err != nil {
		return nil, err
	}
	c := &chaos{cs: cs, fc: fc, r: r, w: w, kubectl: kubectlIn(tools), log: log, minGap: time.Minute,
		rng:        rand.New(rand.NewPCG(o.seed, 0)), //nolint:gosec // G404: reproducible soak choices, not security
		lastChange: map[configRef]time.Time{}, undos: map[string][]undo{}, edits: map[string][]time.Time{}}
	return measure(ctx, o, c)
}

// measure runs the faults once Ripple has taken in every workload, with
// the observer and the sampler running, and judges.
func measure(ctx context.Context, o options, c *chaos) (*results, error) {
	obs, err := startObserver(ctx, c.cs)
	if err != nil {
		return nil, err
	}
	if err := waitBaselines(ctx, obs, c.w); err != nil {
		return nil, err
	}
	res := &results{Load: [2]string{loadAverage(), ""}}
	samples := make(chan memSample, 1024)
	sctx, stopSampling := context.WithCancel(ctx)
	go func() { c.r.sample(sctx, 5*time.Second, samples); close(samples) }()
	c.log.Printf("faults for %s", o.duration)
	res.Start = time.Now()
	runChaos(ctx, o, c)
	res.End = time.Now()
	c.log.Print("waiting for Ripple to catch up")
	caughtUp := waitCaughtUp(ctx, obs, c)
	stopSampling()
	for s := range samples {
		res.Mem = append(res.Mem, s)
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	res.Load[1] = loadAverage()
	c.log.Print("reading every Deployment's revisions")
	return res, judgeAll(ctx, o.out, c, obs, caughtUp, res)
}

// runChaos runs the faults for o.duration.
func runChaos(ctx context.Context, o options, c *chaos) {
	ctx, cancel := context.WithTimeout(ctx, o.duration)
	defer cancel()
	var wg sync.WaitGroup
	for _, job := range []struct {
		first, every time.Duration
		fn           func(context.Context)
	}{
		{0, o.changeEvery, c.changeOne},
		{0, o.writer, c.write},
		{o.undoEvery, o.undoEvery, c.undoOne},
		{o.killEvery / 2, o.killEvery, c.killRipple},
		{o.restartEvery * 2 / 5, o.restartEvery, c.restartAPIServer},
		{time.Second, time.Second, c.watchCrashes},
	} {
		wg.Go(func() { every(ctx, job.first, job.every, job.fn) })
	}
	wg.Wait()
}

// waitBaselines waits until Ripple has taken in every workload: its
// applied record is on it.
func waitBaselines(ctx context.Context, obs *observer, w *world) error {
	err := wait.PollUntilContextTimeout(ctx, time.Second, 5*time.Minute, true, func(context.Context) (bool, error) {
		for _, wr := range w.workloads {
			if rec := obs.reads(wr.String()); rec == "" {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for Ripple's baseline on every Deployment: %w", err)
	}
	return nil
}

// waitCaughtUp waits, up to 3 minutes, until Ripple records that every
// workload's pods read its config's last data (rolled, or, after an undo
// or another writer's template change, recorded), then 15 s more for a
// late write to show; it reports whether they all did.
func waitCaughtUp(ctx context.Context, obs *observer, c *chaos) bool {
	last := map[configRef]change{}
	for _, ch := range c.changes {
		last[ch.Config] = ch
	}
	var behind []string
	err := wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(context.Context) (bool, error) {
		behind = nil
		for _, wr := range c.w.workloads {
			ch, changed := last[wr.Config]
			rec := obs.reads(wr.String())
			if changed && rec != ch.Digest {
				behind = append(behind, fmt.Sprintf("%s records %.12s, not %.12s", wr, rec, ch.Digest))
			}
		}
		return len(behind) == 0, nil
	})
	if err != nil {
		c.note("not caught up: %d workloads, first %v", len(behind), behind[:min(len(behind), 5)])
	}
	select {
	case <-ctx.Done():
	case <-time.After(15 * time.Second):
	}
	return err == nil
}

// judgeAll reads every Deployment's ReplicaSets and judges it.
func judgeAll(ctx context.Context, out string, c *chaos, obs *observer, caughtUp bool, res *results) error {
	cs, w := c.cs, c.w
	res.CaughtUp = caughtUp
	res.Changes, res.Faults, res.Writes, res.Notes, res.TemplateEdits = c.changes, c.faults, c.writes, c.errs, c.edits
	byWorkload := map[string][]replicaSet{}
	for _, ns := range w.namespaces() {
		list, err := cs.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for i := range list.Items {
			rs := &list.Items[i]
			if len(rs.OwnerReferences) == 1 {
				key := ns + "/" + rs.OwnerReferences[0].Name
				byWorkload[key] = append(byWorkload[key], readReplicaSet(rs))
			}
		}
	}
	var hist strings.Builder
	judged := map[string][2]judgement{}
	for _, wr := range w.workloads {
		revs, err := revisions(byWorkload[wr.String()])
		if err != nil {
			return fmt.Errorf("the revisions of %s: %w", wr, err)
		}
		undos := c.undos[wr.String()]
		j := [2]judgement{judge(revs, undos), judge(obs.sequence(wr.String()), undos)}
		fmt.Fprintf(&hist, "%s revisions %s\n%s watch %s\n%s undos %v\n", wr, digests(revs), wr, digests(obs.sequence(wr.String())), wr, undos)
		judged[wr.String()] = j
		res.addJudgement(wr, j, len(undos))
	}
	res.count(w, judged, obs)
	return os.WriteFile(filepath.Join(out, "histories.txt"), []byte(hist.String()), 0o644)
}

// digests writes the short digests of revs in order ("-" for none).
func digests(revs []revision) string {
	var b strings.Builder
	for _, r := range revs {
		d := r.Digest
		if d == "" {
			d = "-"
		}
		fmt.Fprintf(&b, " %d:%.8s", r.N, d)
	}
	return b.String()
}

// loadAverage is the machine's load average, from /proc/loadavg.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}

func clock() string { return time.Now().UTC().Format("15:04:05") }
