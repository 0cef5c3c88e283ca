package docs

import (
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/ripple-dev/ripple/internal/reason"
)

// A README passage that must agree with a source says which, in an HTML
// comment at its end: <!-- docs-check: figures docs/performance.md -->
// (every figure in it is one the page measured) or <!-- docs-check:
// event-reasons all|ripple --> (it names every Event reason of the
// registry, or every one but Reloader's).
var passageRE = regexp.MustCompile(`<!--\s*docs-check:\s*(figures|event-reasons)\s+(\S+)\s*-->`)

// passage is one checked passage: its kind, argument, text and line.
type passage struct {
	kind, arg, text string
	line            int
}

// passages returns the checked passages of a page. A passage is the text
// of the list item or paragraph that holds its comment, up to the
// comment.
func passages(text string) []passage {
	var out []passage
	for _, m := range passageRE.FindAllStringSubmatchIndex(text, -1) {
		before := text[:m[0]]
		lines := strings.Split(before, "\n")
		start := len(lines) - 1
		for ; start > 0; start-- {
			l := lines[start]
			// The marker's own line may hold nothing before it.
			if strings.TrimSpace(l) == "" && start < len(lines)-1 {
				start++
				break
			}
			if strings.HasPrefix(l, "- ") {
				break
			}
		}
		out = append(out, passage{
			kind: text[m[2]:m[3]], arg: text[m[4]:m[5]],
			text: strings.Join(lines[start:], "\n"), line: len(lines),
		})
	}
	return out
}

// reloadersReasons are the Event reasons Reloader has too.
var reloadersReasons = []reason.Reason{reason.Reloaded, reason.ReloadFail}

var backticked = regexp.MustCompile("`([A-Za-z]+)`")

// The README's lists of Event reasons name every Event reason of the
// registry (internal/reason): one added to the registry fails this until
// the README names it too.
func TestReadmeNamesEveryEventReason(t *testing.T) {
	readme := readDoc(t, "README.md")
	seen := map[string]int{}
	for _, p := range passages(readme) {
		if p.kind != "event-reasons" {
			continue
		}
		seen[p.arg]++
		named := map[string]bool{}
		for _, m := range backticked.FindAllStringSubmatch(p.text, -1) {
			named[m[1]] = true
		}
		for _, i := range reason.All() {
			if !i.Event || (p.arg == "ripple" && slices.Contains(reloadersReasons, i.Reason)) {
				continue
			}
			if !named[string(i.Reason)] {
				t.Errorf("README.md:%d: the list of %s Event reasons lacks %s, an Event reason of the registry", p.line, p.arg, i.Reason)
			}
		}
	}
	for _, arg := range []string{"all", "ripple"} {
		if seen[arg] == 0 {
			t.Errorf("README.md has no passage marked <!-- docs-check: event-reasons %s -->; keep the marker on its list of Event reasons", arg)
		}
	}
	for arg := range seen {
		if arg != "all" && arg != "ripple" {
			t.Errorf("README.md: <!-- docs-check: event-reasons %s -->: want all or ripple", arg)
		}
	}
	for _, r := range reloadersReasons {
		if _, ok := reason.Lookup(r); !ok {
			t.Errorf("Reloader's reason %s is not in the registry", r)
		}
	}
}

// figureRE is a figure with its unit: a number or a range of two, then
// a time, a size, or a count of workloads or configs.
var figureRE = regexp.MustCompile(`(\d[\d,]*(?:\.\d+)?)(?:\s*(?:to|-|–)\s*(\d[\d,]*(?:\.\d+)?))?\s*(ms|s|MiB|KiB|GiB|min|minutes|workloads|Deployments|configs)\b`)

// figures returns the figures of a text, written one way: "254-290 MiB".
func figures(text string) []string {
	var out []string
	for _, m := range figureRE.FindAllStringSubmatch(text, -1) {
		f := m[1]
		if m[2] != "" {
			f += "-" + m[2]
		}
		unit := m[3]
		if unit == "min" {
			unit = "minutes"
		}
		out = append(out, f+" "+unit)
	}
	return out
}

// Every figure of the README's performance claims (the passages marked
// <!-- docs-check: figures docs/performance.md -->) is one that
// docs/performance.md states, so that a new measurement there fails this
// until the README follows.
func TestReadmeFiguresAreMeasured(t *testing.T) {
	readme := readDoc(t, "README.md")
	n := 0
	for _, p := range passages(readme) {
		if p.kind != "figures" {
			continue
		}
		n++
		source := map[string]bool{}
		for _, f := range figures(readDoc(t, p.arg)) {
			source[f] = true
		}
		got := figures(p.text)
		if len(got) == 0 {
			t.Errorf("README.md:%d: a passage checked against %s has no figures", p.line, p.arg)
		}
		for _, f := range got {
			if !source[f] {
				t.Errorf("README.md:%d: %q is not a figure %s states (it has e.g. %q)", p.line, f, p.arg, slices.Sorted(maps.Keys(source))[:min(5, len(source))])
			}
		}
	}
	if n == 0 {
		t.Error("README.md has no passage marked <!-- docs-check: figures docs/performance.md -->; keep the marker on its Scale claim")
	}
}

// The finders themselves.
func TestPassagesAndFigures(t *testing.T) {
	text := "Intro.\n\n- One: 254 to 290 MiB, 29 ms and\n  ~10 min, 4-6 minutes, 50,000 workloads.\n  <!-- docs-check: figures docs/performance.md -->\n" +
		"- Two `Reloaded`<!-- docs-check: event-reasons all --> after\n"
	ps := passages(text)
	if len(ps) != 2 || ps[0].kind != "figures" || ps[0].arg != "docs/performance.md" || ps[1].kind != "event-reasons" || ps[1].arg != "all" {
		t.Fatalf("passages = %+v", ps)
	}
	if !strings.HasPrefix(ps[0].text, "- One:") || strings.Contains(ps[0].text, "Intro") || ps[1].text != "- Two `Reloaded`" {
		t.Errorf("passage texts = %q, %q", ps[0].text, ps[1].text)
	}
	got := figures(ps[0].text)
	want := []string{"254-290 MiB", "29 ms", "10 minutes", "4-6 minutes", "50,000 workloads"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("figures = %q, want %q", got, want)
	}
}
