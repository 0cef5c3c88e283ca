package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/ripple-dev/ripple/hack/cluster"
	"github.com/ripple-dev/ripple/hack/helmchart"
	"github.com/ripple-dev/ripple/internal/digest"
	"github.com/ripple-dev/ripple/internal/reason"
	"github.com/ripple-dev/ripple/internal/rollout"
	"github.com/ripple-dev/ripple/test/docs"
)

// recipeFleet Deployments in the docs' namespace shop read the docs'
// Secret db.
const (
	recipeFleet = 3
	recipeNS    = "shop"
)

// The pipeline recipes of docs/config-rollouts.md, each block run with
// bash as the page writes it, on a cluster of their own (the docs' names,
// shop and db, are the cluster's, and its one Ripple is the one the
// commands find): `ripple wait` after a write; the `kubectl wait` on the
// change of the version the write made; and the rotation through an
// ExternalSecret, whose refresh the test plays: it writes the Secret 2 s
// after the recipe's annotation asks for it. Each returns exit 0 once
// every Deployment runs the new data, complete.
func TestRecipesConfigRollouts(t *testing.T) {
	t.Parallel()
	fc, cs := recipeCluster(t, cluster.ExternalSecretCRD)
	createSecretFleet(t, cs, recipeNS, "db", recipeFleet)
	recipeRipple(t, fc)
	waitFleetBaseline(t, cs, recipeNS, "", recipeFleet)
	const env = "STAKATER_DB_SECRET"

	t.Run("wait", func(t *testing.T) {
		hash := writeSecret(t, cs, recipeNS, "db", "p1")
		out, err := runRecipe(t, fc.Kubeconfig, "docs/config-rollouts.md#wait")
		checkFleetRan(t, cs, recipeNS, env, hash, "the recipe", out, err)
	})
	t.Run("kubectl-wait", func(t *testing.T) {
		hash := writeSecret(t, cs, recipeNS, "db", "p2")
		out, err := runRecipe(t, fc.Kubeconfig, "docs/config-rollouts.md#kubectl-wait")
		checkFleetRan(t, cs, recipeNS, env, hash, "the recipe", out, err)
	})
	t.Run("rotation", func(t *testing.T) {
		dc := dynamic.NewForConfigOrDie(fc.Config)
		es := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "external-secrets.io/v1", "kind": "ExternalSecret",
			"metadata": map[string]any{"name": "db"},
			"spec":     map[string]any{"secretStoreRef": map[string]any{"name": "vault", "kind": "SecretStore"}, "target": map[string]any{"name": "db"}},
		}}
		if _, err := dc.Resource(externalSecrets).Namespace(recipeNS).Create(t.Context(), es, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// The operator's refresh: the Secret is written 2 s after the
		// recipe asked for it.
		wrote := make(chan string, 1)
		go func() {
			defer close(wrote)
			err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
				u, err := dc.Resource(externalSecrets).Namespace(recipeNS).Get(ctx, "db", metav1.GetOptions{})
				return err == nil && u.GetAnnotations()["force-sync"] != "", nil
			})
			if err != nil {
				return
			}
			time.Sleep(2 * time.Second)
			wrote <- writeSecret(t, cs, recipeNS, "db", "p3")
		}()
		out, err := runRecipe(t, fc.Kubeconfig, "docs/config-rollouts.md#rotate-trigger", "docs/config-rollouts.md#rotate-wait")
		hash, ok := <-wrote
		if !ok {
			t.Fatalf("the recipe never asked the ExternalSecret to refresh:\n%s", out)
		}
		checkFleetRan(t, cs, recipeNS, env, hash, "the recipe", out, err)
	})
}

