package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/ripple-dev/ripple/hack/kit"
	"github.com/ripple-dev/ripple/internal/digest"
)

// Reloader's pause-period annotations of a Deployment.
const (
	pausePeriodAnnot = "deployment.reloader.stakater.com/pause-period"
	pausedAtAnnot    = "deployment.reloader.stakater.com/paused-at"
)

// deploymentState is one write of a Deployment, as a watch delivered it.
type deploymentState struct {
	resourceVersion string
	paused          bool
	pausedAt        string
	env             string // value of configEnv in the pod template, "" if unset
}

func (s deploymentState) String() string {
	return fmt.Sprintf("rv %s: paused=%v paused-at=%q %s=%q", s.resourceVersion, s.paused, s.pausedAt, configEnv, s.env)
}

// deploymentHistory is every write of one Deployment, in order.
type deploymentHistory struct {
	mu       sync.Mutex
	states   []deploymentState
	progress *kit.WatchProgress
}

// watchDeployment records every write of the Deployment created as d; the
// watch ends with the test.
func watchDeployment(t *testing.T, cs kubernetes.Interface, d *appsv1.Deployment) *deploymentHistory {
	t.Helper()
	h := &deploymentHistory{progress: kit.NewWatchProgress(d.ResourceVersion)}
	h.add(d)
	rv := d.ResourceVersion
	ctx := t.Context()
	done := make(chan struct{})
	t.Cleanup(func() { <-done })
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			w, err := cs.AppsV1().Deployments(d.Namespace).Watch(ctx, metav1.ListOptions{
				FieldSelector: "metadata.name=" + d.Name, ResourceVersion: rv,
			})
			if err != nil {
				if ctx.Err() == nil {
					time.Sleep(100 * time.Millisecond)
				}
				continue
			}
			for ev := range w.ResultChan() {
				switch ev.Type {
				case watch.Added, watch.Modified:
					if o, ok := ev.Object.(*appsv1.Deployment); ok {
						rv = o.ResourceVersion
						h.add(o)
						h.progress.Saw(rv)
					}
				case watch.Error:
					h.progress.Fail(fmt.Errorf("watching Deployment %s/%s: %w", d.Namespace, d.Name, apierrors.FromObject(ev.Object)))
					w.Stop()
					return
				}
			}
			w.Stop()
		}
	}()
	return h
}

func (h *deploymentHistory) add(d *appsv1.Deployment) {
	env, _ := envValue(&d.Spec.Template, configEnv)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.states = append(h.states, deploymentState{
		resourceVersion: d.ResourceVersion,
		paused:          d.Spec.Paused,
		pausedAt:        d.Annotations[pausedAtAnnot],
		env:             env,
	})
}

// at returns the writes up to now, once the watch has delivered rv, the
// resourceVersion of the Deployment as the test last read it: the watch
// runs behind the API server.
func (h *deploymentHistory) at(ctx context.Context, rv string) ([]deploymentState, error) {
	ctx, cancel := context.WithTimeout(ctx, watchCatchUp)
	defer cancel()
	if err := h.progress.Reached(ctx, rv); err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]deploymentState(nil), h.states...), nil
}

