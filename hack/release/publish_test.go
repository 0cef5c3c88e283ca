package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log"
	"math/big"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// writeTestLayout writes an OCI layout as `release image` does: one entry,
// an index of a linux/amd64 and a linux/arm64 image. It returns the
// directory and the images by platform.
func writeTestLayout(t *testing.T) (string, v1.ImageIndex, map[string]v1.Image) {
	t.Helper()
	imgs := map[string]v1.Image{}
	idx := v1.ImageIndex(empty.Index)
	for _, arch := range []string{"amd64", "arm64"} {
		img, err := random.Image(512, 2)
		if err != nil {
			t.Fatal(err)
		}
		imgs["linux/"+arch] = img
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: arch}}})
	}
	dir := t.TempDir()
	lp, err := layout.Write(filepath.Join(dir, ociLayoutDir), empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := lp.AppendIndex(idx); err != nil {
		t.Fatal(err)
	}
	return dir, idx, imgs
}

// TestDockerArchive: the archive `make image-load` hands kind, k3d and
// minikube is a docker-archive holding exactly the chosen platform's image
// (same config, same layers) under the given tag.
func TestDockerArchive(t *testing.T) {
	dir, _, imgs := writeTestLayout(t)
	out := filepath.Join(t.TempDir(), "ripple.docker.tar")
	const ref = "ghcr.io/ripple-dev/ripple:v0.1.0"
	if err := writeDockerArchive(dir, "linux/arm64", ref, out); err != nil {
		t.Fatal(err)
	}
	m, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return openFile(out) })
	if err != nil {
		t.Fatalf("not a docker-archive: %v", err)
	}
	if len(m) != 1 || len(m[0].RepoTags) != 1 || m[0].RepoTags[0] != ref {
		t.Fatalf("manifest.json %+v, want one image tagged %s", m, ref)
	}
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	got, err := tarball.ImageFromPath(out, &tag)
	if err != nil {
		t.Fatal(err)
	}
	want := imgs["linux/arm64"]
	gotCfg, err := got.ConfigName()
	if err != nil {
		t.Fatal(err)
	}
	wantCfg, err := want.ConfigName()
	if err != nil {
		t.Fatal(err)
	}
	if gotCfg != wantCfg {
		t.Errorf("archive holds image %s, want the linux/arm64 image %s", gotCfg, wantCfg)
	}
	gotLayers, wantLayers := layerDigests(t, got), layerDigests(t, want)
	if strings.Join(gotLayers, ",") != strings.Join(wantLayers, ",") {
		t.Errorf("archive layers %v, want %v", gotLayers, wantLayers)
	}

	err = writeDockerArchive(dir, "linux/s390x", ref, out)
	if err == nil || !strings.Contains(err.Error(), "no linux/s390x platform") {
		t.Errorf("a platform the image lacks: %v, want an error naming it", err)
	}
	err = writeDockerArchive(t.TempDir(), "linux/amd64", ref, out)
	if err == nil || !strings.Contains(err.Error(), "make image") {
		t.Errorf("no image built: %v, want an error saying to run make image", err)
	}
}

// TestPush: push writes the whole index, every platform, to the registry
// under the reference given.
func TestPush(t *testing.T) {
	dir, idx, _ := writeTestLayout(t)
	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(reg.Close)
	ref := strings.TrimPrefix(reg.URL, "http://") + "/team/ripple:v0.1.0"
	if err := push(t.Context(), dir, ref, true); err != nil {
		t.Fatal(err)
	}
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	remoteIdx, err := remote.Index(r)
	if err != nil {
		t.Fatalf("the pushed image: %v", err)
	}
	got, err := remoteIdx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	want, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("pushed index %s, built %s", got, want)
	}
	m, err := remoteIdx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range m.Manifests {
		if _, err := remoteIdx.Image(d.Digest); err != nil {
			t.Errorf("the pushed %s image: %v", d.Platform, err)
		}
	}
	if err := push(t.Context(), dir, "Not A Reference", false); err == nil || !strings.Contains(err.Error(), "-ref") {
		t.Errorf("a bad reference: %v, want an error naming -ref", err)
	}
}

// TestCheckBundle: a bundle of parseable PEM certificates passes; anything
// else in it, or nothing, fails the build.
func TestCheckBundle(t *testing.T) {
	cert := testCertificate(t)
	for _, c := range []struct {
		name, bundle, wantErr string
	}{
		{"two certificates", cert + cert, ""},
		{"empty", "\n", "no certificates"},
		{"a private key", cert + "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n", "not a CERTIFICATE"},
		{"garbage after", cert + "garbage\n", "not PEM"},
		{"broken certificate", "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", "certificate 1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := checkBundle([]byte(c.bundle))
			if c.wantErr == "" && err != nil {
				t.Fatal(err)
			}
			if c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)) {
				t.Fatalf("error %v, want one containing %q", err, c.wantErr)
			}
		})
	}
}

// testCertificate is a self-signed certificate as PEM.
func testCertificate(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test root"},
		NotBefore: time.Unix(0, 0), NotAfter: time.Unix(1<<32, 0), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

func layerDigests(t *testing.T, img v1.Image) []string {
	t.Helper()
	ls, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range ls {
		d, err := l.DiffID()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, d.String())
	}
	return out
}

func openFile(path string) (io.ReadCloser, error) { return os.Open(path) }
