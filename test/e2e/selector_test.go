package e2e

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ripple-dev/ripple/hack/kit"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/strategy"
)

const configMapSelector = "ripple.dev/configmap-selector"

// A Deployment with a label selector for ConfigMaps (docs/selectors.md)
// rolls once when a matching ConfigMap is created, once when it changes,
// once when it is deleted, with Ripple's default flags (no
// --reload-on-create, no --reload-on-delete); a ConfigMap without the
// label, created and changed, rolls nothing. Every check that nothing
// rolled is followed by a change that must roll exactly once.
func TestSelectorRollsOnSelectedConfigMaps(t *testing.T) {
	t.Parallel()
	cs := kubernetes.NewForConfigOrDie(kc.Config)
	ns := newNamespace(t, cs)
	startRipple(t, ns)
	web := workload{kit.Deployment, ns, "web"}
	web.create(t, cs, spec{annotations: map[string]string{configMapSelector: "team=a"}})
	before := waitRolledOut(t, cs, web)
	created, err := cs.AppsV1().Deployments(ns).Get(t.Context(), web.name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// A config created within the workload's creation second may be the
	// one it was created with (creation times have one-second granularity).
	waitFor(t, "a second past the Deployment's creation", func(context.Context) (bool, error) {
		return time.Now().After(created.CreationTimestamp.Add(time.Second)), nil
	})

	other := createLabelledConfigMap(t, cs, ns, "other", map[string]string{"team": "b"})
	setConfigMapValue(t, cs, ns, other.Name, "v2")
	before = expectNoRollout(t, cs, before)

	env := strategy.EnvVarName(refs.Ref{Kind: refs.ConfigMap, Name: "dash"})
	createLabelledConfigMap(t, cs, ns, "dash", map[string]string{"team": "a"})
	before = expectRollouts(t, cs, oneEach(before, envOnce(env)))

	// A second one, so that the template after the delete is one the
	// Deployment never ran: its rollout is a new ReplicaSet.
	panel := strategy.EnvVarName(refs.Ref{Kind: refs.ConfigMap, Name: "panel"})
	createLabelledConfigMap(t, cs, ns, "panel", map[string]string{"team": "a", "tier": "web"})
	before = expectRollouts(t, cs, oneEach(before, envOnce(env), envOnce(panel)))

	sum := setConfigMapValue(t, cs, ns, "dash", "v2")
	before = expectRollouts(t, cs, oneEach(before, envIs(env, sum), envOnce(panel)))

	setConfigMapValue(t, cs, ns, other.Name, "v3")
	before = expectNoRollout(t, cs, before)

	if err := cs.CoreV1().ConfigMaps(ns).Delete(t.Context(), "dash", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	expectRollouts(t, cs, oneEach(before, noEnv(env), envOnce(panel)))
}

// createLabelledConfigMap creates ConfigMap name with labels.
func createLabelledConfigMap(t *testing.T, cs kubernetes.Interface, ns, name string, labels map[string]string) *corev1.ConfigMap {
	t.Helper()
	cm, err := cs.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Data:       map[string]string{"VALUE": "v1"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cm
}
