package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// defaultControllerCmd runs Ripple with the benchmark's flags. {flags} is
// replaced by the scenario's own flags (settle window, client QPS).
const defaultControllerCmd = "{ripple} --kubeconfig={kubeconfig} --metrics-bind-address={metrics-addr} --health-probe-bind-address={health-addr} {flags}"

// splitCommand splits a command line into words on blanks; single and
// double quotes group words, as in a shell, without any other expansion.
func splitCommand(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	var quote rune
	for _, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t' || r == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated %c quote in %q", quote, s)
	}
	if inWord {
		words = append(words, cur.String())
	}
	if len(words) == 0 {
		return nil, errors.New("empty controller command")
	}
	return words, nil
}

// expandCommand substitutes the placeholders of a controller command
// template; a word that is exactly {flags} becomes the scenario's flags.
func expandCommand(words []string, vars map[string]string, flags []string) []string {
	var out []string
	for _, w := range words {
		if w == "{flags}" {
			out = append(out, flags...)
			continue
		}
		for k, v := range vars {
			w = strings.ReplaceAll(w, "{"+k+"}", v)
		}
		out = append(out, w)
	}
	return out
}

// freeAddr returns a loopback address with a port that was free a moment
// ago; the controller binds it right after.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := ln.Addr().String()
	return addr, ln.Close()
}

// memSample is one reading of the controller's memory.
type memSample struct {
	at   time.Time
	rss  float64 // bytes, the process and its children
	heap float64 // go_memstats_heap_inuse_bytes; 0 when not exposed
	// live is go_gc_heap_live_bytes: the heap the last GC found
	// reachable, the truest measure of what the controller keeps.
	live float64
}

// controllerProc is the benchmarked controller running as a child process.
type controllerProc struct {
	cmd     *exec.Cmd
	args    []string
	log     string
	started time.Time
	done    chan struct{}
	err     error // exit status; read after done is closed

	metricsURL string // "" when the command has no {metrics-addr}
	readyURL   string // "" when the command has no {health-addr}

	mu      sync.Mutex
	samples []memSample
	stopped chan struct{} // ends sampling

	stopOnce sync.Once
	stopErr  error
}

// startController runs the command template with a fresh metrics and health
// address, logging to logPath, and samples its memory until it stops.
func startController(ctx context.Context, words []string, vars map[string]string, flags []string, logPath string) (*controllerProc, error) {
	metricsAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	healthAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	v := map[string]string{"metrics-addr": metricsAddr, "health-addr": healthAddr}
	for k, val := range vars {
		v[k] = val
	}
	args := expandCommand(words, v, flags)
	joined := strings.Join(words, " ")
	p := &controllerProc{args: args, log: logPath, done: make(chan struct{}), stopped: make(chan struct{})}
	if strings.Contains(joined, "{metrics-addr}") {
		p.metricsURL = "http://" + metricsAddr + "/metrics"
	}
	if strings.Contains(joined, "{health-addr}") {
		p.readyURL = "http://" + healthAddr + "/readyz"
	}
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	// The child writes through its own descriptor and this one is never
	// written to, so closing it cannot lose log lines.
	defer func() { _ = logFile.Close() }()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+vars["kubeconfig"])
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{
		// Its own process group: a terminal Ctrl-C reaches only the
		// benchmark, which then stops the controller in order, and a
		// wrapper script's children can be signalled together.
		Setpgid: true,
		// If the benchmark is killed hard, the controller goes too.
		Pdeathsig: syscall.SIGKILL,
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", args[0], err)
	}
	p.cmd, p.started = cmd, time.Now()
	go func() { p.err = cmd.Wait(); close(p.done) }()
	go p.sample(ctx)
	return p, nil
}

// sample reads RSS every 100 ms from /proc and the Go heap every 500 ms from
// the metrics endpoint; the peak RSS is also read from the kernel's
// high-water mark, so no spike between samples is missed.
func (p *controllerProc) sample(ctx context.Context) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var heap, live float64
	for n := 0; ; n++ {
		select {
		case <-p.stopped:
			return
		case <-p.done:
			return
		case <-tick.C:
		}
		if n%5 == 0 && p.metricsURL != "" {
			if m, err := p.scrape(ctx, heapSeries...); err == nil {
				heap, _ = m.value("go_memstats_heap_inuse_bytes")
				live, _ = m.value("go_gc_heap_live_bytes")
			}
		}
		rss := 0.0
		for _, pid := range processTree(p.cmd.Process.Pid) {
			if st, err := readStatus(pid); err == nil {
				rss += st["VmRSS"]
			}
		}
		p.mu.Lock()
		p.samples = append(p.samples, memSample{at: time.Now(), rss: rss, heap: heap, live: live})
		p.mu.Unlock()
	}
}

// heapSeries are the series the sampler reads. It asks for them alone
// (the exposition's name[] filter, which a server without it ignores):
// the whole page twice a second cost the controller about a tenth of its
// CPU during a fan-out, encoding and compressing series nobody read, on
// the cores the API server needs, and the fan-out's floor pays nothing
// like it.
var heapSeries = []string{"go_memstats_heap_inuse_bytes", "go_gc_heap_live_bytes"}

// scrape reads the controller's metrics: the series named, or all.
func (p *controllerProc) scrape(ctx context.Context, names ...string) (metrics, error) {
	b, err := p.scrapeRaw(ctx, names...)
	if err != nil {
		return nil, err
	}
	return parseMetrics(bytes.NewReader(b))
}

