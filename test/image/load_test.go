package image

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// TestImageLoad: `make image-load`, with kind the only cluster tool on
// PATH, ran `kind load image-archive` on a docker-archive of the
// linux/amd64 image tagged as the chart, the manifests and Kustomize name
// it, so that a cluster's nodes run it without pulling.
func TestImageLoad(t *testing.T) {
	t.Parallel()
	rel := readRelease(t)
	b, err := os.ReadFile(filepath.Join(kindDir, "args"))
	if err != nil {
		t.Fatalf("make image-load did not run kind: %v", err)
	}
	archive := filepath.Join(loadDir, "ripple-linux-amd64.docker.tar")
	want := []string{"load", "image-archive", archive, "--name", "ripple-test"}
	if got := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n"); !slices.Equal(got, want) {
		t.Fatalf("kind %q, want kind %q", got, want)
	}

	ref := rel.repository + ":" + rel.version
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := tarball.ImageFromPath(filepath.Join(kindDir, "archive.tar"), &tag)
	if err != nil {
		t.Fatalf("the archive kind got holds no image tagged %s: %v", ref, err)
	}
	idx, _ := imageIndex(t, imageDirs[0])
	built := platformImages(t, idx)["linux/amd64"]
	got, err := loaded.ConfigName()
	if err != nil {
		t.Fatal(err)
	}
	wantCfg, err := built.ConfigName()
	if err != nil {
		t.Fatal(err)
	}
	if got != wantCfg {
		t.Errorf("kind got image %s, the linux/amd64 image is %s", got, wantCfg)
	}
	cf, err := loaded.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.OS+"/"+cf.Architecture != "linux/amd64" || !slices.Equal(cf.Config.Entrypoint, []string{"/ripple"}) {
		t.Errorf("the loaded image is %s/%s with entrypoint %q", cf.OS, cf.Architecture, cf.Config.Entrypoint)
	}
	if _, ok := filesystem(t, loaded)["/ripple"]; !ok {
		t.Error("the loaded image has no /ripple")
	}
}
