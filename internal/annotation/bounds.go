package annotation

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"slices"

	"k8s.io/utils/lru"
)

// The bounds on the pattern lists Ripple reads (the named-reload
// annotations and the reload-on-keys spec). Any tenant who may edit a
// workload writes these values and Ripple compiles them with cluster-wide
// rights, so their cost must not depend on the value alone.
const (
	// MaxItems is the most items one annotation may list: Reloader's
	// users list a few names or one pattern per config; a value past it is
	// rejected whole.
	MaxItems = 100
	// MaxItemLen is the longest item, in bytes: the longest Kubernetes
	// object name (a DNS subdomain) and the longest config key.
	MaxItemLen = 253
	// MaxInstructions is the largest compiled program of a pattern item.
	// Matching a name costs up to the program's size per byte of the name
	// (Go's matchers visit each instruction at most once per byte), so the
	// bound is what real patterns need: "app-config-.*" compiles to about
	// 20 instructions, "[a-z0-9]{1,63}" to 130, the longest item (a
	// 251-byte prefix and ".*") to 260.
	MaxInstructions = 300
	// MaxUnbounded is the most unbounded repeats (*, +, {n,}) one pattern
	// item may have: each keeps a matcher thread alive for the whole
	// name; real patterns have one or two (".*-config-.*").
	MaxUnbounded = 4
)

// CachedPatterns bounds the compiled patterns kept: items are at most
// MaxItemLen bytes and MaxInstructions instructions, so the cache holds a
// few tens of megabytes at worst.
const CachedPatterns = 1024

// compiled memoizes pattern by item, so a reconcile compiles nothing it
// compiled before; it changes no result.
var compiled = lru.New(CachedPatterns)

// cachedPattern is one compiled item, or why it is not a valid pattern.
type cachedPattern struct {
	re *regexp.Regexp
	// insts is the size of its compiled program, the cost of a match per
	// byte of the name (matchCost).
	insts int
	err   error
}

// pattern compiles item as the anchored regular expression ^(?:item)$,
// within the bounds, through the cache.
func pattern(item string) (cachedPattern, error) {
	if v, ok := compiled.Get(item); ok {
		if c, ok := v.(cachedPattern); ok { // only pattern adds, so always
			return c, c.err
		}
	}
	c := compileBounded(item)
	compiled.Add(item, c)
	return c, c.err
}

// compileBounded checks the item's size and shape before the steps whose
// cost grows with it: parsing is linear in the item, but simplifying and
// compiling repeat nested counted repetitions.
func compileBounded(item string) cachedPattern {
	re, insts, err := compileChecked(item)
	return cachedPattern{re: re, insts: insts, err: err}
}

func compileChecked(item string) (*regexp.Regexp, int, error) {
	// Parse the item on its own first: wrapping it could otherwise turn an
	// unbalanced item such as "a)|(b" into a valid but meaningless pattern.
	// The error is the one regexp.Compile gives.
	if _, err := syntax.Parse(item, syntax.Perl); err != nil {
		return nil, 0, err
	}
	expr := "^(?:" + item + ")$"
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return nil, 0, err
	}
	if err := checkShape(re); err != nil {
		return nil, 0, err
	}
	tooBig := fmt.Errorf("compiles to more than %d instructions", MaxInstructions)
	if estimate(re, MaxInstructions) > MaxInstructions {
		return nil, 0, tooBig
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return nil, 0, err
	}
	if len(prog.Inst) > MaxInstructions {
		return nil, 0, tooBig
	}
	compiled, err := regexp.Compile(expr)
	return compiled, len(prog.Inst), err
}

// checkShape rejects the repeats that make matching slow rather than the
// program big: a repeat of a sub-pattern that can match the empty string
// ("(?:.*){240}", "(a*)+") or that itself repeats without limit
// ("(a+)+", "(?:.*x){3}"), and more than MaxUnbounded unbounded repeats.
// An optional part ("(-.*)?") does not repeat and is allowed.
func checkShape(re *syntax.Regexp) error {
	unbounded := 0
	var walk func(re *syntax.Regexp) error
	walk = func(re *syntax.Regexp) error {
		if isUnbounded(re) {
			unbounded++
		}
		if repeats(re) {
			sub := re.Sub[0]
			switch {
			case matchesEmpty(sub):
				return fmt.Errorf("repeats %s, which can match the empty string", sub)
			case hasUnbounded(sub):
				return fmt.Errorf("repeats %s, which repeats without limit itself", sub)
			}
		}
		for _, sub := range re.Sub {
			if err := walk(sub); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(re); err != nil {
		return err
	}
	if unbounded > MaxUnbounded {
		return fmt.Errorf("%d unbounded repeats (*, +, {n,}), more than %d", unbounded, MaxUnbounded)
	}
	return nil
}

// repeats reports whether re matches its sub-pattern more than once.
func repeats(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpStar, syntax.OpPlus:
		return true
	case syntax.OpRepeat:
		return re.Max != 0 && re.Max != 1
	}
	return false
}

func isUnbounded(re *syntax.Regexp) bool {
	return re.Op == syntax.OpStar || re.Op == syntax.OpPlus || re.Op == syntax.OpRepeat && re.Max == -1
}

func hasUnbounded(re *syntax.Regexp) bool {
	return isUnbounded(re) || slices.ContainsFunc(re.Sub, hasUnbounded)
}

// matchesEmpty reports whether re can match the empty string.
func matchesEmpty(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpLiteral:
		return len(re.Rune) == 0
	case syntax.OpCharClass, syntax.OpAnyChar, syntax.OpAnyCharNotNL, syntax.OpNoMatch:
		return false
	case syntax.OpCapture, syntax.OpPlus:
		return matchesEmpty(re.Sub[0])
	case syntax.OpRepeat:
		return re.Min == 0 || matchesEmpty(re.Sub[0])
	case syntax.OpConcat:
		return !slices.ContainsFunc(re.Sub, func(sub *syntax.Regexp) bool { return !matchesEmpty(sub) })
	case syntax.OpAlternate:
		return slices.ContainsFunc(re.Sub, matchesEmpty)
	}
	// Star, Quest, the empty match and the zero-width assertions.
	return true
}

// checkLen rejects an item over MaxItemLen: no object name or key is that
// long, so it can only be a mistake or an attack.
func checkLen(item string) error {
	if len(item) > MaxItemLen {
		return fmt.Errorf("%d bytes long, more than %d", len(item), MaxItemLen)
	}
	return nil
}

// errTooMany is the error of a list over MaxItems.
func errTooMany(n int) error {
	return fmt.Errorf("%d items, more than %d", n, MaxItems)
}

// estimate is an upper bound, close enough, on the instructions of re once
// simplified and compiled, stopping as soon as it passes limit: counted
// repetitions multiply, so it is computed on the parsed tree before
// Simplify expands them.
func estimate(re *syntax.Regexp, limit int) int {
	n := 0
	switch re.Op {
	case syntax.OpLiteral:
		n = len(re.Rune)
	case syntax.OpConcat, syntax.OpAlternate:
		n = len(re.Sub)
		for _, sub := range re.Sub {
			if n += estimate(sub, limit); n > limit {
				break
			}
		}
	case syntax.OpCapture, syntax.OpStar, syntax.OpPlus, syntax.OpQuest:
		n = 2 + estimate(re.Sub[0], limit)
	case syntax.OpRepeat:
		times := max(re.Min, re.Max) + 1
		n = times * (1 + estimate(re.Sub[0], limit))
	default:
		n = 1
	}
	// Saturate, so that nested repeats cannot overflow.
	return min(n, limit+1)
}
