package annotation

import (
	"fmt"
	"regexp"
	"regexp/syntax"

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
	// MaxInstructions is the largest compiled program of a pattern item:
	// "app-config-.*" compiles to about 20 instructions, while a short
	// item with nested repeats such as "(a{30}b{30}){30}" to about 1,800,
	// and a long value of such items cost seconds and gigabytes.
	MaxInstructions = 1000
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
	re  *regexp.Regexp
	err error
}

// pattern compiles item as the anchored regular expression ^(?:item)$,
// within the bounds, through the cache.
func pattern(item string) (*regexp.Regexp, error) {
	if v, ok := compiled.Get(item); ok {
		if c, ok := v.(cachedPattern); ok { // only pattern adds, so always
			return c.re, c.err
		}
	}
	re, err := compileBounded(item)
	compiled.Add(item, cachedPattern{re: re, err: err})
	return re, err
}

// compileBounded checks the item's size before the steps whose cost
// grows with it: parsing is linear in the item, but simplifying and
// compiling repeat nested counted repetitions.
func compileBounded(item string) (*regexp.Regexp, error) {
	// Parse the item on its own first: wrapping it could otherwise turn an
	// unbalanced item such as "a)|(b" into a valid but meaningless pattern.
	// The error is the one regexp.Compile gives.
	if _, err := syntax.Parse(item, syntax.Perl); err != nil {
		return nil, err
	}
	expr := "^(?:" + item + ")$"
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return nil, err
	}
	tooBig := fmt.Errorf("compiles to more than %d instructions", MaxInstructions)
	if estimate(re, MaxInstructions) > MaxInstructions {
		return nil, tooBig
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return nil, err
	}
	if len(prog.Inst) > MaxInstructions {
		return nil, tooBig
	}
	return regexp.Compile(expr)
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
	return fmt.Errorf("%d items, more than %d; ignoring them all", n, MaxItems)
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
