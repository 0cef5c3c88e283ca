package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ripple-dev/ripple/internal/explain"
)

// update rewrites the golden files of `explain -f` and `plan` instead of
// comparing with them: go test ./cmd/ripple -run 'TestExplainFiles|TestPlan' -update.
var update = flag.Bool("update", false, "rewrite testdata/*/golden from the current output")

// fixedNow is the clock of the golden reports.
func fixedNow() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }

// explainFiles runs `ripple explain` with args and stdin, offline.
func explainFiles(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = runExplain(t.Context(), "ripple", args, strings.NewReader(stdin), &out, &errb, fixedNow)
	return out.String(), errb.String(), code
}

// compareGolden compares got with testdata/explain/golden/<name>, or
// writes it with -update.
func compareGolden(t *testing.T, name, got string) {
	t.Helper()
	compareGoldenIn(t, "explain", name, got)
}

// compareGoldenIn compares got with testdata/<command>/golden/<name>, or
// writes it with -update.
func compareGoldenIn(t *testing.T, command, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", command, "golden", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o600); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(filepath.Clean(path))
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (rerun with -update and review the diff); got:\n%s", path, got)
	}
}

func TestExplainFilesGolden(t *testing.T) {
	const findings, clean = "testdata/explain/findings", "testdata/explain/clean"
	tests := []struct {
		golden string
		args   []string
		// code is the exit code; stderr what it says then.
		code   int
		stderr string
	}{
		// Every lint finding: errors fail the run, for CI.
		{"findings.txt", []string{"-f", findings, "-n", "shop"}, 1, "ripple explain: 4 findings are errors\n"},
		{"findings.json", []string{"-f", findings, "-n", "shop", "-o", "json"}, 1, "ripple explain: 4 findings are errors\n"},
		{"findings-web.txt", []string{"-f", findings + "/workloads.yaml", "-f", findings + "/configs.yaml", "deployment/web", "-n", "shop"}, 1, "ripple explain: 2 findings are errors\n"},
		// Only warnings on this one: exit 0.
		{"findings-db.yaml", []string{"-f", findings, "sts", "db", "-n", "shop", "-o", "yaml"}, 0, ""},
		// A clean, realistic set: auto, a named reload with a pattern,
		// search and match.
		{"clean.txt", []string{"--filename", clean, "--all"}, 0, ""},
		{"clean-web.txt", []string{"-f", clean, "deploy/web", "-n", "shop"}, 0, ""},
		{"clean-proxy.json", []string{"-f", clean, "statefulset/proxy", "-n", "edge", "-o", "json"}, 0, ""},
		// The Namespace in the files is matched by the selector; edge,
		// not in the files, counts as selected.
		{"clean-unselected.txt", []string{"-f", clean, "--namespace-selector=team=payments"}, 0, ""},
		// Argo Rollouts, read unstructured: one takes its template from a
		// Deployment in the files. Without --is-Argo-Rollouts, ignored.
		{"rollout.txt", []string{"-f", "testdata/explain/rollout", "--is-Argo-Rollouts"}, 0, ""},
		{"rollout-canary.txt", []string{"-f", "testdata/explain/rollout", "--is-Argo-Rollouts", "ro/canary", "-n", "shop"}, 0, ""},
		{"rollout-ignored.txt", []string{"-f", "testdata/explain/rollout"}, 0, ""},
		// Declared kinds (presets): a CloneSet by its template, an
		// ExternalSecret by its named reload; found by kind or resource
		// name. Not declared, their annotations have no effect.
		{"declared.txt", []string{"-f", "testdata/explain/declared", "--workload-kinds-preset=kruise,external-secrets"}, 0, ""},
		{"declared-creds.txt", []string{"-f", "testdata/explain/declared", "--workload-kinds-preset=kruise,external-secrets", "externalsecrets/creds", "-n", "shop"}, 0, ""},
		{"declared-ignored.txt", []string{"-f", "testdata/explain/declared"}, 0, ""},
		// The GitOps settings for the workloads in the files.
		{"gitops-argocd.yaml", []string{"-f", clean, "--gitops", "argocd"}, 0, ""},
		{"gitops-flux.yaml", []string{"-f", clean, "--gitops=flux"}, 0, ""},
		{"gitops-argocd-web.yaml", []string{"-f", clean, "deploy/web", "-n", "shop", "--gitops", "argocd", "--reload-strategy=annotations"}, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			stdout, stderr, code := explainFiles(t, "", tt.args...)
			if code != tt.code || stderr != tt.stderr {
				t.Errorf("exit code %d, stderr %q; want %d, %q", code, stderr, tt.code, tt.stderr)
			}
			compareGolden(t, tt.golden, stdout)
		})
	}
}

// TestExplainFilesChart explains the Helm chart's rendered test manifests:
// Ripple's own objects carry no reload annotation, so nothing is listed,
// nothing is found, and Ripple's Deployment is not opted in. The same
// manifests through stdin give the same report.
func TestExplainFilesChart(t *testing.T) {
	files, err := filepath.Glob("../../test/chart/testdata/golden/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no chart golden files (%v)", err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".yaml")
		t.Run(name, func(t *testing.T) {
			stdout, stderr, code := explainFiles(t, "", "-f", file)
			if code != 0 || stderr != "" || stdout != "NAMESPACE  KIND  NAME  STATE  SOURCES  REASON\n" {
				t.Errorf("list: exit code %d, stderr %q, stdout:\n%s", code, stderr, stdout)
			}
			report, stderr, code := explainFiles(t, "", "-f", file, "deployment/ripple", "-n", "ripple-system")
			if code != 0 || stderr != "" {
				t.Errorf("report: exit code %d, stderr %q", code, stderr)
			}
			compareGolden(t, "chart-"+name+".txt", report)
			raw, err := os.ReadFile(filepath.Clean(file))
			if err != nil {
				t.Fatal(err)
			}
			piped, stderr, code := explainFiles(t, string(raw), "-f", "-", "deployment/ripple", "-n", "ripple-system")
			if code != 0 || stderr != "" || piped != report {
				t.Errorf("through stdin: exit code %d, stderr %q, report:\n%s\nwant the report from the file", code, stderr, piped)
			}
		})
	}
}

