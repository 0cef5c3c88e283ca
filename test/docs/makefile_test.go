package docs

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// makefileVar returns the default the Makefile gives a `?=` variable.
func makefileVar(t *testing.T, name string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + name + `\s*\?=\s*(\S+)\s*$`).FindStringSubmatch(readDoc(t, "Makefile"))
	if m == nil {
		t.Fatalf("the Makefile sets no default for %s", name)
	}
	return m[1]
}

// goVersion parses "1.26.10" or "go1.26.10" into its numbers.
func goVersion(t *testing.T, v string) [3]int {
	t.Helper()
	m := regexp.MustCompile(`^(?:go)?(\d+)\.(\d+)(?:\.(\d+))?$`).FindStringSubmatch(v)
	if m == nil {
		t.Fatalf("%q is not a Go release", v)
	}
	var out [3]int
	for i := range 3 {
		out[i], _ = strconv.Atoi(m[i+1])
	}
	return out
}

// The Go that builds releases by default (RELEASE_GO) is at least the one
// docs/security.md tells users to build releases with: the standard
// library's vulnerabilities it lists are fixed in the image `make image`
// builds.
func TestReleaseGoIsWhatSecurityAdvises(t *testing.T) {
	def := makefileVar(t, "RELEASE_GO")
	m := regexp.MustCompile(`build releases with Go\s+(\d+\.\d+\.\d+) or newer`).FindStringSubmatch(readDoc(t, "docs/security.md"))
	if m == nil {
		t.Fatal(`docs/security.md no longer says "build releases with Go <version> or newer": update this check`)
	}
	got, advised := goVersion(t, def), goVersion(t, m[1])
	for i := range 3 {
		if got[i] != advised[i] {
			if got[i] < advised[i] {
				t.Errorf("the Makefile's RELEASE_GO ?= %s is older than the Go %s docs/security.md tells users to build releases with", def, m[1])
			}
			break
		}
	}
}

// dryRunTargets are the targets whose recipes use the Kubernetes tools'
// directory.
var dryRunTargets = []string{"demo", "test", "cluster-up", "manifests", "release", "bench", "chart-golden", "test-integration", "test-chart", "test-e2e", "test-kubelet"}

// `make -n` prints what a target would do and does nothing: with the
// tools' cache an empty directory, it builds nothing into it and returns
// at once. (A $(shell) in a recipe runs even under -n, and built the
// Kubernetes binaries for about 14 minutes.)
func TestMakeDryRunBuildsNothing(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Fatal("the docs check runs make -n: make is not on PATH")
	}
	for _, target := range dryRunTargets {
		t.Run(target, func(t *testing.T) {
			t.Parallel()
			tools := t.TempDir()
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, "make", "-n", target)
			cmd.Dir = root
			// Of its own, so that a build it starts is stopped with it.
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
			cmd.WaitDelay = 5 * time.Second
			cmd.Env = append(dropMakeEnv(os.Environ()), "RIPPLE_TOOLS_DIR="+tools)
			start := time.Now()
			out, err := cmd.CombinedOutput()
			took := time.Since(start)
			if err != nil {
				t.Fatalf("make -n %s: %v after %v\n%s", target, err, took.Round(time.Second), tail(string(out), 20))
			}
			if entries, _ := os.ReadDir(tools); len(entries) > 0 {
				var names []string
				for _, e := range entries {
					names = append(names, e.Name())
				}
				t.Errorf("make -n %s wrote %v into the tools directory: a dry run ran the tools build", target, names)
			}
			if took > 20*time.Second {
				t.Errorf("make -n %s took %v: a dry run should print at once", target, took.Round(time.Second))
			}
		})
	}
}

// dropMakeEnv removes what an enclosing make (make test-docs) passes to
// its children, so that the make under test reads only its arguments.
func dropMakeEnv(env []string) []string {
	var out []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES", "RIPPLE_TOOLS_DIR":
			continue
		}
		out = append(out, kv)
	}
	return out
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// The first build of the Kubernetes tools takes one time, wherever it is
// stated: the README, `make help` and hack/build-tools.sh's progress line.
func TestToolsBuildTimeAgrees(t *testing.T) {
	sources := []struct {
		file string
		re   *regexp.Regexp
	}{
		{"README.md", regexp.MustCompile(`(?s)The first run builds the Kubernetes control plane.*?takes about (\d+) minutes on 2 cores`)},
		{"Makefile", regexp.MustCompile(`(?m)^tools:.*## .*~(\d+) min the first time on 2 cores`)},
		{filepath.Join("hack", "build-tools.sh"), regexp.MustCompile(`the first build of all eight takes about (\d+) minutes on 2 cores`)},
	}
	said := map[string]string{}
	var first string
	for _, s := range sources {
		m := s.re.FindStringSubmatch(readDoc(t, s.file))
		if m == nil {
			t.Errorf("%s no longer states the tools' first build time as this check reads it (%s): update the check", s.file, s.re)
			continue
		}
		said[s.file] = m[1]
		if first == "" {
			first = m[1]
		}
	}
	for file, minutes := range said {
		if minutes != first {
			t.Errorf("the tools' first build takes %s minutes in %s but %s in README.md; say one time everywhere: %v", minutes, file, first, said)
		}
	}
}
