package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/ripple-dev/ripple/internal/reason"
)

const restartPodsAnnotation = "ripple.dev/restart-pods"

// createBarePod creates a pod of no controller with labels.
func createBarePod(t *testing.T, cs kubernetes.Interface, ns, name string, labels map[string]string) *corev1.Pod {
	t.Helper()
	tpl := podTemplate(name)
	p, err := cs.CoreV1().Pods(ns).Create(t.Context(), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec:       tpl.Spec,
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// evictions follows the pods of a selector: each pod seen Terminating, in
// order and when, and each time a pod became Terminating while another
// evicted one was still there.
type evictions struct {
	mu          sync.Mutex
	order       []string
	terminating map[string]bool
	at          []time.Time
	overlaps    []string
	// history is every eviction and deletion, for the failure message.
	history []string
}

func watchEvictions(t *testing.T, cs kubernetes.Interface, ns, selector string) *evictions {
	t.Helper()
	e := &evictions{terminating: map[string]bool{}}
	w, err := cs.CoreV1().Pods(ns).Watch(t.Context(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	go func() {
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			e.observe(ev.Type, p)
		}
	}()
	return e
}

func (e *evictions) observe(typ watch.EventType, p *corev1.Pod) {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case typ == watch.Deleted:
		e.history = append(e.history, fmt.Sprintf("%s %s gone", time.Now().Format("15:04:05.000"), p.Name))
		delete(e.terminating, p.Name)
	case p.DeletionTimestamp != nil && !e.terminating[p.Name]:
		for other := range e.terminating {
			e.overlaps = append(e.overlaps, fmt.Sprintf("%s evicted while %s was still there", p.Name, other))
		}
		e.history = append(e.history, fmt.Sprintf("%s %s evicted", time.Now().Format("15:04:05.000"), p.Name))
		e.terminating[p.Name] = true
		e.order = append(e.order, p.Name)
		e.at = append(e.at, time.Now())
	}
}

func (e *evictions) seen() ([]string, []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.order...), append([]string(nil), e.overlaps...)
}

// gaps are the times between consecutive evictions.
func (e *evictions) gaps() []time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []time.Duration
	for i := 1; i < len(e.at); i++ {
		out = append(out, e.at[i].Sub(e.at[i-1]))
	}
	return out
}

// configPodsConfig creates the ConfigMap configName selecting pods by
// selector with restart-pods.
func configPodsConfig(t *testing.T, cs kubernetes.Interface, ns, selector string) {
	t.Helper()
	_, err := cs.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: configName, Annotations: map[string]string{restartPodsAnnotation: selector}},
		Data:       map[string]string{"VALUE": "v1"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

// Three bare pods a ConfigMap selects with restart-pods are evicted one
// at a time when its data changes. kwok removes a deleted pod at once
// (its finalizers too), so a pod is Terminating for milliseconds only:
// "one at a time" is checked three ways from the pods' watch and the
// Events: no pod is evicted while an evicted one is still there, each
// batch (a PodsEvicted Event) names one pod, and the evictions are a
// step apart (Ripple reads the pods again at most once a second, so
// three evicted in one step would be milliseconds apart). A pod of a
// Deployment (a kind Ripple has) that the selector matches is left alone.
func TestConfigPodsEvictedOneAtATime(t *testing.T) {
	t.Parallel()
	cs := kubernetes.NewForConfigOrDie(kc.Config)
	ns := newNamespace(t, cs)
	startRipple(t, ns)
	configPodsConfig(t, cs, ns, "role=bare")
	for _, name := range []string{"bare-a", "bare-b", "bare-c"} {
		createBarePod(t, cs, ns, name, map[string]string{"role": "bare", "app": name})
	}
	tpl := podTemplate("web")
	tpl.Labels["role"] = "bare"
	_, err := cs.AppsV1().Deployments(ns).Create(t.Context(), &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, Template: tpl},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "4 Ready pods", func(ctx context.Context) (bool, error) { return readyPods(ctx, cs, ns, "role=bare") == 4, nil })
	web := podUIDs(t, cs, ns, "app=web")
	ev := watchEvictions(t, cs, ns, "role=bare")

	setConfigMapValue(t, cs, ns, configName, "v2")
	waitEvent(t, cs, ns, "ConfigMap", configName, reason.PodsRestarted)

	order, overlaps := ev.seen()
	if len(order) != 3 || strings.Contains(strings.Join(order, ","), "web") {
		t.Errorf("evicted %v, want the 3 bare pods", order)
	}
	if len(overlaps) > 0 {
		t.Errorf("two pods evicted at once: %v", overlaps)
	}
	for _, gap := range ev.gaps() {
		if gap < 500*time.Millisecond {
			t.Errorf("evictions %s apart, want a step (about a second) apart: %v", gap, ev.history)
		}
	}
	if now := podUIDs(t, cs, ns, "app=web"); len(now) != 1 || !sameUIDs(now, web) {
		t.Errorf("the Deployment's pod was restarted: %v, was %v", now, web)
	}
	notes := eventNotes(t, cs, ns, "ConfigMap", configName, reason.PodsEvicted)
	for _, n := range notes {
		if strings.Count(n, "bare-") != 1 {
			t.Errorf("PodsEvicted %q names more than one pod", n)
		}
	}
	if len(notes) != 3 {
		t.Errorf("PodsEvicted events %q, want one per pod", notes)
	}
}

