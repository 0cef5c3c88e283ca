package main

import (
	"context"
	"fmt"
	"log"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/ripple-dev/ripple/hack/cluster"
	"github.com/ripple-dev/ripple/internal/digest"
)

// change is one write of a config: its new digest and when the API server
// acknowledged it.
type change struct {
	Config configRef
	Digest string
	At     time.Time
}

// fault is one kill of Ripple or restart of the API server.
type fault struct {
	Kind     string // "kill" or "api-restart" or "crash"
	At, Back time.Time
}

// chaos is everything the soak does to the cluster while Ripple runs, and
// what it did.
type chaos struct {
	cs         kubernetes.Interface
	fc         *cluster.Cluster
	r          *ripple
	w          *world
	kubectl    string
	log        *log.Logger
	minGap     time.Duration // between two changes of one config
	rng        *rand.Rand
	rngMu      sync.Mutex
	mu         sync.Mutex
	changes    []change
	lastChange map[configRef]time.Time
	// order is the configs in the order they change, each in turn (a
	// shuffle of the world's, by the seed); next is the next one's index.
	order  []configRef
	next   int
	undos  map[string][]undo // by workload
	faults []fault
	writes struct{ meta, template, failed int }
	edits  map[string][]time.Time // the writer's template edits by workload
	errs   []string
}

func (c *chaos) intn(n int) int {
	c.rngMu.Lock()
	defer c.rngMu.Unlock()
	return c.rng.IntN(n)
}

func (c *chaos) note(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	c.log.Print(line)
	line = clock() + " " + line
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.errs) < 50 {
		c.errs = append(c.errs, line)
	}
}

