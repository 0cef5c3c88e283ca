package main

import (
	"bytes"
	"strings"
	"testing"
)

// `history` exits 2 on a bad argument, naming it, 1 when the cluster
// cannot be read, and 0 with its help; as kubectl-ripple it names itself
// `kubectl ripple history`.
func TestHistoryExitCodes(t *testing.T) {
	tests := map[string]struct {
		prog string
		args []string
		code int
		want string
	}{
		"no workload":    {"ripple", nil, 2, "ripple history: name a workload as <kind>/<name>"},
		"unknown kind":   {"ripple", []string{"pod/web"}, 2, `argument "pod/web": unknown workload kind "pod"`},
		"no revisions":   {"ripple", []string{"cronjob/nightly"}, 2, `argument "cronjob/nightly": a CronJob keeps no revisions`},
		"bad output":     {"ripple", []string{"deploy/web", "-o", "yaml"}, 2, `--output: "yaml" is not a format; use table, json`},
		"unknown flag":   {"ripple", []string{"deploy/web", "--all"}, 2, "unknown flag: --all"},
		"two workloads":  {"ripple", []string{"deploy/web", "sts/db"}, 2, `ripple history: arguments "deploy/web sts/db": 2 workloads; name one workload per run`},
		"kind and name":  {"ripple", []string{"deploy", "web", "--kubeconfig=/nonexistent/kubeconfig"}, 1, "ripple history: --kubeconfig /nonexistent/kubeconfig: no such file"},
		"bad setting":    {"ripple", []string{"deploy/web", "--reload-policy=later"}, 2, `ripple history: --reload-policy: "later" is not a reload policy`},
		"no kubeconfig":  {"ripple", []string{"deploy/web"}, 1, "ripple history: no kubeconfig: $KUBECONFIG is /nonexistent, and no such file exists; give --kubeconfig <file>"},
		"plugin name":    {"kubectl-ripple", []string{"ds"}, 2, "kubectl ripple history: "},
		"no cluster":     {"ripple", []string{"deploy/web", "--server=https://127.0.0.1:1", "--request-timeout=5s"}, 1, "ripple history: "},
		"help":           {"ripple", []string{"--help"}, 0, ""},
		"help of plugin": {"kubectl-ripple", []string{"-h"}, 0, ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Setenv("KUBECONFIG", "/nonexistent")
			var stdout, stderr bytes.Buffer
			code := run(t.Context(), tc.prog, append([]string{"history"}, tc.args...), &stdout, &stderr)
			if code != tc.code {
				t.Fatalf("exit code %d, want %d; stderr: %s", code, tc.code, stderr.String())
			}
			if !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("stderr %q does not contain %q", stderr.String(), tc.want)
			}
			if tc.code == 0 && !strings.Contains(stdout.String(), "history <kind>/<name>") {
				t.Errorf("help lacks the usage line:\n%s", stdout.String())
			}
		})
	}
}

func TestCommandsListHistory(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run(t.Context(), "ripple", []string{"help"}, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "ripple history <kind>/<name>") {
		t.Errorf("exit %d; help:\n%s", code, stdout.String())
	}
}
