package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The files `release image` writes in its output directory.
const (
	ociLayoutDir  = "oci"
	ociArchive    = "ripple.oci.tar"
	sbomFile      = "sbom.cdx.json"
	sourceURL     = "https://github.com/ripple-dev/ripple"
	description   = "Rolls workloads when the ConfigMaps and Secrets they use change; a drop-in replacement for Stakater Reloader."
	nonrootID     = 65532
	caBundlePath  = "etc/ssl/certs/ca-certificates.crt"
	caLicensePath = "usr/share/doc/ca-certificates/LICENSE"
	binaryInImage = "ripple"
	// caRootsLabel names the module (and version) the CA certificates
	// come from.
	caRootsLabel = "dev.ripple.image.ca-roots"
)

type imageOptions struct {
	version, revision, repository, licenses string
	// toolchain is the GOTOOLCHAIN the binaries are built with.
	toolchain string
	// caRootsDir is the module whose command writes the CA bundle.
	caRootsDir string
	platforms  []string
	epoch      time.Time
	out        string
}

// buildImage builds the binaries, the image index with one image per
// platform, its OCI layout and archive, and the SBOM.
func buildImage(ctx context.Context, o imageOptions) error {
	if err := os.RemoveAll(o.out); err != nil {
		return err
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	ca, err := readCARoots(ctx, o.caRootsDir)
	if err != nil {
		return err
	}
	base, err := baseLayer(o, ca)
	if err != nil {
		return err
	}
	labels := map[string]string{
		"org.opencontainers.image.title":       "ripple",
		"org.opencontainers.image.description": description,
		"org.opencontainers.image.source":      sourceURL,
		"org.opencontainers.image.url":         sourceURL,
		"org.opencontainers.image.version":     o.version,
		"org.opencontainers.image.revision":    o.revision,
		"org.opencontainers.image.licenses":    o.licenses,
		"org.opencontainers.image.created":     o.epoch.Format(time.RFC3339),
		caRootsLabel:                           ca.module + "@" + ca.version,
	}
	idx, binaries, err := imageIndex(ctx, o, base, ca, labels)
	if err != nil {
		return err
	}
	ref, err := writeOCI(o, idx)
	if err != nil {
		return err
	}
	if err := writeSBOM(filepath.Join(o.out, sbomFile), o, ca, binaries); err != nil {
		return err
	}
	digest, err := idx.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("%s@%s\n", ref, digest)
	return nil
}

// imageIndex builds the binary of each platform and the image index holding
// one image per platform; it returns the index and the binaries' paths.
func imageIndex(ctx context.Context, o imageOptions, base v1.Layer, ca caRoots, labels map[string]string) (v1.ImageIndex, []string, error) {
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	var binaries []string
	for _, p := range o.platforms {
		goos, goarch, err := platform(p)
		if err != nil {
			return nil, nil, err
		}
		bin := filepath.Join(o.out, goos+"_"+goarch, "ripple")
		if err := goBuild(ctx, goos, goarch, o.version, o.toolchain, bin); err != nil {
			return nil, nil, err
		}
		binaries = append(binaries, bin)
		img, plat, err := platformImage(o, base, ca, bin, goos, goarch, labels)
		if err != nil {
			return nil, nil, err
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: plat}})
	}
	a := mutate.Annotations(idx, labels)
	annotated, ok := a.(v1.ImageIndex)
	if !ok {
		return nil, nil, fmt.Errorf("annotating the image index gave a %T", a)
	}
	return annotated, binaries, nil
}

// writeOCI writes the index as an OCI layout and as an archive of that
// layout; it returns the reference the layout names the image by.
func writeOCI(o imageOptions, idx v1.ImageIndex) (string, error) {
	dir := filepath.Join(o.out, ociLayoutDir)
	lp, err := layout.Write(dir, empty.Index)
	if err != nil {
		return "", err
	}
	// skopeo and podman name the image after this annotation when they
	// load the archive.
	ref := o.repository + ":" + o.version
	if err := lp.AppendIndex(idx, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": ref})); err != nil {
		return "", err
	}
	entries, err := dirEntries(dir)
	if err != nil {
		return "", err
	}
	var archive bytes.Buffer
	if err := writeTar(&archive, entries, o.epoch); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(o.out, ociArchive), archive.Bytes(), 0o644); err != nil {
		return "", err
	}
	return ref, nil
}

