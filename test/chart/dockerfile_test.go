package chart

import (
	goversion "go/version"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"

	"github.com/ripple-dev/ripple/hack/helmchart"
)

// TestDockerfile checks what can be checked of the buildx image build
// without a container engine (`make image` builds the image without the
// Dockerfile; test/image tests that one): the build context that
// .dockerignore leaves holds every package the binary needs, the Go release
// satisfies go.mod, the version ldflag names a real variable, and the
// Dockerfile builds static, cross-compiles from the build platform, labels
// the image as `make image` does and runs as the nonroot user on the
// chart's port.
func TestDockerfile(t *testing.T) {
	t.Parallel()
	root, err := helmchart.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	dockerfile := string(b)
	for _, want := range []string{
		"FROM --platform=$BUILDPLATFORM golang:",
		"ARG TARGETOS TARGETARCH",
		"CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH}",
		"-X github.com/ripple-dev/ripple/internal/version.Version=${VERSION}",
		"FROM gcr.io/distroless/static-debian12:nonroot",
		"org.opencontainers.image.source=",
		"org.opencontainers.image.version=\"${VERSION}\"",
		"org.opencontainers.image.revision=\"${REVISION}\"",
		"org.opencontainers.image.licenses=",
		"USER 65532:65532",
		"EXPOSE 9090",
		`ENTRYPOINT ["/ripple"]`,
		"COPY go.mod go.sum ./",
		"COPY api/ api/",
		"COPY cmd/ cmd/",
		"COPY internal/ internal/",
	} {
		if !strings.Contains(dockerfile, want) {
			t.Errorf("the Dockerfile lacks %q", want)
		}
	}
	checkGoVersion(t, root, dockerfile)
	v, err := os.ReadFile(filepath.Join(root, "internal", "version", "version.go"))
	if err != nil || !strings.Contains(string(v), "var Version = ") {
		t.Errorf("internal/version has no Version variable for the ldflag to set (%v)", err)
	}

	// Every package of the binary comes from a directory the Dockerfile
	// copies, and embeds no file .dockerignore leaves out.
	ignore, err := os.ReadFile(filepath.Join(root, ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"*", "!go.mod", "!go.sum", "!api/", "!cmd/", "!internal/"} {
		if !strings.Contains("\n"+string(ignore)+"\n", "\n"+want+"\n") {
			t.Errorf(".dockerignore lacks the line %q", want)
		}
	}
	cmd := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}|{{.Dir}}|{{join .EmbedFiles \",\"}}{{end}}", "./cmd/ripple")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		parts := strings.SplitN(line, "|", 3)
		if len(parts) != 3 || !strings.HasPrefix(parts[0], helmchart.ModulePath+"/") {
			continue // a dependency from the module cache
		}
		rel, _ := filepath.Rel(root, parts[1])
		top, _, _ := strings.Cut(rel, string(filepath.Separator))
		if top != "api" && top != "cmd" && top != "internal" {
			t.Errorf("the binary needs %s, outside api/, cmd/ and internal/: the image build would miss it", parts[0])
		}
		for _, f := range strings.Split(parts[2], ",") {
			if strings.HasSuffix(f, "_test.go") || strings.Contains(f, "testdata") {
				t.Errorf("%s embeds %s, which .dockerignore leaves out", parts[0], f)
			}
		}
	}
}

// checkGoVersion fails when the Dockerfile's default GO_VERSION cannot
// build go.mod: the golang image tag "1.25" is the newest 1.25.x, so it must
// be at least go.mod's language version, and a patch release such as
// "1.25.3" at least go.mod's go line itself (and its toolchain line).
func checkGoVersion(t *testing.T, root, dockerfile string) {
	t.Helper()
	m := regexp.MustCompile(`(?m)^ARG GO_VERSION=(\S+)$`).FindStringSubmatch(dockerfile)
	if m == nil {
		t.Error("the Dockerfile has no ARG GO_VERSION=<version> line")
		return
	}
	arg := "go" + m[1]
	if !goversion.IsValid(arg) {
		t.Errorf("GO_VERSION=%s is not a Go release", m[1])
		return
	}
	b, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	mf, err := modfile.ParseLax("go.mod", b, nil)
	if err != nil || mf.Go == nil {
		t.Fatalf("go.mod has no go line (%v)", err)
	}
	need := []string{"go" + mf.Go.Version}
	if mf.Toolchain != nil {
		need = append(need, mf.Toolchain.Name)
	}
	for _, n := range need {
		ok := goversion.Compare(goversion.Lang(arg), goversion.Lang(n)) >= 0
		if goversion.Lang(arg) != arg { // a patch release: no newer patch is implied
			ok = goversion.Compare(arg, n) >= 0
		}
		if !ok {
			t.Errorf("the Dockerfile's GO_VERSION=%s cannot build go.mod, which needs %s", m[1], n)
		}
	}
}
