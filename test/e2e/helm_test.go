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
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
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
// the workload's image and its ConfigMap: the upgrade's own rollout starts
// pods that read the new data, so Ripple adds none. Exactly one new
// revision, a ReloadSkipped event saying why, and the next config change
// rolls once as usual. Both strategies; a Deployment and a StatefulSet.
func TestHelmUpgradeRollsOnce(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		kind     *kit.WorkloadKind
		strategy string
		replicas int32
	}{
		{kit.Deployment, "env-vars", defaultReplicas},
		{kit.Deployment, "annotations", defaultReplicas},
		{kit.StatefulSet, "env-vars", statefulSetReplicaCount},
	} {
		t.Run(tc.kind.String()+"/"+tc.strategy, func(t *testing.T) {
			t.Parallel()
			testHelmUpgradeRollsOnce(t, tc.kind, tc.strategy, tc.replicas)
		})
	}
}

func testHelmUpgradeRollsOnce(t *testing.T, kind *kit.WorkloadKind, strategy string, replicas int32) {
	cs := kubernetes.NewForConfigOrDie(kc.Config)
	ns := newNamespace(t, cs)
	// Default settings (settle window 1s), as docs/rollbacks.md claims.
	startRipple(t, ns, "--reload-strategy="+strategy)
	chart := filepath.Join("testdata", "helm-upgrade")
	helm := func(args ...string) {
		t.Helper()
		args = append(args, "--namespace", ns, "--set", "kind="+kind.Name, "--set", fmt.Sprintf("replicas=%d", replicas))
		if _, err := helmchart.HelmEnv([]string{"KUBECONFIG=" + kc.Kubeconfig}, args...); err != nil {
			t.Fatal(err)
		}
	}
	helm("install", "web", chart)
	w := trackWorkload(t, cs, kind, ns, "web")
	before := waitRolledOut(t, cs, w)
	cm, err := cs.CoreV1().ConfigMaps(ns).Get(t.Context(), configName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitBaseline(t, cs, w, digest.ConfigMap(cm))

	helm("upgrade", "web", chart, "--set", "image=registry.invalid/web:2", "--set", "config=v2")
	after := expectRollouts(t, cs, map[workload]rollouts{w: {before: before[w], n: 1, checks: []templateCheck{
		imageIs("registry.invalid/web:2"), noEnv(configEnv), noAnnotation(lastReloadedFromAnnot),
	}}})
	ev := eventOf(t, cs, ns, kind.Name, "ReloadSkipped")
	if !strings.Contains(ev, fmt.Sprintf("ConfigMap %q", configName)) || !strings.Contains(ev, "the pod template was changed after the config") {
		t.Errorf("ReloadSkipped event %q does not name %s and the template change", ev, configName)
	}
	after = expectQuiet(t, cs, w, after[w], settleMargin)
	if after[w].revisions != before[w].revisions+1 {
		t.Errorf("after one helm upgrade: %d revisions, want %d", after[w].revisions, before[w].revisions+1)
	}
	if rev := after[w].annotations[deploymentRevision]; kind == kit.Deployment && rev != "2" {
		t.Errorf("after one helm upgrade: revision %s, want 2", rev)
	}

	next := setConfigMapValue(t, cs, ns, configName, "v3")
	check := envIs(configEnv, next)
	if strategy == "annotations" {
		check = lastReloadedFrom("CONFIGMAP", configName, next)
	}
	expectRollouts(t, cs, oneEach(after, check))
}

// The other order, by kubectl: the Deployment's image first, its ConfigMap
// 5 s later. The pods the image change started may have read the old data,
// so Ripple rolls again: two new revisions, and the pods end on the new
// data.
func TestTemplateFirstThenConfigRollsTwice(t *testing.T) {
	t.Parallel()
	cs := kubernetes.NewForConfigOrDie(kc.Config)
	ns := newNamespace(t, cs)
	w, before := webWithBaseline(t, cs, ns, auto())

	kubectl(t, "set", "image", "deployment/web", "web=registry.invalid/web:2", "-n", ns)
	// The Deployment controller must have started the image's rollout
	// before the config changes: a controller that has not yet seen the
	// image change (a loaded cluster) starts one ReplicaSet for both
	// template changes, and two rollouts cannot be counted by ReplicaSets.
	began := time.Now()
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		d, err := cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		return err == nil && d.Status.ObservedGeneration >= d.Generation, nil
	})
	if err != nil {
		t.Fatalf("the Deployment controller never observed the image change: %v", err)
	}
	time.Sleep(max(0, 5*time.Second-time.Since(began)))
	kubectl(t, "patch", "configmap", configName, "-n", ns, "--type=merge", "-p", `{"data":{"VALUE":"v2"}}`)
	cm, err := cs.CoreV1().ConfigMaps(ns).Get(t.Context(), configName, metav1.GetOptions{})
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

