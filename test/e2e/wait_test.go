package e2e

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/api/v1alpha1"
	"github.com/ripple-dev/ripple/internal/reason"
)

// rotationFleet Deployments read the Secret rotationSecret, as the
// credential rotation of docs/config-rollouts.md has it.
const (
	rotationFleet  = 10
	rotationSecret = "sp"
	rotationEnv    = "STAKATER_SP_SECRET"
)

// The rotation recipe of docs/config-rollouts.md, run as written against a
// Secret read by 10 Deployments, four times in a row: a write; two writes
// 300 ms apart (with `kubectl wait` on the first write's change beside
// `ripple wait`); a write held by the manual policy and approved 20 s
// later; and a write that arrives 5 s after the pipeline started waiting
// (an ExternalSecret's refresh). Each wait returns only once every
// Deployment runs the last data with its rollout complete, never before
// (checked the moment it returns), and none hangs.
func TestRotationReceipt(t *testing.T) {
	t.Parallel()
	cs := kubernetes.NewForConfigOrDie(kc.Config)
	ns := newNamespace(t, cs)
	createRotationFleet(t, cs, ns)
	r := newRipple(t, ns)
	r.Env = []string{"POD_NAMESPACE=" + ns, "RELOADER_NAMESPACE=" + ns} // its digest key and settings
	r.Start()
	waitChangeController(t, r)
	waitFleetBaseline(t, cs, ns, "", rotationFleet)
	rot := rotation{t: t, cs: cs, ns: ns}

	t.Log("1: a write, then ripple wait")
	hash := rot.write("p1")
	rot.check("ripple wait", hash, rot.wait(), time.Time{})

	t.Log("2: two writes 300 ms apart, the pipeline waiting after the first")
	rot.write("p2")
	var waits sync.WaitGroup
	var result waitResult
	waits.Go(func() { result = rot.wait() })
	time.Sleep(300 * time.Millisecond)
	hash = rot.write("p3")
	waits.Wait()
	rot.check("ripple wait", hash, result, time.Time{})

	t.Log("2b: kubectl wait on a change by its name, superseded by the next write")
	rot.write("p4")
	name := rot.changeAt(rot.version())
	hash = rot.write("p5")
	rot.check("kubectl wait configrollout/"+name, hash, rot.kubectlWait(name), time.Time{})

	t.Log("3: a write held by the manual policy, approved 20 s later")
	rot.setPolicy("manual")
	hash = rot.write("p6")
	waits.Go(func() { result = rot.wait() })
	time.Sleep(20 * time.Second)
	if got := fleetWith(t, cs, ns, rotationEnv, hash); len(got) != 0 {
		t.Fatalf("Deployments %v rolled the change before its approval", got)
	}
	for i := range rotationFleet {
		if out, err := runCommand(t, ns, "approve", fmt.Sprintf("deployment/d%02d", i)); err != nil {
			t.Fatalf("ripple approve: %v\n%s", err, out)
		}
	}
	approved := time.Now()
	waits.Wait()
	rot.check("ripple wait", hash, result, approved)
	rot.setPolicy("")

	t.Log("4: the write arrives 5 s after the pipeline starts waiting")
	before := rot.version()
	waits.Go(func() { result = rot.wait("--after-version=" + before) })
	time.Sleep(5 * time.Second)
	wrote := time.Now()
	hash = rot.write("p7")
	waits.Wait()
	rot.check("ripple wait --after-version", hash, result, wrote)
}

// rotation runs the recipe's steps.
type rotation struct {
	t  *testing.T
	cs kubernetes.Interface
	ns string
}

type waitResult struct {
	returned time.Time
	out      string
	err      error
}

// write writes the Secret's password as a pipeline would, and returns its
// Reloader digest.
func (r rotation) write(value string) string {
	r.t.Helper()
	return writeSecret(r.t, r.cs, r.ns, rotationSecret, value)
}

func (r rotation) version() string {
	r.t.Helper()
	s, err := r.cs.CoreV1().Secrets(r.ns).Get(r.t.Context(), rotationSecret, metav1.GetOptions{})
	if err != nil {
		r.t.Fatal(err)
	}
	return s.ResourceVersion
}

// wait runs `ripple wait secret/sp`, as the recipe writes it.
func (r rotation) wait(args ...string) waitResult {
	out, err := runCommand(r.t, r.ns, "wait", append([]string{"secret/" + rotationSecret, "--timeout=4m"}, args...)...)
	return waitResult{returned: time.Now(), out: out, err: err}
}