// scrapeRaw returns the controller's metrics page: the series named, or
// all.
func (p *controllerProc) scrapeRaw(ctx context.Context, names ...string) ([]byte, error) {
	if p.metricsURL == "" {
		return nil, errors.New("the controller command has no {metrics-addr}")
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	target := p.metricsURL
	if len(names) > 0 {
		target += "?" + url.Values{"name[]": names}.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	// Closing a response body only releases the connection; what was read
	// is complete or io.ReadAll has said otherwise.
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", p.metricsURL, resp.Status)
	}
	return io.ReadAll(resp.Body)
}

// waitReady waits until the controller says it is ready (its /readyz, or
// failing that its /metrics, answers 200) and returns when that was first
// seen. It polls every 10 ms, which bounds the error of the start-up time.
func (p *controllerProc) waitReady(ctx context.Context, timeout time.Duration) (time.Time, error) {
	probe := p.readyURL
	if probe == "" {
		probe = p.metricsURL
	}
	if probe == "" {
		return time.Now(), nil
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client := &http.Client{Timeout: time.Second}
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if err := p.exited(); err != nil {
			return time.Time{}, err
		}
		if resp, err := client.Get(probe); err == nil {
			_ = resp.Body.Close() // only the status matters
			if resp.StatusCode == http.StatusOK {
				return time.Now(), nil
			}
		}
		select {
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("the controller was not ready (%s) within %s; log: %s", probe, timeout, p.log)
		case <-tick.C:
		}
	}
}

// exited returns an error if the controller is no longer running.
func (p *controllerProc) exited() error {
	select {
	case <-p.done:
		return fmt.Errorf("the controller exited (%w); the end of its log (%s):\n%s", p.err, p.log, tailFile(p.log, 15))
	default:
		return nil
	}
}

// cpuSeconds returns the CPU time the controller (and its children) used.
func (p *controllerProc) cpuSeconds() float64 {
	total := 0.0
	for _, pid := range processTree(p.cmd.Process.Pid) {
		total += readCPU(pid)
	}
	return total
}

// peakRSS returns the kernel's RSS high-water mark of the controller, or
// the largest sample when that is larger (a wrapper's children).
func (p *controllerProc) peakRSS() float64 {
	peak := 0.0
	if st, err := readStatus(p.cmd.Process.Pid); err == nil {
		peak = st["VmHWM"]
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range p.samples {
		peak = max(peak, s.rss)
	}
	return peak
}

// writeMemoryCSV writes every memory sample, in seconds since the
// controller started, so where a peak happened can be looked up.
func (p *controllerProc) writeMemoryCSV(path string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var b strings.Builder
	b.WriteString("seconds,rss_bytes,heap_inuse_bytes,heap_live_bytes\n")
	for _, s := range p.samples {
		fmt.Fprintf(&b, "%.2f,%.0f,%.0f,%.0f\n", s.at.Sub(p.started).Seconds(), s.rss, s.heap, s.live)
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// memSince returns the samples taken at or after t.
func (p *controllerProc) memSince(t time.Time) []memSample {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []memSample
	for _, s := range p.samples {
		if !s.at.Before(t) {
			out = append(out, s)
		}
	}
	return out
}

// stop sends SIGTERM to the controller's process group and SIGKILL if it
// has not exited within grace. It reports a controller that had already
// died, since its numbers would then mean nothing.
func (p *controllerProc) stop(grace time.Duration) error {
	// A scenario may stop the controller itself (to restart it); the
	// cleanup that runs afterwards must then be a no-op.
	p.stopOnce.Do(func() { p.stopErr = p.terminate(grace) })
	return p.stopErr
}

func (p *controllerProc) terminate(grace time.Duration) error {
	close(p.stopped)
	select {
	case <-p.done:
		return fmt.Errorf("the controller had exited before the end of the scenario (%w); log: %s", p.err, p.log)
	default:
	}
	pgid := p.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(grace):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-p.done
		return fmt.Errorf("the controller did not stop within %s of SIGTERM and was killed; log: %s", grace, p.log)
	}
}

// errorLines counts the error-level lines of the controller's log, in the
// formats of zap (text and JSON), logrus and klog.
func (p *controllerProc) errorLines() int {
	b, err := os.ReadFile(p.log)
	if err != nil {
		return 0
	}
	return countErrorLines(string(b))
}

func countErrorLines(log string) int {
	re := regexp.MustCompile(`(?m)(\tERROR\t|"level":"error"|level=error|^E\d{4} )`)
	return len(re.FindAllStringIndex(log, -1))
}

// readStatus returns the kB fields of /proc/<pid>/status, in bytes.
func readStatus(pid int) (map[string]float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 2 && f[1] == "kB" {
			if n, err := strconv.ParseFloat(f[0], 64); err == nil {
				out[k] = n * 1024
			}
		}
	}
	return out, nil
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's CPU times; it is
// 100 on every Linux architecture Go supports.
const clockTicks = 100

// readCPU returns the user and system CPU seconds of a process.
func readCPU(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	// The command name may hold spaces; the fields after its ')' are fixed:
	// state is the first, utime the 12th and stime the 13th.
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / clockTicks
}

// processTree returns root and its live descendants, from the kernel's
// per-thread children lists: cheap enough to read ten times a second, unlike
// a scan of all of /proc.
func processTree(root int) []int {
	out := []int{root}
	for i := 0; i < len(out); i++ {
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", out[i]))
		for _, t := range tasks {
			b, err := os.ReadFile(t)
			if err != nil {
				continue
			}
			for _, f := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil && !slices.Contains(out, pid) {
					out = append(out, pid)
				}
			}
		}
	}
	return out
}

// tailFile returns the last n lines of a file.
func tailFile(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
