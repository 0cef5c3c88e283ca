package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ripple-dev/ripple/hack/cluster"
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
// Ripple's memory of its rollout tells. The StatefulSet's undo restores
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
	bin, err := cluster.Kubectl()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), bin, append([]string{"--kubeconfig=" + kc.Kubeconfig}, args...)...)
	cmd.Env = []string{"HOME=" + t.TempDir()}
	if out, err := cmd.CombinedOutput(); err != nil {
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
