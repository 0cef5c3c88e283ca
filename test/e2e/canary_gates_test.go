package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ripple-dev/ripple/hack/kit"
	"github.com/ripple-dev/ripple/internal/canary"
	"github.com/ripple-dev/ripple/internal/digest"
	"github.com/ripple-dev/ripple/internal/reason"
)

// The pod gate sees what the workload's status misses: during the bake a
// canary's container is OOMKilled and Ready again at once (the test stands
// in for the kubelet and writes the pod's status), and the Deployment never
// shows a replica unavailable. The change halts, naming the pod, the
// container and how it ended, and no other Deployment rolls, not after the
// bake's end either. The restart happens while Ripple is down, killed
// (kill -9) during the bake: the restarted gate, which lists the pods as
// they are, still sees it, and nothing rolls early or twice.
func TestCanaryPodGateHaltsOnARestart(t *testing.T) {
	t.Parallel()
	const fleet, bake = 3, 30 * time.Second
	cs := kubernetes.NewForConfigOrDie(kc.Config)
	ns := newNamespace(t, cs)
	cm := createCanaryFleet(t, cs, ns, fleet, bake.String())
	r := newRipple(t, ns, "--canary-gates=pods")
	r.Env = []string{"POD_NAMESPACE=" + ns}
	r.Start()
	waitFleetBaseline(t, cs, ns, "", fleet)

	var pod *corev1.Pod
	bad, bakeStarted := changeAndKillInBake(t, cs, ns, cm, r, func(bad string) {
		pod = canaryPod(t, cs, ns, "d00", bad)
		restartContainer(t, cs, pod, "OOMKilled", 137)
	})
	halt := waitEvent(t, cs, ns, "ConfigMap", canaryConfig, reason.RolloutHalted)
	for _, want := range []string{"the pods gate", pod.Name, "restarted (OOMKilled, exit code 137)"} {
		if !strings.Contains(halt.Note, want) {
			t.Errorf("RolloutHalted %q does not say %q", halt.Note, want)
		}
	}
	if st := newestChange(t, ns).Status.Canary; st == nil || st.Phase != string(canary.Halted) || st.Gate != "pods" {
		t.Errorf("the change's canary %+v, want halted by the pods gate", st)
	}
	time.Sleep(time.Until(bakeStarted.Add(bake + 5*time.Second))) // past the bake's end
	if rolled := fleetWith(t, cs, ns, canaryEnv, bad); len(rolled) != 1 || rolled[0] != "d00" {
		t.Errorf("the Deployments written with the halted change are %v, want only the canary d00", rolled)
	}
	checkFleetRevisions(t, cs, ns, map[string]string{"d01": "1", "d02": "1"})
}

// changeAndKillInBake changes cm (the canaried fleet's config), waits
// until its canary bakes, and kills Ripple (kill -9), runs whileDown
// (unless nil) with the change's digest, and starts Ripple again: the
// digest, and when the bake started as its status says.
func changeAndKillInBake(t *testing.T, cs kubernetes.Interface, ns string, cm *corev1.ConfigMap, r *ripple, whileDown func(hash string)) (string, time.Time) {
	t.Helper()
	cm = updateConfig(t, cs, cm, "v2")
	var since time.Time
	waitFor(t, "the canary d00 baking", func(ctx context.Context) (bool, error) {
		cr, ok, err := latestChange(ctx, t, ns)
		if ok && cr.Status.Canary != nil && cr.Status.Canary.Phase == string(canary.Baking) {
			since = cr.Status.Canary.Since.Time
			return true, nil
		}
		return false, err
	})
	r.Kill()
	if whileDown != nil {
		whileDown(digest.ConfigMap(cm))
	}
	r.Start()
	return digest.ConfigMap(cm), since
}

// canaryPod is the running pod of Deployment name whose container has the
// config's env value hash.
func canaryPod(t *testing.T, cs kubernetes.Interface, ns, name, hash string) *corev1.Pod {
	t.Helper()
	var found *corev1.Pod
	waitFor(t, "a running pod of "+name+" with the change", func(ctx context.Context) (bool, error) {
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
		if err != nil {
			return false, err
		}
		for i := range pods.Items {
			p := &pods.Items[i]
			if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && len(p.Status.ContainerStatuses) > 0 && podEnv(p, canaryEnv) == hash {
				found = p
				return true, nil
			}
		}
		return false, nil
	})
	return found
}

func podEnv(p *corev1.Pod, name string) string {
	v, _ := envValue(&corev1.PodTemplateSpec{Spec: p.Spec}, name)
	return v
}

