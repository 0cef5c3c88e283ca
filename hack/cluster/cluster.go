package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// Options tunes Start.
type Options struct {
	// Nodes is the number of kwok fake nodes; 0 means 3.
	Nodes int
	// LogDir receives one log file per component; empty means the cluster's
	// scratch directory, removed by Stop.
	LogDir string
	API    APIOptions
}

// Cluster is an API plus the controllers that make workloads real:
// kube-controller-manager creates ReplicaSets and Pods, kube-scheduler binds
// them to nodes, and kwok makes those nodes and pods Ready without running
// any container.
type Cluster struct {
	*API
	// Nodes are the names of the fake nodes.
	Nodes []string

	procs []*proc
}

// proc is a component process; done closes when it exits.
type proc struct {
	name string
	log  string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// NodeLabel marks the fake nodes that kwok manages.
const NodeLabel = "ripple.dev/kwok-node"

// Start starts a full local cluster and waits until every node is Ready.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	if opts.Nodes == 0 {
		opts.Nodes = 3
	}
	api, err := StartAPI(opts.API)
	if err != nil {
		return nil, err
	}
	c := &Cluster{API: api}
	if err := c.start(ctx, opts); err != nil {
		_ = c.Stop()
		return nil, err
	}
	return c, nil
}

func (c *Cluster) start(ctx context.Context, opts Options) error {
	tools, err := ToolsDir()
	if err != nil {
		return err
	}
	logDir := opts.LogDir
	if logDir == "" {
		logDir = c.dir
	}
	// kwok reads ~/.kwok/kwok.yaml unless told otherwise; a config of
	// its own keeps a developer's kwok setup out of the tests.
	kwokConfig := filepath.Join(c.dir, "kwok.yaml")
	if err := writeKwokConfig(tools, kwokConfig); err != nil {
		return err
	}
	for _, comp := range c.components(kwokConfig) {
		p, err := startComponent(tools, logDir, comp)
		if err != nil {
			return err
		}
		c.procs = append(c.procs, p)
	}

	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return err
	}
	for i := range opts.Nodes {
		name := "kwok-node-" + strconv.Itoa(i)
		if err := createNode(ctx, cs, name); err != nil {
			return err
		}
		c.Nodes = append(c.Nodes, name)
	}
	return c.waitReady(ctx, cs)
}

// kwokStages are the stages kwok simulates nodes and pods by, which
// hack/build-tools.sh takes from kwok's module: nodes become Ready and
// keep their heartbeat, pods run at once, complete and go when deleted.
var kwokStages = []string{"node-initialize", "node-heartbeat", "pod-ready", "pod-complete", "pod-delete"}

// writeKwokConfig writes kwok's config, its stages, to path.
func writeKwokConfig(tools, path string) error {
	docs := make([]string, 0, len(kwokStages))
	for _, name := range kwokStages {
		b, err := os.ReadFile(filepath.Join(tools, "kwok-stages", name+".yaml"))
		if err != nil {
			return fmt.Errorf("kwok's stages (run hack/build-tools.sh): %w", err)
		}
		docs = append(docs, string(b))
	}
	return os.WriteFile(path, []byte(strings.Join(docs, "\n---\n")), 0o600)
}

// component is a cluster process beside the API server: its binary's name
// in the tools directory and its arguments.
type component struct {
	name string
	args []string
}

