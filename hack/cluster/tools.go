// Package cluster starts local Kubernetes control planes built from pinned Go
// modules (see hack/build-tools.sh): an API-only control plane (etcd and
// kube-apiserver through controller-runtime's envtest) for integration tests,
// and a full cluster (plus kube-controller-manager, kube-scheduler and kwok
// fake nodes) for end-to-end tests, the demo and benchmarks.
//
// Everything listens on 127.0.0.1 on free ports, so several control planes
// can run side by side; Stop ends every process and removes every directory
// that Start made. Fault tests kill kube-apiserver or etcd with SIGKILL and
// restart it on the same ports and data (API.Kill, API.Restart).
//
// It lives under hack/, beside the script that builds those binaries, and
// not under internal/: it is developer tooling that the test suites and
// the hack/ programs share, not Ripple, and the unit tier's coverage of
// internal/... measures Ripple alone.
package cluster

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// KubernetesVersion is the version of the control plane binaries that
// hack/build-tools.sh builds.
const KubernetesVersion = "v1.37.2"

// ToolsDir returns the directory holding the built binaries: $RIPPLE_TOOLS_DIR
// when set, else the versioned cache that hack/build-tools.sh writes to.
func ToolsDir() (string, error) {
	dir := os.Getenv("RIPPLE_TOOLS_DIR")
	if dir == "" {
		out, err := exec.Command("go", "env", "GOCACHE").Output()
		if err != nil {
			return "", fmt.Errorf("locating the tools cache with 'go env GOCACHE': %w", err)
		}
		dir = filepath.Join(strings.TrimSpace(string(out)), "..", "ripple-k8s", KubernetesVersion)
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	var missing []string
	for _, bin := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"} {
		if _, err := os.Stat(filepath.Join(dir, bin)); err != nil {
			missing = append(missing, bin)
		}
	}
	if len(missing) > 0 {
		return "", errors.New("missing " + strings.Join(missing, ", ") + " in " + dir + ": run 'make tools' first")
	}
	return dir, nil
}

// Kubectl returns the kubectl that hack/build-tools.sh builds, of the
// control plane's version, so that tests need none installed.
func Kubectl() (string, error) {
	dir, err := ToolsDir()
	if err != nil {
		return "", err
	}
	kubectl := filepath.Join(dir, "kubectl")
	if _, err := os.Stat(kubectl); err != nil {
		return "", fmt.Errorf("kubectl not found at %s: run 'make tools' (or point RIPPLE_TOOLS_DIR at the directory holding it)", kubectl)
	}
	return kubectl, nil
}
