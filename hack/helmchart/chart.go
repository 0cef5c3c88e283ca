// Package helmchart renders Ripple's Helm chart (deploy/helm/ripple) with
// the helm binary that hack/build-tools.sh builds (found through
// $RIPPLE_TOOLS_DIR, as the control plane is), and derives from it the
// plain manifests and Kustomize files `make manifests` writes. The chart
// tests (test/chart, test/image) and hack/genmanifests share it; it lives
// under hack/ because hack/ programs import no test/ package.
package helmchart

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/ripple-dev/ripple/hack/cluster"
)

// KubeVersion is passed to helm as --kube-version: the version of the test
// control plane. (A helm built without Helm's release ldflags assumes
// Kubernetes v1.20, older than the chart's kubeVersion constraint.)
const KubeVersion = cluster.KubernetesVersion

// ModulePath is Ripple's Go module.
const ModulePath = "github.com/ripple-dev/ripple"

// RepoRoot finds the repository root: the nearest directory above the
// working directory whose go.mod declares Ripple's module.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.Contains(string(b), "module "+ModulePath+"\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod of " + ModulePath + " above the working directory")
		}
		dir = parent
	}
}

// Dir is deploy/helm/ripple.
func Dir() (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "deploy", "helm", "ripple"), nil
}

// HelmBinary returns the helm that hack/build-tools.sh builds: in
// $RIPPLE_TOOLS_DIR, else in the tools cache.
func HelmBinary() (string, error) {
	dir := os.Getenv("RIPPLE_TOOLS_DIR")
	if dir == "" {
		var err error
		if dir, err = cluster.ToolsDir(); err != nil {
			return "", fmt.Errorf("locating helm: %w", err)
		}
	}
	helm := filepath.Join(dir, "helm")
	if _, err := os.Stat(helm); err != nil {
		return "", fmt.Errorf("helm not found at %s: run 'make tools' (or point RIPPLE_TOOLS_DIR at the directory holding helm)", helm)
	}
	return helm, nil
}

// Helm runs helm with args in a private home (no repositories, no cache
// shared with the user) and returns its stdout; a failure carries stderr.
func Helm(args ...string) ([]byte, error) { return HelmEnv(nil, args...) }

