package chart

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/mod/semver"

	"github.com/ripple-dev/ripple/hack/helmchart"
)

// releaseImage reads the release version (the chart's appVersion, the one
// place it is written) and the default image repository from the chart.
func releaseImage(t *testing.T) (repository, version string) {
	t.Helper()
	v, err := helmchart.ReadVersion()
	if err != nil {
		t.Fatal(err)
	}
	if !semver.IsValid(v.App) || semver.Canonical(v.App) != v.App {
		t.Fatalf("Chart.yaml appVersion %q is not a release version vMAJOR.MINOR.PATCH", v.App)
	}
	if !semver.IsValid("v" + v.Chart) {
		t.Fatalf("Chart.yaml version %q is not semver", v.Chart)
	}
	// An empty tag means the appVersion; anything else is a second place
	// the version is written, and must agree.
	if tag := v.Tag; tag != "" && tag != v.App {
		t.Errorf("values.yaml image.tag %v disagrees with Chart.yaml appVersion %s; leave it empty", tag, v.App)
	}
	if v.Repository == "" {
		t.Fatal("values.yaml has no image.repository")
	}
	return v.Repository, v.App
}

// TestReleaseVersionAgrees: the chart, the plain manifests, Kustomize, the
// Makefile's image and release targets, the krew manifest and the
// changelog all name the release the chart's appVersion names.
func TestReleaseVersionAgrees(t *testing.T) {
	t.Parallel()
	root, err := helmchart.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	repo, version := releaseImage(t)
	want := repo + ":" + version

	_, objs := render(t, helmchart.Release{Name: relName, Namespace: relNS, Args: []string{"--show-only", "templates/deployment.yaml"}})
	if _, c := rippleDeployment(t, objs); c.Image != want {
		t.Errorf("the chart installs %q by default, want %q", c.Image, want)
	}
	for _, f := range []string{helmchart.ManifestsFile, helmchart.KustomizeBaseFile} {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		objs, err := helmchart.Objects(b)
		if err != nil {
			t.Fatal(err)
		}
		if _, c := rippleDeployment(t, objs); c.Image != want {
			t.Errorf("%s installs %q, want %q: run 'make manifests'", f, c.Image, want)
		}
	}

	// What `make image` and `make release` would run, expanded by make.
	for _, target := range []string{"image", "release"} {
		cmd := exec.Command("make", "-n", "--no-print-directory", target, "IMAGE=")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "MAKEFLAGS=")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("make -n %s: %v", target, err)
		}
		if !strings.Contains(string(out), "--version "+version+" ") {
			t.Errorf("make %s does not build version %s:\n%s", target, version, out)
		}
		if target == "image" && !strings.Contains(string(out), "--repository "+repo+" ") {
			t.Errorf("make image does not name the image %s:\n%s", repo, out)
		}
	}

	krew, err := os.ReadFile(filepath.Join(root, "deploy", "krew", "ripple.yaml.tmpl"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^  version: \{\{ \.Version \}\}$`).Match(krew) {
		t.Error("the krew manifest template must take spec.version from the release ({{ .Version }})")
	}
	changelog, err := os.ReadFile(filepath.Join(root, "CHANGELOG.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(changelog), "\n## ["+strings.TrimPrefix(version, "v")+"]") {
		t.Errorf("CHANGELOG.md has no section for %s", version)
	}
}

// TestImage: the image values keep Reloader's meaning (repository and tag,
// or global.imageRegistry with name, a digest winning over the tag), except
// that Reloader's own image is replaced by Ripple's.
func TestImage(t *testing.T) {
	repo, version := releaseImage(t)
	ripple := repo + ":" + version
	digest := "sha256:" + strings.Repeat("0f", 32)
	for _, tc := range []struct {
		name     string
		reloader bool
		values   map[string]any
		want     string
	}{
		{"chart defaults", false, nil, ripple},
		{"Reloader's values", true, nil, ripple},
		{"Reloader's values with a registry", true, map[string]any{"global": map[string]any{"imageRegistry": "registry.example.com/"}}, "registry.example.com/ripple-dev/ripple:" + version},
		{"Reloader's digest is dropped with its image", true, map[string]any{"image": map[string]any{"digest": digest}}, ripple},
		{"a mirror and a tag", true, map[string]any{"image": map[string]any{"repository": "mirror.example.com/ripple", "tag": "v0.2.0"}}, "mirror.example.com/ripple:v0.2.0"},
		{"a numeric tag", false, map[string]any{"image": map[string]any{"tag": 1.2}}, repo + ":1.2"},
		{"a digest", false, map[string]any{"image": map[string]any{"digest": digest}}, repo + "@" + digest},
		{"a registry and a name", false, map[string]any{"global": map[string]any{"imageRegistry": "registry.example.com"}, "image": map[string]any{"name": "team/ripple", "tag": "v1"}}, "registry.example.com/team/ripple:v1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rel := helmchart.Release{Name: relName, Namespace: relNS, Args: []string{"--show-only", "templates/deployment.yaml"}}
			if tc.reloader {
				rel.ValuesFiles = []string{reloaderValues()}
			}
			if tc.values != nil {
				rel.Values = []map[string]any{tc.values}
			}
			_, objs := render(t, rel)
			if _, c := rippleDeployment(t, objs); c.Image != tc.want {
				t.Errorf("image %q, want %q", c.Image, tc.want)
			}
		})
	}
}