// Three ConfigMap changes a second apart, inside a Deployment's
// pause-period, roll it out once: the first reload pauses it in the same
// write as its template change, the later ones patch the paused template,
// and when the period is over Ripple resumes it and the Deployment
// controller creates a single new ReplicaSet with the final hash.
func TestDeploymentPausePeriodRollsOnce(t *testing.T) {
	t.Parallel()
	const period = 8 * time.Second
	cs := kubernetes.NewForConfigOrDie(kc.Config)
	ns := newNamespace(t, cs)
	r := startRipple(t, ns)
	cm := createConfigMap(t, cs, ns, configName, "v1")
	web := workload{kit.Deployment, ns, "web"}
	annotations := auto()
	annotations[pausePeriodAnnot] = period.String()
	web.create(t, cs, spec{configMaps: []string{configName}, annotations: annotations})
	before := waitRolledOut(t, cs, web)
	waitBaseline(t, cs, web, digest.ConfigMap(cm))
	oldRS := replicaSets(t, cs, ns, before[web].uid)
	if len(oldRS) != 1 {
		t.Fatalf("got %d ReplicaSets before the changes, want 1", len(oldRS))
	}
	d, err := cs.AppsV1().Deployments(ns).Get(t.Context(), web.name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Spec.Paused {
		t.Fatalf("%s is paused before any change", web)
	}
	history := watchDeployment(t, cs, d)

	// Three changes a second apart, while watching that the Deployment
	// gets paused, takes the final hash while paused, and gets no new
	// ReplicaSet until it is resumed.
	var sums []string
	var (
		pausedAt         string
		finalWhilePaused bool
		resumedSeen      time.Time
	)
	start := time.Now()
	err = wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		if n := len(sums); n < 3 && time.Since(start) >= time.Duration(n)*time.Second {
			sums = append(sums, setConfigMapValue(t, cs, ns, configName, fmt.Sprintf("v%d", n+2)))
		}
		// ReplicaSets first: if the Deployment read afterwards is paused,
		// it was paused (or not yet changed) when they were listed.
		rss, err := kit.ReplicaSets(ctx, cs, ns, before[web].uid)
		if err != nil {
			return false, err
		}
		d, err := cs.AppsV1().Deployments(ns).Get(ctx, web.name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		env, _ := envValue(&d.Spec.Template, configEnv)
		switch {
		case d.Spec.Paused:
			if len(rss) != 1 {
				return false, fmt.Errorf("%s has %d ReplicaSets while paused, want 1 (template %s=%q)", web, len(rss), configEnv, env)
			}
			if d.Annotations[pausedAtAnnot] == "" {
				return false, fmt.Errorf("%s is paused without the %s annotation: %v", web, pausedAtAnnot, d.Annotations)
			}
			if pausedAt != "" && d.Annotations[pausedAtAnnot] != pausedAt {
				return false, fmt.Errorf("%s: %s moved from %s to %s: the period must not be extended", web, pausedAtAnnot, pausedAt, d.Annotations[pausedAtAnnot])
			}
			pausedAt = d.Annotations[pausedAtAnnot]
			finalWhilePaused = finalWhilePaused || (len(sums) == 3 && env == sums[2])
		case pausedAt != "":
			resumedSeen = time.Now()
			return true, nil
		case env != "":
			return false, fmt.Errorf("%s took a reload (%s=%q) without being paused", web, configEnv, env)
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("watching %s through its pause-period: %v\n%s", web, err, describe(t.Context(), cs, web))
	}
	if len(sums) != 3 {
		t.Fatalf("%s was resumed after %d of the 3 changes", web, len(sums))
	}
	final := sums[2]
	if !finalWhilePaused {
		t.Errorf("%s never showed the final hash %s while paused: the later reloads were not written into the period", web, final)
	}
	at, err := time.Parse(time.RFC3339, pausedAt)
	if err != nil {
		t.Fatalf("%s=%q is not an RFC 3339 time: %v", pausedAtAnnot, pausedAt, err)
	}
	if resumedSeen.Before(at.Add(period)) {
		t.Errorf("%s was resumed at %s, before its pause-period ended (%s paused at %s)", web, resumedSeen.Format(time.RFC3339Nano), period, pausedAt)
	}

	// The resumed Deployment rolls out once, to the final hash.
	waitRolledOut(t, cs, web)
	d, err = cs.AppsV1().Deployments(ns).Get(t.Context(), web.name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Spec.Paused {
		t.Errorf("%s is paused after it rolled out", web)
	}
	if v, ok := d.Annotations[pausedAtAnnot]; ok {
		t.Errorf("%s still has %s=%q after it was resumed", web, pausedAtAnnot, v)
	}
	if v := d.Annotations[pausePeriodAnnot]; v != period.String() {
		t.Errorf("%s: %s=%q, want it left as %q", web, pausePeriodAnnot, v, period.String())
	}
	checks := []templateCheck{envIs(configEnv, final), envOnce(configEnv)}
	for _, c := range checks {
		if err := c(&d.Spec.Template); err != nil {
			t.Errorf("%s: %v", web, err)
		}
	}
	rss := replicaSets(t, cs, ns, before[web].uid)
	if len(rss) != 2 {
		t.Fatalf("%s has %d ReplicaSets, want 2: the original and one for all three changes", web, len(rss))
	}
	newRS := newReplicaSet(t, rss, oldRS[0].UID)
	// Creation timestamps have whole seconds, as has the end of the
	// period: a ReplicaSet made while paused would be older.
	if newRS.CreationTimestamp.Time.Before(at.Add(period)) {
		t.Errorf("new ReplicaSet %s was created at %s, within the pause-period (paused at %s for %s)",
			newRS.Name, newRS.CreationTimestamp.Format(time.RFC3339), pausedAt, period)
	}
	if newRS.Status.ReadyReplicas != defaultReplicas {
		t.Errorf("new ReplicaSet %s has %d Ready replicas, want %d", newRS.Name, newRS.Status.ReadyReplicas, defaultReplicas)
	}
	for _, c := range checks {
		if err := c(&newRS.Spec.Template); err != nil {
			t.Errorf("new ReplicaSet %s: %v", newRS.Name, err)
		}
	}
	pods, err := cs.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: "app=" + web.name})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != int(defaultReplicas) {
		t.Errorf("got %d pods, want %d", len(pods.Items), defaultReplicas)
	}
	for _, p := range pods.Items {
		if ref := metav1.GetControllerOf(&p); ref == nil || ref.UID != newRS.UID || !kit.PodReady(&p) {
			t.Errorf("pod %s: owner %v, Ready %v; want a Ready pod of the new ReplicaSet %s", p.Name, ref, kit.PodReady(&p), newRS.Name)
		}
	}
	podsPass(t, cs, ns, "app="+web.name, checks...)

	// Every write, in order: the template first changed in the write
	// that paused the Deployment, it stayed paused until its template
	// held the final hash, and it was resumed once.
	states, err := history.at(t.Context(), d.ResourceVersion)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkPauseHistory(states, final); err != nil {
		var b strings.Builder
		for _, s := range states {
			fmt.Fprintf(&b, "  %s\n", s)
		}
		t.Errorf("%s: %v; its writes:\n%s", web, err, b.String())
	}
	// Ripple's log comes through a pipe, behind its writes: wait for the
	// resume, logged after the pause, before counting.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if _, err := r.Out.WaitLines(ctx, 1, "\tresumed\t"); err != nil {
		t.Error(err)
	}
	if log := r.Log(); strings.Count(log, "\tpaused\t") != 1 || strings.Count(log, "\tresumed\t") != 1 {
		t.Errorf("Ripple did not log once that it paused and once that it resumed %s", web)
	}

	// Nothing follows: no more ReplicaSets, no new pause.
	consistently(t, "no further rollout or pause of "+web.String(), afterRollout+time.Second, func(ctx context.Context) error {
		d, err := cs.AppsV1().Deployments(ns).Get(ctx, web.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		rss, err := kit.ReplicaSets(ctx, cs, ns, before[web].uid)
		if err != nil {
			return err
		}
		if len(rss) != 2 || d.Spec.Paused {
			return fmt.Errorf("%d ReplicaSets, paused %v", len(rss), d.Spec.Paused)
		}
		return nil
	})
}

// checkPauseHistory checks the writes of a Deployment through one
// pause-period: unpaused with no hash, then paused in the same write as
// the first hash, paused through every later hash up to final, then
// resumed with final and never paused again.
func checkPauseHistory(states []deploymentState, final string) error {
	i := 0
	for ; i < len(states) && !states[i].paused; i++ {
		if states[i].env != "" {
			return fmt.Errorf("write %s changed the template without pausing", states[i])
		}
	}
	if i == len(states) {
		return fmt.Errorf("never paused")
	}
	if states[i].env == "" || states[i].pausedAt == "" {
		return fmt.Errorf("write %s paused it without the template change and paused-at annotation in the same write", states[i])
	}
	for i < len(states) && states[i].paused {
		i++
	}
	if i == len(states) {
		return fmt.Errorf("never resumed")
	}
	if states[i-1].env != final {
		return fmt.Errorf("resumed after write %s, before the final hash %s was written", states[i-1], final)
	}
	for _, s := range states[i:] {
		if s.paused || s.pausedAt != "" || s.env != final {
			return fmt.Errorf("write %s after the resume, want unpaused with %s=%s and no paused-at", s, configEnv, final)
		}
	}
	return nil
}
