package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/ripple-dev/ripple/hack/helmchart"
	"github.com/ripple-dev/ripple/hack/kit"
	"github.com/ripple-dev/ripple/internal/digest"
)

// The in-place migration docs/migration.md describes: a release installed
// from Reloader's chart (testdata/reloader-chart names and labels its
// objects as Reloader's chart 2.2 does) is upgraded with Ripple's chart and
// the user's unchanged Reloader values file. Helm must patch Reloader's
// Deployment, ServiceAccount, RBAC and Service in place (same UIDs: nothing
// deleted, no gap), the Deployment's immutable selector must still match,
// and Ripple, run with the upgraded ServiceAccount's own token, must sync
// its caches, roll nothing that Reloader already rolled, and roll the next
// config change exactly once.
func TestMigrateInPlaceFromReloadersChart(t *testing.T) {
	t.Parallel()
	cs := kubernetes.NewForConfigOrDie(kc.Config)
	ns := newNamespace(t, cs)

	// A workload as Reloader left it: its STAKATER_ env vars hold the
	// current digests.
	cm := createConfigMap(t, cs, ns, configName, "v1")
	sec := createSecret(t, cs, ns)
	web := workload{kit.Deployment, ns, "web"}
	web.create(t, cs, spec{
		configMaps: []string{configName}, secrets: []string{secretName}, annotations: auto(),
		env: []corev1.EnvVar{
			{Name: configEnv, Value: digest.ConfigMap(cm)},
			{Name: secretEnv, Value: digest.Secret(sec)},
		},
	})
	waitRolledOut(t, cs, web)
	before := waitStable(t, cs, web)

	values := filepath.Join("testdata", "reloader-values.yaml")
	helm := func(args ...string) string {
		t.Helper()
		out, err := helmchart.HelmEnv([]string{"KUBECONFIG=" + kc.Kubeconfig}, append(args, "--namespace", ns)...)
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	helm("install", "reloader", filepath.Join("testdata", "reloader-chart"), "-f", values)
	const fullname = "reloader-reloader" // Reloader's chart: <release>-reloader
	reloaderObjs := uids(t, cs, ns, fullname)

	// The page's command, run from the repository's root.
	root, err := helmchart.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	absValues, err := filepath.Abs(values)
	if err != nil {
		t.Fatal(err)
	}
	notes, err := recipe{dir: root, kubeconfig: kc.Kubeconfig, fill: map[string]string{
		"<release>": "reloader", "<namespace>": ns, "<your-reloader-values.yaml>": absValues,
	}}.run(t, "docs/migration.md#upgrade")
	if err != nil {
		t.Fatalf("the upgrade recipe: %v\n%s", err, notes)
	}
	if !strings.Contains(notes, `reloader.syncAfterRestart: "false" is a quoted boolean`) {
		t.Errorf("the upgrade's notes do not warn about the quoted boolean:\n%s", notes)
	}
	for obj, uid := range uids(t, cs, ns, fullname) {
		if reloaderObjs[obj] != uid {
			t.Errorf("%s was deleted and created again by the upgrade (UID %s -> %s)", obj, reloaderObjs[obj], uid)
		}
	}
	d, err := cs.AppsV1().Deployments(ns).Get(t.Context(), fullname, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c := d.Spec.Template.Spec.Containers; len(c) != 1 || !strings.Contains(c[0].Image, "ripple-dev/ripple") {
		t.Fatalf("after the upgrade %s runs %v, want Ripple's image", fullname, c)
	}

	// Ripple runs out of the cluster (kwok runs no containers) with the
	// arguments the chart gave its pod and the ServiceAccount's own token,
	// so the chart's RBAC is all it has.
	args := append([]string{"--kubeconfig=" + tokenKubeconfig(t, cs, ns, d.Spec.Template.Spec.ServiceAccountName)},
		d.Spec.Template.Spec.Containers[0].Args...)
	r := newRipple(t, ns, args...)
	for _, e := range d.Spec.Template.Spec.Containers[0].Env {
		if e.ValueFrom == nil {
			r.Env = append(r.Env, e.Name+"="+e.Value) // ALERT_ON_RELOAD=true, without a URL
		}
	}
	if !slices.Contains(r.Env, "ALERT_ON_RELOAD=true") {
		t.Errorf("the upgraded pod's env %v lacks the values file's ALERT_ON_RELOAD", r.Env)
	}
	r.Start() // returns once every controller's caches synced
	if out := r.Out.String(); !strings.Contains(out, "ALERT_ON_RELOAD") {
		t.Errorf("Ripple started with ALERT_ON_RELOAD=true and no URL without saying alerts are off:\n%s", out)
	}
	consistently(t, "Ripple leaves the Deployment Reloader rolled alone", quiet, func(ctx context.Context) error {
		s, err := web.observe(ctx, cs)
		if err != nil {
			return err
		}
		if s.resourceVersion != before.resourceVersion || s.revisions != 1 {
			return fmt.Errorf("%s was written at cut-over: resourceVersion %s -> %s, %d ReplicaSets",
				web, before.resourceVersion, s.resourceVersion, s.revisions)
		}
		return nil
	})

	sum := setConfigMapValue(t, cs, ns, configName, "v2")
	expectRollouts(t, cs, map[workload]rollouts{web: {before: before, n: 1, checks: []templateCheck{
		envIs(configEnv, sum), envIs(secretEnv, digest.Secret(sec)), envOnce(configEnv), envOnce(secretEnv),
	}}})

	// Back to Reloader, as the page says: its last revision, 1.
	if out, err := (recipe{kubeconfig: kc.Kubeconfig, fill: map[string]string{
		"<release>": "reloader", "<namespace>": ns, "<revision>": "1",
	}}.run(t, "docs/migration.md#back")); err != nil {
		t.Fatalf("the way back: %v\n%s", err, out)
	}
	d, err = cs.AppsV1().Deployments(ns).Get(t.Context(), fullname, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c := d.Spec.Template.Spec.Containers; len(c) != 1 || strings.Contains(c[0].Image, "ripple-dev/ripple") {
		t.Errorf("after the rollback %s runs %v, want Reloader's image", fullname, c)
	}
	for obj, uid := range uids(t, cs, ns, fullname) {
		if reloaderObjs[obj] != uid {
			t.Errorf("%s was deleted and created again by the rollback (UID %s -> %s)", obj, reloaderObjs[obj], uid)
		}
	}
}

// uids returns the UIDs of the objects Reloader's chart creates in
// single-namespace mode, keyed by kind/name; a missing object fails t.
func uids(t *testing.T, cs kubernetes.Interface, ns, fullname string) map[string]types.UID {
	t.Helper()
	ctx := t.Context()
	get := map[string]func() (metav1.Object, error){
		"Deployment/" + fullname: func() (metav1.Object, error) {
			return cs.AppsV1().Deployments(ns).Get(ctx, fullname, metav1.GetOptions{})
		},
		"ServiceAccount/" + fullname: func() (metav1.Object, error) {
			return cs.CoreV1().ServiceAccounts(ns).Get(ctx, fullname, metav1.GetOptions{})
		},
		"Service/" + fullname: func() (metav1.Object, error) {
			return cs.CoreV1().Services(ns).Get(ctx, fullname, metav1.GetOptions{})
		},
		"Role/" + fullname + "-role": func() (metav1.Object, error) {
			return cs.RbacV1().Roles(ns).Get(ctx, fullname+"-role", metav1.GetOptions{})
		},
		"RoleBinding/" + fullname + "-role-binding": func() (metav1.Object, error) {
			return cs.RbacV1().RoleBindings(ns).Get(ctx, fullname+"-role-binding", metav1.GetOptions{})
		},
	}
	out := map[string]types.UID{}
	for name, g := range get {
		o, err := g()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out[name] = o.GetUID()
	}
	return out
}

// tokenKubeconfig writes a kubeconfig that authenticates with a token the
// API server issued for the ServiceAccount ns/name.
func tokenKubeconfig(t *testing.T, cs kubernetes.Interface, ns, name string) string {
	t.Helper()
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(t.Context(), name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("requesting a token for ServiceAccount %s/%s: %v", ns, name, err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["api"] = &clientcmdapi.Cluster{Server: kc.Config.Host, CertificateAuthorityData: kc.Config.CAData}
	cfg.AuthInfos["sa"] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	cfg.Contexts["sa"] = &clientcmdapi.Context{Cluster: "api", AuthInfo: "sa"}
	cfg.CurrentContext = "sa"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}
