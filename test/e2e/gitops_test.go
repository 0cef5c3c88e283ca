package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/ripple-dev/ripple/hack/cluster"
	"github.com/ripple-dev/ripple/hack/kit"
	"github.com/ripple-dev/ripple/internal/digest"
)

// reapplyEvery is how often the GitOps loops re-apply their manifests.
const reapplyEvery = 2 * time.Second

// gitopsQuiet is how long the re-apply loops keep going after the
// rollout, with no second rollout.
const gitopsQuiet = 20 * time.Second

// manifestFile writes the Deployment name of ns as a GitOps repository
// holds it (no Ripple field) to a file for kubectl.
func manifestFile(t *testing.T, ns, name string) string {
	t.Helper()
	d := appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: auto()},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(defaultReplicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: spec{configMaps: []string{configName}, env: []corev1.EnvVar{{Name: "LOG_LEVEL", Value: "info"}}}.template(name),
		},
	}
	b, err := yaml.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name+".yaml")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// kubectlApply applies a manifest file with the kubectl that
// hack/build-tools.sh builds: server-side as manager (forcing,
// as Argo CD's server-side apply does) when manager is set, else
// client-side as a plain `kubectl apply`.
func kubectlApply(ctx context.Context, path, manager, home string) error {
	args := []string{"--kubeconfig=" + kc.Kubeconfig, "apply", "-f", path}
	if manager != "" {
		args = append(args, "--server-side", "--force-conflicts", "--field-manager="+manager)
	}
	bin, err := cluster.Kubectl()
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = []string{"HOME=" + home}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("kubectl %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

// reapplier re-applies a manifest every reapplyEvery until stopped.
type reapplier struct {
	stop    context.CancelFunc
	done    chan struct{}
	applies atomic.Int32
	mu      sync.Mutex
	err     error
}

func startReapplier(t *testing.T, path, manager string) *reapplier {
	ctx, cancel := context.WithCancel(t.Context())
	r := &reapplier{stop: cancel, done: make(chan struct{})}
	home := t.TempDir()
	go func() {
		defer close(r.done)
		for ctx.Err() == nil {
			if err := kubectlApply(ctx, path, manager, home); err != nil && ctx.Err() == nil {
				r.mu.Lock()
				r.err = err
				r.mu.Unlock()
			} else if err == nil {
				r.applies.Add(1)
			}
			select {
			case <-ctx.Done():
			case <-time.After(reapplyEvery):
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-r.done })
	return r
}

// halt stops the loop and returns how many applies it made.
func (r *reapplier) halt(t *testing.T) int {
	t.Helper()
	r.stop()
	<-r.done
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		t.Errorf("a re-apply failed: %v", r.err)
	}
	return int(r.applies.Load())
}

// reasonEvents returns the messages of the events with reason in ns.
func reasonEvents(ctx context.Context, cs kubernetes.Interface, ns, reason string) ([]string, error) {
	list, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=" + reason})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range list.Items {
		out = append(out, e.Message)
	}
	return out, nil
}

// "GitOps re-apply": one Deployment re-applied every 2 s server-side as
// argocd-controller (forcing), another client-side as `kubectl apply`, both
// from manifests without Ripple's field. A ConfigMap change rolls each
// exactly once; Ripple's env var survives every re-apply, there is no
// second rollout and no ReloadReverted.
func TestGitOpsReapply(t *testing.T) {
	t.Parallel()
	cs := kubernetes.NewForConfigOrDie(kc.Config)
	ns := newNamespace(t, cs)
	startRipple(t, ns)
	cm := createConfigMap(t, cs, ns, configName, "v1")
	managers := map[string]string{"argo": "argocd-controller", "kubectl": ""}
	paths := map[string]string{}
	var ws []workload
	for name, manager := range managers {
		paths[name] = manifestFile(t, ns, name)
		if err := kubectlApply(t.Context(), paths[name], manager, t.TempDir()); err != nil {
			t.Fatal(err)
		}
		d, err := cs.AppsV1().Deployments(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		w := workload{kind: kit.Deployment, ns: ns, name: name}
		watchTemplate(t, cs, w, d)
		ws = append(ws, w)
	}
	before := waitRolledOut(t, cs, ws...)
	for _, w := range ws {
		waitBaseline(t, cs, w, digest.ConfigMap(cm))
	}
	loops := map[string]*reapplier{}
	for name, manager := range managers {
		loops[name] = startReapplier(t, paths[name], manager)
	}
	time.Sleep(reapplyEvery) // the loops are running

	sum := setConfigMapValue(t, cs, ns, configName, "v2")
	after := expectRollouts(t, cs, oneEach(before, envIs(configEnv, sum)))
	consistently(t, "Ripple's env var on every re-applied template, and no second rollout", gitopsQuiet, func(ctx context.Context) error {
		for _, w := range ws {
			s, err := w.observe(ctx, cs)
			if err != nil {
				return err
			}
			if err := envIs(configEnv, sum)(&s.template); err != nil {
				return fmt.Errorf("%s: %w", w, err)
			}
			if s.templates != after[w].templates || s.revisions != after[w].revisions {
				return fmt.Errorf("%s rolled again: %d -> %d template changes, %d -> %d ReplicaSets", w,
					after[w].templates, s.templates, after[w].revisions, s.revisions)
			}
		}
		return nil
	})
	for name, r := range loops {
		if n := r.halt(t); n < int(gitopsQuiet/reapplyEvery)/2 {
			t.Errorf("%s re-applied %d times, too few to tell", name, n)
		}
	}
	if got, err := reasonEvents(t.Context(), cs, ns, "ReloadReverted"); err != nil || len(got) != 0 {
		t.Errorf("ReloadReverted events %q (%v), want none", got, err)
	}
}

// operator is the "reverting operator" of TestRevertingOperator: it owns a
// Deployment and puts its own pod template back whenever it differs, as
// shop-operator, by an update; with it, the annotations of ownAnnotations
// too.
type operator struct {
	stop     context.CancelFunc
	done     chan struct{}
	rewrites atomic.Int32
}

func startOperator(t *testing.T, cs kubernetes.Interface, ns, name string, own corev1.PodTemplateSpec, ownAnnotations map[string]string) *operator {
	ctx, cancel := context.WithCancel(t.Context())
	o := &operator{stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(o.done)
		for ctx.Err() == nil {
			d, err := cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
			if err == nil && !equality.Semantic.DeepEqual(d.Spec.Template, own) {
				d.Spec.Template = own
				for k, v := range ownAnnotations {
					d.Annotations[k] = v
				}
				if _, err := cs.AppsV1().Deployments(ns).Update(ctx, d, metav1.UpdateOptions{FieldManager: "shop-operator"}); err == nil {
					o.rewrites.Add(1)
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-o.done })
	return o
}

// revertWatch is how long the reverting operator is watched after the
// change.
const revertWatch = 40 * time.Second

// waitReverted waits up to d for the ReloadReverted Event on w and returns
// it.
func waitReverted(t *testing.T, cs kubernetes.Interface, w workload, d time.Duration) corev1.Event {
	t.Helper()
	var ev corev1.Event
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, d, true, func(ctx context.Context) (bool, error) {
		list, err := cs.CoreV1().Events(w.ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=ReloadReverted"})
		if err != nil || len(list.Items) == 0 {
			return false, err
		}
		ev = list.Items[0]
		return true, nil
	})
	if err != nil {
		t.Fatalf("waiting %s for ReloadReverted on %s: %v", d, w, err)
	}
	if ev.InvolvedObject.Name != w.name || ev.InvolvedObject.ResourceVersion == "" {
		t.Fatalf("ReloadReverted regards %+v, want %s at a resourceVersion", ev.InvolvedObject, w)
	}
	return ev
}

// "Reverting operator": an operator puts its own pod template back on
// every change of its Deployment. A ConfigMap change: Ripple's rollout, the
// operator's revert, then a ReloadReverted Warning naming shop-operator and
// no more rollouts (at most 3 in all within 40 s, none after the Warning).
func TestRevertingOperator(t *testing.T) {
	t.Parallel()
	cs := kubernetes.NewForConfigOrDie(kc.Config)
	ns := newNamespace(t, cs)
	startRipple(t, ns)
	cm := createConfigMap(t, cs, ns, configName, "v1")
	w := workload{kind: kit.Deployment, ns: ns, name: "web"}
	d := createOwned(t, cs, w, configName)
	before := waitRolledOut(t, cs, w)
	waitBaseline(t, cs, w, digest.ConfigMap(cm))
	op := startOperator(t, cs, ns, "web", d.Spec.Template, nil)

	changed := time.Now()
	setConfigMapValue(t, cs, ns, configName, "v2")
	ev := waitReverted(t, cs, w, revertWatch)
	// The watch counts the template changes behind the API server: judge
	// by its count at the object Ripple reported on, once it got there.
	tw, err := templateWatchOf(w)
	if err != nil {
		t.Fatal(err)
	}
	at, err := tw.countAt(t.Context(), ev.InvolvedObject.ResourceVersion)
	if err != nil {
		t.Fatal(err)
	}
	atRevert := at - before[w].templates
	consistently(t, "no rollout after ReloadReverted", time.Until(changed.Add(revertWatch)), func(ctx context.Context) error {
		s, err := w.observe(ctx, cs)
		if err == nil && s.templates != at {
			err = fmt.Errorf("%d rollouts (template changes) by the ReloadReverted event, %d now: a rollout after it",
				atRevert, s.templates-before[w].templates)
		}
		return err
	})
	end, err := w.observe(t.Context(), cs)
	if err != nil {
		t.Fatal(err)
	}
	op.stop()
	<-op.done
	reverted, err := reasonEvents(t.Context(), cs, ns, "ReloadReverted")
	if err != nil {
		t.Fatal(err)
	}
	total := end.templates - before[w].templates
	t.Logf("%d rollouts (template changes) in %s after one change, %d of them the operator's rewrites; %d when ReloadReverted came",
		total, revertWatch, op.rewrites.Load(), atRevert)
	if total > 3 {
		t.Errorf("%d rollouts after one change, want at most 3", total)
	}
	if len(reverted) != 1 || !strings.Contains(reverted[0], `"shop-operator"`) {
		t.Errorf("ReloadReverted events %q, want one naming shop-operator", reverted)
	}
}
