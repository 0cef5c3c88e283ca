// Package docs checks that the hand-written docs name only what exists: every
// flag, annotation, metric and Event reason that README.md, docs/*.md and the
// chart's README name must be one the code defines. The names that exist are
// taken from the code itself (the binaries' --help, the annotation keys, the
// registered metrics, the Reason constants), never from a hand list, so a
// rename in the code fails the check until the docs follow, and a typo in the
// docs fails it at once.
//
// How a name is recognised in Markdown:
//   - a flag is `--name` in prose, in a code span or in a fenced block,
//     unless that span or line is a command of another tool (helm, kubectl
//     other than `kubectl ripple`, skopeo, ...);
//   - an annotation or label is any `<...>.reloader.stakater.com/<key>` or
//     `<...>.ripple.dev/<key>` (wildcards and placeholders skipped);
//   - a metric is any `reloader_*` or `ripple_*` word;
//   - an Event reason is a backticked CamelCase word that starts like one of
//     Ripple's reasons (`Reload...`, `Rollout...`) in a paragraph or table row
//     that speaks of events; and anywhere, a backticked word one or two
//     letters away from a reason (`ReloadFailed` for `ReloadFail`).
//
// A page that names a wrong key on purpose (troubleshooting a typo) says so
// in an HTML comment: <!-- docs-check: not-a-name reloader.stakater.com/autoo -->.
package docs

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/agnivade/levenshtein"
)

// Kinds of names the check knows.
const (
	Flag       = "flag"
	Annotation = "annotation"
	Metric     = "metric"
	Reason     = "event reason"
	// ExplainWord is a state or reason of `ripple explain`'s report: not an
	// Event reason, but a name the docs may give in the same sentences.
	ExplainWord = "explain word"

	directive = "not-a-name directive"
)

// Names holds the names that exist in the code, by kind.
type Names map[string]map[string]bool

// Finding is a name in a doc that the code does not have.
type Finding struct {
	File string
	Line int
	Kind string
	Name string
	Hint string
}

func (f Finding) String() string {
	if f.Kind == directive {
		return fmt.Sprintf("%s: <!-- docs-check: not-a-name --> lists %q: %s", f.File, f.Name, f.Hint)
	}
	s := fmt.Sprintf("%s:%d: %s %q does not exist in the code", f.File, f.Line, f.Kind, f.Name)
	if f.Hint != "" {
		s += " (" + f.Hint + ")"
	}
	return s
}

var (
	flagRE = regexp.MustCompile(`(?:^|[^A-Za-z0-9_=-])--([A-Za-z][A-Za-z0-9-]*)`)
	// apiVersionRE is an API group and version, such as ripple.dev/v1alpha1:
	// no key.
	apiVersionRE = regexp.MustCompile(`/v[0-9]+((alpha|beta)[0-9]+)?$`)
	keyRE        = regexp.MustCompile(`(?:^|[^A-Za-z0-9.-])((?:[A-Za-z0-9-]+\.)*(?:reloader\.stakater\.com|ripple\.dev)/[A-Za-z0-9._*<>{}-]*)`)
	metricRE     = regexp.MustCompile(`(?:^|[^A-Za-z0-9_])((?:reloader|ripple)_[A-Za-z0-9_*]+)`)
	spanRE       = regexp.MustCompile("`([^`]+)`")
	camelRE      = regexp.MustCompile(`^[A-Z][a-z]+(?:[A-Z][a-z]+)+$`)
	humpRE       = regexp.MustCompile(`^[A-Z][a-z]+`)
	eventRE      = regexp.MustCompile(`(?i)\bevents?\b`)
	directiveRE  = regexp.MustCompile(`<!--\s*docs-check:\s*not-a-name\s+([^>]*?)\s*-->`)
	envAssignRE  = regexp.MustCompile(`^\s*(?:\$\s+)?(?:[A-Z_][A-Z0-9_]*=\S*\s*)*`)
	histogramEnd = []string{"_bucket", "_sum", "_count"}
	sentenceEnds = []string{". ", ".\n", "; ", ";\n"}
)

// foreign are commands of other tools: their flags are theirs.
var foreign = []string{
	"helm", "kubectl", "kustomize", "argocd", "flux", "kind", "k3d", "minikube",
	"skopeo", "podman", "docker", "nerdctl", "ctr", "crane", "oras",
	"git", "gh", "curl", "jq", "yq", "go", "sudo", "kube-apiserver",
}

