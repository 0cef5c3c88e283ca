package integration

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/hack/kit"
	"github.com/ripple-dev/ripple/internal/strategy"
)

const minRolloutIntervalKey = "ripple.dev/min-rollout-interval"

// A second rollout within the minimum rollout interval waits for it and
// then carries the latest data, once: the change in between never rolls
// on its own. The annotation overrides the flag (an hour here, which would
// hold the test up); an invalid annotation is a Warning event naming it.
func TestMinRolloutInterval(t *testing.T) {
	t.Parallel()
	// The interval must outlast the test's own steps between the first
	// rollout and its last change (seeing the rollout, two config writes
	// and a pause): on a loaded machine they took 4 s, and the change in
	// between then rolled on its own, as it should once the interval is
	// over. 10 s keeps the last rollout within waitFor's 15 s.
	const interval = 10 * time.Second
	e := startRipple(t, "--min-rollout-interval=1h")
	e.newConfig(t, cm1)
	d := e.newWorkload(t, kit.Deployment, "web", ann(autoKey, "true", minRolloutIntervalKey, interval.String()), envFrom(cm1.Kind, cm1.Name))
	bad := e.newWorkload(t, kit.Deployment, "bad", ann(autoKey, "true", minRolloutIntervalKey, "soon"), envFrom(cm1.Kind, cm1.Name))
	e.waitFor(t, d, "the baseline record", hasBaseline)
	e.waitFor(t, bad, "the baseline record", hasBaseline)
	changes := e.templateChanges(t, d)

	// The first rollout comes after begin, the second interval after it.
	begin := time.Now()
	e.waitApplied(t, kit.Deployment, d, cm1, e.setConfig(t, cm1, "v2"))
	e.setConfig(t, cm1, "v3")
	time.Sleep(500 * time.Millisecond)
	last := e.setConfig(t, cm1, "v4")
	e.waitApplied(t, kit.Deployment, d, cm1, last)
	if after := time.Since(begin); after < interval {
		t.Errorf("both rollouts came within %s, within the %s interval", after, interval)
	}
	time.Sleep(negativeWindow)
	if n := changes(); n != 2 {
		t.Errorf("%d pod-template changes, want 2: the first change and the latest", n)
	}
	notes := e.waitEvent(t, "bad", corev1.EventTypeWarning, "InvalidAnnotation")
	if !strings.Contains(notes[0], minRolloutIntervalKey) {
		t.Errorf("warning %q does not name the annotation", notes[0])
	}
	cur := &appsv1.Deployment{}
	if err := e.c.Get(t.Context(), client.ObjectKeyFromObject(bad), cur); err != nil {
		t.Fatal(err)
	}
	if got, _ := (strategy.EnvVars{}).Applied(kit.Deployment.Template(cur), cm1); got == last {
		t.Errorf("bad rolled the latest data within the flag's hour")
	}
}
