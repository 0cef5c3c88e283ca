package kit

import (
	"os/exec"
	"syscall"
	"time"
)

// Process is a child process that dies with the process that started it,
// even one killed hard, and is stopped the way Kubernetes stops a
// container: SIGTERM, then SIGKILL after a grace period.
type Process struct {
	cmd  *exec.Cmd
	done chan struct{} // closed once the process has exited and been reaped
	err  error         // cmd.Wait's result; read only after done is closed
}

// StartProcess starts cmd, adding to its SysProcAttr the death signal that
// ties it to this process. onExit, if not nil, is called with the exit
// status before Done is closed.
func StartProcess(cmd *exec.Cmd, onExit func(error)) (*Process, error) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &Process{cmd: cmd, done: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		if onExit != nil {
			onExit(err)
		}
		p.err = err
		close(p.done)
	}()
	return p, nil
}

// Pid is the process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Done is closed once the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exited reports whether the process has exited.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Err is how the process exited (nil for status 0); call it after Done.
func (p *Process) Err() error { return p.err }

// Stop sends SIGTERM and waits up to grace for the process to exit, then
// kills it; killed reports that it had to. Stopping an exited process does
// nothing.
func (p *Process) Stop(grace time.Duration) (killed bool) {
	if p.Exited() {
		return false
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return false
	case <-time.After(grace):
		p.Kill()
		return true
	}
}

// Kill ends the process with SIGKILL, as a node failure or an OOM kill
// would, and waits until it has been reaped.
func (p *Process) Kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}
