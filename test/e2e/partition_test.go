package e2e

import (
	"net"
	"path/filepath"
	"sync"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
)

// partitionMode is how a cut partitionProxy behaves towards its clients.
type partitionMode int

const (
	// resetPartition closes every connection at the cut and every new one
	// at once: the client sees its connections reset and refused, as when
	// a firewall rejects or a NAT between it and the API server restarts.
	resetPartition partitionMode = iota
	// silentPartition drops nothing and answers nothing: open connections
	// stall, new ones are accepted but reach the API server only once
	// the partition heals, as TCP carries a short partition (its
	// retransmissions get through afterwards).
	silentPartition
)

// partitionProxy is a TCP proxy on 127.0.0.1 between one client (Ripple)
// and the API server, which the test cuts and heals: a network partition
// of that client alone. TLS passes through it untouched (the API server's
// certificate names 127.0.0.1, whatever the port).
type partitionProxy struct {
	ln       net.Listener
	upstream string
	mode     partitionMode

	mu    sync.Mutex
	cut   bool
	open  chan struct{} // closed while the partition is healed
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// startPartitionProxy proxies to upstream (host:port) until the test ends.
func startPartitionProxy(t *testing.T, upstream string, mode partitionMode) *partitionProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &partitionProxy{ln: ln, upstream: upstream, mode: mode, open: make(chan struct{}), conns: map[net.Conn]struct{}{}}
	close(p.open)
	p.wg.Go(p.accept)
	t.Cleanup(func() {
		_ = ln.Close()
		p.mu.Lock()
		p.closeAll()
		if p.cut { // a silent partition's held copies wait on open
			close(p.open)
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	return p
}

// Addr is where the proxy listens.
func (p *partitionProxy) Addr() string { return p.ln.Addr().String() }

// Cut starts the partition.
func (p *partitionProxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	p.open = make(chan struct{})
	if p.mode == resetPartition {
		p.closeAll()
	}
}

// Heal ends the partition: held bytes and connections go through.
func (p *partitionProxy) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = false
	close(p.open)
}

func (p *partitionProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // closed at the end of the test
		}
		p.wg.Go(func() { p.serve(c) })
	}
}

// serve connects c to the API server once the partition allows it and
// copies both ways.
func (p *partitionProxy) serve(c net.Conn) {
	if !p.track(c) {
		_ = c.Close()
		return
	}
	p.wait()
	up, err := net.Dial("tcp", p.upstream)
	if err != nil || !p.track(up) {
		_ = c.Close()
		return
	}
	var wg sync.WaitGroup
	wg.Go(func() { p.copy(up, c) })
	wg.Go(func() { p.copy(c, up) })
	wg.Wait()
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, up)
	p.mu.Unlock()
}

// track adds c to the connections a reset closes; false (and nothing
// tracked) while a reset partition is cut.
func (p *partitionProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut && p.mode == resetPartition {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

// wait returns once the partition is healed (at once when it is).
func (p *partitionProxy) wait() {
	p.mu.Lock()
	open := p.open
	p.mu.Unlock()
	<-open
}

// copy copies from src to dst, holding each chunk while a silent
// partition is cut, and closes both ends when either fails.
func (p *partitionProxy) copy(dst, src net.Conn) {
	defer func() { _ = dst.Close(); _ = src.Close() }()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.wait()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return // EOF, a reset or a closed end: the other side learns it from the close
		}
	}
}

// closeAll closes every connection; p.mu is held.
func (p *partitionProxy) closeAll() {
	for c := range p.conns {
		_ = c.Close()
	}
	clear(p.conns)
}

// kubeconfigThrough writes a copy of kubeconfig whose clusters are reached
// through addr and returns its path.
func kubeconfigThrough(t *testing.T, kubeconfig, addr string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cfg.Clusters {
		c.Server = "https://" + addr
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}