// ours are the command lines of Ripple's own programs that begin like a
// foreign one.
var ours = []string{"kubectl ripple", "go run ./cmd/ripple", "go run ./hack/bench"}

// Check returns the names in a Markdown document that are not in known.
func Check(file, text string, known Names) []Finding {
	c := &checker{file: file, known: known, notNames: map[string]bool{}}
	c.directives(text)
	lines := strings.Split(text, "\n")
	var para []string
	start := 0
	flush := func() {
		if len(para) > 0 {
			c.paragraph(start, para)
		}
		para = nil
	}
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if fence := fenceOf(line); fence != "" {
			flush()
			end := i + 1
			for end < len(lines) && !strings.HasPrefix(strings.TrimSpace(lines[end]), fence) {
				end++
			}
			c.fenced(i+2, lines[i+1:min(end, len(lines))])
			i = end
			continue
		}
		if strings.TrimSpace(line) == "" || strings.HasPrefix(strings.TrimSpace(line), "|") {
			flush()
			if strings.TrimSpace(line) != "" {
				c.paragraph(i+1, []string{line}) // a table row is its own context
			}
			continue
		}
		if len(para) == 0 {
			start = i + 1
		}
		para = append(para, line)
	}
	flush()
	slices.SortStableFunc(c.findings, func(a, b Finding) int { return a.Line - b.Line })
	return append(c.findings, c.unusedDirectives()...)
}

type checker struct {
	file     string
	known    Names
	notNames map[string]bool // declared deliberately wrong; true once seen
	findings []Finding
}

func fenceOf(line string) string {
	t := strings.TrimSpace(line)
	for _, f := range []string{"```", "~~~"} {
		if strings.HasPrefix(t, f) {
			return f
		}
	}
	return ""
}

// directives reads the names the page declares deliberately wrong.
func (c *checker) directives(text string) {
	for _, m := range directiveRE.FindAllStringSubmatch(text, -1) {
		for _, name := range strings.Fields(m[1]) {
			c.notNames[name] = false
		}
	}
}

