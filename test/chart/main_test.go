// Package chart tests Ripple's Helm chart (deploy/helm/ripple) and the
// plain manifests and Kustomize files derived from it (rendered by
// hack/helmchart).
//
// The tests run the helm binary that hack/build-tools.sh builds (found
// through $RIPPLE_TOOLS_DIR, as the control plane is), feed the rendered
// arguments to Ripple's real flag parsing, dry-run the rendered objects on a
// real kube-apiserver, and run Ripple in-process as the chart's
// ServiceAccount to prove its RBAC is enough and minimal.
package chart

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/ripple-dev/ripple/hack/cluster"
	"github.com/ripple-dev/ripple/hack/helmchart"
	"github.com/ripple-dev/ripple/hack/kit"
)

// update rewrites the golden files instead of comparing with them.
var update = flag.Bool("update", false, "rewrite testdata/golden from the chart")

// api is the API server every test shares: a real etcd and kube-apiserver
// with RBAC, plus minimal CRDs for the Prometheus Operator and VPA kinds the
// chart can render, and the CRDs of the optional workload kinds Ripple
// reloads (Argo Rollouts, OpenShift DeploymentConfigs, Secrets Store CSI).
var api *cluster.API

// klogs collects what client-go and controller-runtime log through klog
// (reflector list/watch errors, rejected events, leader election), where
// RBAC failures show up; tests pick their own lines by ServiceAccount.
var klogs = &kit.LogBuffer{}

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(kit.Main(context.Background(), m, start))
}

// start starts the API server the tests share; the returned stop also
// removes the directories the tests made.
func start(context.Context) (stop func() error, err error) {
	// Without helm there is nothing to test: say so instead of skipping.
	if _, err := helmchart.HelmBinary(); err != nil {
		return nil, fmt.Errorf("chart tests need helm: %w", err)
	}
	logger := zap.New(zap.WriteTo(klogs), zap.UseDevMode(true))
	klog.SetLogger(logger)
	ctrl.SetLogger(logger)

	crds, err := optionalKindCRDs()
	if err != nil {
		return nil, err
	}
	api, err = cluster.StartAPI(cluster.APIOptions{
		CRDDirectoryPaths: append([]string{filepath.Join("testdata", "crds")}, crds...),
		// As on OpenShift: creating an object whose ownerReference blocks
		// its owner's deletion (a Job started from a CronJob) needs the
		// right to update the owner's finalizers, which the chart grants.
		APIServerArgs: map[string]string{"enable-admission-plugins": "OwnerReferencesPermissionEnforcement"},
	})
	if err != nil {
		return nil, fmt.Errorf("starting the API server: %w", err)
	}
	return func() error {
		for _, dir := range tmpDirs {
			_ = os.RemoveAll(dir)
		}
		return api.Stop()
	}, nil
}

// optionalKindCRDs are the CRD files of the optional kinds and Ripple's own
// ConfigRollout (from the chart): the real Argo
// Rollouts and Secrets Store CSI CRDs, which hack/build-tools.sh puts in the
// tools directory, and the DeploymentConfig stand-in under hack/cluster/crds.
func optionalKindCRDs() ([]string, error) {
	var files []string
	for _, name := range []string{cluster.RolloutCRD, cluster.SecretProviderClassCRD, cluster.SecretProviderClassPodStatusCRD, cluster.DeploymentConfigCRD, cluster.ConfigRolloutCRD} {
		f, err := cluster.CRDFile(name)
		if err != nil {
			return nil, fmt.Errorf("the optional kinds' CRDs and Ripple's own: %w", err)
		}
		files = append(files, f)
	}
	return files, nil
}

// testdata returns the path of a file under testdata.
func testdata(name string) string { return filepath.Join("testdata", name) }
