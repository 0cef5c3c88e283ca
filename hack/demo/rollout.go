package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/ripple-dev/ripple/hack/kit"
)

// rollout is what the demo saw after the config change.
type rollout struct {
	changedAt time.Time // when the ConfigMap change was accepted
	patchedAt time.Time // when the demo first saw Ripple's new pod template
	readyAt   time.Time // when the demo first saw the rollout complete

	envVars     []corev1.EnvVar // the STAKATER_* env vars on the template at the end
	replicaSets []string        // ReplicaSets created after the change, oldest first
	oldPods     []string        // Ready pods before the change, sorted
	newPods     []string        // Ready pods at the end, sorted

	// Filled in by collectEvidence.
	events    []string // notes of the Deployment's Reloaded events
	rippleLog string   // ripple's "reloaded" log line
}

// followRollout polls the Deployment, its ReplicaSets and its pods until the
// rollout is complete: Ripple has written both env vars, a new ReplicaSet
// has replicas Ready pods, every other ReplicaSet is at zero, and no pod of
// before the change is left. It prints each step as it sees it.
func followRollout(ctx context.Context, cs kubernetes.Interface, rp *rippleProc, base baseline, changedAt time.Time, out io.Writer) (*rollout, error) {
	f := newFollower(base, changedAt, out)
	pending := "Ripple to patch the Deployment"
	err := poll(ctx, func() (bool, error) {
		if err := rp.exited(); err != nil {
			return false, err
		}
		d, err := cs.AppsV1().Deployments(namespace).Get(ctx, deployment, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		rss, err := kit.ReplicaSets(ctx, cs, namespace, base.uid)
		if err != nil {
			return false, err
		}
		pods, err := cs.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: appLabel})
		if err != nil {
			return false, err
		}
		f.notePatch(d)
		othersAtZero := f.noteReplicaSets(rss)
		newReady, oldLeft := f.notePods(pods.Items)
		var done bool
		pending, done = f.check(d, othersAtZero, newReady, oldLeft, len(pods.Items))
		return done, nil
	})
	if err != nil {
		return nil, fmt.Errorf("waiting for %s: %w", pending, err)
	}
	return f.r, nil
}

// follower is what followRollout has seen and reported so far.
type follower struct {
	out            io.Writer
	base           baseline
	r              *rollout
	lastGeneration int64
	known          map[string]bool // ReplicaSets already reported
	scaledDown     map[string]bool // ReplicaSets already reported at zero
	isOld          map[string]bool // pods of before the change
	seenPods       map[string]bool // pods already reported Ready or gone
	readyCount     int             // pods reported Ready so far
	goneCount      int             // pods reported gone so far
}

func newFollower(base baseline, changedAt time.Time, out io.Writer) *follower {
	f := &follower{
		out:            out,
		base:           base,
		r:              &rollout{changedAt: changedAt, oldPods: base.pods},
		lastGeneration: base.generation,
		known:          map[string]bool{},
		scaledDown:     map[string]bool{},
		isOld:          map[string]bool{},
		seenPods:       map[string]bool{},
	}
	for _, name := range base.replicaSets {
		f.known[name] = true
	}
	for _, name := range base.pods {
		f.isOld[name] = true
	}
	return f
}

// notePatch reports a new generation of d. Only Ripple changes the
// Deployment's spec here, so a new generation is a pod template Ripple
// patched.
func (f *follower) notePatch(d *appsv1.Deployment) {
	if d.Generation == f.lastGeneration {
		return
	}
	f.lastGeneration = d.Generation
	if f.r.patchedAt.IsZero() {
		f.r.patchedAt = time.Now()
	}
	f.r.envVars = stakaterEnv(d)
	fmt.Fprintf(f.out, "  %s  Ripple wrote the reload on Deployment %s: %s\n", stamp(f.r.changedAt), deployment, envNames(f.r.envVars))
}

// noteReplicaSets reports new ReplicaSets and old ones scaled to zero, and
// says whether every ReplicaSet but the newest is at zero.
func (f *follower) noteReplicaSets(rss []appsv1.ReplicaSet) (othersAtZero bool) {
	// Report new ReplicaSets in creation order; the newest revision is
	// the one the Deployment is rolling to.
	slices.SortFunc(rss, func(a, b appsv1.ReplicaSet) int { return revision(a) - revision(b) })
	for _, rs := range rss {
		if !f.known[rs.Name] {
			f.known[rs.Name] = true
			f.r.replicaSets = append(f.r.replicaSets, rs.Name)
			fmt.Fprintf(f.out, "  %s  new ReplicaSet %s created (rollout %d)\n", stamp(f.r.changedAt), rs.Name, len(f.r.replicaSets))
		}
	}
	var current *appsv1.ReplicaSet
	if len(rss) > 0 {
		current = &rss[len(rss)-1]
	}
	othersAtZero = true
	for _, rs := range rss {
		if rs.Name == current.Name {
			continue
		}
		if ptr.Deref(rs.Spec.Replicas, 1) != 0 || rs.Status.Replicas != 0 {
			othersAtZero = false
		} else if !f.scaledDown[rs.Name] {
			f.scaledDown[rs.Name] = true
			fmt.Fprintf(f.out, "  %s  old ReplicaSet %s scaled to 0\n", stamp(f.r.changedAt), rs.Name)
		}
	}
	return othersAtZero
}