// baseLayer holds what every platform shares: the nonroot user, the CA
// certificates (from a pinned Go module, with its license) and a writable
// /tmp. No shell, no package manager, nothing of the build machine.
func baseLayer(o imageOptions, ca caRoots) (v1.Layer, error) {
	passwd := "root:x:0:0:root:/root:/sbin/nologin\n" +
		"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n" +
		fmt.Sprintf("nonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", nonrootID, nonrootID)
	group := "root:x:0:\nnobody:x:65534:\n" + fmt.Sprintf("nonroot:x:%d:\n", nonrootID)
	return layer([]entry{
		{name: "etc/", mode: 0o755},
		{name: "etc/passwd", mode: 0o644, data: []byte(passwd)},
		{name: "etc/group", mode: 0o644, data: []byte(group)},
		{name: "etc/ssl/", mode: 0o755},
		{name: "etc/ssl/certs/", mode: 0o755},
		{name: caBundlePath, mode: 0o644, data: ca.pem},
		{name: "home/", mode: 0o755},
		{name: "home/nonroot/", mode: 0o700, uid: nonrootID, gid: nonrootID},
		{name: "tmp/", mode: 0o1777},
		{name: "usr/", mode: 0o755},
		{name: "usr/share/", mode: 0o755},
		{name: "usr/share/doc/", mode: 0o755},
		{name: "usr/share/doc/ca-certificates/", mode: 0o755},
		{name: caLicensePath, mode: 0o644, data: ca.license},
	}, o.epoch)
}

// platformImage is the base layer plus the platform's binary, with the
// config every platform shares.
func platformImage(o imageOptions, base v1.Layer, ca caRoots, bin, goos, goarch string, labels map[string]string) (v1.Image, *v1.Platform, error) {
	b, err := os.ReadFile(bin)
	if err != nil {
		return nil, nil, err
	}
	binLayer, err := layer([]entry{{name: binaryInImage, mode: 0o755, data: b}}, o.epoch)
	if err != nil {
		return nil, nil, err
	}
	created := v1.Time{Time: o.epoch}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img,
		mutate.Addendum{Layer: base, History: v1.History{Created: created, CreatedBy: "hack/release: nonroot user, CA certificates (" + ca.module + " " + ca.version + ")"}},
		mutate.Addendum{Layer: binLayer, History: v1.History{Created: created, CreatedBy: "hack/release: /ripple " + o.version + " (" + goos + "/" + goarch + ")"}},
	)
	if err != nil {
		return nil, nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, nil, err
	}
	cf = cf.DeepCopy()
	plat := &v1.Platform{OS: goos, Architecture: goarch}
	if goarch == "arm64" {
		plat.Variant = "v8"
	}
	cf.OS, cf.Architecture, cf.Variant = plat.OS, plat.Architecture, plat.Variant
	cf.Created = created
	cf.Config = v1.Config{
		Entrypoint: []string{"/" + binaryInImage},
		// Numeric, so that the kubelet can check runAsNonRoot.
		User:       fmt.Sprintf("%d:%d", nonrootID, nonrootID),
		WorkingDir: "/",
		// Metrics (/metrics) and health (/live, /healthz, /readyz).
		ExposedPorts: map[string]struct{}{"9090/tcp": {}},
		Labels:       labels,
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, nil, err
	}
	a := mutate.Annotations(img, labels)
	annotated, ok := a.(v1.Image)
	if !ok {
		return nil, nil, fmt.Errorf("annotating the %s/%s image gave a %T", goos, goarch, a)
	}
	return annotated, plat, nil
}

// layer makes a gzip-compressed OCI layer of entries, owned by root unless
// an entry says otherwise.
func layer(entries []entry, mtime time.Time) (v1.Layer, error) {
	var buf bytes.Buffer
	if err := writeTar(&buf, entries, mtime); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil },
		tarball.WithMediaType(types.OCILayer),
		tarball.WithCompressionLevel(gzip.BestCompression),
		tarball.WithCompressedCaching)
}
