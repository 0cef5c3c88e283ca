// Package kubeletnode runs a real kubelet, built from the pinned Kubernetes
// modules (hack/build-tools.sh), as a node of a local cluster
// (hack/cluster), on a fake container runtime (hack/fakecri) that starts no
// process and records every container the kubelet creates. It is the
// real-kubelet tier's harness (test/kubelet): kwok nodes start no
// container, so only a kubelet's own code can show what a restarted
// container is given.
//
// The kubelet runs as root on the host, so Start fences it in:
//
//   - a private mount namespace (the test binary re-executes itself to set
//     it up, see init), where /var/lib and /var/log are bound to the node's
//     scratch directory (the kubelet's fixed paths: the device-plugin
//     socket, the container-log directory) and the kernel tunables the
//     kubelet would set are bound to files that already hold its values,
//     so it writes no sysctl of the host; its mounts (secret tmpfs,
//     subPath binds) live and die with that namespace;
//   - a cgroup root of its own (cgroupsPerQOS needs one; with
//     cgroupsPerQOS off the kubelet panics in its resize path), made
//     before it starts and removed after it ends;
//   - its root, certificate and pod-log directories in a scratch directory;
//   - no server: nothing dials the kubelet (tests use no kubectl logs or
//     exec), and the fake runtime listens on a unix socket. The node IP
//     must be an address of the host other than loopback (the kubelet
//     refuses loopback), but nothing dials it; pods get addresses in
//     127.0.0.0/8 from the fake runtime.
//
// Stop (or the test's cleanup, with StartT) ends both processes, removes
// the cgroups, the node's RBAC binding and the scratch directory.
package kubeletnode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/ripple-dev/ripple/hack/cluster"
	"github.com/ripple-dev/ripple/hack/fakecri/record"
	"github.com/ripple-dev/ripple/hack/kit"
)

// SyncFrequency is how often the kubelet syncs each pod when nothing else
// makes it: the longest a plain configMap volume takes to show a changed
// ConfigMap (the kubelet rewrites such a volume on a pod's sync). The
// kubelet's default is a minute; 5 s keeps the tier fast.
const SyncFrequency = 5 * time.Second

// Node is a running kubelet node.
type Node struct {
	// Name is the Node's name.
	Name string
	// IP is the node IP the kubelet reports: an address of the host that
	// nothing dials.
	IP string

	dir      string
	record   string
	cri      *kit.Process
	kubelet  *kit.Process
	cgroup   string // the name of the kubelet's cgroup root, made by Start
	cs       kubernetes.Interface
	binding  string
	stopOnce atomic.Bool
}

// seq numbers the nodes of one test binary, for unique cgroup roots.
var seq atomic.Int32

// StartT starts a node named name on api and stops it when the test ends,
// failed or not.
func StartT(t testing.TB, api *cluster.API, name string) *Node {
	t.Helper()
	start := time.Now()
	n, err := Start(t.Context(), api, name)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("kubelet node %s Ready in %v (scratch directory %s)", name, time.Since(start).Round(100*time.Millisecond), n.dir)
	// The test's context is cancelled before cleanups run.
	ctx := context.WithoutCancel(t.Context())
	t.Cleanup(func() {
		// Stop removes the logs: a failure's are shown first.
		if t.Failed() {
			t.Logf("the end of the kubelet's log:\n%s", n.LogTail(40))
		}
		if err := n.Stop(ctx); err != nil {
			t.Error(err)
		}
	})
	return n
}

// Start builds the fake runtime, starts it and the kubelet, and waits
// until the Node is Ready.
func Start(ctx context.Context, api *cluster.API, name string) (n *Node, err error) {
	tools, err := cluster.ToolsDir()
	if err != nil {
		return nil, err
	}
	kubelet := filepath.Join(tools, "kubelet")
	if _, err := os.Stat(kubelet); err != nil {
		return nil, fmt.Errorf("no kubelet in %s: run 'make tools'", tools)
	}
	ip, err := nodeIP()
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(api.Config)
	if err != nil {
		return nil, err
	}
	removeStale()
	dir, err := os.MkdirTemp("", fmt.Sprintf("%s%d-", stalePrefix, os.Getpid()))
	if err != nil {
		return nil, err
	}
	n = &Node{Name: name, IP: ip, dir: dir, record: filepath.Join(dir, "containers.jsonl"), cs: cs}
	defer func() {
		if err != nil {
			err = errors.Join(err, n.Stop(context.WithoutCancel(ctx)))
		}
	}()
	n.cgroup = fmt.Sprintf("%s%d-%d", stalePrefix, os.Getpid(), seq.Add(1))
	if err = makeCgroups(n.cgroup); err != nil {
		return n, err
	}
	if err := n.startCRI(ctx); err != nil {
		return n, err
	}
	kubeconfig, err := n.credentials(ctx, api)
	if err != nil {
		return n, err
	}
	if err := n.startKubelet(kubelet, kubeconfig); err != nil {
		return n, err
	}
	return n, n.waitReady(ctx)
}