// unusedDirectives reports declared wrong names that the page does not use,
// or that exist after all: a directive must not hide a real name.
func (c *checker) unusedDirectives() []Finding {
	var out []Finding
	for name, seen := range c.notNames {
		switch {
		case c.exists(name):
			out = append(out, Finding{File: c.file, Kind: directive, Name: name, Hint: "it exists: remove it from the directive"})
		case !seen:
			out = append(out, Finding{File: c.file, Kind: directive, Name: name, Hint: "the page does not use it: remove it from the directive"})
		}
	}
	slices.SortFunc(out, func(a, b Finding) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func (c *checker) exists(name string) bool {
	for _, set := range c.known {
		if set[name] {
			return true
		}
	}
	return false
}

// fenced checks a fenced code block: each command line (with its
// continuation lines) is one context for flags.
func (c *checker) fenced(first int, lines []string) {
	foreignCmd := false
	continued := false
	for i, line := range lines {
		// A continued line that starts a pipe stage starts a new command.
		if stage, piped := strings.CutPrefix(strings.TrimSpace(line), "| "); !continued || piped {
			foreignCmd = isForeign(stage)
		}
		continued = strings.HasSuffix(strings.TrimSpace(line), `\`)
		c.names(first+i, line)
		if !foreignCmd {
			c.flags(first+i, envAssignRE.ReplaceAllString(line, ""))
		}
	}
}

// paragraph checks prose lines: flags in prose and in code spans that are
// not foreign commands, and Event reasons in code spans.
func (c *checker) paragraph(first int, lines []string) {
	text := strings.Join(lines, "\n")
	text = directiveRE.ReplaceAllStringFunc(text, func(d string) string { return strings.Repeat(" ", len(d)) })
	lineAt := func(off int) int { return first + strings.Count(text[:off], "\n") }
	spans := spanRE.FindAllStringSubmatchIndex(text, -1)
	prose := []byte(text)
	for _, s := range spans {
		for j := s[0]; j < s[1]; j++ {
			if prose[j] != '\n' {
				prose[j] = ' '
			}
		}
	}
	for i, l := range strings.Split(string(prose), "\n") {
		c.flags(first+i, l)
	}
	for _, s := range spans {
		span := text[s[2]:s[3]]
		line := lineAt(s[2])
		if !isForeign(span) {
			c.flags(line, span)
		}
		c.reason(line, span, eventRE.MatchString(sentence(text, s[0], s[1])))
	}
	for i, l := range strings.Split(text, "\n") {
		c.names(first+i, l)
	}
}

// sentence returns the sentence of text around text[from:to].
func sentence(text string, from, to int) string {
	start := 0
	for _, sep := range sentenceEnds {
		if i := strings.LastIndex(text[:from], sep); i >= 0 && i+len(sep) > start {
			start = i + len(sep)
		}
	}
	end := len(text)
	for _, sep := range sentenceEnds {
		if i := strings.Index(text[to:], sep); i >= 0 && to+i < end {
			end = to + i
		}
	}
	return text[start:end]
}

// isForeign says whether a command line runs another tool.
func isForeign(cmd string) bool {
	cmd = strings.TrimSpace(envAssignRE.ReplaceAllString(cmd, ""))
	for _, o := range ours {
		if strings.HasPrefix(cmd, o) {
			return false
		}
	}
	word, _, _ := strings.Cut(cmd, " ")
	return slices.Contains(foreign, word)
}

func (c *checker) flags(line int, text string) {
	for _, m := range flagRE.FindAllStringSubmatch(text, -1) {
		c.check(line, Flag, m[1], "--"+m[1])
	}
}

// names checks annotation keys and metrics, which look the same in prose,
// code spans and code blocks.
func (c *checker) names(line int, text string) {
	for _, m := range keyRE.FindAllStringSubmatch(text, -1) {
		key := strings.TrimRight(m[1], ".-") // sentence end; kubectl's "key-" removes it
		if strings.ContainsAny(key, "*<>{}") || apiVersionRE.MatchString(key) {
			continue
		}
		c.check(line, Annotation, key, key)
	}
	for _, m := range metricRE.FindAllStringSubmatch(text, -1) {
		name := strings.TrimRight(m[1], "_")
		if strings.Contains(name, "*") {
			continue
		}
		for _, end := range histogramEnd {
			if base, ok := strings.CutSuffix(name, end); ok && c.known[Metric][base] {
				name = base
			}
		}
		c.check(line, Metric, name, name)
	}
}

// reason checks a code span that may be an Event reason.
func (c *checker) reason(line int, span string, eventContext bool) {
	if !camelRE.MatchString(span) || c.known[Reason][span] {
		return
	}
	if _, ok := c.notNames[span]; ok {
		c.notNames[span] = true
		return
	}
	for r := range c.known[Reason] {
		if levenshtein.ComputeDistance(span, r) <= 2 {
			c.add(line, Reason, span, "did you mean "+r+"?")
			return
		}
	}
	hump := humpRE.FindString(span)
	if !eventContext || c.known[ExplainWord][span] {
		return
	}
	for r := range c.known[Reason] {
		if humpRE.FindString(r) == hump {
			c.add(line, Reason, span, "not one of the Reason constants")
			return
		}
	}
}

func (c *checker) check(line int, kind, name, shown string) {
	if c.known[kind][name] {
		return
	}
	if _, ok := c.notNames[shown]; ok {
		c.notNames[shown] = true
		return
	}
	c.add(line, kind, shown, nearest(shown, kind, c.known[kind]))
}

func (c *checker) add(line int, kind, name, hint string) {
	f := Finding{File: c.file, Line: line, Kind: kind, Name: name, Hint: hint}
	if !slices.Contains(c.findings, f) {
		c.findings = append(c.findings, f)
	}
}

// nearest suggests the closest existing name.
func nearest(name, kind string, set map[string]bool) string {
	prefix := ""
	if kind == Flag {
		prefix, name = "--", strings.TrimPrefix(name, "--")
	}
	best, dist := "", 4
	for k := range set {
		if d := levenshtein.ComputeDistance(name, k); d < dist || (d == dist && k < best) {
			best, dist = k, d
		}
	}
	if best == "" {
		return ""
	}
	return "did you mean " + prefix + best + "?"
}
