package image

import (
	"archive/tar"
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"golang.org/x/mod/modfile"

	"github.com/ripple-dev/ripple/hack/helmchart"
)

// release is what the chart says the release is: the chart's version and
// appVersion (the image tag) and the image repository.
type release struct {
	chartVersion, version, repository string
}

func readRelease(t *testing.T) release {
	t.Helper()
	v, err := helmchart.ReadVersion()
	if err != nil {
		t.Fatal(err)
	}
	if v.App == "" || v.Repository == "" {
		t.Fatalf("the chart names no release: appVersion %q, image.repository %q", v.App, v.Repository)
	}
	return release{chartVersion: v.Chart, version: v.App, repository: v.Repository}
}

// git runs git in the repository and returns its trimmed output.
func git(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %s: %v", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out))
}

// commitTime is SOURCE_DATE_EPOCH as the Makefile takes it: from the
// environment, else the commit's time.
func commitTime(t *testing.T) time.Time {
	t.Helper()
	epoch := os.Getenv("SOURCE_DATE_EPOCH")
	if epoch == "" {
		epoch = git(t, "log", "-1", "--format=%ct")
	}
	n, err := strconv.ParseInt(epoch, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return time.Unix(n, 0).UTC()
}

// imageIndex opens the OCI layout of a `make image` output: the layout's
// index.json holds one entry, the multi-arch image index.
func imageIndex(t *testing.T, dir string) (v1.ImageIndex, v1.Descriptor) {
	t.Helper()
	top, err := layout.ImageIndexFromPath(filepath.Join(dir, "oci"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != 1 {
		t.Fatalf("the OCI layout holds %d entries, want one image index", len(m.Manifests))
	}
	idx, err := top.ImageIndex(m.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	return idx, m.Manifests[0]
}

// platformImages returns the index's images by "os/arch".
func platformImages(t *testing.T, idx v1.ImageIndex) map[string]v1.Image {
	t.Helper()
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]v1.Image{}
	for _, d := range m.Manifests {
		if d.Platform == nil {
			t.Fatalf("index entry %s has no platform", d.Digest)
		}
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		out[d.Platform.OS+"/"+d.Platform.Architecture] = img
	}
	return out
}

// imageFile is one entry of an image's flattened filesystem.
type imageFile struct {
	hdr  *tar.Header
	data []byte
}

// filesystem flattens the image's layers as a runtime would.
func filesystem(t *testing.T, img v1.Image) map[string]imageFile {
	t.Helper()
	rc := mutate.Extract(img)
	// Only read: a Close error loses nothing.
	defer func() { _ = rc.Close() }()
	tr := tar.NewReader(rc)
	out := map[string]imageFile{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out["/"+strings.Trim(h.Name, "/")] = imageFile{hdr: h, data: b}
	}
}

// extractBinary writes the image's /ripple to a temporary executable file.
func extractBinary(t *testing.T, img v1.Image) string {
	t.Helper()
	f, ok := filesystem(t, img)["/ripple"]
	if !ok {
		t.Fatal("the image has no /ripple")
	}
	path := filepath.Join(t.TempDir(), "ripple")
	if err := os.WriteFile(path, f.data, 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// The label and module that name where the image's CA certificates come
// from, as hack/release writes them.
const (
	caRootsLabel  = "dev.ripple.image.ca-roots"
	caRootsModule = "golang.org/x/crypto/x509roots/fallback"
)

// caRootsVersion is the version of the CA certificates' module that
// hack/tools/caroots/go.mod pins.
func caRootsVersion(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "hack", "tools", "caroots", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := modfile.ParseLax("go.mod", b, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range f.Require {
		if r.Mod.Path == caRootsModule {
			return r.Mod.Version
		}
	}
	t.Fatalf("hack/tools/caroots/go.mod does not require %s", caRootsModule)
	return ""
}

// caBundle is the CA bundle hack/tools/caroots writes, checked to be PEM
// certificates only, over a hundred of them, each of which parses.
func caBundle(t *testing.T) []byte {
	t.Helper()
	cmd := exec.Command("go", "-C", filepath.Join(root, "hack", "tools", "caroots"), "run", ".")
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("hack/tools/caroots: %v", err)
	}
	n := 0
	for rest := b; len(bytes.TrimSpace(rest)) > 0; n++ {
		var block *pem.Block
		if block, rest = pem.Decode(rest); block == nil || block.Type != "CERTIFICATE" {
			t.Fatalf("hack/tools/caroots wrote something other than PEM certificates after %d", n)
		}
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			t.Fatalf("certificate %d from hack/tools/caroots: %v", n+1, err)
		}
	}
	if n < 100 {
		t.Fatalf("hack/tools/caroots wrote %d certificates, want over 100", n)
	}
	return b
}

// releaseGo is the Go release the Makefile builds the image's binaries
// with (RELEASE_GO).
func releaseGo(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^RELEASE_GO\s*\?=\s*(\S+)\s*$`).FindSubmatch(b)
	if m == nil {
		t.Fatal("the Makefile sets no RELEASE_GO")
	}
	return string(m[1])
}
