package chart

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/ripple-dev/ripple/test/cluster"
	"github.com/ripple-dev/ripple/test/inproc"
)

// update rewrites the golden files instead of comparing with them.
var update = flag.Bool("update", false, "rewrite testdata/golden from the chart")

// api is the API server every test shares: a real etcd and kube-apiserver
// with RBAC, plus minimal CRDs for the Prometheus Operator and VPA kinds the
// chart can render.
var api *cluster.API

// klogs collects what client-go and controller-runtime log through klog
// (reflector list/watch errors, rejected events, leader election), where
// RBAC failures show up; tests pick their own lines by ServiceAccount.
var klogs = &inproc.LogBuffer{}

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(run(m))
}

func run(m *testing.M) int {
	// Without helm there is nothing to test: say so instead of skipping.
	if _, err := HelmBinary(); err != nil {
		fmt.Fprintln(os.Stderr, "chart tests need helm:", err)
		return 1
	}
	logger := zap.New(zap.WriteTo(klogs), zap.UseDevMode(true))
	klog.SetLogger(logger)
	ctrl.SetLogger(logger)

	var err error
	api, err = cluster.StartAPI(cluster.APIOptions{CRDDirectoryPaths: []string{filepath.Join("testdata", "crds")}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the API server:", err)
		return 1
	}
	code := m.Run()
	for _, dir := range tmpDirs {
		_ = os.RemoveAll(dir)
	}
	if err := api.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping the API server:", err)
		code = 1
	}
	if left := cluster.Descendants(); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "processes left behind after Stop: %v\n", left)
		code = 1
	}
	return code
}

// testdata returns the path of a file under testdata.
func testdata(name string) string { return filepath.Join("testdata", name) }
