// Command release builds Ripple's container image and release artifacts
// without a container engine and without pulling anything (`make image`,
// `make release`).
//
//	release image  builds the ripple binary for each platform, and from it
//	               a multi-arch OCI image (layout and archive) and a
//	               CycloneDX SBOM of the binaries' Go modules
//	release dist   adds the kubectl-ripple archives, the krew manifest, the
//	               packaged Helm chart and the manifests, and writes
//	               sha256sums.txt
//	release push   pushes the built image index to a registry
//	release docker-archive
//	               writes one platform's image as a docker-archive, which
//	               kind, k3d and minikube load
//
// Nothing here needs a container engine or a distribution's packages: the
// CA certificates come from a Go module pinned by hack/tools/caroots.
//
// Every output is a function of the sources and SOURCE_DATE_EPOCH: tar
// entries are sorted and stamped with that time, so two builds of one
// commit give the same image digest.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// modulePath is Ripple's Go module.
const modulePath = "github.com/ripple-dev/ripple"

// versionVar is the variable the linker stamps with the release version,
// as the Makefile's LDFLAGS and the Dockerfile do.
const versionVar = modulePath + "/internal/version.Version"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: release image|dist|push|docker-archive [flags]")
	}
	fs := flag.NewFlagSet("release "+args[0], flag.ContinueOnError)
	version := fs.String("version", "", "release version: the image tag and the binary's version (the chart's appVersion)")
	epoch := fs.String("source-date-epoch", os.Getenv("SOURCE_DATE_EPOCH"), "the time stamped on every file and in the image, in seconds since 1970")
	toolchain := fs.String("go-toolchain", "", "the Go release to build the binaries with (GOTOOLCHAIN, e.g. go1.26.8; fetched through the module proxy if it is not the local go): the same bytes on every machine; empty: the local go")
	switch args[0] {
	case "image":
		o := imageOptions{}
		fs.StringVar(&o.out, "out", "bin/image", "output directory")
		fs.StringVar(&o.repository, "repository", "", "the image's name, recorded in the OCI layout (org.opencontainers.image.ref.name)")
		fs.StringVar(&o.revision, "revision", "", "the source revision (git commit) for the revision label")
		fs.StringVar(&o.licenses, "licenses", "", "SPDX license expression for the licenses label")
		fs.StringVar(&o.caRootsDir, "ca-roots", "hack/tools/caroots", "the Go module whose command writes the CA certificates to ship")
		platforms := fs.String("platforms", "linux/amd64,linux/arm64", "comma-separated os/arch list")
		var err error
		if o.version, o.platforms, o.epoch, err = parse(fs, args[1:], version, platforms, epoch); err != nil {
			return err
		}
		o.toolchain = *toolchain
		for name, v := range map[string]string{"version": o.version, "repository": o.repository, "revision": o.revision, "licenses": o.licenses} {
			if v == "" {
				return fmt.Errorf("-%s is required", name)
			}
		}
		return buildImage(ctx, o)
	case "dist":
		o := distOptions{}
		fs.StringVar(&o.imageDir, "image-dir", "bin/image", "the output of `release image`")
		fs.StringVar(&o.out, "out", "bin/release", "output directory (emptied first)")
		fs.StringVar(&o.chart, "chart", "deploy/helm/ripple", "the Helm chart")
		fs.StringVar(&o.manifests, "manifests", "deploy/manifests/ripple.yaml", "the rendered manifests")
		fs.StringVar(&o.krew, "krew", "deploy/krew/ripple.yaml.tmpl", "the krew plugin manifest template")
		fs.StringVar(&o.helm, "helm", "helm", "the helm binary")
		platforms := fs.String("plugin-platforms", "linux/amd64,linux/arm64,darwin/amd64,darwin/arm64", "comma-separated os/arch list for kubectl-ripple")
		var err error
		if o.version, o.platforms, o.epoch, err = parse(fs, args[1:], version, platforms, epoch); err != nil {
			return err
		}
		o.toolchain = *toolchain
		if o.version == "" {
			return fmt.Errorf("-version is required")
		}
		return dist(ctx, o)
	case "push", "docker-archive":
		return publish(ctx, fs, args)
	default:
		return fmt.Errorf("unknown command %q: image, dist, push or docker-archive", args[0])
	}
}

// publish runs push or docker-archive on the output of `release image`.
func publish(ctx context.Context, fs *flag.FlagSet, args []string) error {
	imageDir := fs.String("image-dir", "bin/image", "the output of `release image`")
	ref := fs.String("ref", "", "push: where to push the image, registry/name:tag")
	insecure := fs.Bool("insecure", false, "push: plain HTTP to the registry")
	plat := fs.String("platform", "linux/amd64", "docker-archive: the platform whose image to write, os/arch")
	tag := fs.String("tag", "", "docker-archive: the name:tag the archive gives the image")
	out := fs.String("out", "", "docker-archive: the file to write")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if args[0] == "push" {
		if *ref == "" {
			return fmt.Errorf("-ref is required")
		}
		return push(ctx, *imageDir, *ref, *insecure)
	}
	if *tag == "" || *out == "" {
		return fmt.Errorf("-tag and -out are required")
	}
	return writeDockerArchive(*imageDir, *plat, *tag, *out)
}

// parse parses a command's flags and returns the flags both commands have.
func parse(fs *flag.FlagSet, args []string, version, platforms, epoch *string) (string, []string, time.Time, error) {
	if err := fs.Parse(args); err != nil {
		return "", nil, time.Time{}, err
	}
	at, err := parseEpoch(*epoch)
	return *version, strings.Split(*platforms, ","), at, err
}

func parseEpoch(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, fmt.Errorf("-source-date-epoch (or SOURCE_DATE_EPOCH) is required: the build is reproducible only with a fixed time")
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("source date epoch %q: %w", s, err)
	}
	return time.Unix(n, 0).UTC(), nil
}

// goBuild builds the ripple binary for one platform as the Makefile's build
// target does: static, trimmed paths, version stamped. What the machine's
// environment could change in the binary is fixed: the Go release (when
// toolchain is set), the instruction-set levels, experiments and GOFLAGS.
func goBuild(ctx context.Context, goos, goarch, version, toolchain, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath",
		"-ldflags", "-s -w -X "+versionVar+"="+version,
		"-o", out, "./cmd/ripple")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch,
		"GOFLAGS=", "GOEXPERIMENT=", "GOAMD64=v1", "GOARM64=v8.0")
	if toolchain != "" {
		cmd.Env = append(cmd.Env, "GOTOOLCHAIN="+toolchain)
	}
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build for %s/%s: %w", goos, goarch, err)
	}
	return nil
}

// platform splits "os/arch".
func platform(p string) (goos, goarch string, err error) {
	goos, goarch, ok := strings.Cut(strings.TrimSpace(p), "/")
	if !ok || goos == "" || goarch == "" {
		return "", "", fmt.Errorf("platform %q is not os/arch", p)
	}
	return goos, goarch, nil
}
