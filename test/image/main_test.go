// Package image tests Ripple's image and release as a user gets them: it
// builds both with `make release`, the image a second time with `make
// image IMAGE=...` (another umask, time zone and GOFLAGS), which pushes it to a
// registry the test serves, and a third time with `make image-load`,
// which hands a docker-archive to a stand-in for kind. It inspects the OCI
// layout, compares the builds' digests, reads the loaded archive back,
// runs the image's own amd64 binary against a local cluster and installs
// the packaged chart there.
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
	// loadDir is the `make image-load` output; kindDir is where the
	// stand-in kind left its arguments and the archive it was given.
	loadDir, kindDir string
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
	loadDir, kindDir = filepath.Join(tmp, "image-load"), filepath.Join(tmp, "kind")
	pushed = strings.TrimPrefix(reg.URL, "http://") + "/ripple"
	fakeBin, err := fakeKind(tmp)
	if err != nil {
		return nil, errors.Join(err, cleanup())
	}
	// The targets a user runs, into private directories: the first pushes
	// nothing; the second, with another umask, time zone and GOFLAGS
	// (which must not reach the binaries), pushes to
	// the test's registry (plain HTTP, as go-containerregistry speaks to
	// 127.0.0.1); the third loads the image into the stand-in kind.
	for _, b := range []struct {
		env  []string
		args []string
	}{
		{nil, []string{"release", "IMAGE=", "IMAGE_DIR=" + imageDirs[0], "RELEASE_DIR=" + releaseDir}},
		{[]string{"TZ=America/Los_Angeles", "UMASK=077", "GOFLAGS=-buildvcs=false"}, []string{"image", "IMAGE=" + pushed, "IMAGE_DIR=" + imageDirs[1]}},
		{[]string{"PATH=" + fakeBin + string(os.PathListSeparator) + os.Getenv("PATH"), "KIND_OUT=" + kindDir},
			[]string{"image-load", "CLUSTER=", "CLUSTER_NAME=ripple-test", "LOAD_PLATFORM=linux/amd64", "IMAGE_DIR=" + loadDir}},
	} {
		if err := makeTarget(b.env, b.args...); err != nil {
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

// makeTarget runs make in the repository with env added to the test's
// environment (UMASK=077 runs it under that umask); its output is shown
// only when it fails.
func makeTarget(env []string, args ...string) error {
	script := `umask "${UMASK:-022}" && exec make --no-print-directory "$@"`
	cmd := exec.Command("bash", append([]string{"-c", script, "make"}, args...)...)
	cmd.Dir = root
	// Not the enclosing make's flags (make test's -j3 and output sync).
	cmd.Env = append(append(os.Environ(), "MAKEFLAGS="), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("make %s: %w\n%s", strings.Join(args, " "), err, out.String())
	}
	fmt.Fprintf(os.Stderr, "make %s: %s\n", args[0], time.Since(start).Round(time.Second))
	return nil
}

// fakeKind writes a stand-in for kind into a directory of its own and
// returns that directory: it records its arguments and copies each file it
// is given into $KIND_OUT, so that the test sees what `make image-load`
// hands the real kind.
func fakeKind(tmp string) (string, error) {
	dir := filepath.Join(tmp, "fakebin")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	script := `#!/usr/bin/env bash
set -eu
mkdir -p "$KIND_OUT"
printf '%s\n' "$@" > "$KIND_OUT/args"
for a in "$@"; do if [ -f "$a" ]; then cp "$a" "$KIND_OUT/archive.tar"; fi; done
`
	return dir, os.WriteFile(filepath.Join(dir, "kind"), []byte(script), 0o755)
}
