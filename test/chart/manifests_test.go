package chart

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/ripple-dev/ripple/hack/helmchart"
)

// TestGeneratedFilesUpToDate fails when deploy/manifests/ripple.yaml or a
// generated Kustomize file differs from what the chart renders now.
func TestGeneratedFilesUpToDate(t *testing.T) {
	t.Parallel()
	root, err := helmchart.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	files, err := helmchart.GeneratedFiles()
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range files {
		got, err := os.ReadFile(filepath.Join(root, path))
		if err != nil {
			t.Errorf("%v: run 'make manifests'", err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale: run 'make manifests' and commit the result.\n%s", path, lineDiff(string(want), string(got)))
		}
	}
}

// TestPlainManifestsApply dry-runs deploy/manifests/ripple.yaml on the API
// server, as `kubectl apply --server-side -f` would, with no warning.
func TestPlainManifestsApply(t *testing.T) {
	t.Parallel()
	root, err := helmchart.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, helmchart.ManifestsFile))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := helmchart.Objects(b)
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(api.Config)
	// The dry run of the Namespace creates nothing, so create it (with the
	// labels it declares) for the objects in it.
	ns := find(objs, "Namespace")
	if len(ns) != 1 {
		t.Fatalf("the manifests hold %d Namespaces, want 1", len(ns))
	}
	ensureNamespace(t, cs, ns[0].GetName(), ns[0].GetLabels())
	w := &warnings{}
	rc := rest.CopyConfig(api.Config)
	rc.WarningHandler = w
	a := newApplier(t, rc)
	for _, o := range objs {
		if err := a.apply(t.Context(), o, true); err != nil {
			t.Error(err)
		}
	}
	if ws := w.all(); len(ws) > 0 {
		t.Errorf("warnings:\n%s", strings.Join(ws, "\n"))
	}
}

// TestKustomize builds the Kustomize base and overlays with the kustomize
// library helm itself is built with (pinned by hack/tools/helm) and checks
// that each equals the chart rendering it stands for: the base the default
// values, each overlay its OverlayValues.
func TestKustomize(t *testing.T) {
	t.Parallel()
	kustomize := kustomizeBinary(t)
	root, err := helmchart.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	namespace, err := helmchart.Objects([]byte(helmchart.NamespaceDoc))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		dir    string
		values map[string]any
	}{
		{"base", nil},
		{"overlays/namespaced", helmchart.OverlayValues["namespaced"]},
		{"overlays/ha", helmchart.OverlayValues["ha"]},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(kustomize, filepath.Join(root, "deploy", "kustomize", tc.dir))
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("kustomize build %s: %v\n%s", tc.dir, err, stderr.String())
			}
			got, err := helmchart.Objects(out)
			if err != nil {
				t.Fatal(err)
			}
			rel := helmchart.Release{Name: helmchart.ManifestsRelease, Namespace: helmchart.ManifestsNamespace}
			if tc.values != nil {
				rel.Values = []map[string]any{tc.values}
			}
			_, want := render(t, rel)
			want = append(want, namespace...)
			compareObjects(t, got, want)
		})
	}
}

// compareObjects reports objects missing, extra or different in got.
func compareObjects(t *testing.T, got, want []*unstructured.Unstructured) {
	t.Helper()
	key := func(o *unstructured.Unstructured) string {
		return o.GetKind() + " " + o.GetNamespace() + "/" + o.GetName()
	}
	index := func(objs []*unstructured.Unstructured) map[string]any {
		m := map[string]any{}
		for _, o := range objs {
			// Through JSON, so that numbers compare alike.
			b, _ := json.Marshal(o.Object)
			var v any
			_ = json.Unmarshal(b, &v)
			m[key(o)] = v
		}
		return m
	}
	g, w := index(got), index(want)
	var keys []string
	for k := range w {
		keys = append(keys, k)
	}
	for k := range g {
		if _, ok := w[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		switch gv, wv := g[k], w[k]; {
		case gv == nil:
			t.Errorf("%s: missing", k)
		case wv == nil:
			t.Errorf("%s: not in the chart's rendering", k)
		case !reflect.DeepEqual(gv, wv):
			gb, _ := json.MarshalIndent(gv, "", "  ")
			wb, _ := json.MarshalIndent(wv, "", "  ")
			t.Errorf("%s differs from the chart's rendering:\n%s", k, lineDiff(string(wb), string(gb)))
		}
	}
}

var (
	kustomizeOnce sync.Once
	kustomizePath string
	kustomizeErr  error
)

// kustomizeBinary builds a small kustomize (krusty) command from the
// modules hack/tools/helm pins, offline, once per test run.
func kustomizeBinary(t *testing.T) string {
	t.Helper()
	kustomizeOnce.Do(func() { kustomizePath, kustomizeErr = buildKustomize() })
	if kustomizeErr != nil {
		t.Fatalf("building kustomize from hack/tools/helm's modules (run 'make tools' first, which downloads them): %v", kustomizeErr)
	}
	return kustomizePath
}

func buildKustomize() (string, error) {
	root, err := helmchart.RepoRoot()
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "ripple-kustomize-")
	if err != nil {
		return "", err
	}
	tmpDirs = append(tmpDirs, dir)
	gomod, err := os.ReadFile(filepath.Join(root, "hack", "tools", "helm", "go.mod"))
	if err != nil {
		return "", err
	}
	gosum, err := os.ReadFile(filepath.Join(root, "hack", "tools", "helm", "go.sum"))
	if err != nil {
		return "", err
	}
	gomod = regexp.MustCompile(`(?m)^module .*$`).ReplaceAll(gomod, []byte("module ripplekustomize"))
	gomod = regexp.MustCompile(`(?m)^tool .*$`).ReplaceAll(gomod, nil)
	files := map[string][]byte{"go.mod": gomod, "go.sum": gosum, "main.go": []byte(kustomizeMain)}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return "", err
		}
	}
	bin := filepath.Join(dir, "kustomize")
	cmd := exec.Command("go", "build", "-trimpath", "-o", bin, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off", "GOPROXY=off", "GOTOOLCHAIN=local", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("%w\n%s", err, out)
	}
	return bin, nil
}

// tmpDirs are removed when the tests end.
var tmpDirs []string

const kustomizeMain = `package main

import (
	"fmt"
	"os"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

func main() {
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	out, err := m.AsYaml()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Stdout.Write(out)
}
`
