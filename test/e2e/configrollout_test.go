package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/api/v1alpha1"
	"github.com/ripple-dev/ripple/hack/cluster"
	"github.com/ripple-dev/ripple/hack/kit"
	"github.com/ripple-dev/ripple/internal/digest"
	"github.com/ripple-dev/ripple/internal/explain"
	"github.com/ripple-dev/ripple/internal/rollout"
)

// propagationFleet Deployments share the ConfigMap propagationConfig and
// roll in waves of propagationWave.
const (
	propagationFleet  = 30
	propagationWave   = 10
	propagationConfig = "db"
	propagationEnv    = "STAKATER_DB_CONFIGMAP"
)

// A change of a ConfigMap read by 30 Deployments, rolled in waves of 10,
// and one Deployment that reads it without Ripple's annotations: `kubectl
// wait --for=condition=Propagated configrollout -l
// ripple.dev/config-name=db` returns once every managed Deployment runs the
// change (each checked complete with the new data when it returns) and
// within 1 s of the last one's rollout completing; the other Deployment is
// counted stale on the object and in ripple_stale_consumers.
func TestConfigRolloutPropagated(t *testing.T) {
	t.Parallel()
	testPropagated(t, false)
}

// The same, with Ripple killed (kill -9) and started again after the
// first wave started: the change goes on where it was, and each
// Deployment rolls once.
func TestConfigRolloutPropagatedAcrossKill(t *testing.T) {
	t.Parallel()
	testPropagated(t, true)
}

func testPropagated(t *testing.T, kill bool) {
	cs := kubernetes.NewForConfigOrDie(kc.Config)
	ns := newNamespace(t, cs)
	cm := createPropagationFleet(t, cs, ns)
	addr := freeAddr(t)
	r := newRipple(t, ns, fmt.Sprintf("--max-concurrent-rollouts=%d", propagationWave), "--metrics-bind-address="+addr)
	r.Start()
	waitChangeController(t, r)
	waitFleetBaseline(t, cs, ns, "fleet=managed", propagationFleet)

	cm.Data = map[string]string{"value": "v2"}
	cm, err := cs.CoreV1().ConfigMaps(ns).Update(t.Context(), cm, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	hash := digest.ConfigMap(cm)
	done := watchCompletions(t, cs, ns, hash)
	name := waitConfigRollout(t, ns)

	if kill {
		waitFor(t, "the first wave to start", func(ctx context.Context) (bool, error) {
			return len(fleetWith(t, cs, ns, propagationEnv, hash)) > 0, nil
		})
		r.Kill()
		r.Start()
	}
	returned, out, err := kubectlWait(t, ns, "--for=condition=Propagated", "configrollout", "-l", v1alpha1.LabelConfigName+"="+propagationConfig, "--timeout=5m")
	if err != nil {
		t.Fatalf("kubectl wait: %v\n%s", err, out)
	}
	// Never early: when kubectl wait returns, every Deployment runs the change.
	ds, err := cs.AppsV1().Deployments(ns).List(t.Context(), metav1.ListOptions{LabelSelector: "fleet=managed"})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range ds.Items {
		if v, _ := envValue(&d.Spec.Template, propagationEnv); v != hash || rollout.Deployment(&d).State != rollout.Complete {
			t.Errorf("Propagated while Deployment %s is %s with %q", d.Name, rollout.Deployment(&d).Reason, v)
		}
	}
	last := done.last(propagationFleet)
	if last.IsZero() {
		t.Fatalf("the test saw %d of %d Deployments complete with the change", done.count(), propagationFleet)
	}
	if late := returned.Sub(last); late > time.Second {
		t.Errorf("kubectl wait returned %s after the last rollout completed, want at most 1s", late.Round(time.Millisecond))
	} else {
		// The test looks every 50 ms: it may see the last completion after
		// kubectl wait returned (checked above to be no earlier than it).
		t.Logf("kubectl wait returned %s after the test saw the last of %d rollouts complete", late.Round(time.Millisecond), propagationFleet)
	}
	checkFleetRevisions(t, cs, ns, map[string]string{"legacy": "1"})

	cr := getConfigRollout(t, ns, name)
	if cr.Status.Counts.Managed != propagationFleet || cr.Status.Counts.Complete != propagationFleet || cr.Status.Counts.Stale != 1 ||
		cr.Status.PropagatedAt == nil || cr.Status.Phase != v1alpha1.PhasePropagated {
		t.Errorf("ConfigRollout %s: phase %s, counts %+v; want %d managed and complete, 1 stale", name, cr.Status.Phase, cr.Status.Counts, propagationFleet)
	}
	if i := len(cr.Status.Consumers) - 1; i < 0 || cr.Status.Consumers[0].Name != "legacy" || cr.Status.Consumers[0].State != v1alpha1.ConsumerStale {
		t.Errorf("consumers %+v: want legacy first, stale", cr.Status.Consumers)
	}
	if got := kit.Scrape(t, addr)[`ripple_stale_consumers{kind="ConfigMap"}`]; got != 1 {
		t.Errorf(`ripple_stale_consumers{kind="ConfigMap"} = %v, want 1`, got)
	}
	out, err = runCommand(t, ns, "explain", "configmap/"+propagationConfig, "-o", "json")
	var ch explain.Change
	if err != nil || json.Unmarshal([]byte(out), &ch) != nil || ch.Rollout == nil || ch.Rollout.Name != name ||
		ch.Rollout.Phase != v1alpha1.PhasePropagated || ch.Rollout.Counts.Stale != 1 {
		t.Errorf("ripple explain of the config (%v):\n%s\nwant its ConfigRollout %s, Propagated, 1 stale", err, out, name)
	}
	if !kill {
		m := kit.Scrape(t, addr)
		if got := m[`ripple_change_propagation_seconds_count{kind="ConfigMap"}`]; got != 1 {
			t.Errorf("ripple_change_propagation_seconds_count = %v, want 1", got)
		}
		took := cr.Status.PropagatedAt.Sub(cr.Status.SeenAt.Time)
		t.Logf("the change propagated %s after it was seen, with %.0f status writes of its ConfigRollout (%.0f created)",
			took, m[`ripple_config_rollout_writes_total{op="status"}`], m[`ripple_config_rollout_writes_total{op="create"}`])
	}
}

// createPropagationFleet creates the ConfigMap, the managed Deployments
// that use it (labelled fleet=managed), and legacy, which reads it without
// Ripple's annotations.
func createPropagationFleet(t *testing.T, cs kubernetes.Interface, ns string) *corev1.ConfigMap {
	t.Helper()
	cm, err := cs.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: propagationConfig}, Data: map[string]string{"value": "v1"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range propagationFleet + 1 {
		name, ann, fleet := fmt.Sprintf("d%02d", i), auto(), "managed"
		if i == propagationFleet {
			name, ann, fleet = "legacy", nil, "legacy"
		}
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: ann, Labels: map[string]string{"fleet": fleet}},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](1),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
				Template: spec{configMaps: []string{propagationConfig}}.template(name),
			},
		}
		if _, err := cs.AppsV1().Deployments(ns).Create(t.Context(), d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return cm
}

