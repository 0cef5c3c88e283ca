// Package image tests Ripple's image and release as a user gets them: it
// builds both with `make release` and the image a second time with `make
// image IMAGE=...`, which pushes it to a registry the test serves, inspects the OCI layout, compares the two builds' digests, runs
// the image's own amd64 binary against a local cluster and installs the
// packaged chart there.
//
// No container engine runs here (registries are unreachable and the
// sandbox cannot run containers cheaply), so the binary is extracted from
// the image's layers and run as a process: the same file a container
// runtime would start as the entrypoint.
package image

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-containerregistry/pkg/registry"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/ripple-dev/ripple/hack/cluster"
	"github.com/ripple-dev/ripple/hack/helmchart"
	"github.com/ripple-dev/ripple/hack/kit"
)

var (
	// kc is the local cluster the image's binary and the chart run on.
	kc *cluster.Cluster
	// root is the repository; imageDirs are two `make image` outputs of
	// the same commit; releaseDir is the `make release` output.
	root       string
	imageDirs  [2]string
	releaseDir string
	// pushed is where the second `make image` pushed the image: a registry
	// served by this test on 127.0.0.1.
	pushed string
)

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(kit.Main(context.Background(), m, start))
}

// start builds the release and the image, the second pushed to a registry
// the test serves, then starts the local cluster. stop stops the cluster
// and removes what start made.
func start(ctx context.Context) (stop func() error, err error) {
	if root, err = helmchart.RepoRoot(); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "ripple-image-test-")
	if err != nil {
		return nil, err
	}
	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	cleanup := func() error {
		reg.Close()
		return os.RemoveAll(tmp)
	}
	imageDirs = [2]string{filepath.Join(tmp, "image-1"), filepath.Join(tmp, "image-2")}
	releaseDir = filepath.Join(tmp, "release")
	pushed = strings.TrimPrefix(reg.URL, "http://") + "/ripple"
	// The targets a user runs, into private directories: the first pushes
	// nothing, the second pushes to the test's registry (plain HTTP).
	for _, args := range [][]string{
		{"release", "IMAGE=", "IMAGE_DIR=" + imageDirs[0], "RELEASE_DIR=" + releaseDir},
		{"image", "IMAGE=" + pushed, "SKOPEO_FLAGS=--dest-tls-verify=false", "IMAGE_DIR=" + imageDirs[1]},
	} {
		if err := makeTarget(args...); err != nil {
			return nil, errors.Join(err, cleanup())
		}
	}
	// envtest logs through controller-runtime; nothing here reads it.
	ctrl.SetLogger(logr.Discard())
	startCtx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	if kc, err = cluster.Start(startCtx, cluster.Options{Nodes: 1}); err != nil {
		return nil, errors.Join(fmt.Errorf("starting the local cluster: %w", err), cleanup())
	}
	return func() error { return errors.Join(kc.Stop(), cleanup()) }, nil
}

// makeTarget runs make in the repository; its output is shown only when
// it fails.
func makeTarget(args ...string) error {
	cmd := exec.Command("make", append([]string{"--no-print-directory"}, args...)...)
	cmd.Dir = root
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("make %s: %w\n%s", strings.Join(args, " "), err, out.String())
	}
	fmt.Fprintf(os.Stderr, "make %s: %s\n", args[0], time.Since(start).Round(time.Second))
	return nil
}
