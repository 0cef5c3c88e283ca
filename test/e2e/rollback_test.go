package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ripple-dev/ripple/hack/kit"
	"github.com/ripple-dev/ripple/internal/digest"
)

// rollbackQuiet is how long a rollback must stay: Ripple rolled forward
// within seconds before it knew rollbacks.
const rollbackQuiet = 30 * time.Second

// `kubectl rollout undo` (the kubectl binary itself) after Ripple rolled
// for config changes: Ripple keeps the rollback (no rollout of its own for
// 30 s), says so in a RolledBack event naming the config with the digest
// the restored revision was built for and the one its pods read, and
// rolls once for the next change.
//
// The Deployment is undone to its first revision, from before Ripple's
// first rollout: the undo restores the Deployment's annotations from that
// ReplicaSet too, the applied record of the baseline with them, so only
// Ripple's memory of its rollout, or the record's manager in
// managedFields (TestRollbackKeptWithoutMemory), tells. The StatefulSet's undo restores
// only the template: after two rollouts, back to the first, whose env var
// the record no longer matches.
func TestRollbackIsKept(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		kind    *kit.WorkloadKind
		changes int
	}{{kit.Deployment, 1}, {kit.StatefulSet, 2}} {
		kind := tc.kind
		t.Run(kind.String(), func(t *testing.T) {
			t.Parallel()
			cs := kubernetes.NewForConfigOrDie(kc.Config)
			ns := newNamespace(t, cs)
			startRipple(t, ns)
			w := workload{kind: kind, ns: ns, name: "web"}
			sums := []string{digest.ConfigMap(createConfigMap(t, cs, ns, configName, "v1"))}
			w.create(t, cs, spec{configMaps: []string{configName}, annotations: auto()})
			before := waitRolledOut(t, cs, w)
			waitBaseline(t, cs, w, sums[0])
			for i := 1; i <= tc.changes; i++ {
				sums = append(sums, setConfigMapValue(t, cs, ns, configName, fmt.Sprintf("v%d", i+1)))
				before = expectRollouts(t, cs, oneEach(before, envIs(configEnv, sums[i])))
			}
			built, now := sums[tc.changes-1], sums[tc.changes]

			kubectl(t, "rollout", "undo", strings.ToLower(kind.String())+"/web", "-n", ns)
			waitFor(t, "the undo", func(ctx context.Context) (bool, error) {
				s, err := w.observe(ctx, cs)
				return err == nil && s.templates > before[w].templates, err
			})
			undone := waitRolledOut(t, cs, w)
			tpl := undone[w].template
			if v, ok := envValue(&tpl, configEnv); ok != (tc.changes > 1) || ok && v != built {
				t.Fatalf("after the undo %s=%q (set %v), want the revision built for %s", configEnv, v, ok, built)
			}
			consistently(t, "no rollout by Ripple after the undo", rollbackQuiet, func(ctx context.Context) error {
				s, err := w.observe(ctx, cs)
				if err != nil {
					return err
				}
				if s.templates != undone[w].templates || s.revisions != undone[w].revisions {
					return fmt.Errorf("%s rolled: %d -> %d template changes, %d -> %d revisions\n%s", w,
						undone[w].templates, s.templates, undone[w].revisions, s.revisions, describe(ctx, cs, w))
				}
				return nil
			})
			ev := rolledBackEvent(t, cs, ns, kind.Name)
			if !strings.Contains(ev, fmt.Sprintf("%q %s", configName, built[:12])) || !strings.Contains(ev, fmt.Sprintf("%q %s (changed since)", configName, now[:12])) {
				t.Errorf("RolledBack event %q does not name %s built for %s, reading %s", ev, configName, built[:12], now[:12])
			}

			next := setConfigMapValue(t, cs, ns, configName, "next")
			expectRollouts(t, cs, oneEach(undone, envIs(configEnv, next)))
		})
	}
}

