package chart

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestDockerfile checks what can be checked of the image build without a
// container engine: the build context that .dockerignore leaves holds every
// package the binary needs, the version ldflag names a real variable, and
// the Dockerfile builds static, cross-compiles from the build platform and
// runs as the nonroot user on the chart's port.
func TestDockerfile(t *testing.T) {
	t.Parallel()
	root, err := RepoRoot()
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
		"USER 65532:65532",
		"EXPOSE 9090",
		`ENTRYPOINT ["/ripple"]`,
		"COPY go.mod go.sum ./",
		"COPY cmd/ cmd/",
		"COPY internal/ internal/",
	} {
		if !strings.Contains(dockerfile, want) {
			t.Errorf("the Dockerfile lacks %q", want)
		}
	}
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
	for _, want := range []string{"*", "!go.mod", "!go.sum", "!cmd/", "!internal/"} {
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
		if len(parts) != 3 || !strings.HasPrefix(parts[0], ModulePath+"/") {
			continue // a dependency from the module cache
		}
		rel, _ := filepath.Rel(root, parts[1])
		if !strings.HasPrefix(rel, "cmd"+string(filepath.Separator)) && !strings.HasPrefix(rel, "internal"+string(filepath.Separator)) {
			t.Errorf("the binary needs %s, outside cmd/ and internal/: the image build would miss it", parts[0])
		}
		for _, f := range strings.Split(parts[2], ",") {
			if strings.HasSuffix(f, "_test.go") || strings.Contains(f, "testdata") {
				t.Errorf("%s embeds %s, which .dockerignore leaves out", parts[0], f)
			}
		}
	}
}
