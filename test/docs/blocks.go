package docs

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
)

// A fenced block of a page names its language. A block of commands (sh,
// bash, shell or console) is one a user may be told to run, so it says on
// the line before its fence either which test runs it,
//
//	<!-- docs-check: run rotation -->
//
// (the test names it as "docs/config-rollouts.md#rotation", a string the
// check looks for in test/), or that it is not meant to be run as it
// stands (placeholders, another cluster's names, a release that does not
// exist yet):
//
//	<!-- docs-check: illustrative -->
var markRE = regexp.MustCompile(`^\s*<!--\s*docs-check:\s*(run\s+([a-z0-9-]+)|illustrative)\s*-->\s*$`)

// shellLangs are the languages of blocks of commands.
var shellLangs = map[string]bool{"sh": true, "bash": true, "shell": true, "console": true}

// Block is one fenced block of a page.
type Block struct {
	// Line is the line of its opening fence, counted from 1.
	Line int
	// Lang is the language its fence names; empty when it names none.
	Lang string
	// Text is what it holds, without the fences.
	Text string
	// Run is the name the page gives a block a test runs; Illustrative
	// says it is marked as not run. A block of commands has one of them.
	Run          string
	Illustrative bool
}

// Shell says whether b holds commands.
func (b Block) Shell() bool { return shellLangs[b.Lang] }

// Blocks returns the fenced blocks of a Markdown page, with the mark on
// the line before each (blank lines between are allowed).
func Blocks(text string) []Block {
	lines := strings.Split(text, "\n")
	var out []Block
	for i := 0; i < len(lines); i++ {
		fence := fenceOf(lines[i])
		if fence == "" {
			continue
		}
		b := Block{Line: i + 1, Lang: strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(lines[i]), fence))}
		for j := i - 1; j >= 0; j-- {
			if strings.TrimSpace(lines[j]) == "" {
				continue
			}
			if m := markRE.FindStringSubmatch(lines[j]); m != nil {
				b.Run, b.Illustrative = m[2], m[2] == ""
			}
			break
		}
		var body []string
		for i++; i < len(lines) && fenceOf(lines[i]) != fence; i++ {
			body = append(body, lines[i])
		}
		b.Text = strings.Join(body, "\n")
		out = append(out, b)
	}
	return out
}

// RunBlock returns the commands of the block a page marks `run <name>`,
// ref being "<page>#<name>" with the page's path from the repository's
// root (docs/config-rollouts.md#rotation): what a test runs is the page's
// own text, so the page cannot drift from it.
func RunBlock(ref string) (string, error) {
	page, name, ok := strings.Cut(ref, "#")
	if !ok {
		return "", fmt.Errorf("%q: want <page>#<name>", ref)
	}
	_, here, _, _ := runtime.Caller(0)
	text, err := os.ReadFile(filepath.Join(filepath.Dir(here), "..", "..", page))
	if err != nil {
		return "", err
	}
	for _, b := range Blocks(string(text)) {
		if b.Run == name {
			return b.Text, nil
		}
	}
	return "", fmt.Errorf("%s has no block marked <!-- docs-check: run %s -->", page, name)
}
