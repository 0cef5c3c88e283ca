package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/ripple-dev/ripple/hack/kit"
)

// ripple is the Ripple process under soak: started, killed with SIGKILL
// and started again; every run logs to the same file.
type ripple struct {
	bin, kubeconfig, metricsAddr string
	flags                        []string
	log                          *os.File

	mu   sync.Mutex
	proc *kit.Process
	run  int // the current run, from 1
}

func newRipple(bin, kubeconfig, logPath string, flags []string) (*ripple, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0") // a free port for /metrics, kept across runs
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	return &ripple{bin: bin, kubeconfig: kubeconfig, metricsAddr: addr, log: f, flags: flags}, nil
}

// start starts a new run.
func (r *ripple) start() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.run++
	if _, err := fmt.Fprintf(r.log, "=== soak: ripple run %d at %s\n", r.run, time.Now().UTC().Format(time.RFC3339Nano)); err != nil {
		return err
	}
	args := append([]string{"--kubeconfig=" + r.kubeconfig, "--metrics-bind-address=" + r.metricsAddr, "--health-probe-bind-address=0"}, r.flags...)
	cmd := exec.Command(r.bin, args...)
	cmd.Stdout, cmd.Stderr = r.log, r.log
	p, err := kit.StartProcess(cmd, nil)
	if err != nil {
		return fmt.Errorf("starting Ripple: %w", err)
	}
	r.proc = p
	return nil
}

// kill ends the current run with SIGKILL: no graceful shutdown.
func (r *ripple) kill() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.proc != nil {
		r.proc.Kill()
		r.proc = nil
	}
}

// exited reports a run that ended by itself (a crash), with its error.
func (r *ripple) exited() (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.proc != nil && r.proc.Exited() {
		return true, r.proc.Err()
	}
	return false, nil
}

// stop ends the current run with SIGTERM and closes the log.
func (r *ripple) stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.proc != nil {
		r.proc.Stop(30 * time.Second)
		r.proc = nil
	}
	_ = r.log.Close()
}

func (r *ripple) currentRun() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.run
}

// memSample is one scrape of Ripple's /metrics.
type memSample struct {
	At                   time.Time
	Run                  int
	Live, RSS, Goroutine float64 // go_gc_heap_live_bytes, process_resident_memory_bytes, go_goroutines
}

// sample scrapes /metrics every interval until ctx ends; a run that is
// down (killed, starting) gives no sample.
func (r *ripple) sample(ctx context.Context, interval time.Duration, out chan<- memSample) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		run := r.currentRun()
		m, err := scrape(ctx, r.metricsAddr)
		if err != nil || run != r.currentRun() {
			continue
		}
		out <- memSample{At: time.Now(), Run: run, Live: m["go_gc_heap_live_bytes"], RSS: m["process_resident_memory_bytes"], Goroutine: m["go_goroutines"]}
	}
}

// scrape reads the unlabelled gauges of /metrics at addr.
func scrape(ctx context.Context, addr string) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for name, f := range families {
		for _, m := range f.GetMetric() {
			if len(m.GetLabel()) == 0 && m.Gauge != nil {
				out[name] = m.GetGauge().GetValue()
			}
		}
	}
	return out, nil
}