// Dir is the node's scratch directory; its logs are kubelet.log and
// fakecri.log there.
func (n *Node) Dir() string { return n.dir }

// Containers returns what the fake runtime recorded: every container the
// kubelet created, oldest first.
func (n *Node) Containers() ([]record.Container, error) {
	return record.Read(n.record)
}

// ReadFile reads a path of the kubelet's mount namespace, such as a
// recorded mount's HostPath: the kubelet's mounts (a subPath's bind, a
// secret's tmpfs) are not seen from the host.
func (n *Node) ReadFile(path string) ([]byte, error) {
	if n.kubelet == nil || n.kubelet.Exited() {
		return nil, errors.New("the kubelet is not running")
	}
	return os.ReadFile(filepath.Join("/proc", strconv.Itoa(n.kubelet.Pid()), "root", path))
}

// Pids are the processes of the node (the kubelet and the fake runtime),
// for a check of what they listen on.
func (n *Node) Pids() []int {
	var pids []int
	for _, p := range []*kit.Process{n.cri, n.kubelet} {
		if p != nil && !p.Exited() {
			pids = append(pids, p.Pid())
		}
	}
	return pids
}

// LogTail returns the end of the kubelet's log, for a failure's message.
func (n *Node) LogTail(lines int) string {
	b, err := os.ReadFile(filepath.Join(n.dir, "kubelet.log"))
	if err != nil {
		return err.Error()
	}
	all := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(all[max(0, len(all)-lines):], "\n")
}

// startCRI builds hack/fakecri into the node's directory (the go build
// cache makes it a link) and starts it.
func (n *Node) startCRI(ctx context.Context) error {
	bin := filepath.Join(n.dir, "fakecri")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/ripple-dev/ripple/hack/fakecri")
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("building hack/fakecri: %w\n%s", err, out)
	}
	logFile, err := os.Create(filepath.Join(n.dir, "fakecri.log"))
	if err != nil {
		return err
	}
	defer func() { _ = logFile.Close() }() // the child holds its own descriptor
	cmd := exec.Command(bin, "--socket", n.socket(), "--record", n.record)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if n.cri, err = kit.StartProcess(cmd, nil); err != nil {
		return fmt.Errorf("starting the fake runtime: %w", err)
	}
	// The kubelet gives up on a runtime that is not there when it starts.
	return wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		if n.cri.Exited() {
			return false, fmt.Errorf("the fake runtime exited: %w", n.cri.Err())
		}
		c, err := net.Dial("unix", n.socket())
		if err != nil {
			return false, nil
		}
		return true, c.Close()
	})
}

func (n *Node) socket() string { return filepath.Join(n.dir, "cri.sock") }

