package kubelet

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/ripple-dev/ripple/hack/kit"
	"github.com/ripple-dev/ripple/hack/kubeletnode"
	"github.com/ripple-dev/ripple/internal/digest"
)

// hangFleet is as many reload-action Deployments as Ripple has workers of
// a kind (--max-concurrent-reconciles' default): were a call held by a
// worker, every worker of the kind would wait on a tenant's pods.
const hangFleet = 32

// TestReloadActionsNeverAnswered: a tenant's 32 Deployments whose pods
// accept the reload call and never answer do not delay a template reload
// in another namespace by more than the settle window plus 1 s; the
// calls are in flight, unanswered, when the other change arrives.
func TestReloadActionsNeverAnswered(t *testing.T) {
	node := kubeletnode.StartT(t, kc.API, "kubelet-hang")
	cs := clientset(t)
	tenant := kit.NewNamespace(t, cs, "kubelet-hang-", nil)
	other := kit.NewNamespace(t, cs, "kubelet-other-", nil)
	ctx := t.Context()

	port := freePort(t)
	cm := createConfigMap(t, cs, tenant, "settings", map[string]string{confKey: oldConf})
	spec := actionSpec(node.Name, cm.Name)
	// 32 pods fit beside the other tests' on the node's cpu.
	small := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("5m"), corev1.ResourceMemory: resource.MustParse("8Mi")}
	spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: small, Limits: small.DeepCopy()}
	for i := range hangFleet {
		createActionDeployment(t, cs, tenant, fmt.Sprintf("hang-%02d", i), 1,
			map[string]string{actionKey: fmt.Sprintf(":%d%s", port, actionPath), delayKey: "0s"}, spec)
	}
	otherCM := createConfigMap(t, cs, other, "settings", map[string]string{confKey: oldConf})
	web := createActionDeployment(t, cs, other, "web", 1, nil, withEnvFrom(podSpec(node.Name), otherCM.Name))
	// An endpoint that never answers: each call is held until Ripple
	// gives it up (or the test ends).
	e := newEndpoints(t, node, time.Hour)
	for i := range hangFleet {
		name := fmt.Sprintf("hang-%02d", i)
		waitFleetReady(t, cs, tenant, name, 1)
		for _, p := range listApp(t, cs, tenant, name) {
			e.serve(p.Status.PodIP, port, "", func(int) int { return 200 })
		}
	}
	waitFleetReady(t, cs, other, "web", 1)
	const settle = time.Second
	r := kit.NewRipple(t, "test-kubelet", "--kubeconfig="+kc.Kubeconfig, "--namespaces="+tenant+","+other,
		"--settle-window="+settle.String(), "--metrics-bind-address=0", "--health-probe-bind-address=0")
	start(r)

	cm.Data[confKey] = newConf
	if _, err := cs.CoreV1().ConfigMaps(tenant).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitCalled(actionDone, hangFleet)

	otherCM.Data[confKey] = newConf
	otherCM, err := cs.CoreV1().ConfigMaps(other).Update(ctx, otherCM, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	changed, sum := time.Now(), digest.ConfigMap(otherCM)
	// The env-vars strategy's reload: the data's digest in an env var.
	err = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, eventTimeout, true, func(ctx context.Context) (bool, error) {
		d, err := cs.AppsV1().Deployments(other).Get(ctx, web.Name, metav1.GetOptions{})
		return err == nil && slices.ContainsFunc(d.Spec.Template.Spec.Containers[0].Env, func(v corev1.EnvVar) bool { return v.Value == sum }), nil
	})
	took := time.Since(changed)
	if err != nil {
		t.Fatalf("the Deployment web was not written within %v of its ConfigMap's change: %v", eventTimeout, err)
	}
	e.mu.Lock()
	answered, inFlight := len(e.calls), e.inFlight
	e.mu.Unlock()
	t.Logf("web's template written %v after its ConfigMap's change, with %d calls in flight and %d given up", took.Round(time.Millisecond), inFlight, answered)
	if took > settle+time.Second {
		t.Errorf("web's template was written %v after its ConfigMap's change, expected within the settle window (%v) plus 1 s", took, settle)
	}
	if inFlight == 0 {
		t.Errorf("no call was in flight when web was written: the tenant's pods did not hold their calls")
	}
}

// withEnvFrom is spec with its container reading the ConfigMap cm through
// envFrom: a change of cm rolls it by a template write.
func withEnvFrom(spec corev1.PodSpec, cm string) corev1.PodSpec {
	spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: cm}}}}
	return spec
}

// waitCalled waits until the endpoints of n addresses were called.
func (e *endpoints) waitCalled(timeout time.Duration, n int) {
	e.t.Helper()
	err := wait.PollUntilContextTimeout(e.t.Context(), 50*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		e.mu.Lock()
		defer e.mu.Unlock()
		return len(e.count) >= n, nil
	})
	if err != nil {
		e.mu.Lock()
		defer e.mu.Unlock()
		e.t.Fatalf("%d pods' endpoints were called within %v, expected %d", len(e.count), timeout, n)
	}
}
