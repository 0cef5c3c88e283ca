package chart

import (
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/ripple-dev/ripple/hack/helmchart"
	"github.com/ripple-dev/ripple/hack/kit"
	"github.com/ripple-dev/ripple/test/inproc"
)

// A release of Reloader's chart (the stand-in the e2e migration test
// installs, which names and labels its objects as Reloader's charts 2.2 and
// 3.0-beta do) is upgraded in place with Ripple's chart and a Reloader
// chart 3.0-beta values file, as TestHelmInstallUpgradeUninstall and the
// e2e migration do with 2.2's: Helm patches the Deployment, ServiceAccount,
// RBAC and Service (same UIDs), and the upgraded pod's arguments and
// environment start Ripple, ALERT_ON_RELOAD=true without a URL included.
func TestReloaderChart3ValuesUpgradeInPlace(t *testing.T) {
	t.Parallel()
	chart, err := helmchart.Dir()
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(api.Config)
	ns := kit.NewNamespace(t, cs, "reloader3-", nil)
	helm := func(args ...string) string {
		t.Helper()
		out, err := helmchart.HelmEnv([]string{"KUBECONFIG=" + api.Kubeconfig}, onShared(append(args, "--namespace", ns))...)
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	values := testdata("reloader-values/chart-3.0-beta.yaml")
	// Reloader's chart 3.0 takes the image tag from its appVersion.
	// A release name of its own: ClusterRoles are shared by the tests.
	helm("install", "reloader3", filepath.Join("..", "e2e", "testdata", "reloader-chart"), "-f", values, "--set", "image.tag=v2.0.0-beta.1")
	const fullname = "reloader3-reloader"
	before := objectUIDs(t, cs, ns, fullname)
	notes := helm("upgrade", "reloader3", chart, "-f", values)
	if strings.Contains(notes, "DEPRECATED") {
		t.Errorf("the upgrade's notes call a chart 3.0 value deprecated:\n%s", notes)
	}
	after := objectUIDs(t, cs, ns, fullname)
	for obj, uid := range before {
		if after[obj] != uid {
			t.Errorf("%s was deleted and created again by the upgrade (UID %s -> %s)", obj, uid, after[obj])
		}
	}
	d, err := cs.AppsV1().Deployments(ns).Get(t.Context(), fullname, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := d.Spec.Template.Spec.Containers[0]
	if c.Name != "ripple" || !strings.Contains(c.Image, "ripple-dev/ripple") {
		t.Errorf("after the upgrade the pod runs %s (%s), want Ripple's container and image", c.Name, c.Image)
	}
	// What the kubelet would start: Ripple's flag parsing of the pod's
	// arguments and environment (the chart's Secret has no alert URL).
	_, cfg, err := inproc.ParseFlags(c.Args, envLookup(nil, d, c))
	if err != nil {
		t.Fatalf("Ripple would not start with the upgraded pod's arguments %q: %v", c.Args, err)
	}
	if cfg.Alert.URL != "" || len(cfg.Warnings) == 0 {
		t.Errorf("ALERT_ON_RELOAD=true without a URL: alert %+v, warnings %q; want alerts off and a warning", cfg.Alert, cfg.Warnings)
	}
	helm("uninstall", "reloader3")
}

// objectUIDs are the UIDs of the objects Reloader's chart makes in global
// mode, by kind/name; a missing one fails t.
func objectUIDs(t *testing.T, cs kubernetes.Interface, ns, fullname string) map[string]types.UID {
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
		"ClusterRole/" + fullname + "-role": func() (metav1.Object, error) {
			return cs.RbacV1().ClusterRoles().Get(ctx, fullname+"-role", metav1.GetOptions{})
		},
		"ClusterRoleBinding/" + fullname + "-role-binding": func() (metav1.Object, error) {
			return cs.RbacV1().ClusterRoleBindings().Get(ctx, fullname+"-role-binding", metav1.GetOptions{})
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
