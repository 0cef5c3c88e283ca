package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"text/template"
	"time"

	"sigs.k8s.io/yaml"
)

type distOptions struct {
	version, toolchain                          string
	imageDir, out, chart, manifests, krew, helm string
	platforms                                   []string
	epoch                                       time.Time
}

// The release's files that do not carry the version in their name.
const (
	krewManifest = "kubectl-ripple.krew.yaml"
	checksums    = "sha256sums.txt"
)

// pluginArchive names the kubectl-ripple archive of a version and platform,
// as the krew manifest's URIs do.
func pluginArchive(v, goos, goarch string) string {
	return "kubectl-ripple_" + v + "_" + goos + "_" + goarch + ".tar.gz"
}

// krewPlatform is one platform of the krew manifest template.
type krewPlatform struct{ OS, Arch, Archive, SHA256 string }

// dist fills o.out with the release: the image archive and SBOM of
// `release image`, the kubectl-ripple archives and their krew manifest,
// the packaged chart, the manifests, and sha256sums.txt of all of them.
func dist(ctx context.Context, o distOptions) (err error) {
	if err := os.RemoveAll(o.out); err != nil {
		return err
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	// The image archive, its SBOM and the manifests, named by version.
	for src, dst := range map[string]string{
		filepath.Join(o.imageDir, ociArchive): "ripple-" + o.version + ".oci.tar",
		filepath.Join(o.imageDir, sbomFile):   "ripple-" + o.version + ".sbom.cdx.json",
		o.manifests:                           "ripple-" + o.version + ".yaml",
	} {
		b, err := os.ReadFile(src)
		if err != nil {
			return fmt.Errorf("%w (run `make image` first)", err)
		}
		if err := os.WriteFile(filepath.Join(o.out, dst), b, 0o644); err != nil {
			return err
		}
	}

	tmp, err := os.MkdirTemp("", "ripple-release-")
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, os.RemoveAll(tmp)) }()
	var plats []krewPlatform
	for _, p := range o.platforms {
		goos, goarch, err := platform(p)
		if err != nil {
			return err
		}
		bin := filepath.Join(tmp, goos+"_"+goarch, "kubectl-ripple")
		if err := goBuild(ctx, goos, goarch, o.version, o.toolchain, bin); err != nil {
			return err
		}
		b, err := os.ReadFile(bin)
		if err != nil {
			return err
		}
		name := pluginArchive(o.version, goos, goarch)
		if err := writeTarGz(filepath.Join(o.out, name), []entry{{name: "kubectl-ripple", mode: 0o755, data: b}}, o.epoch); err != nil {
			return err
		}
		sum, err := fileSHA256(filepath.Join(o.out, name))
		if err != nil {
			return err
		}
		plats = append(plats, krewPlatform{OS: goos, Arch: goarch, Archive: name, SHA256: sum})
	}
	if err := renderKrew(o, plats); err != nil {
		return err
	}
	if err := helmPackage(ctx, o, tmp); err != nil {
		return err
	}
	return writeChecksums(o.out)
}

// renderKrew renders the krew manifest template and checks that the
// result is a plugin manifest with a checksum for every platform.
func renderKrew(o distOptions, plats []krewPlatform) error {
	tmpl, err := template.New(filepath.Base(o.krew)).Option("missingkey=error").ParseFiles(o.krew)
	if err != nil {
		return err
	}
	var out bytes.Buffer
	if err := tmpl.Execute(&out, map[string]any{"Version": o.version, "Platforms": plats}); err != nil {
		return err
	}
	var m struct {
		Kind string `json:"kind"`
		Spec struct {
			Version   string `json:"version"`
			Platforms []struct {
				URI    string `json:"uri"`
				SHA256 string `json:"sha256"`
			} `json:"platforms"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(out.Bytes(), &m); err != nil {
		return fmt.Errorf("the rendered krew manifest: %w", err)
	}
	if m.Kind != "Plugin" || m.Spec.Version != o.version || len(m.Spec.Platforms) != len(plats) {
		return fmt.Errorf("the rendered krew manifest is not a Plugin of version %s with %d platforms:\n%s", o.version, len(plats), out.String())
	}
	return os.WriteFile(filepath.Join(o.out, krewManifest), out.Bytes(), 0o644)
}

// helmPackage packages the chart with its own version and the release as
// appVersion, with a private helm home.
func helmPackage(ctx context.Context, o distOptions, tmp string) error {
	b, err := os.ReadFile(filepath.Join(o.chart, "Chart.yaml"))
	if err != nil {
		return err
	}
	var chart struct {
		Version string `json:"version"`
	}
	if err := yaml.Unmarshal(b, &chart); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, o.helm, "package", o.chart, "--version", chart.Version, "--app-version", o.version, "--destination", o.out)
	cmd.Env = append(os.Environ(),
		"HELM_CACHE_HOME="+filepath.Join(tmp, "helm", "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(tmp, "helm", "config"),
		"HELM_DATA_HOME="+filepath.Join(tmp, "helm", "data"),
	)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("helm package: %w\n%s", err, out)
	}
	return nil
}

// writeChecksums writes sha256sums.txt in sha256sum's format, so that
// `sha256sum -c sha256sums.txt` verifies a download.
func writeChecksums(dir string) error {
	des, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var lines []string
	for _, de := range des {
		if de.IsDir() || de.Name() == checksums {
			continue
		}
		sum, err := fileSHA256(filepath.Join(dir, de.Name()))
		if err != nil {
			return err
		}
		lines = append(lines, sum+"  "+de.Name()+"\n")
	}
	slices.Sort(lines)
	return os.WriteFile(filepath.Join(dir, checksums), []byte(strings.Join(lines, "")), 0o644)
}

func fileSHA256(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}
