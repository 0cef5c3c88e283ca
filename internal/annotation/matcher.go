package annotation

import (
	"fmt"
	"regexp"
	"strings"
)

// Matcher matches a config name against one item of a named-reload
// annotation (A5-A7).
//
// Reloader wraps every item in anchors and compiles it as a regular
// expression, so a "." in a plain name is a wildcard and "app.config" also
// reloads on "app-config". Ripple fixes that without breaking patterns people
// rely on: an item made only of characters valid in a Kubernetes object name
// ([a-z0-9.-]) is an exact, literal name; any other item is compiled once as
// the anchored regular expression ^(?:item)$, so "app-config-.*" still works.
// The non-capturing group also makes alternation anchor as a whole: "a|b"
// matches exactly "a" or "b", where Reloader's "^a|b$" matched any name
// starting with "a" or ending with "b".
//
// An item longer than MaxItemLen, a pattern that compiles to more than
// MaxInstructions instructions, or one of the shapes checkShape rejects,
// is invalid. What matching a list costs is bounded in match.go.
//
// The zero Matcher is the literal empty name and matches only "".
type Matcher struct {
	item string
	re   *regexp.Regexp // nil for a literal item
	// prefix is the literal start every name the pattern matches has, so
	// that a name without it is refused by a comparison.
	prefix string
	// insts is the size of the compiled program (matchCost).
	insts int
}

// newMatcher builds the matcher for one trimmed, non-empty item.
func newMatcher(item string) (Matcher, error) { return compile(item, isNameLiteral) }

// compile builds the matcher of an item: exact when literal says so, else
// an anchored regular expression, compiled once per item (see MaxItemLen
// and MaxInstructions for the bounds).
func compile(item string, literal func(string) bool) (Matcher, error) {
	if err := checkLen(item); err != nil {
		return Matcher{}, err
	}
	if literal(item) {
		return Matcher{item: item}, nil
	}
	c, err := pattern(item)
	if err != nil {
		return Matcher{}, err
	}
	prefix, _ := c.re.LiteralPrefix()
	return Matcher{item: item, re: c.re, prefix: prefix, insts: c.insts}, nil
}

// Match reports whether name matches the item. A pattern's result is
// remembered per item and name (match.go), so that the gathers of every
// reconcile do not match the same names again.
func (m Matcher) Match(name string) bool {
	if m.re == nil {
		return name == m.item
	}
	if !strings.HasPrefix(name, m.prefix) {
		return false
	}
	return m.matchMemo(name)
}

// String returns the item as written in the annotation, trimmed.
func (m Matcher) String() string { return m.item }

// Literal reports whether the matcher is an exact name, so that callers can
// look it up in an index instead of scanning; the name is String().
func (m Matcher) Literal() bool { return m.re == nil }

// GoString makes %#v print the item rather than compiled regexp internals.
func (m Matcher) GoString() string {
	if m.Literal() {
		return fmt.Sprintf("annotation.Matcher{literal: %q}", m.item)
	}
	return fmt.Sprintf("annotation.Matcher{pattern: %q}", m.item)
}

// isNameLiteral reports whether s uses only characters that may appear in a
// Kubernetes object name. Such an item cannot be meant as a pattern except
// for ".", which in a name is always a dot.
func isNameLiteral(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '.' && c != '-' {
			return false
		}
	}
	return true
}