// HelmEnv is Helm with extra environment variables, such as KUBECONFIG.
func HelmEnv(env []string, args ...string) ([]byte, error) {
	helm, err := HelmBinary()
	if err != nil {
		return nil, err
	}
	home, err := os.MkdirTemp("", "ripple-helm-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(home) }()
	cmd := exec.Command(helm, args...)
	cmd.Env = append(os.Environ(),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"),
	)
	cmd.Env = append(cmd.Env, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), fmt.Errorf("helm %s: %w\n%s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

// Release is one `helm template` of a chart.
type Release struct {
	Name, Namespace string
	// Chart defaults to deploy/helm/ripple.
	Chart string
	// ValuesFiles are passed first, then Values (each as a -f file, later
	// ones winning).
	ValuesFiles []string
	Values      []map[string]any
	// Args are extra helm template arguments.
	Args []string
}

// Template renders r.
func Template(r Release) ([]byte, error) {
	chart := r.Chart
	if chart == "" {
		var err error
		if chart, err = Dir(); err != nil {
			return nil, err
		}
	}
	args := []string{"template", r.Name, chart, "--namespace", r.Namespace, "--kube-version", KubeVersion}
	for _, f := range r.ValuesFiles {
		args = append(args, "-f", f)
	}
	var tmp []string
	defer func() {
		for _, f := range tmp {
			_ = os.Remove(f)
		}
	}()
	for _, v := range r.Values {
		f, err := os.CreateTemp("", "ripple-values-*.yaml")
		if err != nil {
			return nil, err
		}
		tmp = append(tmp, f.Name())
		// JSON is YAML.
		if err := json.NewEncoder(f).Encode(v); err != nil {
			_ = f.Close() // the encoding error is the one to report
			return nil, err
		}
		if err := f.Close(); err != nil {
			return nil, err
		}
		args = append(args, "-f", f.Name())
	}
	return Helm(append(args, r.Args...)...)
}

// Objects decodes a multi-document YAML stream, skipping empty documents.
func Objects(manifests []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(manifests), 4096)
	var out []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, err
		}
		if len(m) == 0 {
			continue
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
}

// Documents splits helm output into its documents (each without the
// leading "---" line), dropping empty ones.
func Documents(manifests []byte) []string {
	var out []string
	for _, doc := range strings.Split("\n"+string(manifests), "\n---\n") {
		if strings.TrimSpace(doc) != "" {
			out = append(out, strings.TrimLeft(doc, "\n"))
		}
	}
	return out
}

// The files `make manifests` writes, relative to the repository root, and
// what they hold.
const (
	ManifestsFile       = "deploy/manifests/ripple.yaml"
	KustomizeBaseFile   = "deploy/kustomize/base/ripple.yaml"
	KustomizeScopedFile = "deploy/kustomize/overlays/namespaced/rbac.yaml"
	KustomizeHAFile     = "deploy/kustomize/overlays/ha/ha.yaml"
)

// The release the plain manifests are rendered as.
const (
	ManifestsRelease   = "ripple"
	ManifestsNamespace = "ripple"
)

// OverlayValues are the chart values each Kustomize overlay reproduces.
var OverlayValues = map[string]map[string]any{
	"namespaced": {"reloader": map[string]any{"watchGlobally": false}},
	"ha": {"reloader": map[string]any{
		"enableHA":            true,
		"deployment":          map[string]any{"replicas": 2},
		"podDisruptionBudget": map[string]any{"enabled": true},
	}},
}

// GeneratedFiles renders every file `make manifests` writes, keyed by path
// relative to the repository root.
func GeneratedFiles() (map[string][]byte, error) {
	base, err := Template(Release{Name: ManifestsRelease, Namespace: ManifestsNamespace})
	if err != nil {
		return nil, err
	}
	manifests := append([]byte(header("deploy/helm/ripple with its default values: Ripple in global mode, in the namespace "+ManifestsNamespace,
		"kubectl apply --server-side -f "+ManifestsFile)+NamespaceDoc), base...)

	scoped, err := Template(Release{Name: ManifestsRelease, Namespace: ManifestsNamespace,
		Values: []map[string]any{OverlayValues["namespaced"]}, Args: []string{"--show-only", "templates/rbac.yaml"}})
	if err != nil {
		return nil, err
	}
	// The base holds the job-records and meta-info Roles already.
	scoped, err = selectDocuments(scoped, func(o *unstructured.Unstructured) bool {
		return !strings.HasSuffix(o.GetName(), "-job-records") && !strings.Contains(o.GetName(), "-metadata-role") &&
			!strings.HasSuffix(o.GetName(), "-meta-info-reader")
	})
	if err != nil {
		return nil, err
	}
	ha, err := Template(Release{Name: ManifestsRelease, Namespace: ManifestsNamespace,
		Values: []map[string]any{OverlayValues["ha"]}, Args: []string{"--show-only", "templates/rbac.yaml", "--show-only", "templates/poddisruptionbudget.yaml"}})
	if err != nil {
		return nil, err
	}
	haDocs, err := selectDocuments(ha, func(o *unstructured.Unstructured) bool {
		return strings.HasSuffix(o.GetName(), "-leader-election") || o.GetKind() == "PodDisruptionBudget"
	})
	if err != nil {
		return nil, err
	}
	return map[string][]byte{
		ManifestsFile:       manifests,
		KustomizeBaseFile:   manifests,
		KustomizeScopedFile: append([]byte(header("deploy/helm/ripple with reloader.watchGlobally=false: the namespaced Role", "")), scoped...),
		KustomizeHAFile:     append([]byte(header("deploy/helm/ripple with reloader.enableHA=true: the leader-election Role and the PodDisruptionBudget", "")), haDocs...),
	}, nil
}

// NamespaceDoc is the Namespace the plain manifests create first.
const NamespaceDoc = `---
apiVersion: v1
kind: Namespace
metadata:
  name: ` + ManifestsNamespace + `
  labels:
    # Ripple's pod meets the restricted Pod Security Standard.
    pod-security.kubernetes.io/enforce: restricted
    pod-security.kubernetes.io/warn: restricted
`

func header(what, usage string) string {
	h := "# Generated by `make manifests` (go run ./hack/genmanifests) from\n# " + what + ".\n# Do not edit: change the chart and regenerate; a test fails when this file is stale.\n"
	if usage != "" {
		h += "#\n#   " + usage + "\n"
	}
	return h
}

// selectDocuments keeps the documents of helm output whose object passes keep.
func selectDocuments(manifests []byte, keep func(*unstructured.Unstructured) bool) ([]byte, error) {
	var out bytes.Buffer
	for _, doc := range Documents(manifests) {
		objs, err := Objects([]byte(doc))
		if err != nil {
			return nil, err
		}
		if len(objs) == 1 && keep(objs[0]) {
			out.WriteString("---\n" + doc)
			if !strings.HasSuffix(doc, "\n") {
				out.WriteString("\n")
			}
		}
	}
	return out.Bytes(), nil
}
