// Command localcluster starts and stops a named local Kubernetes cluster in
// the background, for people who want to use kubectl against it
// (`make cluster-up`, `make cluster-down`).
//
//	localcluster up --name NAME [--nodes N]   start it; prints the kubeconfig path
//	localcluster down --name NAME             stop it and remove its files
//
// "up" re-runs itself as a detached supervisor ("serve") that owns the
// cluster's processes and tears them down on SIGTERM.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ripple-dev/ripple/hack/cluster"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "localcluster:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return errors.New("usage: localcluster up|down|serve --name NAME [--nodes N]")
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	name := fs.String("name", "default", "cluster name; several named clusters can run side by side")
	nodes := fs.Int("nodes", 3, "number of kwok fake nodes")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	state := filepath.Join(os.TempDir(), "ripple-cluster-"+*name)
	switch args[0] {
	case "up":
		return up(state, *name, *nodes)
	case "down":
		return down(state, *name)
	case "serve":
		return serve(state, *nodes)
	default:
		return fmt.Errorf("unknown command %q: want up, down or serve", args[0])
	}
}

func up(state, name string, nodes int) error {
	if pid, ok := readPID(state); ok && alive(pid) {
		fmt.Printf("cluster %q is already running\nexport KUBECONFIG=%s\n", name, filepath.Join(state, "kubeconfig"))
		return nil
	}
	_ = os.RemoveAll(state)
	if err := os.MkdirAll(state, 0o700); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	logFile, err := os.Create(filepath.Join(state, "supervisor.log"))
	if err != nil {
		return err
	}
	// The child keeps its own copy of the descriptor.
	defer func() { _ = logFile.Close() }()
	cmd := exec.Command(self, "serve", "--name", name, "--nodes", strconv.Itoa(nodes))
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // outlive this shell
	fmt.Printf("starting cluster %q with %d kwok nodes...\n", name, nodes)
	if err := cmd.Start(); err != nil {
		return err
	}
	ready := filepath.Join(state, "ready")
	for deadline := time.Now().Add(3 * time.Minute); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		if _, err := os.Stat(ready); err == nil {
			fmt.Printf("cluster %q is up (logs in %s)\nexport KUBECONFIG=%s\n", name, state, filepath.Join(state, "kubeconfig"))
			return nil
		}
		if !alive(cmd.Process.Pid) {
			break
		}
	}
	log, _ := os.ReadFile(logFile.Name())
	_ = cmd.Process.Signal(syscall.SIGTERM)
	return fmt.Errorf("cluster did not start:\n%s", log)
}

func serve(state string, nodes int) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := os.WriteFile(filepath.Join(state, "pid"), []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
		return err
	}
	c, err := cluster.Start(ctx, cluster.Options{Nodes: nodes, LogDir: state})
	if err != nil {
		return err
	}
	kc, err := os.ReadFile(c.Kubeconfig)
	if err == nil {
		err = os.WriteFile(filepath.Join(state, "kubeconfig"), kc, 0o600)
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(state, "ready"), nil, 0o600)
	}
	if err != nil {
		_ = c.Stop()
		return err
	}
	fmt.Println("cluster ready; waiting for SIGTERM")
	<-ctx.Done()
	return c.Stop()
}

func down(state, name string) error {
	pid, ok := readPID(state)
	if !ok || !alive(pid) {
		_ = os.RemoveAll(state)
		fmt.Printf("cluster %q is not running\n", name)
		return nil
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		return err
	}
	for deadline := time.Now().Add(time.Minute); alive(pid); time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			return fmt.Errorf("cluster %q (pid %d) did not stop within a minute; logs in %s", name, pid, state)
		}
	}
	fmt.Printf("cluster %q stopped\n", name)
	return os.RemoveAll(state)
}

func readPID(state string) (int, bool) {
	b, err := os.ReadFile(filepath.Join(state, "pid"))
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid, err == nil
}

func alive(pid int) bool {
	// A zombie child still accepts signal 0; reap it first if it is ours.
	var ws syscall.WaitStatus
	_, _ = syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
	return syscall.Kill(pid, 0) == nil
}
