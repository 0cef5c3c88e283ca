package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/ripple-dev/ripple/hack/kit"
)

// rippleProc is the ripple binary running as a child process.
type rippleProc struct {
	proc *kit.Process
	log  string // path of the file that receives its stdout and stderr

	// reported is set once exited has reported an early exit, so that
	// stop does not report it a second time.
	reported bool
}

// stopGrace is how long ripple gets to shut down cleanly after SIGTERM.
const stopGrace = 10 * time.Second

// startRipple runs bin against the cluster described by kubeconfig, with its
// log in logPath. Metrics and health probes are off: the demo does not use
// them, and fixed ports could clash with something else on the machine.
func startRipple(bin, kubeconfig, logPath string) (*rippleProc, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	// The child keeps its own copy of the descriptor.
	defer func() { _ = logFile.Close() }()

	cmd := exec.Command(bin,
		"--kubeconfig="+kubeconfig,
		"--metrics-bind-address=0",
		"--health-probe-bind-address=0",
	)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{
		// A process group of its own keeps a terminal Ctrl-C away from
		// ripple, so the demo stops it in order, after the rollout it
		// watches and before the cluster it talks to.
		Setpgid: true,
	}
	// If the demo itself is killed hard, ripple goes with it.
	proc, err := kit.StartProcess(cmd, nil)
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	return &rippleProc{proc: proc, log: logPath}, nil
}

// waitStarted waits until every controller has started its workers, which
// controller-runtime logs once per controller after its caches have synced:
// from then on, Ripple sees every change.
func (p *rippleProc) waitStarted(ctx context.Context, controllers int) error {
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		if err := p.exited(); err != nil {
			return err
		}
		if strings.Count(p.readLog(), "Starting workers") >= controllers {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for ripple's %d controllers to start (log: %s): %w", controllers, p.log, context.Cause(ctx))
		case <-tick.C:
		}
	}
}

// exited returns an error, with the end of ripple's log, if ripple is no
// longer running: everything the demo waits for depends on it.
func (p *rippleProc) exited() error {
	if !p.proc.Exited() {
		return nil
	}
	p.reported = true
	return fmt.Errorf("ripple exited unexpectedly (%s); the end of its log (%s):\n%s", p.status(), p.log, p.tail(15))
}

// status describes how ripple exited; call it only after it has.
func (p *rippleProc) status() string {
	if err := p.proc.Err(); err != nil {
		return err.Error()
	}
	return "exit status 0"
}

// stop sends SIGTERM, and SIGKILL if ripple has not stopped within
// stopGrace. It reports a ripple that had already died or that did not
// stop cleanly, since either means the demo did not show a healthy Ripple.
func (p *rippleProc) stop() error {
	switch {
	case p.proc.Exited() && p.reported:
		return nil
	case p.proc.Exited():
		return fmt.Errorf("ripple had exited before the end of the demo (%s); log: %s", p.status(), p.log)
	case p.proc.Stop(stopGrace):
		return fmt.Errorf("ripple did not stop within %s of SIGTERM and was killed; log: %s", stopGrace, p.log)
	case p.proc.Err() != nil:
		return fmt.Errorf("ripple did not exit cleanly on SIGTERM (%s); log: %s", p.status(), p.log)
	}
	return nil
}

// readLog returns ripple's log so far; a read error reads as an empty log,
// which only delays whatever is waiting on it.
func (p *rippleProc) readLog() string {
	b, _ := os.ReadFile(p.log)
	return string(b)
}

// tail returns the last n lines of ripple's log.
func (p *rippleProc) tail(n int) string {
	log := strings.TrimRight(p.readLog(), "\n")
	if log == "" {
		return "(the log is empty)"
	}
	lines := strings.Split(log, "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// logLine returns the first line of ripple's log whose message is msg. The
// text encoder writes "time<TAB>LEVEL<TAB>message<TAB>{fields}".
func (p *rippleProc) logLine(msg string) (string, bool) {
	for _, line := range strings.Split(p.readLog(), "\n") {
		if fields := strings.SplitN(line, "\t", 4); len(fields) >= 3 && fields[2] == msg {
			return line, true
		}
	}
	return "", false
}

// checkBinary fails early, with a hint, when the ripple binary is missing.
func checkBinary(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	info, err := os.Stat(abs)
	if err != nil {
		return "", fmt.Errorf("the ripple binary: %w (run 'make build', or pass --ripple PATH)", err)
	}
	if info.IsDir() || info.Mode()&0o111 == 0 {
		return "", errors.New(abs + " is not an executable file")
	}
	return abs, nil
}
