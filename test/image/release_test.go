package image

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/elf"
	"debug/macho"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/ripple-dev/ripple/hack/helmchart"
	"github.com/ripple-dev/ripple/hack/kit"
)

// releaseFiles are the files `make release` writes.
func releaseFiles(rel release) []string {
	files := []string{
		"ripple-" + rel.version + ".oci.tar",
		"ripple-" + rel.version + ".sbom.cdx.json",
		"ripple-" + rel.version + ".yaml",
		"ripple-" + rel.chartVersion + ".tgz",
		"kubectl-ripple.krew.yaml",
		"sha256sums.txt",
	}
	for _, p := range pluginPlatforms {
		files = append(files, pluginArchive(rel, p))
	}
	slices.Sort(files)
	return files
}

var pluginPlatforms = []string{"darwin/amd64", "darwin/arm64", "linux/amd64", "linux/arm64"}

func pluginArchive(rel release, platform string) string {
	return "kubectl-ripple_" + rel.version + "_" + strings.ReplaceAll(platform, "/", "_") + ".tar.gz"
}

// TestReleaseFiles: bin/release holds exactly the release, the image
// archive and SBOM are the ones `make image` built, the manifests are the
// committed ones, and sha256sums.txt verifies every file.
func TestReleaseFiles(t *testing.T) {
	t.Parallel()
	rel := readRelease(t)
	des, err := os.ReadDir(releaseDir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, de := range des {
		got = append(got, de.Name())
	}
	if want := releaseFiles(rel); !slices.Equal(got, want) {
		t.Errorf("release files:\n%v\nwant:\n%v", got, want)
	}
	for file, same := range map[string]string{
		"ripple-" + rel.version + ".oci.tar":       filepath.Join(imageDirs[0], "ripple.oci.tar"),
		"ripple-" + rel.version + ".sbom.cdx.json": filepath.Join(imageDirs[0], "sbom.cdx.json"),
		"ripple-" + rel.version + ".yaml":          filepath.Join(root, helmchart.ManifestsFile),
	} {
		a, errA := os.ReadFile(filepath.Join(releaseDir, file))
		b, errB := os.ReadFile(same)
		if errA != nil || errB != nil || !bytes.Equal(a, b) {
			t.Errorf("%s differs from %s (%v, %v)", file, same, errA, errB)
		}
	}

	// sha256sum -c, by hand: every other file, each once, each right.
	sums, err := os.ReadFile(filepath.Join(releaseDir, "sha256sums.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, line := range strings.Split(strings.TrimSuffix(string(sums), "\n"), "\n") {
		sum, name, ok := strings.Cut(line, "  ")
		if !ok {
			t.Fatalf("sha256sums.txt line %q is not sha256sum's format", line)
		}
		listed = append(listed, name)
		if got := fileSHA256(t, filepath.Join(releaseDir, name)); got != sum {
			t.Errorf("sha256sums.txt: %s has %s, the file %s", name, sum, got)
		}
	}
	slices.Sort(listed)
	if want := slices.DeleteFunc(releaseFiles(rel), func(f string) bool { return f == "sha256sums.txt" }); !slices.Equal(listed, want) {
		t.Errorf("sha256sums.txt lists %v, want %v", listed, want)
	}
}

// TestKrewManifest: the krew manifest is a Plugin of the release with one
// platform per kubectl-ripple archive and the archive's checksum; each
// archive holds the executable kubectl-ripple for its platform, and the
// linux/amd64 one runs as the release.
func TestKrewManifest(t *testing.T) {
	t.Parallel()
	rel := readRelease(t)
	b, err := os.ReadFile(filepath.Join(releaseDir, "kubectl-ripple.krew.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name string `json:"name"`
		} `json:"metadata"`
		Spec struct {
			Version          string `json:"version"`
			Homepage         string `json:"homepage"`
			ShortDescription string `json:"shortDescription"`
			Description      string `json:"description"`
			Platforms        []struct {
				Selector struct {
					MatchLabels map[string]string `json:"matchLabels"`
				} `json:"selector"`
				URI    string `json:"uri"`
				SHA256 string `json:"sha256"`
				Bin    string `json:"bin"`
			} `json:"platforms"`
		} `json:"spec"`
	}
	if err := yaml.UnmarshalStrict(b, &m); err != nil {
		t.Fatalf("the krew manifest: %v\n%s", err, b)
	}
	if m.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" || m.Kind != "Plugin" || m.Metadata.Name != "ripple" ||
		m.Spec.Version != rel.version || m.Spec.Homepage == "" || m.Spec.ShortDescription == "" || m.Spec.Description == "" {
		t.Errorf("not the krew Plugin ripple %s:\n%s", rel.version, b)
	}
	var plats []string
	for _, p := range m.Spec.Platforms {
		plat := p.Selector.MatchLabels["os"] + "/" + p.Selector.MatchLabels["arch"]
		plats = append(plats, plat)
		archive := pluginArchive(rel, plat)
		if want := "https://github.com/ripple-dev/ripple/releases/download/" + rel.version + "/" + archive; p.URI != want {
			t.Errorf("%s: uri %s, want %s", plat, p.URI, want)
		}
		if got := fileSHA256(t, filepath.Join(releaseDir, archive)); p.SHA256 != got {
			t.Errorf("%s: sha256 %s, the archive's %s", plat, p.SHA256, got)
		}
		if p.Bin != "kubectl-ripple" {
			t.Errorf("%s: bin %q, want kubectl-ripple", plat, p.Bin)
		}
		checkPluginArchive(t, rel, filepath.Join(releaseDir, archive), plat)
	}
	slices.Sort(plats)
	if !slices.Equal(plats, pluginPlatforms) {
		t.Errorf("krew platforms %v, want %v", plats, pluginPlatforms)
	}
}

// checkPluginArchive: the archive holds only kubectl-ripple, executable,
// built for plat; on this machine's platform it runs.
func checkPluginArchive(t *testing.T, rel release, path, plat string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	// Only read: a Close error loses nothing.
	defer func() { _ = f.Close() }()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	var names []string
	var bin []byte
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		if h.Name == "kubectl-ripple" {
			if h.Mode&0o111 == 0 {
				t.Errorf("%s: kubectl-ripple is not executable (mode %o)", plat, h.Mode)
			}
			if bin, err = io.ReadAll(tr); err != nil {
				t.Fatal(err)
			}
		}
	}
	if !slices.Equal(names, []string{"kubectl-ripple"}) {
		t.Fatalf("%s: the archive holds %v, want [kubectl-ripple]", plat, names)
	}
	var machine string
	switch {
	case strings.HasPrefix(plat, "linux/"):
		e, err := elf.NewFile(bytes.NewReader(bin))
		if err != nil {
			t.Fatalf("%s: not ELF: %v", plat, err)
		}
		machine = map[elf.Machine]string{elf.EM_X86_64: "amd64", elf.EM_AARCH64: "arm64"}[e.Machine]
	case strings.HasPrefix(plat, "darwin/"):
		mf, err := macho.NewFile(bytes.NewReader(bin))
		if err != nil {
			t.Fatalf("%s: not Mach-O: %v", plat, err)
		}
		machine = map[macho.Cpu]string{macho.CpuAmd64: "amd64", macho.CpuArm64: "arm64"}[mf.Cpu]
	}
	if !strings.HasSuffix(plat, "/"+machine) {
		t.Errorf("%s: kubectl-ripple is built for %q", plat, machine)
	}
	if plat == "linux/amd64" {
		exe := filepath.Join(t.TempDir(), "kubectl-ripple")
		if err := os.WriteFile(exe, bin, 0o755); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(exe, "version").CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != "ripple "+rel.version {
			t.Errorf("kubectl-ripple version: %q (%v), want \"ripple %s\"", out, err, rel.version)
		}
	}
}

// TestPackagedChart: the packaged chart carries the chart's version and
// the release as appVersion, renders exactly what the source tree renders,
// and `helm install` of it on the local cluster runs the release's image.
func TestPackagedChart(t *testing.T) {
	t.Parallel()
	rel := readRelease(t)
	pkg := filepath.Join(releaseDir, "ripple-"+rel.chartVersion+".tgz")
	out, err := helmchart.Helm("show", "chart", pkg)
	if err != nil {
		t.Fatal(err)
	}
	var meta struct {
		Name       string `json:"name"`
		Version    string `json:"version"`
		AppVersion string `json:"appVersion"`
	}
	if err := yaml.Unmarshal(out, &meta); err != nil {
		t.Fatal(err)
	}
	if meta.Name != "ripple" || meta.Version != rel.chartVersion || meta.AppVersion != rel.version {
		t.Errorf("packaged chart %s %s appVersion %s, want ripple %s appVersion %s", meta.Name, meta.Version, meta.AppVersion, rel.chartVersion, rel.version)
	}

	fromPkg, err := helmchart.Template(helmchart.Release{Name: "ripple", Namespace: "ripple", Chart: pkg})
	if err != nil {
		t.Fatal(err)
	}
	fromTree, err := helmchart.Template(helmchart.Release{Name: "ripple", Namespace: "ripple"})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(fromPkg, fromTree) {
		t.Errorf("helm template of the package differs from the source tree's (%d and %d bytes)", len(fromPkg), len(fromTree))
	}

	cs := kubernetes.NewForConfigOrDie(kc.Config)
	ns := kit.NewNamespace(t, cs, "image-", nil)
	env := []string{"KUBECONFIG=" + kc.Kubeconfig}
	if out, err := helmchart.HelmEnv(env, "install", "ripple", pkg, "--namespace", ns); err != nil {
		t.Fatalf("helm install: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		if out, err := helmchart.HelmEnv(env, "uninstall", "ripple", "--namespace", ns, "--wait"); err != nil {
			t.Errorf("helm uninstall: %v\n%s", err, out)
		}
	})
	d, err := cs.AppsV1().Deployments(ns).Get(t.Context(), "ripple", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := rel.repository + ":" + rel.version
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name == "ripple" && c.Image != want {
			t.Errorf("helm install runs image %q, want %q", c.Image, want)
		}
	}
	if n := len(d.Spec.Template.Spec.Containers); n != 1 {
		t.Errorf("the Deployment has %d containers, want 1", n)
	}
}

func fileSHA256(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