// restartContainer writes pod's status as a kubelet would after its first
// container ended (reason, exit code) and was started again, Ready again.
func restartContainer(t *testing.T, cs kubernetes.Interface, pod *corev1.Pod, why string, code int32) {
	t.Helper()
	p, err := cs.CoreV1().Pods(pod.Namespace).Get(t.Context(), pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := &p.Status.ContainerStatuses[0]
	c.RestartCount++
	c.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: why, ExitCode: code,
		StartedAt: metav1.NewTime(time.Now().Add(-time.Minute)), FinishedAt: metav1.Now()}}
	if _, err := cs.CoreV1().Pods(p.Namespace).UpdateStatus(t.Context(), p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// canaryErrors is the series the query gate reads in its e2e tests: a
// ratio of errors per pod, as an application's metrics would give it.
const canaryErrors = "app_error_ratio"

// queryGateRipple is Ripple with the query gate asking prom, every 5s,
// that the canaries' pods' error ratio stay under 0.05.
func queryGateRipple(t *testing.T, ns string, prom *kit.Prometheus) *ripple {
	r := newRipple(t, ns, "--canary-gates=query", "--prometheus-url="+prom.URL,
		"--canary-query=max("+canaryErrors+`{pod=~"$pods"}) < 0.05`, "--canary-query-interval=5s")
	r.Env = []string{"POD_NAMESPACE=" + ns}
	return r
}

// A change that keeps every pod Ready but raises the canary's error
// ratio halts, with the value in the Event, after a kill -9 of Ripple in
// the bake; no other workload rolls. The query reads the change's
// namespace and canaries only: another namespace's failing series is not
// seen, nor the pods of a workload d00-x beside the canary d00. The
// chart's NetworkPolicy for this Prometheus lets Ripple reach it.
func TestCanaryQueryGateHaltsOnTheValue(t *testing.T) {
	t.Parallel()
	const fleet, bake = 3, 40 * time.Second
	cs := kubernetes.NewForConfigOrDie(kc.Config)
	ns := newNamespace(t, cs)
	prom := kit.NewPrometheus(t)
	checkQueryGateEgress(t, cs, ns, prom.URL)
	prom.Set(0.01, canaryErrors, "namespace", ns, "pod", "d00-5d8f9c7b4-x2x9q")
	prom.Set(0.9, canaryErrors, "namespace", "elsewhere", "pod", "d00-5d8f9c7b4-x2x9q")
	prom.Set(0.9, canaryErrors, "namespace", ns, "pod", "d00-x-5d8f9c7b4-x2x9q")
	cm := createCanaryFleet(t, cs, ns, fleet, bake.String())
	r := queryGateRipple(t, ns, prom)
	r.Start()
	waitFleetBaseline(t, cs, ns, "", fleet)

	bad, bakeStarted := changeAndKillInBake(t, cs, ns, cm, r, nil)
	time.Sleep(6 * time.Second) // an evaluation of the restarted gate passed: neither 0.9 is read
	if st := newestChange(t, ns).Status.Canary; st == nil || st.Phase != string(canary.Baking) {
		t.Fatalf("the change's canary %+v, want still baking while the namespace's error ratio is 0.01", st)
	}

	prom.Set(0.3, canaryErrors, "namespace", ns, "pod", "d00-5d8f9c7b4-x2x9q")
	halt := waitEvent(t, cs, ns, "ConfigMap", canaryConfig, reason.RolloutHalted)
	for _, want := range []string{"the query gate", "the query gave 0.3", "not < 0.05"} {
		if !strings.Contains(halt.Note, want) {
			t.Errorf("RolloutHalted %q does not say %q", halt.Note, want)
		}
	}
	if st := newestChange(t, ns).Status.Canary; st == nil || st.Phase != string(canary.Halted) || st.Gate != "query" {
		t.Errorf("the change's canary %+v, want halted by the query gate", st)
	}
	for _, q := range prom.Queries() {
		if !strings.Contains(q, `namespace="`+ns+`"`) || !strings.Contains(q, `pod=~"(?:d00-[bcdfghjklmnpqrstvwxz2456789]{1,10}-[bcdfghjklmnpqrstvwxz2456789]{5})"`) {
			t.Errorf("Ripple asked %s: want it bound to namespace %s and the canary d00's pods", q, ns)
		}
	}
	time.Sleep(time.Until(bakeStarted.Add(bake + 5*time.Second))) // past the bake's end
	if rolled := fleetWith(t, cs, ns, canaryEnv, bad); len(rolled) != 1 || rolled[0] != "d00" {
		t.Errorf("the Deployments written with the halted change are %v, want only the canary d00", rolled)
	}
	checkFleetRevisions(t, cs, ns, map[string]string{"d01": "1", "d02": "1"})
}

// The same change with the query holding rolls every workload once, after
// the bake and within an evaluation of its end, across a kill -9 of
// Ripple in the bake.
func TestCanaryQueryGatePasses(t *testing.T) {
	t.Parallel()
	const fleet, bake = 3, 20 * time.Second
	cs := kubernetes.NewForConfigOrDie(kc.Config)
	ns := newNamespace(t, cs)
	prom := kit.NewPrometheus(t)
	prom.Set(0.01, canaryErrors, "namespace", ns, "pod", "d00-5d8f9c7b4-x2x9q")
	cm := createCanaryFleet(t, cs, ns, fleet, bake.String())
	r := queryGateRipple(t, ns, prom)
	r.Start()
	waitFleetBaseline(t, cs, ns, "", fleet)

	good, since := changeAndKillInBake(t, cs, ns, cm, r, nil)
	waitFleetRolled(t, cs, ns, good, fleet, bake+2*time.Minute)
	st := newestChange(t, ns).Status.Canary
	if st == nil || st.Phase != string(canary.Passed) {
		t.Fatalf("the change's canary %+v, want passed", st)
	}
	// The status keeps times to the second, rounded up.
	if passed := st.Since.Time; passed.Before(since.Add(bake)) {
		t.Errorf("the canary passed at %s, before its bake's end %s", passed, since.Add(bake))
	} else {
		t.Logf("the canary passed %s after its bake's end (the query is evaluated every 5s)", passed.Sub(since.Add(bake)))
	}
	checkFleetRevisions(t, cs, ns, nil)
	if len(prom.Queries()) == 0 {
		t.Error("Ripple never asked the query")
	}
}