func sameUIDs(a, b map[types.UID]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

// A PodDisruptionBudget with maxUnavailable 0 holds the eviction of a
// pod a config selects: a Warning on the config says so, the pod stays,
// and once the budget is gone the pod is evicted. A config whose selector
// does not parse is told, naming the annotation.
func TestConfigPodsHeldByPodDisruptionBudget(t *testing.T) {
	t.Parallel()
	cs := kubernetes.NewForConfigOrDie(kc.Config)
	ns := newNamespace(t, cs)
	startRipple(t, ns)
	configPodsConfig(t, cs, ns, "role=held")
	createBarePod(t, cs, ns, "held", map[string]string{"role": "held"})
	_, err := cs.PolicyV1().PodDisruptionBudgets(ns).Create(t.Context(), &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "held"},
		Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromInt32(0)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"role": "held"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = cs.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "bad", Annotations: map[string]string{restartPodsAnnotation: "role in (held"}},
		Data:       map[string]string{"VALUE": "v1"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the pod Ready and counted by the budget", func(ctx context.Context) (bool, error) {
		pdb, err := cs.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "held", metav1.GetOptions{})
		return err == nil && pdb.Status.CurrentHealthy == 1 && readyPods(ctx, cs, ns, "role=held") == 1, err
	})
	pod := podUIDs(t, cs, ns, "role=held")

	setConfigMapValue(t, cs, ns, configName, "v2")
	setConfigMapValue(t, cs, ns, "bad", "v2")
	blocked := waitEvent(t, cs, ns, "ConfigMap", configName, reason.EvictionBlocked)
	if !strings.Contains(blocked.Note, "PodDisruptionBudget") || !strings.Contains(blocked.Note, "held") {
		t.Errorf("EvictionBlocked %q names neither the budget nor the pod", blocked.Note)
	}
	invalid := waitEvent(t, cs, ns, "ConfigMap", "bad", reason.InvalidAnnotation)
	if !strings.Contains(invalid.Note, restartPodsAnnotation) {
		t.Errorf("InvalidAnnotation %q does not name %s", invalid.Note, restartPodsAnnotation)
	}
	if now := podUIDs(t, cs, ns, "role=held"); !sameUIDs(now, pod) {
		t.Fatalf("the pod was evicted despite the budget: %v, was %v", now, pod)
	}
	ev := watchEvictions(t, cs, ns, "role=held")
	if err := cs.PolicyV1().PodDisruptionBudgets(ns).Delete(t.Context(), "held", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, cs, ns, "ConfigMap", configName, reason.PodsRestarted)
	if order, _ := ev.seen(); len(order) != 1 {
		t.Errorf("evicted %v once the budget was gone, want [held]", order)
	}
}
