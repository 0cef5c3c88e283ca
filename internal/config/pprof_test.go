package config

import (
	"net"
	"strings"
	"testing"
)

// pprof answers only on the loopback interface unless --pprof-addr opens
// it wider, and never shares the metrics or health port.
func TestPprofAddr(t *testing.T) {
	cfg, err := parse(t, nil, "--enable-pprof")
	if err != nil {
		t.Fatal(err)
	}
	host, _, err := net.SplitHostPort(cfg.PprofAddr)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		t.Errorf("--enable-pprof: pprof on %q, want a loopback address", cfg.PprofAddr)
	}
	if cfg, err := parse(t, nil, "--enable-pprof", "--pprof-addr=:6060"); err != nil || cfg.PprofAddr != ":6060" {
		t.Errorf("--pprof-addr=:6060: pprof on %q, error %v; want every interface", cfg.PprofAddr, err)
	}
	if cfg, err := parse(t, nil); err != nil || cfg.PprofAddr != "" {
		t.Errorf("without --enable-pprof: pprof on %q, error %v; want none", cfg.PprofAddr, err)
	}
	for _, args := range [][]string{
		{"--pprof-addr=127.0.0.1:9090"},
		{"--pprof-addr=:9090"},
		{"--pprof-addr="},
		{"--health-probe-bind-address=:8081", "--pprof-addr=127.0.0.1:8081"},
	} {
		if _, err := parse(t, nil, append([]string{"--enable-pprof"}, args...)...); err == nil || !strings.Contains(err.Error(), "--pprof-addr") {
			t.Errorf("--enable-pprof %v: error %v, want one naming --pprof-addr", args, err)
		}
	}
}
