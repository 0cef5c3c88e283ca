package image

import (
	"bytes"
	"debug/elf"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// maxCompressedSize bounds what a node pulls for one platform.
const maxCompressedSize = 40 << 20

// The image's whole filesystem: the binary, the nonroot user, the CA
// certificates of a pinned Go module with its license, a home and /tmp.
// Nothing else, so no shell and no other program can be in it.
var wantFiles = map[string]int64{ // path: mode
	"/etc":                                   0o755,
	"/etc/group":                             0o644,
	"/etc/passwd":                            0o644,
	"/etc/ssl":                               0o755,
	"/etc/ssl/certs":                         0o755,
	"/etc/ssl/certs/ca-certificates.crt":     0o644,
	"/home":                                  0o755,
	"/home/nonroot":                          0o700,
	"/ripple":                                0o755,
	"/tmp":                                   0o1777,
	"/usr":                                   0o755,
	"/usr/share":                             0o755,
	"/usr/share/doc":                         0o755,
	"/usr/share/doc/ca-certificates":         0o755,
	"/usr/share/doc/ca-certificates/LICENSE": 0o644,
}

// The machines each image's binary must be built for.
var wantMachines = map[string]elf.Machine{
	"linux/amd64": elf.EM_X86_64,
	"linux/arm64": elf.EM_AARCH64,
}

// TestImageConfig: one image per platform, each run as 65532:65532 with
// /ripple as entrypoint, labelled with the release, under 40 MiB
// compressed, and holding exactly the expected files: a static binary for
// its platform, the nonroot user, the CA certificates, no shell.
func TestImageConfig(t *testing.T) {
	t.Parallel()
	rel := readRelease(t)
	idx, desc := imageIndex(t, imageDirs[0])
	if ref := desc.Annotations["org.opencontainers.image.ref.name"]; ref != rel.repository+":"+rel.version {
		t.Errorf("the OCI layout names the image %q, want %s:%s", ref, rel.repository, rel.version)
	}
	if mt, err := idx.MediaType(); err != nil || mt != types.OCIImageIndex {
		t.Errorf("index media type %q (%v), want %s", mt, err, types.OCIImageIndex)
	}
	images := platformImages(t, idx)
	if got := slices.Sorted(maps.Keys(images)); !slices.Equal(got, []string{"linux/amd64", "linux/arm64"}) {
		t.Fatalf("platforms %v, want linux/amd64 and linux/arm64", got)
	}
	wantLabels := map[string]string{
		"org.opencontainers.image.source":   "https://github.com/ripple-dev/ripple",
		"org.opencontainers.image.version":  rel.version,
		"org.opencontainers.image.revision": git(t, "rev-parse", "HEAD"),
		"org.opencontainers.image.created":  commitTime(t).Format(time.RFC3339),
		"org.opencontainers.image.licenses": "Apache-2.0",
		caRootsLabel:                        caRootsModule + "@" + caRootsVersion(t),
	}
	wantCA := caBundle(t)
	for plat, img := range images {
		t.Run(plat, func(t *testing.T) {
			cf, err := img.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			if got := cf.OS + "/" + cf.Architecture; got != plat {
				t.Errorf("config platform %s in the index entry for %s", got, plat)
			}
			if cf.Config.User != "65532:65532" {
				t.Errorf("user %q, want 65532:65532", cf.Config.User)
			}
			if !slices.Equal(cf.Config.Entrypoint, []string{"/ripple"}) || len(cf.Config.Cmd) != 0 {
				t.Errorf("entrypoint %q cmd %q, want [/ripple] and no cmd", cf.Config.Entrypoint, cf.Config.Cmd)
			}
			if _, ok := cf.Config.ExposedPorts["9090/tcp"]; !ok {
				t.Errorf("exposed ports %v lack 9090/tcp", cf.Config.ExposedPorts)
			}
			for k, v := range wantLabels {
				if cf.Config.Labels[k] != v {
					t.Errorf("label %s=%q, want %q", k, cf.Config.Labels[k], v)
				}
			}
			if !cf.Created.Equal(commitTime(t)) {
				t.Errorf("created %s, want the commit time %s", cf.Created.Time, commitTime(t))
			}

			m, err := img.Manifest()
			if err != nil {
				t.Fatal(err)
			}
			size := m.Config.Size
			for _, l := range m.Layers {
				size += l.Size
				if l.MediaType != types.OCILayer {
					t.Errorf("layer media type %s, want %s", l.MediaType, types.OCILayer)
				}
			}
			t.Logf("%s: %d layers, %.1f MiB compressed", plat, len(m.Layers), float64(size)/(1<<20))
			if size >= maxCompressedSize {
				t.Errorf("compressed size %d bytes, want under 40 MiB", size)
			}

			fs := filesystem(t, img)
			for name, f := range fs {
				want, ok := wantFiles[name]
				if !ok {
					t.Errorf("unexpected %s in the image", name)
					continue
				}
				if f.hdr.Mode != want {
					t.Errorf("%s has mode %o, want %o", name, f.hdr.Mode, want)
				}
				if base := path.Base(name); slices.Contains([]string{"sh", "bash", "ash", "dash", "busybox"}, base) {
					t.Errorf("a shell in the image: %s", name)
				}
			}
			for name := range wantFiles {
				if _, ok := fs[name]; !ok {
					t.Errorf("the image lacks %s", name)
				}
			}
			if h := fs["/home/nonroot"].hdr; h == nil || h.Uid != 65532 || h.Gid != 65532 {
				t.Error("/home/nonroot is not owned by 65532:65532")
			}
			if !strings.Contains(string(fs["/etc/passwd"].data), "\nnonroot:x:65532:65532:nonroot:/home/nonroot:") ||
				!strings.Contains(string(fs["/etc/group"].data), "\nnonroot:x:65532:\n") {
				t.Errorf("no nonroot 65532 in /etc/passwd and /etc/group:\n%s%s", fs["/etc/passwd"].data, fs["/etc/group"].data)
			}
			if ca := fs["/etc/ssl/certs/ca-certificates.crt"].data; !bytes.Equal(ca, wantCA) {
				t.Errorf("the CA bundle (%d bytes) is not the one hack/tools/caroots writes (%d bytes)", len(ca), len(wantCA))
			}
			if lic := fs["/usr/share/doc/ca-certificates/LICENSE"].data; !bytes.Contains(lic, []byte("Copyright 2009 The Go Authors")) {
				t.Errorf("/usr/share/doc/ca-certificates/LICENSE is not %s's license:\n%s", caRootsModule, lic)
			}

			bin, err := elf.NewFile(bytes.NewReader(fs["/ripple"].data))
			if err != nil {
				t.Fatalf("/ripple is not an ELF binary: %v", err)
			}
			if bin.Machine != wantMachines[plat] {
				t.Errorf("/ripple is built for %s, want %s", bin.Machine, wantMachines[plat])
			}
			for _, p := range bin.Progs {
				if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
					t.Error("/ripple is dynamically linked: the image has no libc")
				}
			}
		})
	}
}

