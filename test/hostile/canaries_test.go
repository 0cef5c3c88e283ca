package hostile

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The tenant's canaried fleet: canaryDeployments Deployments, each
// reading one of canaryConfigs ConfigMaps canaried on one workload with a
// bake, changed canaryRate times a minute in turn. Before the canary lived
// on the ConfigRollout, choosing a change's canaries planned every one of
// its readers under a mutex every reconcile took: 3 canaried Deployments
// made another namespace's reconcile take 3.8 s.
const (
	canaryDeployments = 200
	canaryConfigs     = 4
	canaryRate        = 100
	// canaryBound is how soon after its change another namespace's
	// workload reloads while the fleet's changes run.
	canaryBound = settleWindow + time.Second
)

// plantCanaries: the canaried configs and the Deployments (0 replicas)
// that read them.
func plantCanaries(t *testing.T, mallory kubernetes.Interface, ns string) {
	t.Helper()
	for i := range canaryConfigs {
		create(t, "a canaried config", mallory.CoreV1().ConfigMaps(ns).Create, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("canaried-%d", i), Annotations: map[string]string{"ripple.dev/canary": "1", "ripple.dev/canary-bake": "30s"}},
			Data:       map[string]string{"k": "v0"},
		})
	}
	for i := range canaryDeployments {
		tpl := podTemplate(fmt.Sprintf("canaried-%d", i))
		tpl.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: fmt.Sprintf("canaried-%d", i%canaryConfigs)}}}}
		create(t, "a canaried Deployment", mallory.AppsV1().Deployments(ns).Create,
			deployment(fmt.Sprintf("canaried-%d", i), 0, map[string]string{auto: "true"}, tpl))
	}
}

// startCanaryChanges changes the canaried configs in turn, canaryRate a
// minute, until the returned stop is called; stop reports the first
// failed change.
func startCanaryChanges(t *testing.T, mallory kubernetes.Interface, ns string) (stop func() error) {
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	var err error
	wg.Go(func() {
		tick := time.NewTicker(time.Minute / canaryRate)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			cm := &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("canaried-%d", i%canaryConfigs), Annotations: map[string]string{"ripple.dev/canary": "1", "ripple.dev/canary-bake": "30s"}},
				Data:       map[string]string{"k": fmt.Sprint("v", i+1)},
			}
			if _, e := mallory.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); e != nil && ctx.Err() == nil {
				err = fmt.Errorf("change %d of the canaried configs: %w", i, e)
				return
			}
		}
	})
	return func() error {
		cancel()
		wg.Wait()
		return err
	}
}

// checkCanaryStorm: while the tenant's canaried fleet changes, the
// workload of a namespace of its own (victim, victimWorkload's) reloads
// within canaryBound of its change.
func checkCanaryStorm(t *testing.T, mallory, admin kubernetes.Interface, ns, victim string) {
	t.Helper()
	waitBaseline(t, admin, victim, "web")
	stop := startCanaryChanges(t, mallory, ns)
	time.Sleep(20 * time.Second) // the fleet's changes in full swing: canaries chosen, baking, superseded
	before := victimHash(t, admin, victim)
	changed := time.Now()
	setData(t, admin, victim, "v2")
	for victimHash(t, admin, victim) == before {
		if time.Since(changed) > canaryBound {
			t.Fatalf("the other namespace's workload did not reload within %s of its change (settle window + 1s) while %d canaried Deployments' configs changed %d times a minute",
				canaryBound, canaryDeployments, canaryRate)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("with %d canaried Deployments' configs changing %d times a minute, the other namespace's workload reloaded %s after its change",
		canaryDeployments, canaryRate, time.Since(changed).Round(time.Millisecond))
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// victimHash is the victim's Deployment's Reloader env var of its
// ConfigMap.
func victimHash(t *testing.T, admin kubernetes.Interface, ns string) string {
	t.Helper()
	d, err := admin.AppsV1().Deployments(ns).Get(t.Context(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range d.Spec.Template.Spec.Containers[0].Env {
		if e.Name == "STAKATER_APP_CONFIGMAP" {
			return e.Value
		}
	}
	return ""
}