// kubectl runs the kubectl that hack/build-tools.sh builds on the test
// cluster.
func kubectl(t *testing.T, args ...string) {
	t.Helper()
	if out, err := kubectlOut(t, args...); err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// rolledBackEvent returns the message of the one RolledBack event on the
// workload named web of kind.
func rolledBackEvent(t *testing.T, cs kubernetes.Interface, ns, kind string) string {
	t.Helper()
	var got []string
	waitFor(t, "a RolledBack event", func(ctx context.Context) (bool, error) {
		list, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=RolledBack"})
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
		t.Errorf("RolledBack events %q, want one", got)
	}
	return got[0]
}

// `kubectl rollout undo` of a Deployment while Ripple is not running: it
// was stopped after its rollout for a config change, or killed with
// SIGKILL right after it wrote that rollout. The undo restores the
// Deployment's annotations with its template, Ripple's applied record
// among them, and Ripple starts with no memory of its rollout: it tells
// the undo from the objects alone (the record's value is kubectl-rollout's
// in managedFields, not Ripple's), keeps it, reports it once, and rolls
// once for the next change.
func TestRollbackKeptWithoutMemory(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// down stops Ripple around its rollout for the change to sum,
		// started from before.
		down func(t *testing.T, cs kubernetes.Interface, r *ripple, w workload, before map[workload]snapshot, sum string)
	}{
		{"stopped after its rollout", func(t *testing.T, cs kubernetes.Interface, r *ripple, w workload, before map[workload]snapshot, sum string) {
			expectRollouts(t, cs, oneEach(before, envIs(configEnv, sum)))
			r.Stop()
		}},
		{"killed right after its write", func(t *testing.T, cs kubernetes.Interface, r *ripple, w workload, _ map[workload]snapshot, sum string) {
			waitWritten(t, cs, w, sum)
			r.Kill()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cs := kubernetes.NewForConfigOrDie(kc.Config)
			ns := newNamespace(t, cs)
			r := startRipple(t, ns)
			w := workload{kind: kit.Deployment, ns: ns, name: "web"}
			first := digest.ConfigMap(createConfigMap(t, cs, ns, configName, "v1"))
			w.create(t, cs, spec{configMaps: []string{configName}, annotations: auto()})
			before := waitRolledOut(t, cs, w)
			waitBaseline(t, cs, w, first)

			now := setConfigMapValue(t, cs, ns, configName, "v2")
			tc.down(t, cs, r, w, before, now)
			rolled := waitRolledOut(t, cs, w)
			if tpl := rolled[w].template; envOf(&tpl) != now {
				t.Fatalf("Ripple's rollout wrote %s=%q, want %s", configEnv, envOf(&tpl), now)
			}

			kubectl(t, "rollout", "undo", "deployment/web", "-n", ns)
			waitFor(t, "the undo", func(ctx context.Context) (bool, error) {
				s, err := w.observe(ctx, cs)
				return err == nil && s.templates > rolled[w].templates, err
			})
			undone := waitRolledOut(t, cs, w)
			if tpl := undone[w].template; envOf(&tpl) != "" {
				t.Fatalf("after the undo %s=%q, want the first revision's template, without it", configEnv, envOf(&tpl))
			}
			revision := undone[w].annotations[revisionAnnotation]

			r.Start()
			consistently(t, "no rollout by Ripple after the undo", rollbackWithoutMemoryQuiet, func(ctx context.Context) error {
				s, err := w.observe(ctx, cs)
				if err != nil {
					return err
				}
				if got := s.annotations[revisionAnnotation]; got != revision || s.templates != undone[w].templates {
					return fmt.Errorf("%s rolled: revision %s -> %s, %d -> %d template changes\n%s", w,
						revision, got, undone[w].templates, s.templates, describe(ctx, cs, w))
				}
				return nil
			})
			ev := rolledBackEvent(t, cs, ns, kit.Deployment.Name)
			if !strings.Contains(ev, fmt.Sprintf("%q %s", configName, first[:12])) || !strings.Contains(ev, fmt.Sprintf("%q %s (changed since)", configName, now[:12])) {
				t.Errorf("RolledBack event %q does not name %s built for %s, reading %s", ev, configName, first[:12], now[:12])
			}

			next := setConfigMapValue(t, cs, ns, configName, "next")
			expectRollouts(t, cs, oneEach(undone, envIs(configEnv, next)))
		})
	}
}

// rollbackWithoutMemoryQuiet is how long the undo must stay after Ripple
// started: before, it rolled forward within a second of its caches' sync.
const rollbackWithoutMemoryQuiet = 20 * time.Second

// waitWritten returns as soon as w's template shows configEnv=sum: Ripple's
// write, seen through a watch (which starts with the Deployment as it is,
// in case the write came first).
func waitWritten(t *testing.T, cs kubernetes.Interface, w workload, sum string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	wi, err := cs.AppsV1().Deployments(w.ns).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + w.name})
	if err != nil {
		t.Fatal(err)
	}
	defer wi.Stop()
	for ev := range wi.ResultChan() {
		if d, ok := ev.Object.(*appsv1.Deployment); ok {
			if envOf(&d.Spec.Template) == sum {
				return
			}
		}
	}
	t.Fatalf("%s never showed %s=%s: %v", w, configEnv, sum, ctx.Err())
}

// envOf is the value of configEnv on tpl; empty when it has none.
func envOf(tpl *corev1.PodTemplateSpec) string {
	v, _ := envValue(tpl, configEnv)
	return v
}
