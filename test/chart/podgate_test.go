package chart

import (
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/ripple-dev/ripple/hack/helmchart"
	"github.com/ripple-dev/ripple/hack/kit"
)

// TestPodGateRules proves the rule that ripple.canaryGates: [pods] adds
// (list and watch on pods) on the real API server, with Ripple running as
// the chart's ServiceAccount: a canaried change whose canary completed its
// rollout (the test writes the status the Deployment controller would)
// bakes under the pod gate's watch of the canary's pods, passes, and the
// other Deployment rolls, with no forbidden error. Without the rule the
// gate cannot watch: the API server's forbidden error names pods, and the
// gate holds the change (the other Deployment does not roll).
func TestPodGateRules(t *testing.T) {
	withAndWithoutRule(t, "with list and watch on pods", podGateCase)
}

// withAndWithoutRule runs a rule's case in parallel twice: with the rule
// (named with), and without it.
func withAndWithoutRule(t *testing.T, with string, run func(t *testing.T, withRule bool)) {
	for _, withRule := range []bool{true, false} {
		name := with
		if !withRule {
			name = "without it"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			run(t, withRule)
		})
	}
}

func podGateCase(t *testing.T, withRule bool) {
	ctx := t.Context()
	cs := kubernetes.NewForConfigOrDie(api.Config)
	relNS := kit.NewNamespace(t, cs, "podgate-", nil)
	app := kit.NewNamespace(t, cs, "podgate-app-", nil)
	prefix := relNS + ".rbac.test"
	values := map[string]any{
		"reloader": map[string]any{"custom_annotations": map[string]any{"auto": prefix + "/auto"}},
		"ripple":   map[string]any{"annotationPrefix": prefix, "canaryGates": []any{"pods"}},
	}
	_, objs := render(t, helmchart.Release{Name: relNS, Namespace: relNS, Values: []map[string]any{values}})
	takeRule(t, objs, "core/pods list,watch", !withRule)
	sa := applyRBAC(t, newApplier(t, api.Config), objs)
	user := "system:serviceaccount:" + relNS + ":" + sa
	waitAuthorized(t, cs, relNS, sa, roles(objs), []string{app})

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: app,
		Annotations: map[string]string{prefix + "/canary": "1", prefix + "/canary-bake": "0s"}}, Data: map[string]string{"v": "0"}}
	if _, err := cs.CoreV1().ConfigMaps(app).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"d0", "d1"} {
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: app, Annotations: map[string]string{prefix + "/auto": "true"}},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](1),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "example.com/app:1",
						EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}}}}},
				},
			},
		}
		if _, err := cs.AppsV1().Deployments(app).Create(ctx, d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// The canary's pod, as its ReplicaSet would have made it.
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "d0-1", Namespace: app, Labels: map[string]string{"app": "d0"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "example.com/app:1"}}}}
	if _, err := cs.CoreV1().Pods(app).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	d, c := rippleDeployment(t, objs)
	rip := startRipple(t, user, relNS, sa, c.Args, envLookup(objs, d, c))
	defer func() {
		if err := rip.Stop(); err != nil && strings.Contains(err.Error(), "did not stop") {
			t.Error(err)
		}
	}()

	written := func(name string) bool {
		d, err := cs.AppsV1().Deployments(app).Get(ctx, name, metav1.GetOptions{})
		return err == nil && slices.ContainsFunc(d.Spec.Template.Spec.Containers[0].Env, func(e corev1.EnvVar) bool {
			return strings.HasPrefix(e.Name, "STAKATER_") && e.Value != ""
		}) && d.Generation > 1
	}
	forbidden := func() []string {
		return slices.DeleteFunc(klogs.Lines("forbidden", `"`+user+`"`), func(l string) bool { return !strings.Contains(l, `"pods"`) })
	}
	// Change the config until Ripple rolls the canary: a change seen
	// before its caches synced is its baseline.
	deadline := time.Now().Add(caseTimeout)
	for i := 1; !written("d0") && time.Now().Before(deadline); i++ {
		cm.Data["v"] = time.Now().String()
		if _, err := cs.CoreV1().ConfigMaps(app).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Second)
	}
	if !written("d0") {
		t.Fatalf("the canary d0 did not roll within %s", caseTimeout)
	}
	completeRollout(t, cs, app, "d0")
	for time.Now().Before(deadline.Add(caseTimeout)) && !written("d1") && len(forbidden()) == 0 {
		time.Sleep(200 * time.Millisecond)
	}
	switch {
	case withRule && (!written("d1") || len(forbidden()) > 0):
		t.Errorf("with the rule: d1 rolled %v (want true), forbidden errors on pods %q (want none)", written("d1"), forbidden())
	case !withRule && len(forbidden()) == 0:
		t.Errorf("without the rule no forbidden error on pods (d1 rolled: %v): the rule is not needed", written("d1"))
	case !withRule && written("d1"):
		t.Error("without the rule the gate could not watch the canary's pods, yet the change passed")
	}
}

// completeRollout writes the status the Deployment controller would once
// name's template is rolled out and available.
func completeRollout(t *testing.T, cs kubernetes.Interface, ns, name string) {
	t.Helper()
	d, err := cs.AppsV1().Deployments(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1}
	if _, err := cs.AppsV1().Deployments(ns).UpdateStatus(t.Context(), d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// takeRule checks that the rendered roles grant the rule desc (as
// describeRule writes it) and, with remove, takes it out of them: the
// case without it, that proves it needed.
func takeRule(t *testing.T, objs []*unstructured.Unstructured, desc string, remove bool) {
	t.Helper()
	found := false
	for _, role := range roles(objs) {
		rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
		i := slices.IndexFunc(rules, func(x any) bool { return describeRule(x) == desc })
		if i < 0 {
			continue
		}
		found = true
		if remove {
			if err := unstructured.SetNestedSlice(role.Object, slices.Delete(rules, i, i+1), "rules"); err != nil {
				t.Fatal(err)
			}
		}
	}
	if !found {
		t.Fatalf("the chart renders no rule %q", desc)
	}
}
