package docs

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// refRE is how a test names a page's block: "docs/canary.md#halt".
var refRE = regexp.MustCompile(`"((?:README|docs/[a-z0-9-]+)\.md#[a-z0-9-]+)"`)

// testRefs returns the block references the tests under test/ (but this
// package) make, with the files that make them.
func testRefs(t *testing.T) map[string][]string {
	t.Helper()
	refs := map[string][]string{}
	tests := os.DirFS(filepath.Join(root, "test"))
	err := fs.WalkDir(tests, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "docs" { // this check's own examples
			return fs.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := fs.ReadFile(tests, path)
		if err != nil {
			return err
		}
		for _, m := range refRE.FindAllStringSubmatch(string(b), -1) {
			refs[m[1]] = append(refs[m[1]], "test/"+path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return refs
}

// Every fenced block names its language (text for output), and every
// block of commands is run by a test, which reads it from the page, or is
// marked illustrative: a recipe no test runs fails here.
func TestShellBlocksRunOrIllustrative(t *testing.T) {
	refs := testRefs(t)
	for _, file := range docFiles(t) {
		rel, _ := filepath.Rel(root, file)
		names := map[string]bool{}
		for _, b := range Blocks(readDoc(t, rel)) {
			switch {
			case b.Lang == "":
				t.Errorf("%s:%d: the fenced block names no language (sh for commands, text for output)", rel, b.Line)
			case b.Run != "" && !b.Shell():
				t.Errorf("%s:%d: a %s block is marked run %s; only blocks of commands are run", rel, b.Line, b.Lang, b.Run)
			case b.Shell() && b.Run == "" && !b.Illustrative:
				t.Errorf("%s:%d: a block of commands that no test runs: mark it <!-- docs-check: run <name> --> and run it from a test (docs.RunBlock), or <!-- docs-check: illustrative --> when it is not meant to be run as it stands", rel, b.Line)
			}
			if b.Run == "" {
				continue
			}
			if names[b.Run] {
				t.Errorf("%s:%d: a second block named %s", rel, b.Line, b.Run)
			}
			names[b.Run] = true
			if ref := rel + "#" + b.Run; len(refs[ref]) == 0 {
				t.Errorf("%s:%d: the block is marked run %s, but no test under test/ names %q", rel, b.Line, b.Run, ref)
			}
		}
	}
	for ref, files := range refs {
		if _, err := RunBlock(ref); err != nil {
			t.Errorf("%s name %q: %v", strings.Join(files, ", "), ref, err)
		}
	}
}

func TestBlocks(t *testing.T) {
	page := strings.Join([]string{
		"Intro.",
		"<!-- docs-check: run first -->",
		"```sh",
		"kubectl get pods",
		"ripple wait secret/sp",
		"```",
		"",
		"<!-- docs-check: illustrative -->",
		"",
		"```console",
		"$ helm install ripple <chart>",
		"```",
		"```yaml",
		"kind: ConfigMap",
		"```",
		"<!-- docs-check: run other -->",
		"Words between the mark and the fence.",
		"```sh",
		"make demo",
		"```",
	}, "\n")
	got := Blocks(page)
	want := []Block{
		{Line: 3, Lang: "sh", Text: "kubectl get pods\nripple wait secret/sp", Run: "first"},
		{Line: 10, Lang: "console", Text: "$ helm install ripple <chart>", Illustrative: true},
		{Line: 13, Lang: "yaml", Text: "kind: ConfigMap"},
		{Line: 18, Lang: "sh", Text: "make demo"},
	}
	if len(got) != len(want) {
		t.Fatalf("blocks %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("block %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if !got[0].Shell() || got[2].Shell() {
		t.Error("Shell: sh is commands, yaml is not")
	}
}
