package annotation

import (
	"fmt"
	"regexp/syntax"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ripple-dev/ripple/internal/refs"
)

// Every pattern form Reloader's users write passes the bounds (the
// examples of upstream-behavior.md and of Reloader's own tests, and a
// long but plain one), and each bound rejects what passes it.
func TestMatcherBounds(t *testing.T) {
	for _, item := range []string{
		"app-config-.*", "app-secret-.*", "[a-z]+-cfg", `app\.v[0-9]`, "a|b",
		"(frontend|backend)-(config|settings)-v[0-9]+", "^prefix-.*$", ".*",
		strings.Repeat("x", MaxItemLen-2) + ".*", // the longest item, a pattern
		strings.Repeat("a", MaxItemLen),          // the longest name
		"[a-z0-9]{1,63}",                         // a bounded repeat
	} {
		if _, err := newMatcher(item); err != nil {
			t.Errorf("newMatcher(%q): %v, want a valid item", item, err)
		}
	}
	for _, tc := range []struct{ item, err string }{
		{strings.Repeat("a", MaxItemLen+1), "254 bytes long, more than 253"},
		{strings.Repeat("a", MaxItemLen-1) + ".*", "254 bytes long"},
		{"(abc{30}){30}", "more than 300 instructions"},
		{"[a-z]{1000}", "more than 300 instructions"},
		{"(((a{5}){5}){5}){5}", "more than 300 instructions"},
		{"[a-z0-9-]{1,253}", "more than 300 instructions"},
		{"a{1001}", "invalid repeat count"},
	} {
		if _, err := newMatcher(tc.item); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("newMatcher(%.40q...): %v, want an error saying %q", tc.item, err, tc.err)
		}
	}
}

// The shapes that make matching slow rather than the program big are
// rejected: a repeat of what can match the empty string ("(?:.*){240}!",
// 12 bytes and 485 instructions, cost 0.9 ms a name), a repeat of an
// unbounded repeat, and more than MaxUnbounded unbounded repeats. An
// optional part and counted repeats of what cannot match empty pass.
func TestMatcherShape(t *testing.T) {
	for _, item := range []string{
		"app(-.*)?", "(?:-[a-z]+)?-cfg", "(?:ab){2,8}", "[a-z]+-[0-9]+", ".*-config-.*",
		".*a.*b.*c.*", "(?:a|b){3}", "x{2,}y", "(?:.*)?", "(?:.*){1}",
	} {
		if _, err := newMatcher(item); err != nil {
			t.Errorf("newMatcher(%q): %v, want a valid item", item, err)
		}
	}
	for _, tc := range []struct{ item, err string }{
		{"(?:.*){240}!", "repeats (?-s:.*), which can match the empty string"},
		{"(?:a*)*b", "repeats a*, which can match the empty string"},
		{"(a?b?){9}", "which can match the empty string"},
		{"(?:x|){50}", "which can match the empty string"},
		{"(?:^){9}x", "which can match the empty string"},
		{"(a+)+b", "repeats (a+), which repeats without limit itself"},
		{"(?:.*x){3}", "which repeats without limit itself"},
		{"(?:[a-z]+-)+cfg", "which repeats without limit itself"},
		{"(?:a{2,})*", "which repeats without limit itself"},
		{".*.*.*.*.*!", "5 unbounded repeats (*, +, {n,}), more than 4"},
		{"a+b+c+d+e{1,}", "5 unbounded repeats"},
	} {
		if _, err := newMatcher(tc.item); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("newMatcher(%q): %v, want an error saying %q", tc.item, err, tc.err)
		}
	}
}

// The estimate never lets through a program over the bound that the
// compiled count would reject (so the compiled count decides), and the
// accepted ones compile within it.
func TestEstimateCoversCompiledSize(t *testing.T) {
	for _, item := range []string{"a", "app-.*", "(a|b|c)+d?", "[a-z]{1,63}", "x{5,10}y*", "(ab){0,100}", "(a{10}){10}", "a{3,}"} {
		re, err := syntax.Parse("^(?:"+item+")$", syntax.Perl)
		if err != nil {
			t.Fatal(err)
		}
		prog, err := syntax.Compile(re.Simplify())
		if err != nil {
			t.Fatal(err)
		}
		if est := estimate(re, 1<<30); est < len(prog.Inst) {
			t.Errorf("estimate(%q) = %d, below the %d instructions compiled", item, est, len(prog.Inst))
		}
	}
}

// A value over MaxItems items is rejected whole, with a message naming the
// annotation; MaxItems items are read.
func TestParseItemBound(t *testing.T) {
	keys := DefaultKeys("")
	list := func(n int) string {
		items := make([]string, n)
		for i := range items {
			items[i] = fmt.Sprintf("cfg-%d-.*", i)
		}
		return strings.Join(items, ", ")
	}
	p := Parse(keys, refs.ConfigMap, map[string]string{cmReload: list(MaxItems)}, nil)
	if len(p.Named) != MaxItems || len(p.Invalid) != 0 {
		t.Errorf("%d items: %d named, invalid %v", MaxItems, len(p.Named), p.Invalid)
	}
	p = Parse(keys, refs.ConfigMap, map[string]string{cmReload: list(MaxItems + 1)}, nil)
	if len(p.Named) != 0 || len(p.Invalid) != 1 || !strings.Contains(p.Invalid[0].Error(), `annotation "`+cmReload+`": 101 items, more than 100`) {
		t.Errorf("%d items: %d named, invalid %v", MaxItems+1, len(p.Named), p.Invalid)
	}
	if names, pattern := Names(keys, refs.ConfigMap, map[string]string{cmReload: list(MaxItems + 1)}); names != nil || pattern {
		t.Errorf("Names of a rejected value = %v, %v; want nothing", names, pattern)
	}
}