// TestDigestStable: builds of the same commit, under another umask, time
// zone and GOFLAGS too, give the same image index, byte for byte the same
// archive, and the same SBOM.
func TestDigestStable(t *testing.T) {
	t.Parallel()
	var digests [2]string
	for i, dir := range imageDirs {
		idx, _ := imageIndex(t, dir)
		d, err := idx.Digest()
		if err != nil {
			t.Fatal(err)
		}
		digests[i] = d.String()
	}
	if digests[0] != digests[1] {
		t.Errorf("two builds of one commit: index digests %s and %s", digests[0], digests[1])
	}
	t.Logf("index digest %s", digests[0])
	loaded, _ := imageIndex(t, loadDir)
	if d, err := loaded.Digest(); err != nil || d.String() != digests[0] {
		t.Errorf("make image-load built index %s (%v), make release %s", d, err, digests[0])
	}
	for _, f := range []string{"ripple.oci.tar", "sbom.cdx.json"} {
		a, err := os.ReadFile(filepath.Join(imageDirs[0], f))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(imageDirs[1], f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("two builds of one commit give different %s", f)
		}
	}
}

// TestPush: `make image IMAGE=<registry>/ripple` pushed the whole index,
// both platforms, as <registry>/ripple:<version>, with the digest built.
func TestPush(t *testing.T) {
	t.Parallel()
	rel := readRelease(t)
	ref, err := name.ParseReference(pushed+":"+rel.version, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	remoteIdx, err := remote.Index(ref)
	if err != nil {
		t.Fatalf("the pushed image: %v", err)
	}
	localIdx, _ := imageIndex(t, imageDirs[1])
	got, err := remoteIdx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	want, err := localIdx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("pushed index %s, built %s", got, want)
	}
	if plats := slices.Sorted(maps.Keys(platformImages(t, remoteIdx))); !slices.Equal(plats, []string{"linux/amd64", "linux/arm64"}) {
		t.Errorf("pushed platforms %v", plats)
	}
}

