package kubeletnode

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// launchEnv, set in a child's environment, makes the binary that imports
// this package the kubelet's launcher instead of itself (see init).
const launchEnv = "RIPPLE_KUBELET_LAUNCH"

// launch is what the launcher does: bind each Source on its Target, then
// execute Argv.
type launch struct {
	Binds []bind   `json:"binds"`
	Argv  []string `json:"argv"`
}

type bind struct {
	Source string `json:"source"`
	Target string `json:"target"`
}

// init is the launcher. Start runs the test binary again, in a new private
// mount namespace, with launchEnv set: before any test code runs, it binds
// the node's directories and sysctl files over the host's paths, in that
// namespace only, and replaces itself with the kubelet, which inherits the
// namespace. A launcher needs no binary of its own (nor unshare or mount
// installed).
func init() {
	spec, ok := os.LookupEnv(launchEnv)
	if !ok {
		return
	}
	if err := runLauncher(spec); err != nil {
		fmt.Fprintln(os.Stderr, "kubelet launcher:", err)
		os.Exit(1)
	}
}

func runLauncher(spec string) error {
	var l launch
	if err := json.Unmarshal([]byte(spec), &l); err != nil {
		return err
	}
	if len(l.Argv) == 0 {
		return fmt.Errorf("nothing to run")
	}
	for _, b := range l.Binds {
		if err := syscall.Mount(b.Source, b.Target, "", syscall.MS_BIND, ""); err != nil {
			return fmt.Errorf("binding %s on %s: %w", b.Source, b.Target, err)
		}
	}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, launchEnv+"=") {
			env = append(env, kv)
		}
	}
	return syscall.Exec(l.Argv[0], l.Argv, env)
}

// kernelTunables are the sysctls the kubelet sets at start when they
// differ (pkg/kubelet/cm's setupKernelTunables), with the values it wants.
var kernelTunables = map[string]string{
	"vm/overcommit_memory":      "1",
	"vm/panic_on_oom":           "0",
	"kernel/panic":              "10",
	"kernel/panic_on_oops":      "1",
	"kernel/keys/root_maxkeys":  "1000000",
	"kernel/keys/root_maxbytes": "25000000",
}

// binds are the launcher's binds for n: /var/lib and /var/log (where the
// kubelet's fixed paths are) onto directories of the node's, and each
// kernel tunable onto a file that holds the value the kubelet wants, so
// that it finds nothing to write.
func (n *Node) binds() ([]bind, error) {
	var binds []bind
	for _, target := range []string{"/var/lib", "/var/log"} {
		src := filepath.Join(n.dir, strings.ReplaceAll(strings.TrimPrefix(target, "/"), "/", "-"))
		if err := os.MkdirAll(src, 0o755); err != nil {
			return nil, err
		}
		binds = append(binds, bind{Source: src, Target: target})
	}
	sysctls := filepath.Join(n.dir, "sysctl")
	if err := os.MkdirAll(sysctls, 0o755); err != nil {
		return nil, err
	}
	for name, value := range kernelTunables {
		target := filepath.Join("/proc/sys", name)
		if _, err := os.Stat(target); err != nil {
			continue // the kubelet reports a tunable the kernel lacks
		}
		src := filepath.Join(sysctls, strings.ReplaceAll(name, "/", "."))
		if err := os.WriteFile(src, []byte(value+"\n"), 0o644); err != nil {
			return nil, err
		}
		binds = append(binds, bind{Source: src, Target: target})
	}
	return binds, nil
}
