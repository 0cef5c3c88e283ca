package chart

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/ripple-dev/ripple/test/cluster"
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
var klogs = &logBuffer{}

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

// logBuffer is a log sink safe for concurrent writers.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// lines returns the lines holding every one of subs, with JSON escaping of
// quotes undone so that API error messages read as the server wrote them.
func (b *logBuffer) lines(subs ...string) []string {
	var out []string
	for _, line := range strings.Split(strings.ReplaceAll(b.String(), `\"`, `"`), "\n") {
		ok := true
		for _, s := range subs {
			if !strings.Contains(line, s) {
				ok = false
				break
			}
		}
		if ok && line != "" {
			out = append(out, line)
		}
	}
	return out
}

// testdata returns the path of a file under testdata.
func testdata(name string) string { return filepath.Join("testdata", name) }
