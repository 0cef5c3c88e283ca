package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ripple-dev/ripple/internal/reason"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/hack/kit"
	"github.com/ripple-dev/ripple/internal/refs"
)

// fanOut is how many Deployments share one ConfigMap in the fan-out test.
const fanOut = 300

// Every rollout gets its Reloaded Event, also when one change rolls
// hundreds of Deployments at once, and at once: Events are neither dropped
// nor held up by the process's client-side rate limit. (envtest has no controller-manager:
// the Deployments do not progress, which does not matter for Events; no
// rollout ever completes here, so the rollout cap is off.)
func TestReloadedEventsFanOut(t *testing.T) {
	e := startRipple(t, "--max-concurrent-rollouts=0")
	cm := refs.Ref{Kind: refs.ConfigMap, Name: "shared"}
	e.newConfig(t, cm)
	ws := make([]client.Object, fanOut)
	for i := range ws {
		ws[i] = e.newWorkload(t, kit.Deployment, fmt.Sprintf("w%03d", i), ann(autoKey, "true"), envFrom(cm.Kind, cm.Name))
	}
	for _, w := range ws {
		e.waitFor(t, w, "the baseline record", hasBaseline)
	}
	changed := time.Now()
	sum := e.setConfig(t, cm, "v2")
	for _, w := range ws {
		e.waitApplied(t, kit.Deployment, w, cm, sum)
	}
	rolled := time.Now()
	t.Logf("%d Deployments rolled in %s", fanOut, rolled.Sub(changed).Round(time.Millisecond))
	var per map[string]int
	err := wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		per = e.reloadedPerWorkload(ctx)
		return len(per) == fanOut, nil
	})
	if err != nil {
		t.Fatalf("%d of %d Deployments have their Reloaded Event after 60s", len(per), fanOut)
	}
	after := time.Since(rolled)
	t.Logf("all %d Reloaded Events after %s, %s after the last rollout", fanOut, time.Since(changed).Round(time.Millisecond), after.Round(time.Millisecond))
	// Events have a budget of their own: they are not queued behind the
	// process's other requests for seconds (on the shared 20/s budget the
	// last came 9.5 s after the last rollout, and were lost if Ripple
	// stopped before).
	if after > 5*time.Second {
		t.Errorf("the last Reloaded Event came %s after the last rollout: Events were held up", after)
	}
	for _, w := range ws {
		if n := per[w.GetName()]; n != 1 {
			t.Errorf("Deployment %s has %d Reloaded Events, want 1", w.GetName(), n)
		}
	}
}

// reloadedPerWorkload counts the Normal Reloaded Events in e's namespace
// by the name of the workload they are about.
func (e *env) reloadedPerWorkload(ctx context.Context) map[string]int {
	list, err := e.cs.EventsV1().Events(e.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil
	}
	per := map[string]int{}
	for _, ev := range list.Items {
		if ev.Reason == string(reason.Reloaded) && ev.Type == corev1.EventTypeNormal {
			per[ev.Regarding.Name]++
		}
	}
	return per
}

// Events are core/v1 Events on the workload, as Reloader writes them, with
// Reloader's source component for the kind of config that changed.
func TestEventsAsReloader(t *testing.T) {
	e := startRipple(t)
	cm, sec := refs.Ref{Kind: refs.ConfigMap, Name: "app"}, refs.Ref{Kind: refs.Secret, Name: "db"}
	e.newConfig(t, cm)
	e.newConfig(t, sec)
	w := e.newWorkload(t, kit.Deployment, "web", ann(autoKey, "true"), envFrom(cm.Kind, cm.Name), envFrom(sec.Kind, sec.Name))
	e.waitFor(t, w, "the baseline record", hasBaseline)
	e.waitApplied(t, kit.Deployment, w, cm, e.setConfig(t, cm, "v2"))
	e.waitApplied(t, kit.Deployment, w, sec, e.setConfig(t, sec, "v2"))
	want := map[string]string{"reloader-configmaps": `ConfigMap "app"`, "reloader-secrets": `Secret "db"`}
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := e.cs.CoreV1().Events(e.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		found := 0
		for _, ev := range list.Items {
			names, ok := want[ev.Source.Component]
			if ok && ev.Reason == string(reason.Reloaded) && ev.Type == corev1.EventTypeNormal &&
				ev.InvolvedObject.Kind == "Deployment" && ev.InvolvedObject.Name == "web" && strings.Contains(ev.Message, names) {
				found++
			}
		}
		return found == len(want), nil
	})
	if err != nil {
		t.Fatalf("no core/v1 Reloaded Events from reloader-configmaps and reloader-secrets on Deployment web: %v", err)
	}
}