// every runs fn every interval, the first time after first, until ctx ends.
func every(ctx context.Context, first, interval time.Duration, fn func(context.Context)) {
	select {
	case <-ctx.Done():
		return
	case <-time.After(first):
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		fn(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// changeOne writes a new value to the next config in turn (order), one
// not changed for minGap (so every change is a change set of its own,
// which Ripple must apply to each reader once), retrying through an
// outage. In turn, every config changes within len(configs) changes: each
// run of Ripple has had a rollout of every workload after that long
// (results.warmedUp).
func (c *chaos) changeOne(ctx context.Context) {
	now := time.Now()
	c.mu.Lock()
	if c.order == nil {
		c.order = slices.Clone(c.w.configs)
		c.rngMu.Lock()
		c.rng.Shuffle(len(c.order), func(i, j int) { c.order[i], c.order[j] = c.order[j], c.order[i] })
		c.rngMu.Unlock()
	}
	var cfg configRef
	found := false
	for i := range c.order {
		if cand := c.order[(c.next+i)%len(c.order)]; now.Sub(c.lastChange[cand]) >= c.minGap {
			cfg, found, c.next = cand, true, (c.next+i+1)%len(c.order)
			break
		}
	}
	n := len(c.changes) + 1
	c.mu.Unlock()
	if !found {
		return
	}
	var sum string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		cm, err := c.cs.CoreV1().ConfigMaps(cfg.Namespace).Update(ctx, configMap(cfg, "change-"+strconv.Itoa(n)), metav1.UpdateOptions{})
		if err != nil {
			return false, nil // the API server is restarting
		}
		sum = digest.ConfigMap(cm)
		return true, nil
	})
	if err != nil {
		c.note("writing %s: %v", cfg, err) // the soak ended meanwhile
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.changes = append(c.changes, change{Config: cfg, Digest: sum, At: time.Now()})
	c.lastChange[cfg] = time.Now()
}

// writer is the competing writer: another field manager that annotates a
// random Deployment, and every tenth time its pod template too (a new
// revision, the same config digest).
func (c *chaos) write(ctx context.Context) {
	wr := c.w.workloads[c.intn(len(c.w.workloads))]
	c.mu.Lock()
	n := c.writes.meta + c.writes.template + c.writes.failed + 1
	c.mu.Unlock()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{"soak.ripple.dev/writer":"%d"}}}`, n)
	template := n%10 == 0
	if template {
		patch = fmt.Sprintf(`{"metadata":{"annotations":{"soak.ripple.dev/writer":"%d"}},"spec":{"template":{"metadata":{"annotations":{"soak.ripple.dev/writer":"%d"}}}}}`, n, n)
	}
	_, err := c.cs.AppsV1().Deployments(wr.Namespace).Patch(ctx, wr.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "soak-writer"})
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case err != nil:
		c.writes.failed++
	case template:
		c.writes.template++
		c.edits[wr.String()] = append(c.edits[wr.String()], time.Now())
	default:
		c.writes.meta++
	}
}

// undoOne runs `kubectl rollout undo --to-revision` on a random
// Deployment, to the revision before its current one when that shows
// another config digest (a rollback of a change Ripple applied).
func (c *chaos) undoOne(ctx context.Context) {
	for range 20 {
		wr := c.w.workloads[c.intn(len(c.w.workloads))]
		rss, err := c.replicaSets(ctx, wr)
		if err != nil || len(rss) < 2 {
			continue
		}
		cur, prev := rss[len(rss)-1], rss[len(rss)-2]
		if cur.Digest == prev.Digest {
			continue
		}
		out, err := exec.CommandContext(ctx, c.kubectl, "--kubeconfig="+c.fc.Kubeconfig, "-n", wr.Namespace, "rollout", "undo",
			"deployment/"+wr.Name, "--to-revision="+strconv.Itoa(prev.Revision)).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "rolled back") {
			c.note("kubectl rollout undo %s: %v: %s", wr, err, strings.TrimSpace(string(out)))
			return
		}
		c.mu.Lock()
		c.undos[wr.String()] = append(c.undos[wr.String()], undo{To: prev.Revision, Digest: prev.Digest, At: time.Now()})
		c.mu.Unlock()
		return
	}
}

// replicaSets returns the ReplicaSets of wr by revision.
func (c *chaos) replicaSets(ctx context.Context, wr workloadRef) ([]replicaSet, error) {
	list, err := c.cs.AppsV1().ReplicaSets(wr.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "app=" + wr.Name})
	if err != nil {
		return nil, err
	}
	out := make([]replicaSet, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, readReplicaSet(&list.Items[i]))
	}
	slices.SortFunc(out, func(a, b replicaSet) int { return a.Revision - b.Revision })
	return out, nil
}

// readReplicaSet reads a ReplicaSet's revisions, digest and record.
func readReplicaSet(rs *appsv1.ReplicaSet) replicaSet {
	out := replicaSet{Digest: applied(&rs.Spec.Template), Record: recorded(rs.Annotations)}
	out.Revision, _ = strconv.Atoi(rs.Annotations["deployment.kubernetes.io/revision"])
	if h := rs.Annotations["deployment.kubernetes.io/revision-history"]; h != "" {
		for _, s := range strings.Split(h, ",") {
			if n, err := strconv.Atoi(s); err == nil {
				out.History = append(out.History, n)
			}
		}
	}
	return out
}

// killRipple kills Ripple with SIGKILL and starts it again a second later,
// as a container restart would.
func (c *chaos) killRipple(ctx context.Context) {
	at := time.Now()
	c.r.kill()
	select {
	case <-ctx.Done():
	case <-time.After(time.Second):
	}
	if err := c.r.start(); err != nil {
		c.note("%v", err)
	}
	c.addFault(fault{Kind: "kill", At: at, Back: time.Now()})
}

// restartAPIServer kills the API server with SIGKILL and starts it again
// at once; it is back when /readyz answers.
func (c *chaos) restartAPIServer(ctx context.Context) {
	at := time.Now()
	if err := c.fc.Kill(ctx, cluster.APIServer); err != nil {
		c.note("killing the API server: %v", err)
		return
	}
	if err := c.fc.Restart(ctx, cluster.APIServer); err != nil {
		c.note("restarting the API server: %v", err)
	}
	c.addFault(fault{Kind: "api-restart", At: at, Back: time.Now()})
}

// watchCrashes restarts a Ripple that exited by itself, and counts it.
func (c *chaos) watchCrashes(ctx context.Context) {
	if exited, err := c.r.exited(); exited {
		c.note("Ripple exited by itself: %v", err)
		at := time.Now()
		if err := c.r.start(); err != nil {
			c.note("%v", err)
		}
		c.addFault(fault{Kind: "crash", At: at, Back: time.Now()})
	}
}

func (c *chaos) addFault(f fault) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.faults = append(c.faults, f)
}

// kubectlIn is the kubectl of the tools directory.
func kubectlIn(tools string) string { return filepath.Join(tools, "kubectl") }