// A helm upgrade whose workload comes long after its ConfigMap (a large
// chart, a busy API server): Helm's release record says the upgrade is
// pending, the change waits for it past the settle window, and the
// upgrade's own rollout applies the config. Played by hand, with the
// record Helm writes, so that the gap is longer than any settle window:
// one rollout, ReloadSkipped. Without the wait Ripple rolled once for
// the config and the upgrade once more.
func TestSlowHelmUpgradeRollsOnce(t *testing.T) {
	t.Parallel()
	cs := kubernetes.NewForConfigOrDie(kc.Config)
	ns := newNamespace(t, cs)
	ann := auto()
	ann["meta.helm.sh/release-name"], ann["meta.helm.sh/release-namespace"] = "web", ns
	w, before := webWithBaseline(t, cs, ns, ann)

	record := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "sh.helm.release.v1.web.v2", Namespace: ns,
		Labels: map[string]string{"owner": "helm", "name": "web", "version": "2", "status": "pending-upgrade"}}, Type: "helm.sh/release.v1"}
	if _, err := cs.CoreV1().Secrets(ns).Create(t.Context(), record, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	setConfigMapValue(t, cs, ns, configName, "v2")
	quiet := expectQuiet(t, cs, w, before[w], settleMargin)
	kubectl(t, "set", "image", "deployment/web", "web=registry.invalid/web:3", "-n", ns)
	kubectl(t, "label", "secret", record.Name, "-n", ns, "status=deployed", "--overwrite")
	after := expectRollouts(t, cs, map[workload]rollouts{w: {before: quiet[w], n: 1, checks: []templateCheck{
		imageIs("registry.invalid/web:3"), noEnv(configEnv),
	}}})
	if ev := eventOf(t, cs, ns, kit.Deployment.Name, "ReloadSkipped"); !strings.Contains(ev, "the pod template was changed after the config") {
		t.Errorf("ReloadSkipped event %q does not name the template change", ev)
	}
	expectQuiet(t, cs, w, after[w], settleMargin)
}

// webWithBaseline starts Ripple in ns with its defaults, creates the
// ConfigMap and the Deployment "web" with annotations that reads it, and
// waits for its rollout and Ripple's baseline.
func webWithBaseline(t *testing.T, cs kubernetes.Interface, ns string, annotations map[string]string) (workload, map[workload]snapshot) {
	t.Helper()
	startRipple(t, ns)
	createConfigMap(t, cs, ns, configName, "v1")
	w := workload{kind: kit.Deployment, ns: ns, name: "web"}
	w.create(t, cs, spec{configMaps: []string{configName}, annotations: annotations})
	before := waitRolledOut(t, cs, w)
	cm, err := cs.CoreV1().ConfigMaps(ns).Get(t.Context(), configName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitBaseline(t, cs, w, digest.ConfigMap(cm))
	return w, before
}

// trackWorkload starts counting the template changes of the workload of
// kind named name, created by someone else (helm), as workload.create does
// for its own.
func trackWorkload(t *testing.T, cs kubernetes.Interface, kind *kit.WorkloadKind, ns, name string) workload {
	t.Helper()
	var (
		obj runtime.Object
		err error
	)
	if kind == kit.StatefulSet {
		obj, err = cs.AppsV1().StatefulSets(ns).Get(t.Context(), name, metav1.GetOptions{})
	} else {
		obj, err = cs.AppsV1().Deployments(ns).Get(t.Context(), name, metav1.GetOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
	w := workload{kind: kind, ns: ns, name: name}
	watchTemplate(t, cs, w, obj)
	return w
}

// noAnnotation checks that the template has no annotation key.
func noAnnotation(key string) templateCheck {
	return func(tpl *corev1.PodTemplateSpec) error {
		if v, ok := tpl.Annotations[key]; ok {
			return fmt.Errorf("pod-template annotation %s=%s, want none", key, v)
		}
		return nil
	}
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

// eventOf returns the message of the one Normal event with reason on the
// workload of kind named web in ns.
func eventOf(t *testing.T, cs kubernetes.Interface, ns, kind, reason string) string {
	t.Helper()
	var got []string
	waitFor(t, "a "+reason+" event", func(ctx context.Context) (bool, error) {
		list, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=" + reason})
		if err != nil {
			return false, err
		}
		got = nil
		for _, e := range list.Items {
			if e.InvolvedObject.Kind == kind && e.InvolvedObject.Name == "web" && e.Type == corev1.EventTypeNormal {
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
