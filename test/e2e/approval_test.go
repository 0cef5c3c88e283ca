package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ripple-dev/ripple/hack/kit"
	"github.com/ripple-dev/ripple/internal/digest"
	"github.com/ripple-dev/ripple/internal/explain"
	"github.com/ripple-dev/ripple/internal/reason"
	"github.com/ripple-dev/ripple/internal/standing"
)

const reloadPolicyAnnotation = "ripple.dev/reload-policy"

// The manual reload policy: a change waits (ReloadPending, no rollout);
// `ripple approve`, run as a user would, rolls it exactly once; a later
// change waits again, and approving with nothing pending fails.
func TestManualPolicyApprove(t *testing.T) {
	t.Parallel()
	cs := kubernetes.NewForConfigOrDie(kc.Config)
	ns := newNamespace(t, cs)
	cm := createConfigMap(t, cs, ns, configName, "v1")
	w := workload{kit.Deployment, ns, "web"}
	annotations := auto()
	annotations[reloadPolicyAnnotation] = "manual"
	w.create(t, cs, spec{configMaps: []string{configName}, annotations: annotations})
	before := waitRolledOut(t, cs, w)
	addr := freeAddr(t)
	startRipple(t, ns, "--metrics-bind-address="+addr)
	waitBaseline(t, cs, w, digest.ConfigMap(cm))

	sum := setConfigMapValue(t, cs, ns, configName, "v2")
	waitEventNaming(t, cs, w, "ReloadPending", sum[:12])
	before = expectNoRollout(t, cs, before)
	if got := kit.Scrape(t, addr)[`ripple_reloads_pending{}`]; got != 1 {
		t.Errorf("ripple_reloads_pending = %v while the change waits, want 1", got)
	}

	out, err := runCommand(t, ns, "explain", "--pending", "-o", "json")
	var pending explain.List
	if err != nil || json.Unmarshal([]byte(out), &pending) != nil || len(pending.Items) != 1 {
		t.Fatalf("explain --pending: %v\n%s", err, out)
	}
	if rp := pending.Items[0].ReloadPolicy; pending.Items[0].State != standing.Waiting || pending.Items[0].Reason != reason.ReloadPending || rp == nil || rp.Pending == nil ||
		len(rp.Pending.Configs) != 1 || rp.Pending.Configs[0].Digest != sum[:12] {
		t.Errorf("explain --pending: %s", out)
	}

	out, err = runCommand(t, ns, "approve", "deploy/web")
	if err != nil || !strings.Contains(out, `ConfigMap "`+configName+`" `+sum[:12]) {
		t.Fatalf("approve: %v\n%s", err, out)
	}
	before = expectRollouts(t, cs, oneEach(before, envIs(configEnv, sum)))
	waitEventNaming(t, cs, w, "Reloaded", "approved by")
	if got := kit.Scrape(t, addr)[`ripple_reloads_pending{}`]; got != 0 {
		t.Errorf("ripple_reloads_pending = %v after the approval, want 0", got)
	}
	d, err := cs.AppsV1().Deployments(ns).Get(t.Context(), w.name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := d.Annotations["ripple.dev/approval"]; ok {
		t.Errorf("the spent approval is still on the Deployment: %s", v)
	}
	if out, err := runCommand(t, ns, "approve", "deploy/web"); err == nil || !strings.Contains(out, "nothing waits for an approval") {
		t.Errorf("approve with nothing pending: %v\n%s", err, out)
	}

	later := setConfigMapValue(t, cs, ns, configName, "v3")
	waitEventNaming(t, cs, w, "ReloadPending", later[:12])
	expectNoRollout(t, cs, before)
}

// The notify reload policy never rolls: a WouldReload Event per change.
func TestNotifyPolicyNeverRolls(t *testing.T) {
	t.Parallel()
	cs := kubernetes.NewForConfigOrDie(kc.Config)
	ns := newNamespace(t, cs)
	cm := createConfigMap(t, cs, ns, configName, "v1")
	w := workload{kit.Deployment, ns, "web"}
	annotations := auto()
	annotations[reloadPolicyAnnotation] = "notify"
	w.create(t, cs, spec{configMaps: []string{configName}, annotations: annotations})
	before := waitRolledOut(t, cs, w)
	startRipple(t, ns)
	waitBaseline(t, cs, w, digest.ConfigMap(cm))
	setConfigMapValue(t, cs, ns, configName, "v2")
	waitEventNaming(t, cs, w, "WouldReload", "reload policy notify")
	expectNoRollout(t, cs, before)
}

// waitEventNaming waits for an Event of reason on w whose note contains s.
func waitEventNaming(t *testing.T, cs kubernetes.Interface, w workload, reason, s string) {
	t.Helper()
	waitFor(t, "a "+reason+" event naming "+s, func(ctx context.Context) (bool, error) {
		notes, err := kit.EventNotes(ctx, cs, w.ns, kit.EventMatch{Kind: "Deployment", Name: w.name, Reason: reason})
		for _, n := range notes {
			if strings.Contains(n, s) {
				return true, nil
			}
		}
		return false, err
	})
}

// runCommand runs `ripple <command>` with args against the cluster, on
// namespace ns, as a user would: its stdout and stderr, and an error for a
// non-zero exit code.
func runCommand(t *testing.T, ns, command string, args ...string) (string, error) {
	t.Helper()
	return runCommandOn(t, kc.Kubeconfig, ns, command, args...)
}

// runCommandOn is runCommand on the cluster of kubeconfig.
func runCommandOn(t *testing.T, kubeconfig, ns, command string, args ...string) (string, error) {
	t.Helper()
	base := []string{command, "--kubeconfig=" + kubeconfig, "-n", ns, "--ripple-namespace=" + ns}
	cmd := exec.CommandContext(t.Context(), os.Getenv("RIPPLE_BINARY"), append(base, args...)...)
	cmd.Env = []string{"HOME=" + t.TempDir()} // no kubeconfig but the test's
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	return out.String(), err
}
