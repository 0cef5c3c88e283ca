package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/ripple-dev/ripple/hack/kit"
	"github.com/ripple-dev/ripple/internal/digest"
	"github.com/ripple-dev/ripple/internal/pin"
	"github.com/ripple-dev/ripple/internal/reason"
)

// Three pinned Deployments share a canaried ConfigMap. A good change rolls
// all three, sharing its copy; a bad one halts on the canary d00 (its new
// pods are refused).
// docs/pinning.md's `ripple undo` (run as written) puts d00 back to the
// revision that pins the good data; d01 and d02, which never took the bad
// change, are not written; Ripple does not roll d00 forward again.
func TestUndoAHaltedCanary(t *testing.T) {
	t.Parallel()
	cs := kubernetes.NewForConfigOrDie(kc.Config)
	ns := newNamespace(t, cs)
	const n = 3
	cm := createCanaryFleet(t, cs, ns, n, "2s")
	for i := range n {
		if _, err := cs.AppsV1().Deployments(ns).Patch(t.Context(), fmt.Sprintf("d%02d", i), types.MergePatchType,
			[]byte(`{"metadata":{"annotations":{"ripple.dev/pin":"true"}}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// As the chart's ServiceAccount under its pinned copy policy: the
	// three Deployments share each copy, and are added to its owners by
	// the patches the policy confines.
	startRipple(t, ns, "--pinning", "--kubeconfig="+confinePinning(t, cs, ns).kubeconfig)
	waitFleetBaseline(t, cs, ns, "", n)

	cm = updateConfig(t, cs, cm, "good")
	good := fmt.Sprintf("configmap/%s=%s", canaryConfig, digest.ConfigMap(cm)[:pin.DigestLen])
	waitFleetRolled(t, cs, ns, digest.ConfigMap(cm), n, 2*time.Minute)
	goodCopy, err := cs.CoreV1().ConfigMaps(ns).Get(t.Context(), canaryConfig+pin.Infix+digest.ConfigMap(cm)[:pin.DigestLen], metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	uids := map[types.UID]bool{}
	for _, o := range goodCopy.OwnerReferences {
		uids[o.UID] = true
	}
	if len(uids) != len(goodCopy.OwnerReferences) || len(uids) < n {
		t.Fatalf("the shared copy has owners %v, want each of the %d Deployments (or its ReplicaSet) once", goodCopy.OwnerReferences, n)
	}

	blockNewPods(t, cs, ns, n)
	cm = updateConfig(t, cs, cm, "bad")
	bad := fmt.Sprintf("configmap/%s=%s", canaryConfig, digest.ConfigMap(cm)[:pin.DigestLen])
	waitEvent(t, cs, ns, "ConfigMap", canaryConfig, reason.RolloutHalted)
	generations := map[string]int64{}
	for i := range n {
		name := fmt.Sprintf("d%02d", i)
		d, err := cs.AppsV1().Deployments(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		generations[name] = d.Generation
		want := good
		if i == 0 {
			want = bad
		}
		if got := d.Spec.Template.Annotations["ripple.dev/pinned"]; got != want {
			t.Fatalf("before the undo %s pins %q, want %q", name, got, want)
		}
	}

	// The cluster is shared with other tests' Ripples: name this one's
	// settings, which a user with one Ripple need not.
	out, err := recipe{kubeconfig: kc.Kubeconfig, fill: map[string]string{
		"<config>": canaryConfig, "<namespace>": ns + " --ripple-namespace=" + ns,
	}}.run(t, "docs/pinning.md#undo-a-change")
	if err != nil || !strings.Contains(out, "Deployment/d00 (canary): revision") || !strings.Contains(out, "Deployment/d01: it runs older data") {
		t.Fatalf("docs/pinning.md#undo-a-change (%v):\n%s\nwant d00 rolled back as the canary, d01 left alone", err, out)
	}
	t.Logf("ripple undo:\n%s", out)
	waitFor(t, "d00 back on the good data", func(ctx context.Context) (bool, error) {
		d, err := cs.AppsV1().Deployments(ns).Get(ctx, "d00", metav1.GetOptions{})
		return err == nil && d.Spec.Template.Annotations["ripple.dev/pinned"] == good, err
	})
	consistently(t, "d00 not rolled forward, d01 and d02 not written", rollbackQuiet, func(ctx context.Context) error {
		for i := range n {
			name := fmt.Sprintf("d%02d", i)
			d, err := cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if got := d.Spec.Template.Annotations["ripple.dev/pinned"]; got != good {
				return fmt.Errorf("%s pins %q, want %q", name, got, good)
			}
			if i > 0 && d.Generation != generations[name] {
				return fmt.Errorf("%s was written by the undo: generation %d -> %d", name, generations[name], d.Generation)
			}
		}
		return nil
	})
}

// A pinned StatefulSet and DaemonSet read a ConfigMap and a Secret. Two
// changes roll each twice, pinned; docs/pinning.md's `ripple undo` puts
// each back on its ControllerRevision of the first change: their new pods
// read the copies of that data, and Ripple does not roll them forward.
func TestUndoPinnedStatefulSetAndDaemonSet(t *testing.T) {
	t.Parallel()
	cs := kubernetes.NewForConfigOrDie(kc.Config)
	ns := newNamespace(t, cs)
	installPinningPolicy(t, cs, ns)
	startRipple(t, ns, "--pinning")
	createConfigMap(t, cs, ns, configName, "v1")
	createSecret(t, cs, ns)
	ws := []workload{{kit.StatefulSet, ns, "db"}, {kit.DaemonSet, ns, "agent"}}
	for _, w := range ws {
		w.create(t, cs, spec{configMaps: []string{configName}, secrets: []string{secretName},
			annotations: map[string]string{autoAnnotation: "true", "ripple.dev/pin": "true"}})
	}
	before := waitRolledOut(t, cs, ws...)
	waitBaselineRecord(t, func(ctx context.Context) (metav1.Object, error) {
		return cs.AppsV1().StatefulSets(ns).Get(ctx, "db", metav1.GetOptions{})
	})
	waitBaselineRecord(t, func(ctx context.Context) (metav1.Object, error) {
		return cs.AppsV1().DaemonSets(ns).Get(ctx, "agent", metav1.GetOptions{})
	})

	var records []string
	for _, v := range []string{"v2", "v3"} {
		var record string
		record, before = changePinned(t, cs, ns, v, before)
		records = append(records, record)
	}

	out, err := recipe{kubeconfig: kc.Kubeconfig, fill: map[string]string{
		"<config>": configName, "<namespace>": ns + " --ripple-namespace=" + ns,
	}}.run(t, "docs/pinning.md#undo-a-change")
	if err != nil || !strings.Contains(out, "StatefulSet/db: revision") || !strings.Contains(out, "DaemonSet/agent: revision") {
		t.Fatalf("docs/pinning.md#undo-a-change (%v):\n%s\nwant db and agent rolled back", err, out)
	}
	t.Logf("ripple undo:\n%s", out)
	for _, w := range ws {
		waitFor(t, w.String()+" back on the first change's copies", func(ctx context.Context) (bool, error) {
			s, err := w.observe(ctx, cs)
			return err == nil && s.template.Annotations["ripple.dev/pinned"] == records[0], err
		})
	}
	before = waitRolledOut(t, cs, ws...)
	for _, w := range ws {
		checkPods(t, cs, w, records[0], "v2", "p-v2")
	}
	consistently(t, "no rollout by Ripple after the undo", rollbackQuiet, func(ctx context.Context) error {
		for _, w := range ws {
			s, err := w.observe(ctx, cs)
			if err != nil {
				return err
			}
			if s.templates != before[w].templates {
				return fmt.Errorf("%s rolled after the undo: %d -> %d template changes", w, before[w].templates, s.templates)
			}
		}
		return nil
	})
}