// The canary's way out of a halt, docs/canary.md: a change of the
// ConfigMap shared, canaried on d00 of 3 Deployments, halts when no new
// pod can start; the page's `ripple resume` continues it, and once pods
// may start again the held Deployments roll the halted data.
func TestRecipesCanaryResume(t *testing.T) {
	t.Parallel()
	fc, cs := recipeCluster(t)
	cm := createCanaryFleet(t, cs, recipeNS, recipeFleet, "0s")
	recipeRipple(t, fc)
	waitFleetBaseline(t, cs, recipeNS, "", recipeFleet)
	quota := blockNewPods(t, cs, recipeNS, recipeFleet)
	cm = updateConfig(t, cs, cm, "v2")
	waitEvent(t, cs, recipeNS, "ConfigMap", canaryConfig, reason.RolloutHalted)

	out, err := runRecipe(t, fc.Kubeconfig, "docs/canary.md#resume")
	if err != nil || !strings.Contains(out, "Resumed the change") {
		t.Fatalf("the resume recipe (%v):\n%s", err, out)
	}
	if err := cs.CoreV1().ResourceQuotas(recipeNS).Delete(t.Context(), quota, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFleetRolled(t, cs, recipeNS, digest.ConfigMap(cm), recipeFleet, 2*time.Minute)
	t.Logf("the recipe's output:\n%s", out)
}

// The blast-radius page's `ripple plan` lines, offline, on a change of the
// ConfigMap app between base/ and head/ (main.yaml is base's, the overlay
// head's): each prints the Deployment web as rolling, and none exits
// non-zero (20 rollouts allowed, one made).
func TestRecipesPlan(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	app := func(value string) string {
		return `apiVersion: v1
kind: ConfigMap
metadata: {name: app, namespace: shop}
data: {value: ` + value + `}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
  annotations: {reloader.stakater.com/auto: "true"}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: example.com/web
        envFrom: [{configMapRef: {name: app}}]
`
	}
	for path, text := range map[string]string{
		"base/app.yaml":                    app("v1"),
		"head/app.yaml":                    app("v2"),
		"main.yaml":                        app("v1"),
		"overlays/prod/app.yaml":           app("v2"),
		"overlays/prod/kustomization.yaml": "resources: [app.yaml]\n",
	} {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(path)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, path), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, err := recipe{dir: dir}.run(t, "docs/blast-radius.md#plan")
	if err != nil {
		t.Fatalf("the plan recipe: %v\n%s", err, out)
	}
	// Five commands, five verdicts on web (the text, markdown and JSON
	// outputs each name it).
	if n := strings.Count(out, "web"); n < 5 {
		t.Errorf("the plan recipe names the Deployment web %d times, want once a command at least:\n%s", n, out)
	}
	t.Logf("the recipe's output:\n%s", out)
}

// The README's two commands: `make demo` runs here, a real reload on a
// cluster of its own ending with its summary; `make test` is CI's command
// (.ci/run, test/docs), which this test runs inside of. Then the README's
// local cluster for kubectl, under a name of the test's own so that a
// developer's default cluster is left alone: up, its kubeconfig where
// make cluster-up says, three Ready nodes, down.
func TestRecipesReadme(t *testing.T) {
	t.Parallel()
	root, err := helmchart.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	block, err := docs.RunBlock("README.md#two-commands")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(block, "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "make demo ") || !strings.HasPrefix(lines[1], "make test ") {
		t.Fatalf("README's two commands are %q, want make demo and make test", lines)
	}
	out, err := recipe{dir: root, fill: map[string]string{lines[1]: ""}}.run(t, "README.md#two-commands")
	if err != nil || !strings.Contains(out, "replaced") {
		t.Errorf("make demo (%v):\n%s", err, out)
	}

	name := "readme-" + strings.ToLower(rand.Text()[:6])
	out, err = recipe{dir: root, fill: map[string]string{
		"make cluster-up ": "make cluster-up NAME=" + name + " ", "make cluster-down": "make cluster-down NAME=" + name,
		"ripple-cluster-default": "ripple-cluster-" + name,
	}}.run(t, "README.md#local-cluster")
	if err != nil || strings.Count(out, " Ready ") != 3 || !strings.Contains(out, "export KUBECONFIG=/tmp/ripple-cluster-"+name+"/kubeconfig") {
		t.Errorf("the local cluster recipe (%v), want it to print its kubeconfig and three Ready nodes:\n%s", err, out)
	}
}

// recipeCluster starts a cluster of the recipes' own, serving
// ConfigRollouts and the CRDs named, with the docs' namespaces: shop, and
// ripple, Ripple's.
func recipeCluster(t *testing.T, crds ...string) (*cluster.Cluster, kubernetes.Interface) {
	t.Helper()
	fc := ownCluster(t, "the recipes' cluster")
	if err := fc.InstallCRDs(t.Context(), append([]string{cluster.ConfigRolloutCRD}, crds...)...); err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(fc.Config)
	for _, ns := range []string{recipeNS, "ripple"} {
		if _, err := cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return fc, cs
}

// recipeRipple runs Ripple on fc, installed in the namespace ripple and
// watching shop, and waits for its change controller.
func recipeRipple(t *testing.T, fc *cluster.Cluster) {
	t.Helper()
	r := newRipple(t, recipeNS)
	r.Args[slices.Index(r.Args, "--kubeconfig="+kc.Kubeconfig)] = "--kubeconfig=" + fc.Kubeconfig
	r.Env = []string{"POD_NAMESPACE=ripple", "RELOADER_NAMESPACE=ripple"}
	r.Start()
	waitChangeController(t, r)
}

// runRecipe runs the blocks refs name, as recipe.run does, in a scratch
// directory on the cluster of kubeconfig.
func runRecipe(t *testing.T, kubeconfig string, refs ...string) (string, error) {
	t.Helper()
	return recipe{kubeconfig: kubeconfig}.run(t, refs...)
}

// recipe is where and how a test runs a page's blocks.
type recipe struct {
	// dir is the directory they run in; empty: a scratch one.
	dir string
	// kubeconfig is the cluster's; empty: none.
	kubeconfig string
	// fill replaces the placeholders of the blocks (<release>); a
	// placeholder left unfilled fails the test.
	fill map[string]string
}

// placeholderRE is a placeholder of a page's block: <release>.
var placeholderRE = regexp.MustCompile(`<[a-z][a-z-]*(\.yaml)?>`)

// run runs the blocks refs name (docs.RunBlock), one after the other in
// one bash shell, as a user would: ripple (also as kubectl-ripple) and
// the tools' kubectl and helm first on PATH, and no kubeconfig or helm
// settings but the test's.
func (rc recipe) run(t *testing.T, refs ...string) (string, error) {
	t.Helper()
	script := []string{"set -euo pipefail"}
	for _, ref := range refs {
		block, err := docs.RunBlock(ref)
		if err != nil {
			t.Fatal(err)
		}
		for from, to := range rc.fill {
			block = strings.ReplaceAll(block, from, to)
		}
		if left := placeholderRE.FindAllString(block, -1); len(left) > 0 {
			t.Fatalf("%s: placeholders %v left unfilled", ref, left)
		}
		script = append(script, block)
	}
	kubectl, err := cluster.Kubectl()
	if err != nil {
		t.Fatal(err)
	}
	helm, err := helmchart.HelmBinary()
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	for name, target := range map[string]string{"ripple": os.Getenv("RIPPLE_BINARY"), "kubectl-ripple": os.Getenv("RIPPLE_BINARY"), "kubectl": kubectl, "helm": helm} {
		if err := os.Symlink(target, filepath.Join(bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", strings.Join(script, "\n"))
	cmd.Dir = rc.dir
	if cmd.Dir == "" {
		cmd.Dir = t.TempDir()
	}
	// The user's HOME and Go settings (a make recipe builds with the
	// warm caches), but never their kubeconfig or helm repositories.
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	helmHome := t.TempDir()
	kubeconfig := rc.kubeconfig
	if kubeconfig == "" {
		kubeconfig = filepath.Join(t.TempDir(), "none")
	}
	cmd.Env = []string{
		"PATH=" + bin + ":" + filepath.Dir(gobin) + ":/usr/local/bin:/usr/bin:/bin", "KUBECONFIG=" + kubeconfig,
		"HELM_CACHE_HOME=" + helmHome, "HELM_CONFIG_HOME=" + helmHome, "HELM_DATA_HOME=" + helmHome,
	}
	for _, k := range []string{"HOME", "GOCACHE", "GOMODCACHE", "GOPATH", "GOPROXY", "GOTOOLCHAIN", "RIPPLE_TOOLS_DIR"} {
		if v, ok := os.LookupEnv(k); ok {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	return out.String(), err
}

// checkFleetRan checks that a command (what) exited 0 and that, when it
// did, every Deployment of ns ran hash in env with its rollout complete.
func checkFleetRan(t *testing.T, cs kubernetes.Interface, ns, env, hash, what, out string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v\n%s", what, err, out)
	}
	ds, err := cs.AppsV1().Deployments(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range ds.Items {
		// The list was read after the command returned: a Deployment that
		// completed since would hide an early return; one that has not is
		// proof of it.
		if v, _ := envValue(&d.Spec.Template, env); v != hash || rollout.Deployment(&d).State != rollout.Complete {
			t.Errorf("%s returned while Deployment %s ran %q (%s), want %q complete\n%s", what, d.Name, v, rollout.Deployment(&d).Reason, hash, out)
		}
	}
	t.Logf("%s:\n%s", what, out)
}

// writeSecret writes the Secret's password as a pipeline would and
// returns its Reloader digest.
func writeSecret(t *testing.T, cs kubernetes.Interface, ns, name, value string) string {
	t.Helper()
	s, err := cs.CoreV1().Secrets(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Data = map[string][]byte{"password": []byte(value)}
	if s, err = cs.CoreV1().Secrets(ns).Update(t.Context(), s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	return digest.Secret(s)
}