// components are the controller-manager, the scheduler and kwok, talking to
// c's API server; kwok reads kwokConfig.
func (c *Cluster) components(kwokConfig string) []component {
	saKey := filepath.Join(c.env.ControlPlane.APIServer.CertDir, "sa-signer.key")
	return []component{
		{"kube-controller-manager", []string{
			"--kubeconfig=" + c.Kubeconfig,
			"--authentication-kubeconfig=" + c.Kubeconfig,
			"--authorization-kubeconfig=" + c.Kubeconfig,
			"--bind-address=127.0.0.1",
			"--secure-port=0", // no health endpoint needed; nothing else listens
			"--leader-elect=false",
			"--service-account-private-key-file=" + saKey,
			"--use-service-account-credentials=false",
			"--cluster-name=ripple-local",
			// Fast reaction matters more than efficiency on a test cluster.
			"--concurrent-deployment-syncs=10",
			"--concurrent-replicaset-syncs=10",
			// Its default of 20 requests a second, not the CPU, is what
			// held rollouts back when tests roll fleets at once (kwokctl
			// lifts it too); the API server's priority and fairness still
			// bounds it.
			"--kube-api-qps=1000",
			"--kube-api-burst=2000",
			"--node-monitor-grace-period=60s",
		}},
		{"kube-scheduler", []string{
			"--kubeconfig=" + c.Kubeconfig,
			"--authentication-kubeconfig=" + c.Kubeconfig,
			"--authorization-kubeconfig=" + c.Kubeconfig,
			"--bind-address=127.0.0.1",
			"--secure-port=0",
			"--leader-elect=false",
			"--kube-api-qps=1000", // as the controller-manager's
			"--kube-api-burst=2000",
		}},
		{"kwok", []string{
			"--kubeconfig=" + c.Kubeconfig,
			"--config=" + kwokConfig,
			"--manage-all-nodes=false",
			"--manage-nodes-with-label-selector=" + NodeLabel,
			"--node-port=0", // no kubelet-like server: nothing to bind
			"--cidr=10.244.0.1/16",
			"--node-ip=127.0.0.1",
			// Node leases keep nodes Ready between kwok's status updates,
			// which come too rarely for the controller-manager's grace period.
			"--node-lease-duration-seconds=40",
		}},
	}
}

// startComponent starts comp, its output in logDir/<name>.log.
func startComponent(tools, logDir string, comp component) (*proc, error) {
	logFile, err := os.Create(filepath.Join(logDir, comp.name+".log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(filepath.Join(tools, comp.name), comp.args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Die with the process that started us, even if it is killed hard.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	err = cmd.Start()
	_ = logFile.Close() // the child holds its own descriptor
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", comp.name, err)
	}
	p := &proc{name: comp.name, log: logFile.Name(), cmd: cmd, done: make(chan struct{})}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	return p, nil
}

func createNode(ctx context.Context, cs kubernetes.Interface, name string) error {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Labels:      map[string]string{NodeLabel: "true", "kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "type": "kwok"},
			Annotations: map[string]string{"node.alpha.kubernetes.io/ttl": "0", "kwok.x-k8s.io/node": "fake"},
		},
		Status: corev1.NodeStatus{
			Allocatable: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse("32"),
				corev1.ResourceMemory: resource.MustParse("256Gi"),
				corev1.ResourcePods:   resource.MustParse("1000"),
			},
			Capacity: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse("32"),
				corev1.ResourceMemory: resource.MustParse("256Gi"),
				corev1.ResourcePods:   resource.MustParse("1000"),
			},
		},
	}
	_, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// waitReady waits for every node to be Ready and for the default
// ServiceAccount, which the controller-manager creates, so that workloads
// can be created as soon as Start returns.
func (c *Cluster) waitReady(ctx context.Context, cs kubernetes.Interface) error {
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		if err := c.exited(); err != nil {
			return false, err
		}
		for _, name := range c.Nodes {
			n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil || !nodeReady(n) {
				return false, nil
			}
		}
		_, err := cs.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %d kwok nodes to be Ready (logs in %s): %w", len(c.Nodes), c.dir, err)
	}
	return nil
}

func nodeReady(n *corev1.Node) bool {
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

// exited reports a component that died during start-up.
func (c *Cluster) exited() error {
	for _, p := range c.procs {
		select {
		case <-p.done:
			return fmt.Errorf("%s exited during start-up (%w); the end of its log:\n%s", p.name, p.err, tail(p.log, 20))
		default:
		}
	}
	return nil
}

// Stop ends every component and removes the scratch directories.
func (c *Cluster) Stop() error {
	var errs []error
	for i := len(c.procs) - 1; i >= 0; i-- {
		p := c.procs[i]
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	}
	c.procs = nil
	if c.API != nil {
		errs = append(errs, c.API.Stop())
	}
	return errors.Join(errs...)
}

// tail returns the last n lines of a log file, for error messages that
// outlive the directory Stop removes.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
