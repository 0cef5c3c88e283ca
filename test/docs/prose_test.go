package docs

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// commitRE is a short commit hash: 7 to 11 hex digits, a word of its own
// (not a ReplicaSet's pod-template hash such as web-6d9c8f7b5, nor a
// 12-digit config digest as Ripple prints them).
var commitRE = regexp.MustCompile(`(?:^|[^A-Za-z0-9_./-])([0-9a-f]{7,11})(?:$|[^A-Za-z0-9_/-])`)

// trackerRE is a reference to this project's issue tracker or work
// sessions, which a user does not have: "issue 25", "the issue measured",
// "session 3". (Another project's issues are written with "#".)
var trackerRE = regexp.MustCompile(`(?i)\b(?:issues? [0-9]+|sessions? [0-9]+|the issue)\b`)

// history returns the commit hashes and tracker references in the prose
// of a page (outside its fenced blocks), as "line: hash".
func history(text string) []string {
	var out []string
	fenced := false
	for i, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		for _, m := range commitRE.FindAllStringSubmatch(line, -1) {
			if strings.ContainsAny(m[1], "0123456789") && strings.ContainsAny(m[1], "abcdef") {
				out = append(out, fmt.Sprintf("%d: %s", i+1, m[1]))
			}
		}
		for _, m := range trackerRE.FindAllString(line, -1) {
			out = append(out, fmt.Sprintf("%d: %s", i+1, m))
		}
	}
	return out
}

// The user docs state how Ripple behaves now, not the history of how it
// got there: no commit hashes, issue or session numbers in their prose
// (CHANGELOG.md has the history; docs/architecture.md is for
// contributors).
func TestDocsTellNoHistory(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if filepath.Base(f) == "architecture.md" {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range history(string(b)) {
			t.Errorf("%s:%s: history in a user doc: say what Ripple does, not which commit, issue or session changed it", f, h)
		}
	}
}

// The finder itself: hashes in prose and code spans, not in fenced blocks,
// digests, pod-template hashes or words; this project's issues and
// sessions, not another's.
func TestHistory(t *testing.T) {
	text := "Ripple `ebb84a7` (before c88bb19, was +16%).\n" +
		"```\ngit archive c88bb19\n```\n" +
		"ConfigMap \"app-config\" 2415bbab7ab0, ReplicaSet/web-6d9c8f7b5, decade 1234567 deadbeef\n" +
		"Since issue 25, as the issue measured in session 3; Reloader issues #63 and #117.\n"
	got := history(text)
	want := []string{"1: ebb84a7", "1: c88bb19", "6: issue 25", "6: the issue", "6: session 3"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("history = %q, want %q", got, want)
	}
}
