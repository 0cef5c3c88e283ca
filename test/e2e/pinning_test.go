package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ripple-dev/ripple/hack/kit"
	"github.com/ripple-dev/ripple/internal/explain"
	"github.com/ripple-dev/ripple/internal/pin"
)

// installPinningPolicy installs the chart's MutatingAdmissionPolicy for
// pinned pods, its binding narrowed to ns (the API server is shared).
func installPinningPolicy(t *testing.T, cs kubernetes.Interface, ns string) {
	t.Helper()
	ctx := t.Context()
	values := map[string]any{"ripple": map[string]any{"pinning": map[string]any{"enabled": true}}}
	ps := chartObjects[admissionregistrationv1.MutatingAdmissionPolicy](t, ns, "MutatingAdmissionPolicy", values)
	bs := chartObjects[admissionregistrationv1.MutatingAdmissionPolicyBinding](t, ns, "MutatingAdmissionPolicyBinding", values)
	if len(ps) != 1 || len(bs) != 1 {
		t.Fatalf("the chart renders %d policies and %d bindings, want one each", len(ps), len(bs))
	}
	p, b := ps[0], bs[0]
	p.Name = "ripple-pinned-configs-" + ns
	b.Name, b.Spec.PolicyName = p.Name, p.Name
	b.Spec.MatchResources = &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
		MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}}}
	api := cs.AdmissionregistrationV1()
	if _, err := api.MutatingAdmissionPolicies().Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = api.MutatingAdmissionPolicies().Delete(context.WithoutCancel(ctx), p.Name, metav1.DeleteOptions{})
	})
	if _, err := api.MutatingAdmissionPolicyBindings().Create(ctx, b, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = api.MutatingAdmissionPolicyBindings().Delete(context.WithoutCancel(ctx), b.Name, metav1.DeleteOptions{})
	})
}

// A pinned Deployment (--pinning, ripple.dev/pin) reads a ConfigMap (by
// envFrom and as a volume) and a Secret. Two changes of both roll it twice, each rollout's pods reading
// immutable copies of that change's data; `kubectl rollout undo` brings
// back the revision of the first change, and its new pods read the copies
// of that data, not the current data; Ripple keeps the undo (no rollout
// of its own), and says the pods read the pinned copies. A second undo
// returns to the latest data.
func TestPinnedUndoRestoresTheData(t *testing.T) {
	t.Parallel()
	cs := kubernetes.NewForConfigOrDie(kc.Config)
	ns := newNamespace(t, cs)
	installPinningPolicy(t, cs, ns)
	startRipple(t, ns, "--pinning")
	w := workload{kind: kit.Deployment, ns: ns, name: "web"}
	createConfigMap(t, cs, ns, configName, "v1")
	createSecret(t, cs, ns)
	w.create(t, cs, spec{configMaps: []string{configName}, mounted: []string{configName}, secrets: []string{secretName},
		annotations: map[string]string{autoAnnotation: "true", "ripple.dev/pin": "true"}})
	before := waitRolledOut(t, cs, w)
	waitBaselineRecord(t, func(ctx context.Context) (metav1.Object, error) {
		return cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
	})

	// Two changes of both configs, each rolled once and pinned.
	var records []string
	for i, v := range []string{"v2", "v3"} {
		var want string
		want, before = changePinned(t, cs, ns, v, before)
		checkPods(t, cs, w, want, v, "p-"+v)
		records = append(records, want)
		t.Logf("change %d rolled, pinned %s", i+1, want)
	}

	undo := func(to string, cm, sec string) {
		t.Helper()
		if out, err := (recipe{kubeconfig: kc.Kubeconfig, fill: map[string]string{"<namespace>": ns}}).run(t, "docs/pinning.md#undo"); err != nil {
			t.Fatalf("docs/pinning.md#undo: %v\n%s", err, out)
		}
		waitFor(t, "the undo", func(ctx context.Context) (bool, error) {
			s, err := w.observe(ctx, cs)
			return err == nil && s.templates > before[w].templates, err
		})
		before = waitRolledOut(t, cs, w)
		if got := before[w].template.Annotations["ripple.dev/pinned"]; got != to {
			t.Fatalf("after the undo the template pins %q, want %q", got, to)
		}
		checkPods(t, cs, w, to, cm, sec)
		consistently(t, "no rollout by Ripple after the undo", rollbackQuiet, func(ctx context.Context) error {
			s, err := w.observe(ctx, cs)
			if err != nil {
				return err
			}
			if s.templates != before[w].templates || s.revisions != before[w].revisions {
				return fmt.Errorf("%s rolled after the undo: %d -> %d template changes", w, before[w].templates, s.templates)
			}
			return nil
		})
	}
	undo(records[0], "v2", "p-v2")
	if ev := rolledBackEvent(t, cs, ns, "Deployment"); !strings.Contains(ev, "from the copies it pins ("+records[0]+")") {
		t.Errorf("RolledBack event %q does not say the pods read the pinned copies %s", ev, records[0])
	}
	// explain, told --pinning (this Ripple publishes no settings), asks
	// the API server whether it serves the policy and names the copies.
	out, err := runCommand(t, ns, "explain", "deployment/web", "--pinning", "-o", "json")
	var ex struct {
		Verdict string
		Pinning *explain.Pinning
	}
	if err == nil {
		err = json.Unmarshal([]byte(out), &ex)
	}
	if err != nil || ex.Pinning == nil || !ex.Pinning.On || ex.Pinning.Refused != "" || ex.Pinning.Copies != records[0] ||
		!strings.Contains(ex.Verdict, "from the copies it pins") {
		t.Errorf("explain says pinning %+v (%v), verdict %q, want on with the copies %s, read by the pods:\n%s", ex.Pinning, err, ex.Verdict, records[0], out)
	}
	undo(records[1], "v3", "p-v3")
}

