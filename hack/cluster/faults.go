package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Component is a process of an API's control plane that a fault test kills
// and restarts.
type Component string

// The components Kill and Restart know.
const (
	APIServer Component = "kube-apiserver"
	Etcd      Component = "etcd"
)

// Kill ends c with SIGKILL, as a crash or an OOM kill would, and returns
// once it no longer runs: its ports are closed and its clients see
// connections refused. etcd's data directory stays; Restart starts c again.
func (a *API) Kill(ctx context.Context, c Component) error {
	pid, args, err := a.find(c)
	if err != nil {
		return err
	}
	a.killed[c] = args
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("killing %s (pid %d): %w", c, pid, err)
	}
	// Whoever started it (envtest or Restart) reaps it; gone or a zombie,
	// it no longer holds a socket.
	return wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) {
			state, ok := procState(pid)
			return !ok || state == "Z", nil
		})
}

// Restart starts c, killed by Kill, with the command line it had (so the
// same ports, certificates and data directory) and returns once the API
// server serves again: its /readyz, which checks etcd too, answers ok.
// Stop ends the restarted process.
//
// The port c listened on is in the ephemeral range (the test picked a free
// one), so while c is down a client that keeps reconnecting to it can be
// handed that very port as its source and connect to itself (TCP's
// simultaneous open), holding the port for a moment: a restart that finds
// its port in use is tried again, for up to restartRetry.
func (a *API) Restart(ctx context.Context, c Component) error {
	args, ok := a.killed[c]
	if !ok {
		return fmt.Errorf("restarting %s: it was not killed", c)
	}
	delete(a.killed, c)
	deadline := time.Now().Add(restartRetry)
	for {
		p, err := a.start(c, args)
		if err != nil {
			return err
		}
		err = a.waitServing(ctx, p)
		if err == nil || !strings.Contains(tail(p.log, 5), "address already in use") || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// restartRetry is how long Restart tries again while c's port is in use.
const restartRetry = 30 * time.Second

// start starts c with args, its output appended to its log.
func (a *API) start(c Component, args []string) (*proc, error) {
	logFile, err := os.OpenFile(filepath.Join(a.dir, string(c)+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	err = cmd.Start()
	_ = logFile.Close() // the child holds its own descriptor
	if err != nil {
		return nil, fmt.Errorf("restarting %s: %w", c, err)
	}
	p := &proc{name: string(c), log: logFile.Name(), cmd: cmd, done: make(chan struct{})}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	a.restarted = append(a.restarted, p)
	return p, nil
}

// waitServing polls /readyz until it answers ok, failing early if p exits.
func (a *API) waitServing(ctx context.Context, p *proc) error {
	cfg := rest.CopyConfig(a.Config)
	cfg.Timeout = 2 * time.Second
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	err = wait.PollUntilContextCancel(ctx, 20*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		select {
		case <-p.done:
			return false, fmt.Errorf("%s exited (%w); the end of its log:\n%s", p.name, p.err, tail(p.log, 20))
		default:
		}
		body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil && string(body) == "ok", nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the API server to serve after restarting %s: %w", p.name, err)
	}
	return nil
}

// find returns the pid and command line of this API's c: a process this
// one started whose command line names this API's own directory.
func (a *API) find(c Component) (int, []string, error) {
	own := "--data-dir=" + a.env.ControlPlane.Etcd.DataDir
	if c == APIServer {
		own = "--cert-dir=" + a.env.ControlPlane.APIServer.CertDir
	}
	for _, pid := range Descendants() {
		raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		if err != nil {
			continue
		}
		args := strings.Split(string(bytes.TrimRight(raw, "\x00")), "\x00")
		if filepath.Base(args[0]) == string(c) && slices.Contains(args, own) {
			return pid, args, nil
		}
	}
	return 0, nil, fmt.Errorf("no running %s with %s", c, own)
}

// stopRestarted ends the restarted processes named c: SIGTERM, then
// SIGKILL after 10 s.
func (a *API) stopRestarted(c Component) error {
	var errs []error
	for _, p := range a.restarted {
		if p.name != string(c) {
			continue
		}
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
			errs = append(errs, fmt.Errorf("restarted %s did not exit within 10s of SIGTERM", c))
		}
	}
	return errors.Join(errs...)
}

// procState returns the state letter of process pid (R, S, Z, ...), and
// false once it is gone.
func procState(pid int) (string, bool) {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", false
	}
	fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	if len(fields) == 0 {
		return "", false
	}
	return fields[0], true
}