// TestSBOM: the SBOM shipped beside the image is CycloneDX and lists every
// module `go version -m` reports for each of the image's binaries (and
// bin/ripple), at the version linked.
func TestSBOM(t *testing.T) {
	t.Parallel()
	rel := readRelease(t)
	f, err := os.Open(filepath.Join(imageDirs[0], "sbom.cdx.json"))
	if err != nil {
		t.Fatal(err)
	}
	// Only read: a Close error loses nothing.
	defer func() { _ = f.Close() }()
	var bom cdx.BOM
	if err := cdx.NewBOMDecoder(f, cdx.BOMFileFormatJSON).Decode(&bom); err != nil {
		t.Fatalf("decoding the SBOM: %v", err)
	}
	if bom.Metadata == nil || bom.Metadata.Component == nil || bom.Metadata.Component.Name != "ripple" || bom.Metadata.Component.Version != rel.version {
		t.Fatalf("the SBOM does not describe ripple %s: %+v", rel.version, bom.Metadata)
	}
	have := map[string]bool{}
	if bom.Components != nil {
		for _, c := range *bom.Components {
			have[c.Name+"@"+c.Version] = true
		}
	}
	binaries := map[string]string{}
	idx, _ := imageIndex(t, imageDirs[0])
	for plat, img := range platformImages(t, idx) {
		binaries[plat] = extractBinary(t, img)
	}
	// `make test-image` also names the bin/ripple `make build` made: the
	// same sources, so the same modules.
	if bin := os.Getenv("RIPPLE_BINARY"); bin != "" {
		binaries[bin] = bin
	}
	for plat, bin := range binaries {
		out, err := exec.Command("go", "version", "-m", bin).Output()
		if err != nil {
			t.Fatalf("go version -m: %v", err)
		}
		mods := 0
		for _, line := range strings.Split(string(out), "\n") {
			fields := strings.Fields(line)
			// "dep path version [sum]", and "=> path version sum" for
			// the replacement actually linked.
			if len(fields) < 3 || (fields[0] != "dep" && fields[0] != "=>") {
				continue
			}
			mods++
			if !have[fields[1]+"@"+fields[2]] {
				t.Errorf("%s: the SBOM lacks %s %s", plat, fields[1], fields[2])
			}
		}
		if mods < 10 {
			t.Fatalf("%s: go version -m listed %d modules:\n%s", plat, mods, out)
		}
		// bin/ripple is built with the local go, the image's binaries
		// with the Go release the Makefile pins.
		goVersion := strings.Fields(string(out))[1]
		if plat != bin && !have["stdlib@"+goVersion] {
			t.Errorf("%s: the SBOM lacks the standard library %s", plat, goVersion)
		}
		if want := releaseGo(t); plat != bin && goVersion != want {
			t.Errorf("%s: built with %s, want the Makefile's RELEASE_GO %s", plat, goVersion, want)
		}
	}
	if v := caRootsVersion(t); !have[caRootsModule+"@"+v] {
		t.Errorf("the SBOM lacks the CA certificates' module %s %s", caRootsModule, v)
	}
	for name := range have {
		if strings.Contains(name, "ca-certificates") {
			t.Errorf("the SBOM names a distribution's package: %s", name)
		}
	}
}
