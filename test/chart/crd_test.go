package chart

import (
	"testing"

	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ripple-dev/ripple/hack/cluster"
	"github.com/ripple-dev/ripple/hack/helmchart"
	"github.com/ripple-dev/ripple/hack/kit"
)

// TestHelmInstallsTheCRD installs the chart on an API server that has no
// ConfigRollout CRD, as a migrating user's cluster has none: the release
// installs it and owns it; a second release (another shard's, another
// team's) installs beside it without failing on the CRD and leaves it to
// the first; an upgrade keeps it; uninstalling its release leaves it, as
// deleting it would delete every ConfigRollout.
func TestHelmInstallsTheCRD(t *testing.T) {
	t.Parallel()
	own, err := cluster.StartAPI(cluster.APIOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := own.Stop(); err != nil {
			t.Errorf("stopping the test's own API server: %v", err)
		}
	})
	chart, err := helmchart.Dir()
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(own.Config)
	crds := apiextensionsclient.NewForConfigOrDie(own.Config).ApiextensionsV1().CustomResourceDefinitions()
	helm := func(ns string, args ...string) {
		t.Helper()
		if out, err := helmchart.HelmEnv([]string{"KUBECONFIG=" + own.Kubeconfig}, append(args, "--namespace", ns)...); err != nil {
			t.Fatalf("helm %v: %v\n%s", args, err, out)
		}
	}
	owner := func() string {
		t.Helper()
		crd, err := crds.Get(t.Context(), "configrollouts.ripple.dev", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("the ConfigRollout CRD: %v", err)
		}
		if crd.Annotations["helm.sh/resource-policy"] != "keep" {
			t.Errorf("the CRD's annotations %v lack Helm's keep policy", crd.Annotations)
		}
		return crd.Annotations["meta.helm.sh/release-namespace"] + "/" + crd.Annotations["meta.helm.sh/release-name"]
	}

	first := kit.NewNamespace(t, cs, "crd-a-", nil)
	helm(first, "install", "ripple", chart, "-f", reloaderValues())
	if got := owner(); got != first+"/ripple" {
		t.Errorf("after the first install the CRD is owned by %q, want %s/ripple", got, first)
	}
	second := kit.NewNamespace(t, cs, "crd-b-", nil)
	helm(second, "install", "other", chart, "-f", reloaderValues())
	helm(first, "upgrade", "ripple", chart, "-f", reloaderValues(), "--set", "reloader.deployment.replicas=2")
	if got := owner(); got != first+"/ripple" {
		t.Errorf("after a second release and an upgrade the CRD is owned by %q, want %s/ripple", got, first)
	}
	helm(first, "uninstall", "ripple")
	if got := owner(); got != first+"/ripple" {
		t.Errorf("after its release's uninstall the CRD is owned by %q", got)
	}
}