func TestExplainFilesErrors(t *testing.T) {
	tests := map[string]struct {
		args   []string
		code   int
		stderr string
	}{
		"workload not in the files": {[]string{"-f", "testdata/explain/clean", "deployment/nope", "-n", "shop"}, 1, "Deployment shop/nope is not in the files"},
		"path that does not exist":  {[]string{"-f", "testdata/explain/nothing-here"}, 1, "nothing-here: no such file or directory"},
		"ripple-namespace":          {[]string{"-f", "testdata/explain/clean", "--ripple-namespace=ops"}, 2, "--ripple-namespace: not with -f"},
		"bad setting":               {[]string{"-f", "testdata/explain/clean", "--reload-strategy=rolling"}, 2, "--reload-strategy"},
		"pending":                   {[]string{"-f", "testdata/explain/clean", "--pending"}, 2, "--pending: not with -f"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, stderr, code := explainFiles(t, "", tc.args...)
			if code != tc.code || !strings.Contains(stderr, tc.stderr) {
				t.Errorf("exit code %d, stderr %q; want %d and %q", code, stderr, tc.code, tc.stderr)
			}
		})
	}
}

// -f reads no kubeconfig: a broken one changes nothing.
func TestExplainFilesReadsNoKubeconfig(t *testing.T) {
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "missing", "config"))
	t.Setenv("HOME", t.TempDir())
	stdout, stderr, code := explainFiles(t, "", "-f", "testdata/explain/clean", "--kubeconfig=/nonexistent/kubeconfig", "--context=nope")
	if code != 0 || stderr != "" || !strings.Contains(stdout, "web") {
		t.Errorf("exit code %d, stderr %q, stdout:\n%s", code, stderr, stdout)
	}
}

func TestExplainHelpSaysOffline(t *testing.T) {
	stdout, _, code := explainFiles(t, "", "--help")
	for _, want := range []string{"explain -f <file|dir|->", "no cluster is contacted", "-f, --filename stringArray", "exit code is 1", "secret/<name> [-n namespace] [-f <file|dir|->]", "With -f, its digest"} {
		if code != 0 || !strings.Contains(stdout, want) {
			t.Errorf("--help (exit %d) does not say %q:\n%s", code, want, stdout)
		}
	}
}

// A config argument with -f explains the config across the workloads of
// the files that use it, offline, in both of kubectl's forms and from
// stdin; one that is not in the files is named.
func TestExplainFilesConfig(t *testing.T) {
	api, err := os.ReadFile("testdata/explain/clean/api.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		stdin string
		args  []string
		// kind, name and users are what the report must say.
		kind, name string
		users      []string
	}{
		"configmap":        {"", []string{"-f", "testdata/explain/clean", "configmap/app-config", "-n", "shop"}, "ConfigMap", "app-config", []string{"web"}},
		"secret, two args": {"", []string{"-f", "testdata/explain/clean", "secret", "db-creds", "-n", "shop"}, "Secret", "db-creds", []string{"web"}},
		"cm from stdin":    {string(api), []string{"-f", "-", "cm/flags-blue", "-n", "shop"}, "ConfigMap", "flags-blue", []string{"api"}},
		"search, no match": {"", []string{"-f", "testdata/explain/clean", "configmap/proxy-static", "-n", "edge"}, "ConfigMap", "proxy-static", []string{"proxy"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			stdout, stderr, code := explainFiles(t, tc.stdin, append(tc.args, "-o", "json")...)
			if code != 0 || stderr != "" {
				t.Fatalf("exit code %d, stderr %q", code, stderr)
			}
			var got explain.Change
			if err := json.Unmarshal([]byte(stdout), &got); err != nil {
				t.Fatalf("%v:\n%s", err, stdout)
			}
			var users []string
			for _, w := range got.Workloads {
				users = append(users, w.Name)
			}
			if got.Kind != tc.kind || got.Name != tc.name || got.Digest == "" || !slices.Equal(users, tc.users) {
				t.Errorf("got %s %s/%s (digest %q) used by %v; want %s %s used by %v", got.Kind, got.Namespace, got.Name, got.Digest, users, tc.kind, tc.name, tc.users)
			}
			table, stderr, code := explainFiles(t, tc.stdin, tc.args...)
			if code != 0 || stderr != "" || !strings.Contains(table, tc.kind+" "+got.Namespace+"/"+tc.name) {
				t.Errorf("table: exit code %d, stderr %q, stdout:\n%s", code, stderr, table)
			}
		})
	}
	_, stderr, code := explainFiles(t, "", "-f", "testdata/explain/clean", "secret/nope", "-n", "shop")
	if code != 1 || !strings.Contains(stderr, "Secret shop/nope is not in the files") {
		t.Errorf("a config not in the files: exit code %d, stderr %q", code, stderr)
	}
}