// kubectlWait runs the recipe's `kubectl wait` on a change by its name.
func (r rotation) kubectlWait(name string) waitResult {
	_, out, err := kubectlWait(r.t, r.ns, "--for=condition=Propagated", "configrollout/"+name, "--timeout=4m")
	return waitResult{returned: time.Now(), out: out, err: err}
}

// changeAt waits for the change of the Secret seen at resourceVersion rv
// and returns its name, as the recipe finds it: `kubectl get
// configrollout -l ripple.dev/config-name=sp,ripple.dev/config-version=<rv>
// -o name`.
func (r rotation) changeAt(rv string) string {
	r.t.Helper()
	var name string
	waitFor(r.t, "the change's ConfigRollout", func(ctx context.Context) (bool, error) {
		var l v1alpha1.ConfigRolloutList
		err := crClient(r.t).List(ctx, &l, client.InNamespace(r.ns), client.MatchingLabels{v1alpha1.LabelConfigName: rotationSecret, v1alpha1.LabelConfigVersion: rv})
		if err != nil || len(l.Items) != 1 {
			return false, err
		}
		name = l.Items[0].Name
		return true, nil
	})
	return name
}

// check checks that a wait succeeded and that, when it returned, every
// Deployment ran hash with its rollout complete; and that it returned
// after notBefore (an approval, a write).
func (r rotation) check(what, hash string, w waitResult, notBefore time.Time) {
	r.t.Helper()
	if w.err == nil && w.returned.Before(notBefore) {
		r.t.Errorf("%s returned %s before the change could roll", what, notBefore.Sub(w.returned))
	}
	checkFleetRan(r.t, r.cs, r.ns, rotationEnv, hash, what, w.out, w.err)
}

// setPolicy sets (or, with "", removes) the reload policy of every
// Deployment of the fleet.
func (r rotation) setPolicy(policy string) {
	r.t.Helper()
	value := `null`
	if policy != "" {
		value = `"` + policy + `"`
	}
	patch := []byte(`{"metadata":{"annotations":{"ripple.dev/reload-policy":` + value + `}}}`)
	for i := range rotationFleet {
		if _, err := r.cs.AppsV1().Deployments(r.ns).Patch(r.t.Context(), fmt.Sprintf("d%02d", i), types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			r.t.Fatal(err)
		}
	}
}

func createRotationFleet(t *testing.T, cs kubernetes.Interface, ns string) {
	t.Helper()
	createSecretFleet(t, cs, ns, rotationSecret, rotationFleet)
}

// createSecretFleet creates the Secret name and n Deployments, d00 on,
// opted in, that read it as environment variables.
func createSecretFleet(t *testing.T, cs kubernetes.Interface, ns, name string, n int) {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string][]byte{"password": []byte("p0")}}
	if _, err := cs.CoreV1().Secrets(ns).Create(t.Context(), s, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		dn := fmt.Sprintf("d%02d", i)
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: dn, Annotations: auto()},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](1),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": dn}},
				Template: spec{secrets: []string{name}}.template(dn),
			},
		}
		if _, err := cs.AppsV1().Deployments(ns).Create(t.Context(), d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// A canaried change that halts: `ripple wait` exits 1 naming the canary
// and why; a config no workload reads is waited for at once.
func TestWaitHaltedAndUnread(t *testing.T) {
	t.Parallel()
	const fleet = 3
	cs := kubernetes.NewForConfigOrDie(kc.Config)
	ns := newNamespace(t, cs)
	cm := createCanaryFleet(t, cs, ns, fleet, "0s")
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "lonely"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r := newRipple(t, ns)
	r.Env = []string{"POD_NAMESPACE=" + ns, "RELOADER_NAMESPACE=" + ns}
	r.Start()
	waitChangeController(t, r)
	waitFleetBaseline(t, cs, ns, "", fleet)
	blockNewPods(t, cs, ns, fleet)
	updateConfig(t, cs, cm, "v2")

	out, err := runCommand(t, ns, "wait", "configmap/"+canaryConfig, "--timeout=3m")
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(out, "halted") || !strings.Contains(out, "canary Deployment d00") {
		t.Errorf("ripple wait of a halted change: %v\n%s\nwant exit 1 naming the halt and its canary Deployment d00", err, out)
	}
	// The halt is real: the config is told of it. Its Event is sent
	// beside the status write that ended the wait, not before it, so it
	// may land a moment later.
	waitEvent(t, cs, ns, "ConfigMap", canaryConfig, reason.RolloutHalted)
	out, err = runCommand(t, ns, "wait", "configmap/lonely", "--timeout=1m")
	if err != nil || !strings.Contains(out, "no workload reads it") {
		t.Errorf("ripple wait of a config nobody reads: %v\n%s\nwant exit 0 at once, saying so", err, out)
	}
}
