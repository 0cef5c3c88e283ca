package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ripple-dev/ripple/internal/reason"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/hack/kit"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/strategy"
)

// With a cap of one rollout, a shared change rolls one of two Deployments
// and holds the other until the first one's rollout completes by its
// status; the test plays the Deployment controller, which envtest does not
// run. The second one's rollout then never completes and is reported
// stalled by --rollout-timeout, through the requeue alone: nothing else
// happens to it.
func TestRolloutCapAndTimeout(t *testing.T) {
	e := startRipple(t, "--max-concurrent-rollouts=1", "--rollout-timeout=3s")
	cm := refs.Ref{Kind: refs.ConfigMap, Name: "shared"}
	e.newConfig(t, cm)
	ws := []client.Object{
		e.newWorkload(t, kit.Deployment, "a", ann(autoKey, "true"), envFrom(cm.Kind, cm.Name)),
		e.newWorkload(t, kit.Deployment, "b", ann(autoKey, "true"), envFrom(cm.Kind, cm.Name)),
	}
	for _, w := range ws {
		e.waitFor(t, w, "the baseline record", hasBaseline)
	}
	sum := e.setConfig(t, cm, "v2")
	var rolled []client.Object
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		rolled = nil
		for _, w := range ws {
			if err := e.c.Get(ctx, client.ObjectKeyFromObject(w), w); err != nil {
				return false, err
			}
			if got, _ := (strategy.EnvVars{}).Applied(kit.Deployment.Template(w), cm); got == sum {
				rolled = append(rolled, w)
			}
		}
		return len(rolled) > 0, nil
	})
	if err != nil {
		t.Fatalf("no Deployment rolled: %v", err)
	}
	// The other one waits for the slot: a second later it has not rolled.
	time.Sleep(time.Second)
	first, second := ws[0], ws[1]
	if rolled[0] == ws[1] {
		first, second = ws[1], ws[0]
	}
	if err := e.c.Get(t.Context(), client.ObjectKeyFromObject(second), second); err != nil {
		t.Fatal(err)
	}
	if got, _ := (strategy.EnvVars{}).Applied(kit.Deployment.Template(second), cm); len(rolled) > 1 || got == sum {
		t.Fatalf("both Deployments rolled at once, over the cap of 1")
	}
	queued := e.waitRolloutEvent(t, second.GetName(), string(reason.RolloutQueued), corev1.EventTypeNormal)
	if !strings.Contains(queued[0], "--max-concurrent-rollouts") {
		t.Errorf("RolloutQueued of %s: %q, want one naming --max-concurrent-rollouts", second.GetName(), queued[0])
	}
	e.completeRollout(t, first.(*appsv1.Deployment))
	e.waitApplied(t, kit.Deployment, second, cm, sum)
	notes := e.waitRolloutEvent(t, first.GetName(), string(reason.RolloutComplete), corev1.EventTypeNormal)
	if !strings.HasPrefix(notes[0], "Rollout complete after ") {
		t.Errorf("RolloutComplete of %s: %q", first.GetName(), notes[0])
	}
	notes = e.waitRolloutEvent(t, second.GetName(), string(reason.RolloutStalled), corev1.EventTypeWarning)
	if !strings.Contains(notes[0], "not complete after 3s (--rollout-timeout)") {
		t.Errorf("RolloutStalled of %s: %q, want one naming --rollout-timeout", second.GetName(), notes[0])
	}
}

// completeRollout writes the status the Deployment controller would once
// d's current template is rolled out and available.
func (e *env) completeRollout(t *testing.T, d *appsv1.Deployment) {
	t.Helper()
	if err := e.c.Get(t.Context(), client.ObjectKeyFromObject(d), d); err != nil {
		t.Fatal(err)
	}
	n := ptr.Deref(d.Spec.Replicas, 1)
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: n, UpdatedReplicas: n, ReadyReplicas: n, AvailableReplicas: n}
	if err := e.c.Status().Update(t.Context(), d); err != nil {
		t.Fatal(err)
	}
}

// waitRolloutEvent waits for Events with reason and type on the workload named
// name and returns their notes.
func (e *env) waitRolloutEvent(t *testing.T, name, reason, typ string) []string {
	t.Helper()
	var notes []string
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		notes, err = kit.EventNotes(ctx, e.cs, e.ns, kit.EventMatch{Name: name, Reason: reason, Type: typ})
		return len(notes) > 0, err
	})
	if err != nil {
		t.Fatalf("waiting for a %s Event on %s: %v", reason, name, err)
	}
	return notes
}
