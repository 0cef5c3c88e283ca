package main

import (
	"os"
	"slices"
	"strings"
	"testing"
)

func TestSplitCommand(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"a b  c", []string{"a", "b", "c"}},
		{`reloader --x="a b" 'c d' e""`, []string{"reloader", "--x=a b", "c d", "e"}},
		{"\t{ripple}\n--flag ", []string{"{ripple}", "--flag"}},
		{`''`, []string{""}},
	} {
		got, err := splitCommand(tc.in)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("splitCommand(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "  ", `a "b`} {
		if _, err := splitCommand(bad); err == nil {
			t.Errorf("splitCommand(%q) succeeded", bad)
		}
	}
}

func TestExpandCommand(t *testing.T) {
	words, err := splitCommand(defaultControllerCmd)
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"ripple": "/bin/ripple", "kubeconfig": "/k", "metrics-addr": "127.0.0.1:1", "health-addr": "127.0.0.1:2"}
	got := expandCommand(words, vars, []string{"--settle-window=0", "--kube-api-qps=500"})
	want := []string{"/bin/ripple", "--kubeconfig=/k", "--metrics-bind-address=127.0.0.1:1", "--health-probe-bind-address=127.0.0.1:2",
		"--settle-window=0", "--kube-api-qps=500"}
	if !slices.Equal(got, want) {
		t.Errorf("expandCommand = %q, want %q", got, want)
	}
	// With the controller's defaults, {flags} disappears.
	if got := expandCommand(words, vars, nil); len(got) != 4 {
		t.Errorf("expandCommand without flags = %q", got)
	}
}

func TestCountErrorLines(t *testing.T) {
	log := strings.Join([]string{
		"2026-01-01T00:00:00Z\tINFO\treloaded\t{}",
		"2026-01-01T00:00:00Z\tERROR\tReconciler error\t{}",
		`{"level":"error","msg":"x"}`,
		`{"level":"info","msg":"an error happened"}`,
		`time="x" level=error msg="y"`,
		"E0101 00:00:00.000000 1 reflector.go:1] failed",
		"I0101 00:00:00.000000 1 reflector.go:1] fine",
	}, "\n")
	if got := countErrorLines(log); got != 4 {
		t.Errorf("countErrorLines = %d, want 4", got)
	}
}

func TestProcReaders(t *testing.T) {
	st, err := readStatus(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if st["VmRSS"] <= 0 || st["VmHWM"] < st["VmRSS"] {
		t.Errorf("VmRSS %v, VmHWM %v", st["VmRSS"], st["VmHWM"])
	}
	if got := readCPU(os.Getpid()); got < 0 {
		t.Errorf("readCPU = %v", got)
	}
	if tree := processTree(os.Getpid()); len(tree) == 0 || tree[0] != os.Getpid() {
		t.Errorf("processTree = %v", tree)
	}
}