// notePods reports new pods Ready and old pods gone, and returns the new
// Ready pods, sorted, and the number of old pods left.
func (f *follower) notePods(pods []corev1.Pod) (newReady []string, oldLeft int) {
	present := map[string]bool{}
	for i := range pods {
		p := &pods[i]
		present[p.Name] = true
		switch {
		case f.isOld[p.Name]:
			oldLeft++
		case kit.PodReady(p):
			newReady = append(newReady, p.Name)
		}
	}
	// Several pods can change between two polls; number them one by
	// one so the lines read as a sequence.
	slices.Sort(newReady)
	for _, name := range newReady {
		if !f.seenPods[name] {
			f.seenPods[name] = true
			f.readyCount++
			fmt.Fprintf(f.out, "  %s  new pod %s Ready (%d/%d)\n", stamp(f.r.changedAt), name, f.readyCount, replicas)
		}
	}
	for _, name := range f.base.pods {
		if !present[name] && !f.seenPods[name] {
			f.seenPods[name] = true
			f.goneCount++
			fmt.Fprintf(f.out, "  %s  old pod %s gone (%d/%d)\n", stamp(f.r.changedAt), name, f.goneCount, len(f.base.pods))
		}
	}
	return newReady, oldLeft
}

// check says what the rollout still waits for, or that it is complete (and
// then records and reports its end).
func (f *follower) check(d *appsv1.Deployment, othersAtZero bool, newReady []string, oldLeft, allPods int) (pending string, done bool) {
	r, st := f.r, d.Status
	switch {
	case r.patchedAt.IsZero():
		return "Ripple to patch the Deployment", false
	case !hasEnv(r.envVars, configMapEnv) || !hasEnv(r.envVars, secretEnv):
		return fmt.Sprintf("Ripple to write %s and %s (template has %s)", configMapEnv, secretEnv, envNames(r.envVars)), false
	case len(r.replicaSets) == 0:
		return "the controller-manager to create a new ReplicaSet", false
	case !othersAtZero:
		return "the old ReplicaSet to scale to 0", false
	case len(newReady) != replicas || oldLeft > 0 || allPods != replicas:
		return fmt.Sprintf("%d new Ready pods and no old one (have %d new Ready, %d old, %d in all)", replicas, len(newReady), oldLeft, allPods), false
	case st.ObservedGeneration != d.Generation || st.UpdatedReplicas != replicas || st.ReadyReplicas != replicas || st.Replicas != replicas:
		return "the Deployment's status to show the rollout complete", false
	}
	r.readyAt = time.Now()
	r.newPods = newReady
	fmt.Fprintf(f.out, "  %s  rollout complete: %d new pods Ready, no old pod left\n", stamp(r.changedAt), replicas)
	return "", true
}

// collectEvidence waits for Ripple's Reloaded event on the Deployment (event
// recording is asynchronous) and its "reloaded" log line, then counts the
// ReplicaSets once more, so that a second rollout started after the first
// completed would still be counted.
func collectEvidence(ctx context.Context, cs kubernetes.Interface, rp *rippleProc, base baseline, r *rollout) error {
	waitCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	err := poll(waitCtx, func() (bool, error) {
		var err error
		r.events, err = kit.EventNotes(waitCtx, cs, namespace, kit.EventMatch{Kind: "Deployment", Name: deployment, Reason: "Reloaded"})
		if err != nil {
			return false, err
		}
		line, ok := rp.logLine("reloaded")
		r.rippleLog = line
		return len(r.events) > 0 && ok, nil
	})
	// A missing event or log line after the short wait is reported by
	// verify, with the rest; anything else ends the demo.
	if err != nil && (ctx.Err() != nil || waitCtx.Err() == nil) {
		return fmt.Errorf("looking for Ripple's Reloaded event: %w", err)
	}
	rss, err := kit.ReplicaSets(ctx, cs, namespace, base.uid)
	if err != nil {
		return err
	}
	for _, rs := range rss {
		if !slices.Contains(base.replicaSets, rs.Name) && !slices.Contains(r.replicaSets, rs.Name) {
			r.replicaSets = append(r.replicaSets, rs.Name)
		}
	}
	return nil
}

// verify fails the demo unless it showed what Ripple promises: one rollout
// for the change set, with Reloader's env vars, and a Reloaded event.
func (r *rollout) verify() error {
	var problems []string
	if n := len(r.replicaSets); n != 1 {
		problems = append(problems, fmt.Sprintf("%d rollouts for one change set, want 1", n))
	}
	for _, name := range []string{configMapEnv, secretEnv} {
		if !hasEnv(r.envVars, name) {
			problems = append(problems, "no "+name+" env var on the pod template")
		}
	}
	if len(r.events) == 0 {
		problems = append(problems, "no Reloaded event on Deployment "+deployment)
	}
	if r.rippleLog == "" {
		problems = append(problems, `no "reloaded" line in ripple's log`)
	}
	if len(problems) > 0 {
		return fmt.Errorf("ripple did not behave as expected: %s", strings.Join(problems, "; "))
	}
	return nil
}

// stakaterEnv returns the STAKATER_* env vars of the demo's container.
func stakaterEnv(d *appsv1.Deployment) []corev1.EnvVar {
	var out []corev1.EnvVar
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name != container {
			continue
		}
		for _, e := range c.Env {
			if strings.HasPrefix(e.Name, "STAKATER_") {
				out = append(out, e)
			}
		}
	}
	return out
}

func hasEnv(env []corev1.EnvVar, name string) bool {
	return slices.ContainsFunc(env, func(e corev1.EnvVar) bool { return e.Name == name && e.Value != "" })
}

func envNames(env []corev1.EnvVar) string {
	if len(env) == 0 {
		return "no STAKATER_* env var"
	}
	names := make([]string, len(env))
	for i, e := range env {
		names[i] = e.Name
	}
	return "set " + strings.Join(names, ", ")
}

// revision is the Deployment revision a ReplicaSet belongs to.
func revision(rs appsv1.ReplicaSet) int {
	n, _ := strconv.Atoi(rs.Annotations["deployment.kubernetes.io/revision"])
	return n
}
