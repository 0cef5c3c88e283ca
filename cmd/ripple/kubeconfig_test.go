package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Without a cluster to connect to, explain and history say which
// kubeconfig they looked for and how to give one, instead of client-go's
// "no configuration has been provided, try setting KUBERNETES_MASTER".
func TestMissingKubeconfigIsNamed(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte("apiVersion: v1\nkind: Config\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing")
	for _, tc := range []struct {
		name, env string
		args      []string
		want      string
	}{
		{"$KUBECONFIG names no file", missing, nil, "no kubeconfig: $KUBECONFIG is " + missing + ", and no such file exists; give --kubeconfig <file>, or set $KUBECONFIG to an existing file"},
		{"--kubeconfig names no file", empty, []string{"--kubeconfig=" + missing}, "--kubeconfig " + missing + ": no such file"},
		{"no current context", empty, nil, "the kubeconfig " + empty + " names no cluster to connect to (no current context): choose one with --context, or give --kubeconfig"},
	} {
		for _, command := range []string{"explain", "history"} {
			t.Run(tc.name+"/"+command, func(t *testing.T) {
				t.Setenv("KUBECONFIG", tc.env)
				var stdout, stderr bytes.Buffer
				code := run(t.Context(), "ripple", append([]string{command, "deploy/web"}, tc.args...), &stdout, &stderr)
				if want := "ripple " + command + ": " + tc.want + "\n"; code != 1 || stderr.String() != want {
					t.Errorf("exit %d, stderr %q; want 1 and %q", code, stderr.String(), want)
				}
				if strings.Contains(stderr.String(), "KUBERNETES_MASTER") {
					t.Errorf("stderr %q names client-go's variable", stderr.String())
				}
			})
		}
	}
}
