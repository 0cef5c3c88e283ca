package e2e

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/ripple-dev/ripple/hack/helmchart"
	"github.com/ripple-dev/ripple/hack/kit"
	"github.com/ripple-dev/ripple/internal/digest"
)

// createOwned creates the Deployment w, reading configMap, as the
// shop-operator field manager (the owner the operators of these tests
// play), and watches its template.
func createOwned(t *testing.T, cs kubernetes.Interface, w workload, configMap string) *appsv1.Deployment {
	t.Helper()
	d, err := cs.AppsV1().Deployments(w.ns).Create(t.Context(), &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: w.name, Annotations: auto()},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(defaultReplicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": w.name}},
			Template: spec{configMaps: []string{configMap}}.template(w.name),
		},
	}, metav1.CreateOptions{FieldManager: "shop-operator"})
	if err != nil {
		t.Fatal(err)
	}
	watchTemplate(t, cs, w, d)
	return d
}

// A revert and a rollout held after MaxAttempts are one reason,
// ReloadReverted, and their alerts must not read alike. Ripple runs with
// ALERT_ON_RELOAD and a webhook sink. On "web", the reverting operator of
// TestRevertingOperator removes Ripple's value after the rollout: a
// revert. On "held", an operator puts back the template of the previous
// rollout (an older value of Ripple's env var) with the baseline's applied
// record after each rollout, which neither the revert nor the rollback
// rule reads: Ripple rolls the change twice and then holds it. Each alert
// says what happened, and they differ.
func TestRevertAndHeldAlertsReadApart(t *testing.T) {
	t.Parallel()
	cs := kubernetes.NewForConfigOrDie(kc.Config)
	ns := newNamespace(t, cs)
	sink := kit.NewAlertSink(t, 0)
	r := newRipple(t, ns)
	r.Env = []string{"ALERT_ON_RELOAD=true", "ALERT_SINK=webhook", "ALERT_WEBHOOK_URL=" + sink.URL}
	r.Start()
	const webConfig = "web-config"
	webCM := createConfigMap(t, cs, ns, webConfig, "v1")
	cm := createConfigMap(t, cs, ns, configName, "v1")
	web, held := workload{kit.Deployment, ns, "web"}, workload{kit.Deployment, ns, "held"}
	d := createOwned(t, cs, web, webConfig)
	createOwned(t, cs, held, configName)
	before := waitRolledOut(t, cs, web, held)
	waitBaseline(t, cs, web, digest.ConfigMap(webCM))
	waitBaseline(t, cs, held, digest.ConfigMap(cm))

	startOperator(t, cs, ns, "web", d.Spec.Template, nil)
	setConfigMapValue(t, cs, ns, webConfig, "v2")
	waitEventNaming(t, cs, web, "ReloadReverted", "Reload reverted by")

	baseline := held.get(t, cs).annotations[appliedAnnotation]
	sum := setConfigMapValue(t, cs, ns, configName, "v2")
	expectRollouts(t, cs, oneEach(map[workload]snapshot{held: before[held]}, envIs(configEnv, sum)))
	rolled, err := cs.AppsV1().Deployments(ns).Get(t.Context(), "held", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	startOperator(t, cs, ns, "held", rolled.Spec.Template, map[string]string{appliedAnnotation: baseline})
	setConfigMapValue(t, cs, ns, configName, "v3")
	waitEventNaming(t, cs, held, "ReloadReverted", "did not keep it")

	// The alerts leave through Ripple's queue, after the Events.
	about := func(w workload) string {
		return "text/plain Ripple, " + w.name + " of type Deployment in namespace " + ns + ": "
	}
	var reverts, holds []string
	waitFor(t, "the revert's and the hold's alerts", func(context.Context) (bool, error) {
		reverts, holds = nil, nil
		for _, a := range sink.Received() {
			if m, ok := strings.CutPrefix(a, about(web)); ok {
				reverts = append(reverts, m)
			}
			if m, ok := strings.CutPrefix(a, about(held)); ok {
				holds = append(holds, m)
			}
		}
		return len(reverts) > 0 && len(holds) > 0, nil
	})
	const (
		revertSays = `Reload reverted by "shop-operator" (update): the pod template no longer carries ConfigMap "` + webConfig + `" `
		heldSays   = `Reload held: Ripple rolled ConfigMap "` + configName + `" 2 times and "shop-operator" (update) did not keep it.`
	)
	for _, m := range reverts {
		if !strings.HasPrefix(m, revertSays) || strings.Contains(strings.ToLower(m), "held") {
			t.Errorf("web's alert %q, want one starting %q that holds nothing", m, revertSays)
		}
	}
	for _, m := range holds {
		if !strings.HasPrefix(m, heldSays) {
			t.Errorf("held's alert %q, want one starting %q", m, heldSays)
		}
	}
	if reverts[0] == holds[0] {
		t.Errorf("the revert and the hold alert alike: %q", reverts[0])
	}
	t.Logf("the revert's alert: %s\nthe hold's alert: %s", reverts[0], holds[0])
}

// Ripple installed by its chart with ripple.restartMethods.delete only, and
// run with its ServiceAccount's own token, may list and delete pods but
// not evict them: a change to a workload with the restart method evict
// restarts nothing, and `ripple explain` shows the RestartFailed Warning
// naming the permission and the chart value.
func TestExplainShowsRestartFailed(t *testing.T) {
	t.Parallel()
	cs := kubernetes.NewForConfigOrDie(kc.Config)
	ns := newNamespace(t, cs)
	chart, err := helmchart.Dir()
	if err != nil {
		t.Fatal(err)
	}
	if out, err := helmchart.HelmEnv([]string{"KUBECONFIG=" + kc.Kubeconfig},
		"install", "ripple", chart, "--namespace", ns, "--set", "reloader.watchGlobally=false", "--set", "ripple.restartMethods.delete=true"); err != nil {
		t.Fatalf("helm install: %v\n%s", err, out)
	}
	installed, err := cs.AppsV1().Deployments(ns).Get(t.Context(), "ripple", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod := installed.Spec.Template.Spec
	r := newRipple(t, ns, append([]string{"--kubeconfig=" + tokenKubeconfig(t, cs, ns, pod.ServiceAccountName)}, pod.Containers[0].Args...)...)
	r.Env = []string{"POD_NAMESPACE=" + ns} // as the chart's pod has it
	r.Start()

	cm := createConfigMap(t, cs, ns, configName, "v1")
	web := workload{kit.Deployment, ns, "web"}
	annotations := auto()
	annotations[restartMethodAnnotation] = "evict"
	web.create(t, cs, spec{configMaps: []string{configName}, annotations: annotations})
	waitRolledOut(t, cs, web)
	waitBaseline(t, cs, web, digest.ConfigMap(cm))
	old := podUIDs(t, cs, ns, "app=web")

	setConfigMapValue(t, cs, ns, configName, "v2")
	const says = "Cannot restart the pods (restart method evict): Ripple may not create pods/eviction; " +
		"grant it with the Helm chart value ripple.restartMethods.evict=true"
	waitEventNaming(t, cs, web, "RestartFailed", says)
	out, err := runCommand(t, ns, "explain", "deploy/web")
	if err != nil {
		t.Fatalf("explain: %v\n%s", err, out)
	}
	var line string
	for l := range strings.Lines(out) {
		if strings.Contains(l, "RestartFailed") {
			line = l
		}
	}
	if !strings.Contains(line, "Warning") || !strings.Contains(line, says) {
		t.Errorf("explain shows no RestartFailed Warning saying %q:\n%s", says, out)
	}
	if now := podUIDs(t, cs, ns, "app=web"); len(now) != len(old) {
		t.Errorf("%d pods before the change, %d after: Ripple restarted pods it may not evict", len(old), len(now))
	}
	for uid := range old {
		if !podUIDs(t, cs, ns, "app=web")[uid] {
			t.Errorf("pod %s was restarted, though Ripple may not evict it", uid)
		}
	}
}