// credentials writes the kubelet's kubeconfig: a client certificate for
// system:node:<name> in system:nodes, as a joined node has, and the
// built-in system:node ClusterRole bound to it (the local API server
// authorizes with RBAC alone, without the Node authorizer).
func (n *Node) credentials(ctx context.Context, api *cluster.API) (string, error) {
	user := "system:node:" + n.Name
	kubeconfig, err := api.UserKubeconfig(user, "system:nodes", "system:authenticated")
	if err != nil {
		return "", fmt.Errorf("writing the kubelet's kubeconfig: %w", err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "ripple-kubelet-" + n.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:node"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	if _, err := n.cs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		return "", err
	}
	n.binding = binding.Name
	return kubeconfig, nil
}

// startKubelet writes the kubelet's configuration and starts it through
// the launcher (init), in a mount namespace of its own.
func (n *Node) startKubelet(kubelet, kubeconfig string) error {
	cfg := filepath.Join(n.dir, "kubelet.yaml")
	if err := os.WriteFile(cfg, []byte(n.config()), 0o600); err != nil {
		return err
	}
	binds, err := n.binds()
	if err != nil {
		return err
	}
	spec, err := json.Marshal(launch{Binds: binds, Argv: []string{
		kubelet,
		"--config=" + cfg,
		"--kubeconfig=" + kubeconfig,
		"--root-dir=" + filepath.Join(n.dir, "root"),
		"--cert-dir=" + filepath.Join(n.dir, "pki"),
		"--hostname-override=" + n.Name,
		"--node-ip=" + n.IP,
		"--node-labels=ripple.dev/kubelet-node=true",
		"--v=2",
	}})
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	logFile, err := os.Create(filepath.Join(n.dir, "kubelet.log"))
	if err != nil {
		return err
	}
	defer func() { _ = logFile.Close() }() // the child holds its own descriptor
	// The kubelet works in an empty directory of the node's: it removes a
	// container's logs by a pattern, which a runtime that reports no log
	// path turns into "*" in its working directory (else the test
	// package's directory, whose files a test run once lost that way).
	cwd := filepath.Join(n.dir, "cwd")
	if err := os.MkdirAll(cwd, 0o755); err != nil {
		return err
	}
	cmd := exec.Command(self)
	cmd.Dir = cwd
	cmd.Env = append(os.Environ(), launchEnv+"="+string(spec))
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Go's exec makes the new namespace's mounts private (MS_REC|
	// MS_PRIVATE on /) before it runs the child: nothing the launcher or
	// the kubelet mounts reaches the host.
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	if n.kubelet, err = kit.StartProcess(cmd, nil); err != nil {
		return fmt.Errorf("starting the kubelet: %w", err)
	}
	return nil
}

// config is the kubelet's configuration file.
func (n *Node) config() string {
	cgroupRoot := "/" + n.cgroup
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# The host runs cgroup v1, which the kubelet refuses unless told.
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupsPerQOS: true
cgroupRoot: %[1]s
containerRuntimeEndpoint: unix://%[2]s
imageServiceEndpoint: unix://%[2]s
podLogsDir: %[3]s
# No server: nothing dials the kubelet.
enableServer: false
healthzPort: 0
readOnlyPort: 0
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
authorization: {mode: AlwaysAllow}
rotateCertificates: false
serverTLSBootstrap: false
failSwapOn: false
resolvConf: ""
syncFrequency: %[4]s
# The fake runtime's images and disks are not real: no eviction, no image
# garbage collection.
evictionHard: {}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
localStorageCapacityIsolation: false
serializeImagePulls: false
`, cgroupRoot, n.socket(), filepath.Join(n.dir, "pod-logs"), SyncFrequency)
}

// waitReady waits for the kubelet to register its Node and report it
// Ready, failing early when the kubelet exits.
func (n *Node) waitReady(ctx context.Context) error {
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		if n.kubelet.Exited() {
			return false, fmt.Errorf("the kubelet exited: %w", n.kubelet.Err())
		}
		node, err := n.cs.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady {
				return c.Status == corev1.ConditionTrue, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the kubelet's node %s to be Ready (logs in %s): %w; the end of its log:\n%s", n.Name, n.dir, err, n.LogTail(30))
	}
	return nil
}

// Stop ends the kubelet and the fake runtime, removes the cgroups, the
// Node, its RBAC binding and the scratch directory. The kubelet's mounts
// end with its mount namespace, when it exits. ctx bounds the API calls;
// a second Stop does nothing.
func (n *Node) Stop(ctx context.Context) error {
	if n.stopOnce.Swap(true) {
		return nil
	}
	var errs []error
	for _, p := range []*kit.Process{n.kubelet, n.cri} {
		if p != nil {
			p.Stop(10 * time.Second)
		}
	}
	if n.cgroup != "" {
		// In every hierarchy: the kubelet makes its cgroups in the v2
		// one too on a hybrid host.
		paths, err := cgroupPaths(n.cgroup)
		errs = append(errs, err, removeCgroups(paths))
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if n.binding != "" {
		errs = append(errs, n.cs.RbacV1().ClusterRoleBindings().Delete(ctx, n.binding, metav1.DeleteOptions{}))
		// Without its kubelet the Node would stay NotReady; its pods
		// belong to tests that have ended.
		_ = n.cs.CoreV1().Nodes().Delete(ctx, n.Name, metav1.DeleteOptions{})
	}
	errs = append(errs, os.RemoveAll(n.dir))
	return errors.Join(errs...)
}

// nodeIP returns the host's first IPv4 address other than loopback: the
// kubelet wants its node IP on one of the host's interfaces and not
// loopback. Nothing dials it.
func nodeIP() (string, error) {
	ifaces, err := net.Interfaces()
	if err != nil {
		return "", err
	}
	for _, iface := range ifaces {
		if iface.Flags&net.FlagUp == 0 || iface.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, err := iface.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil && ipn.IP.IsGlobalUnicast() {
				return ipn.IP.String(), nil
			}
		}
	}
	return "", errors.New("the kubelet needs a node IP on an interface other than loopback, and this host has none")
}
