package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// readIndex opens the image index `release image` wrote as the one entry
// of its OCI layout in imageDir.
func readIndex(imageDir string) (v1.ImageIndex, error) {
	top, err := layout.ImageIndexFromPath(filepath.Join(imageDir, ociLayoutDir))
	if err != nil {
		return nil, fmt.Errorf("%w (run `make image` first)", err)
	}
	m, err := top.IndexManifest()
	if err != nil {
		return nil, err
	}
	if len(m.Manifests) != 1 {
		return nil, fmt.Errorf("the OCI layout in %s holds %d entries, want the one image index `release image` writes", imageDir, len(m.Manifests))
	}
	return top.ImageIndex(m.Manifests[0].Digest)
}

// push pushes the image index, every platform, to ref with the
// credentials `docker login` or `podman login` stored. An insecure push
// speaks plain HTTP (go-containerregistry already does for localhost and
// private addresses).
func push(ctx context.Context, imageDir, ref string, insecure bool) error {
	var opts []name.Option
	if insecure {
		opts = append(opts, name.Insecure)
	}
	r, err := name.ParseReference(ref, opts...)
	if err != nil {
		return fmt.Errorf("-ref %q: %w", ref, err)
	}
	idx, err := readIndex(imageDir)
	if err != nil {
		return err
	}
	if err := remote.WriteIndex(r, idx, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
		return fmt.Errorf("pushing %s: %w", r, err)
	}
	d, err := idx.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("pushed %s@%s\n", r, d)
	return nil
}

// writeDockerArchive writes the image of one platform as a docker-archive
// (`docker save`'s format) tagged tag: what `kind load image-archive`,
// `k3d image import` and `minikube image load` all read, whatever runtime
// the cluster's nodes use.
func writeDockerArchive(imageDir, plat, tag, out string) error {
	t, err := name.NewTag(tag)
	if err != nil {
		return fmt.Errorf("-tag %q: %w", tag, err)
	}
	goos, goarch, err := platform(plat)
	if err != nil {
		return err
	}
	idx, err := readIndex(imageDir)
	if err != nil {
		return err
	}
	m, err := idx.IndexManifest()
	if err != nil {
		return err
	}
	for _, d := range m.Manifests {
		if d.Platform == nil || d.Platform.OS != goos || d.Platform.Architecture != goarch {
			continue
		}
		img, err := idx.Image(d.Digest)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		if err := tarball.WriteToFile(out, t, img); err != nil {
			return fmt.Errorf("writing %s: %w", out, err)
		}
		fmt.Printf("%s: %s for %s\n", out, t, plat)
		return nil
	}
	return fmt.Errorf("the image in %s has no %s platform (PLATFORMS)", imageDir, plat)
}