// changePinned sets the ConfigMap to v and the Secret to "p-"+v, expects
// one rollout of each workload of before, pinning both, and returns the
// record of the copies and the workloads after.
func changePinned(t *testing.T, cs kubernetes.Interface, ns, v string, before map[workload]snapshot) (string, map[workload]snapshot) {
	t.Helper()
	cm, sec := setConfigMapValue(t, cs, ns, configName, v), setSecretValue(t, cs, ns, "p-"+v)
	record := fmt.Sprintf("configmap/%s=%s,secret/%s=%s", configName, cm[:pin.DigestLen], secretName, sec[:pin.DigestLen])
	return record, expectRollouts(t, cs, oneEach(before, pinnedTo(record)))
}

// pinnedTo checks the template's record of pinned copies.
func pinnedTo(record string) templateCheck {
	return func(tpl *corev1.PodTemplateSpec) error {
		if got := tpl.Annotations["ripple.dev/pinned"]; got != record {
			return fmt.Errorf("pinned %q, want %q", got, record)
		}
		return nil
	}
}

// checkPods checks that every pod of w carrying record reads the copies
// it names, in its envFrom and its volumes, and nothing else (the
// admission policy rewrote them), that there are such pods,
// and that the copies hold the data cm (the ConfigMap's VALUE) and sec
// (the Secret's PASSWORD), immutable.
func checkPods(t *testing.T, cs kubernetes.Interface, w workload, record, cm, sec string) {
	t.Helper()
	pins, err := pin.Parse(record)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, p := range pins {
		names[p.Name()] = true
	}
	var bad []string
	waitFor(t, "pods reading the copies of "+record, func(ctx context.Context) (bool, error) {
		pods, err := cs.CoreV1().Pods(w.ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + w.name})
		if err != nil {
			return false, err
		}
		n := 0
		bad = nil
		for _, p := range pods.Items {
			if p.Annotations["ripple.dev/pinned"] != record || p.DeletionTimestamp != nil {
				continue
			}
			n++
			read := map[string]bool{}
			for _, e := range p.Spec.Containers[0].EnvFrom {
				if e.ConfigMapRef != nil {
					read[e.ConfigMapRef.Name] = true
				}
				if e.SecretRef != nil {
					read[e.SecretRef.Name] = true
				}
			}
			for _, v := range p.Spec.Volumes {
				if v.ConfigMap != nil {
					read[v.ConfigMap.Name] = true
				}
			}
			if !maps.Equal(read, names) {
				bad = append(bad, fmt.Sprintf("%s reads %v", p.Name, slices.Sorted(maps.Keys(read))))
			}
		}
		return n > 0, nil
	})
	if len(bad) > 0 {
		t.Fatalf("pods with the record %s do not read its copies: %s", record, strings.Join(bad, "; "))
	}
	for _, p := range pins {
		var immutable *bool
		var got string
		switch p.Ref.Name {
		case configName:
			c, err := cs.CoreV1().ConfigMaps(w.ns).Get(t.Context(), p.Name(), metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			immutable, got = c.Immutable, c.Data["VALUE"]
			if got != cm {
				t.Errorf("copy %s holds %q, want %q", p.Name(), got, cm)
			}
		case secretName:
			s, err := cs.CoreV1().Secrets(w.ns).Get(t.Context(), p.Name(), metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			immutable, got = s.Immutable, string(s.Data["PASSWORD"])
			if got != sec {
				t.Errorf("copy %s holds %q, want %q", p.Name(), got, sec)
			}
		}
		if immutable == nil || !*immutable {
			t.Errorf("copy %s is not immutable", p.Name())
		}
	}
}
