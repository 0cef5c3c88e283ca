package chart

import (
	"context"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/ripple-dev/ripple/hack/helmchart"
	"github.com/ripple-dev/ripple/hack/kit"
)

// TestHelmInstallUpgradeUninstall installs the chart for real on the API
// server with Reloader's default values, as a migrating user would,
// upgrades it to two replicas and uninstalls it: the release lifecycle
// works, NOTES.txt renders (helm template never renders it) and says what
// the chart decided, and uninstalling leaves no cluster-wide object behind.
func TestHelmInstallUpgradeUninstall(t *testing.T) {
	t.Parallel()
	chart, err := helmchart.Dir()
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(api.Config)
	ns := kit.NewNamespace(t, cs, "install-", nil)
	env := []string{"KUBECONFIG=" + api.Kubeconfig}
	helm := func(args ...string) string {
		t.Helper()
		out, err := helmchart.HelmEnv(env, onShared(append(args, "--namespace", ns))...)
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}

	out := helm("install", "reloader", chart, "-f", reloaderValues())
	for _, want := range []string{
		"Ripple v", "is installed as reloader-reloader in " + ns,
		"your values name Stakater Reloader's image; this chart installs Ripple's",
		"Watching: all namespaces (ClusterRole)",
		"Reloading: Deployments, StatefulSets, DaemonSets, CronJobs, Jobs.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("install notes lack %q:\n%s", want, out)
		}
	}
	if _, err := cs.RbacV1().ClusterRoles().Get(t.Context(), "reloader-reloader-role", metav1.GetOptions{}); err != nil {
		t.Fatalf("the ClusterRole was not installed: %v", err)
	}

	out = helm("upgrade", "reloader", chart, "-f", reloaderValues(), "--set", "reloader.deployment.replicas=2")
	if !strings.Contains(out, "Leader election: on (2 replica(s), Lease stakater-reloader-lock in "+ns+")") ||
		!strings.Contains(out, "Turned on because reloader.deployment.replicas > 1") {
		t.Errorf("upgrade notes do not explain leader election:\n%s", out)
	}
	d, err := cs.AppsV1().Deployments(ns).Get(t.Context(), "reloader-reloader", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *d.Spec.Replicas != 2 || !strings.Contains(strings.Join(d.Spec.Template.Spec.Containers[0].Args, " "), "--enable-ha=true") {
		t.Errorf("after the upgrade: replicas %d, args %q", *d.Spec.Replicas, d.Spec.Template.Spec.Containers[0].Args)
	}

	helm("uninstall", "reloader")
	err = wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := cs.RbacV1().ClusterRoles().Get(ctx, "reloader-reloader-role", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Errorf("the ClusterRole outlived the release: %v", err)
	}
}