// An overlong item is quoted cut in the message, so that a 255 KiB value
// cannot make a 255 KiB Event.
func TestParseInvalidItemMessageIsShort(t *testing.T) {
	item := strings.Repeat("(", 200_000)
	p := Parse(DefaultKeys(""), refs.ConfigMap, map[string]string{cmReload: item}, nil)
	if len(p.Invalid) != 1 || len(p.Invalid[0].Error()) > 2*MaxItemLen || !strings.Contains(p.Invalid[0].Error(), "200000 bytes long") {
		t.Errorf("invalid = %.400v", p.Invalid)
	}
}

// The attack of issue 33: a 255 KiB value of patterns, and one of
// patterns with huge compiled programs, parse in milliseconds and small
// memory, where compiling them took seconds and gigabytes.
func TestParseHostileValueIsCheap(t *testing.T) {
	keys := DefaultKeys("")
	// Distinct items, so that the first parse compiles each.
	items := func(n int, format string) string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf(format, i)
		}
		return strings.Join(out, ",")
	}
	huge := map[string]string{
		cmReload:          items(255<<10/16, "(a{30}b{30}){30}%d"),
		secReload:         items(MaxItems, "(((x{5}){5}){5}){5}%d"),
		keys.ReloadOnKeys: "app[" + items(MaxItems, "(k{30}j{30}){30}%d") + "]",
	}
	parse := func() {
		Parse(keys, refs.ConfigMap, huge, nil)
		Parse(keys, refs.Secret, huge, nil)
		_, _ = ParseKeySpec(keys, huge, nil)
	}
	start := time.Now()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	parse()
	runtime.ReadMemStats(&after)
	if elapsed := time.Since(start); elapsed > time.Second {
		t.Errorf("a parse took %v", elapsed)
	}
	if bytes := after.TotalAlloc - before.TotalAlloc; bytes > 4<<20 {
		t.Errorf("a parse allocated %d bytes, want under 4 MiB", bytes)
	}
	// Then each item is the cache's: the split and the messages are left.
	if allocs := testing.AllocsPerRun(3, parse); allocs > 1000 {
		t.Errorf("a parse allocates %v times once cached", allocs)
	}
}

// The exclude annotations have the named-reload key's bounds: MaxItems
// items are read, a longer value excludes nothing, an overlong item is
// left out; each is reported naming the annotation, and the rest of the
// workload's policy still applies.
func TestExcludeBounds(t *testing.T) {
	keys := DefaultKeys("")
	list := func(n int) string {
		items := make([]string, n)
		for i := range items {
			items[i] = fmt.Sprintf("cfg-%d", i)
		}
		return strings.Join(items, ",")
	}
	p := Parse(keys, refs.ConfigMap, map[string]string{cmExclude: list(MaxItems), cmReload: "app"}, nil)
	if len(p.Exclude) != MaxItems || len(p.Invalid) != 0 || len(p.Named) != 1 {
		t.Errorf("%d items: %d excluded, %d named, invalid %v", MaxItems, len(p.Exclude), len(p.Named), p.Invalid)
	}
	if p.ExcludeAll {
		t.Errorf("%d items exclude every ConfigMap", MaxItems)
	}
	// Past the bound the list fails closed: it could name any ConfigMap,
	// so it excludes them all.
	p = Parse(keys, refs.ConfigMap, map[string]string{cmExclude: list(20_000), cmReload: "app"}, nil)
	if !p.ExcludeAll || len(p.Exclude) != 0 || len(p.Named) != 1 || len(p.Invalid) != 1 ||
		p.Invalid[0].Error() != `annotation "`+cmExclude+`": 20000 items, more than 100; excluding every ConfigMap instead, until it lists at most 100` {
		t.Errorf("20000 items: all %v, %d excluded, %d named, invalid %v", p.ExcludeAll, len(p.Exclude), len(p.Named), p.Invalid)
	}
	// Per kind: the Secret policy of the same workload excludes nothing.
	if p := Parse(keys, refs.Secret, map[string]string{cmExclude: list(20_000)}, nil); p.ExcludeAll || len(p.Invalid) != 0 {
		t.Errorf("a ConfigMap exclude list over the bound: the Secret policy excludes all %v, invalid %v", p.ExcludeAll, p.Invalid)
	}
	long := strings.Repeat("x", 100_000)
	p = Parse(keys, refs.Secret, map[string]string{secExclude: "db, " + long + ", " + strings.Repeat("y", MaxItemLen)}, nil)
	if len(p.Exclude) != 2 || p.Exclude[0] != "db" || len(p.Invalid) != 1 {
		t.Fatalf("an overlong item: excluded %.60q, invalid %.300v", p.Exclude, p.Invalid)
	}
	msg := p.Invalid[0].Error()
	if !strings.HasPrefix(msg, `annotation "`+secExclude+`": item "xxx`) || !strings.HasSuffix(msg, `... is 100000 bytes long, more than 253: no config has such a name`) ||
		len(msg) > 2*MaxItemLen {
		t.Errorf("message %.400q", msg)
	}
}