// waitChangeController waits until the change controller runs: it starts
// once discovery shows the ConfigRollout API, after the others.
func waitChangeController(t *testing.T, r *ripple) {
	t.Helper()
	waitFor(t, "the change controller to start", func(context.Context) (bool, error) {
		for line := range strings.Lines(r.Out.From(r.Mark)) {
			if strings.Contains(line, "Starting workers") && strings.Contains(line, "configrollout") {
				return true, nil
			}
		}
		return false, nil
	})
}

// completions records when the test first saw each Deployment complete
// with the change, reading them every 50 ms.
type completions struct {
	mu sync.Mutex
	at map[string]time.Time
}

func watchCompletions(t *testing.T, cs kubernetes.Interface, ns, hash string) *completions {
	c := &completions{at: map[string]time.Time{}}
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	wg.Go(func() {
		for ctx.Err() == nil {
			ds, err := cs.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{LabelSelector: "fleet=managed"})
			now := time.Now()
			if err == nil {
				c.mu.Lock()
				for _, d := range ds.Items {
					if v, _ := envValue(&d.Spec.Template, propagationEnv); v == hash && rollout.Deployment(&d).State == rollout.Complete {
						if _, ok := c.at[d.Name]; !ok {
							c.at[d.Name] = now
						}
					}
				}
				c.mu.Unlock()
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
	return c
}

func (c *completions) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.at)
}

// last is the latest completion, once n were seen; zero before.
func (c *completions) last(n int) time.Time {
	deadline := time.Now().Add(5 * time.Second)
	for c.count() < n && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.at) < n {
		return time.Time{}
	}
	var last time.Time
	for _, at := range c.at {
		if at.After(last) {
			last = at
		}
	}
	return last
}

// waitConfigRollout waits for the ConfigRollout of the config and returns
// its name: kubectl wait with a selector that matches nothing fails.
func waitConfigRollout(t *testing.T, ns string) string {
	t.Helper()
	c := crClient(t)
	var name string
	waitFor(t, "the change's ConfigRollout", func(ctx context.Context) (bool, error) {
		var l v1alpha1.ConfigRolloutList
		if err := c.List(ctx, &l, client.InNamespace(ns), client.MatchingLabels{v1alpha1.LabelConfigName: propagationConfig}); err != nil {
			return false, err
		}
		if len(l.Items) == 1 {
			name = l.Items[0].Name
		}
		return len(l.Items) == 1, nil
	})
	return name
}

func getConfigRollout(t *testing.T, ns, name string) *v1alpha1.ConfigRollout {
	t.Helper()
	var cr v1alpha1.ConfigRollout
	if err := crClient(t).Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &cr); err != nil {
		t.Fatal(err)
	}
	if c := apimeta.FindStatusCondition(cr.Status.Conditions, v1alpha1.Propagated); c == nil {
		t.Errorf("ConfigRollout %s has no Propagated condition", name)
	}
	return &cr
}

func crClient(t *testing.T) client.Client {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(kc.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// kubectlWait runs `kubectl wait` in ns, as a pipeline would, and returns
// when it returned.
func kubectlWait(t *testing.T, ns string, args ...string) (time.Time, string, error) {
	t.Helper()
	bin, err := cluster.Kubectl()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), bin, append([]string{"--kubeconfig=" + kc.Kubeconfig, "-n", ns, "wait"}, args...)...)
	cmd.Env = []string{"HOME=" + t.TempDir()}
	out, err := cmd.CombinedOutput()
	return time.Now(), string(out), err
}
