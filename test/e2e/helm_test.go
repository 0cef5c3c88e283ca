package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ripple-dev/ripple/hack/helmchart"
	"github.com/ripple-dev/ripple/hack/kit"
	"github.com/ripple-dev/ripple/internal/digest"
)

// settleMargin is how long a test watches for a rollout by Ripple that
// must not come after a template change: the default settle window (1 s)
// and a margin for the reconcile and the Deployment controller.
const settleMargin = 5 * time.Second

// `helm upgrade` (the helm binary) of a chart whose upgrade changes both
// the Deployment's image and its ConfigMap: the upgrade's own rollout
// starts pods that read the new data, so Ripple adds none. Exactly one new
// revision, a ReloadSkipped event saying why, and the next config change
// rolls once as usual.
func TestHelmUpgradeRollsOnce(t *testing.T) {
	t.Parallel()
	cs := kubernetes.NewForConfigOrDie(kc.Config)
	ns := newNamespace(t, cs)
	startRipple(t, ns)
	chart := filepath.Join("testdata", "helm-upgrade")
	helm := func(args ...string) {
		t.Helper()
		if _, err := helmchart.HelmEnv([]string{"KUBECONFIG=" + kc.Kubeconfig}, append(args, "--namespace", ns)...); err != nil {
			t.Fatal(err)
		}
	}
	helm("install", "web", chart)
	w := trackDeployment(t, cs, ns, "web")
	before := waitRolledOut(t, cs, w)
	cm, err := cs.CoreV1().ConfigMaps(ns).Get(t.Context(), configName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitBaseline(t, cs, w, digest.ConfigMap(cm))

	helm("upgrade", "web", chart, "--set", "image=registry.invalid/web:2", "--set", "config=v2")
	after := expectRollouts(t, cs, map[workload]rollouts{w: {before: before[w], n: 1, checks: []templateCheck{
		imageIs("registry.invalid/web:2"), noEnv(configEnv),
	}}})
	ev := eventOf(t, cs, ns, "ReloadSkipped")
	if !strings.Contains(ev, fmt.Sprintf("ConfigMap %q", configName)) || !strings.Contains(ev, "the pod template was changed after the config") {
		t.Errorf("ReloadSkipped event %q does not name %s and the template change", ev, configName)
	}
	after = expectQuiet(t, cs, w, after[w], settleMargin)
	if rev := after[w].annotations[deploymentRevision]; rev != "2" || after[w].revisions != 2 {
		t.Errorf("after one helm upgrade: revision %s, %d ReplicaSets; want revision 2, 2 ReplicaSets", rev, after[w].revisions)
	}

	next := setConfigMapValue(t, cs, ns, configName, "v3")
	expectRollouts(t, cs, oneEach(after, envIs(configEnv, next)))
}

// The other order, by kubectl: the Deployment's image first, its ConfigMap
// 5 s later. The pods the image change started may have read the old data,
// so Ripple rolls again: two new revisions, and the pods end on the new
// data.
func TestTemplateFirstThenConfigRollsTwice(t *testing.T) {
	t.Parallel()
	cs := kubernetes.NewForConfigOrDie(kc.Config)
	ns := newNamespace(t, cs)
	startRipple(t, ns)
	createConfigMap(t, cs, ns, configName, "v1")
	w := workload{kind: kit.Deployment, ns: ns, name: "web"}
	w.create(t, cs, spec{configMaps: []string{configName}, annotations: auto()})
	before := waitRolledOut(t, cs, w)
	cm, err := cs.CoreV1().ConfigMaps(ns).Get(t.Context(), configName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitBaseline(t, cs, w, digest.ConfigMap(cm))

	kubectl(t, "set", "image", "deployment/web", "web=registry.invalid/web:2", "-n", ns)
	time.Sleep(5 * time.Second)
	kubectl(t, "patch", "configmap", configName, "-n", ns, "--type=merge", "-p", `{"data":{"VALUE":"v2"}}`)
	cm, err = cs.CoreV1().ConfigMaps(ns).Get(t.Context(), configName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sum := digest.ConfigMap(cm)
	after := expectRollouts(t, cs, map[workload]rollouts{w: {before: before[w], n: 2, checks: []templateCheck{
		imageIs("registry.invalid/web:2"), envIs(configEnv, sum),
	}}})
	if rev := after[w].annotations[deploymentRevision]; rev != "3" {
		t.Errorf("revision %s, want 3", rev)
	}
	podsPass(t, cs, ns, "app=web", envIs(configEnv, sum), imageIs("registry.invalid/web:2"))
}

// trackDeployment starts counting the template changes of Deployment name,
// created by someone else (helm), as workload.create does for its own.
func trackDeployment(t *testing.T, cs kubernetes.Interface, ns, name string) workload {
	t.Helper()
	d, err := cs.AppsV1().Deployments(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w := workload{kind: kit.Deployment, ns: ns, name: name}
	watchTemplate(t, cs, w, d)
	return w
}

// imageIs checks the image of the template's first container.
func imageIs(image string) templateCheck {
	return func(tpl *corev1.PodTemplateSpec) error {
		if got := tpl.Spec.Containers[0].Image; got != image {
			return fmt.Errorf("image %s, want %s", got, image)
		}
		return nil
	}
}

// expectQuiet checks for d that w does not roll since s, and returns its
// snapshot at the end.
func expectQuiet(t *testing.T, cs kubernetes.Interface, w workload, s snapshot, d time.Duration) map[workload]snapshot {
	t.Helper()
	consistently(t, fmt.Sprintf("no rollout of %s", w), d, func(ctx context.Context) error {
		now, err := w.observe(ctx, cs)
		if err != nil {
			return err
		}
		if now.templates != s.templates || now.revisions != s.revisions {
			return fmt.Errorf("%s rolled: %d -> %d template changes, %d -> %d revisions\n%s", w,
				s.templates, now.templates, s.revisions, now.revisions, describe(ctx, cs, w))
		}
		return nil
	})
	return map[workload]snapshot{w: w.get(t, cs)}
}

// eventOf returns the message of the one Normal event with reason on
// Deployment web in ns.
func eventOf(t *testing.T, cs kubernetes.Interface, ns, reason string) string {
	t.Helper()
	var got []string
	waitFor(t, "a "+reason+" event", func(ctx context.Context) (bool, error) {
		list, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=" + reason})
		if err != nil {
			return false, err
		}
		got = nil
		for _, e := range list.Items {
			if e.InvolvedObject.Kind == "Deployment" && e.InvolvedObject.Name == "web" && e.Type == corev1.EventTypeNormal {
				got = append(got, e.Message)
			}
		}
		return len(got) > 0, nil
	})
	if len(got) != 1 {
		t.Errorf("%s events %q, want one", reason, got)
	}
	return got[0]
}
