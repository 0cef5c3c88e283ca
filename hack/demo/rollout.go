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

	"github.com/ripple-dev/ripple/test/kit"
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
	r := &rollout{changedAt: changedAt, oldPods: base.pods}
	lastGeneration := base.generation
	known := map[string]bool{}      // ReplicaSets already reported
	scaledDown := map[string]bool{} // ReplicaSets already reported at zero
	for _, name := range base.replicaSets {
		known[name] = true
	}
	isOld := map[string]bool{}
	for _, name := range base.pods {
		isOld[name] = true
	}
	seenPods := map[string]bool{} // pods already reported Ready or gone
	readyCount, goneCount := 0, 0 // pods reported so far
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

		// Only Ripple changes the Deployment's spec here, so a new
		// generation is a pod template Ripple patched.
		if d.Generation != lastGeneration {
			lastGeneration = d.Generation
			if r.patchedAt.IsZero() {
				r.patchedAt = time.Now()
			}
			r.envVars = stakaterEnv(d)
			fmt.Fprintf(out, "  %s  Ripple patched Deployment %s: %s\n", stamp(changedAt), deployment, envNames(r.envVars))
		}

		// Report new ReplicaSets in creation order; the newest revision is
		// the one the Deployment is rolling to.
		slices.SortFunc(rss, func(a, b appsv1.ReplicaSet) int { return revision(a) - revision(b) })
		for _, rs := range rss {
			if !known[rs.Name] {
				known[rs.Name] = true
				r.replicaSets = append(r.replicaSets, rs.Name)
				fmt.Fprintf(out, "  %s  new ReplicaSet %s created (rollout %d)\n", stamp(changedAt), rs.Name, len(r.replicaSets))
			}
		}
		var current *appsv1.ReplicaSet
		if len(rss) > 0 {
			current = &rss[len(rss)-1]
		}
		othersAtZero := true
		for _, rs := range rss {
			if rs.Name == current.Name {
				continue
			}
			if ptr.Deref(rs.Spec.Replicas, 1) != 0 || rs.Status.Replicas != 0 {
				othersAtZero = false
			} else if !scaledDown[rs.Name] {
				scaledDown[rs.Name] = true
				fmt.Fprintf(out, "  %s  old ReplicaSet %s scaled to 0\n", stamp(changedAt), rs.Name)
			}
		}

		var newReady []string
		oldLeft := 0
		present := map[string]bool{}
		for i := range pods.Items {
			p := &pods.Items[i]
			present[p.Name] = true
			switch {
			case isOld[p.Name]:
				oldLeft++
			case kit.PodReady(p):
				newReady = append(newReady, p.Name)
			}
		}
		// Several pods can change between two polls; number them one by
		// one so the lines read as a sequence.
		slices.Sort(newReady)
		for _, name := range newReady {
			if !seenPods[name] {
				seenPods[name] = true
				readyCount++
				fmt.Fprintf(out, "  %s  new pod %s Ready (%d/%d)\n", stamp(changedAt), name, readyCount, replicas)
			}
		}
		for _, name := range base.pods {
			if !present[name] && !seenPods[name] {
				seenPods[name] = true
				goneCount++
				fmt.Fprintf(out, "  %s  old pod %s gone (%d/%d)\n", stamp(changedAt), name, goneCount, len(base.pods))
			}
		}

		st := d.Status
		switch {
		case r.patchedAt.IsZero():
			pending = "Ripple to patch the Deployment"
		case !hasEnv(r.envVars, configMapEnv) || !hasEnv(r.envVars, secretEnv):
			pending = fmt.Sprintf("Ripple to write %s and %s (template has %s)", configMapEnv, secretEnv, envNames(r.envVars))
		case len(r.replicaSets) == 0:
			pending = "the controller-manager to create a new ReplicaSet"
		case !othersAtZero:
			pending = "the old ReplicaSet to scale to 0"
		case len(newReady) != replicas || oldLeft > 0 || len(pods.Items) != replicas:
			pending = fmt.Sprintf("%d new Ready pods and no old one (have %d new Ready, %d old, %d in all)", replicas, len(newReady), oldLeft, len(pods.Items))
		case st.ObservedGeneration != d.Generation || st.UpdatedReplicas != replicas || st.ReadyReplicas != replicas || st.Replicas != replicas:
			pending = "the Deployment's status to show the rollout complete"
		default:
			r.readyAt = time.Now()
			r.newPods = newReady
			fmt.Fprintf(out, "  %s  rollout complete: %d new pods Ready, no old pod left\n", stamp(changedAt), replicas)
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		return nil, fmt.Errorf("waiting for %s: %w", pending, err)
	}
	return r, nil
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
