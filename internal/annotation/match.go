package annotation

import (
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"iter"
	"slices"
	"strings"

	"k8s.io/utils/lru"

	"github.com/ripple-dev/ripple/internal/digest"
	"github.com/ripple-dev/ripple/internal/refs"
)

// The bounds on matching. The compile bounds (bounds.go) keep one match
// cheap; a tenant still chooses how many names and keys its patterns are
// matched against (the configs of its namespace, the keys of a 1 MiB
// ConfigMap), so the work of one reconcile is budgeted too, and what was
// matched is remembered, so that the next reconcile does not match it
// again.
const (
	// MatchBudget is the most work, in match units, that matching one
	// annotation's patterns may cost in one reconcile: the named-reload
	// annotation of a kind against the names of that kind in the
	// workload's namespace, the reload-on-keys annotation against the
	// keys of the configs it lists. A unit is one compiled instruction
	// against one byte of a name or key (matchCost); the costliest
	// patterns the compile bounds accept take about 16 ns a unit on one
	// core (docs/security.md), so the budget is about 130 ms of CPU at
	// worst, and far less for real patterns, which run well below a
	// nanosecond a unit. Past it the annotation is invalid: a Warning
	// names it, and the workload reads it as if it were not set.
	// "(frontend|backend)-(config|settings)-v[0-9]+" against 2,000 names
	// of 40 bytes costs 4,100,000 units; "app-config-.*" 2,000, as a name
	// without a pattern's literal start costs one.
	MatchBudget = 8_000_000
	// CachedMatches bounds the match results remembered per item and
	// name; each holds two strings of at most MaxItemLen bytes, so the
	// memo holds at most about 20 MiB.
	CachedMatches = 32768
	// CachedSelections bounds the per-key digests remembered per key
	// table and selection of keys (KeysDigest).
	CachedSelections = 4096
)

var (
	// matches memoizes Matcher.Match of a pattern by item and name; it
	// changes no result.
	matches = lru.New(CachedMatches)
	// selections memoizes KeysDigest by table and items.
	selections = lru.New(CachedSelections)
	// seeds are the keys of the hashes that name a selection.
	seeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}
)

type matchKey struct{ item, name string }

// matchMemo runs the pattern on name through the memo. The strings kept
// are copies: an item is a substring of an annotation value of up to
// 256 KiB, which a kept substring would pin.
func (m Matcher) matchMemo(name string) bool {
	if v, ok := matches.Get(matchKey{m.item, name}); ok {
		if b, ok := v.(bool); ok { // only matchMemo adds, so always
			return b
		}
	}
	got := m.re.MatchString(name)
	matches.Add(matchKey{strings.Clone(m.item), strings.Clone(name)}, got)
	return got
}

// matchCost is the most work of matching name against m, in units: Go's
// matchers (one-pass, backtracking with a visited set, or the NFA)
// each visit an instruction at most once per byte of the name, so a
// program of n instructions costs at most n units a byte, plus one for
// the end. A literal item, and a name without the pattern's literal
// start, is a comparison: one unit.
func (m Matcher) matchCost(name string) int64 {
	if m.re == nil || !strings.HasPrefix(name, m.prefix) {
		return 1
	}
	return int64(m.insts) * int64(len(name)+1)
}

// cost is the most work of matching every name against every item of
// ms, stopping once it passes MatchBudget.
func cost(ms []Matcher, names iter.Seq[string], spent int64) int64 {
	for name := range names {
		for _, m := range ms {
			if spent += m.matchCost(name); spent > MatchBudget {
				return spent
			}
		}
	}
	return spent
}

// errOverBudget is the error of an annotation whose matching costs more
// than MatchBudget.
func errOverBudget(against string) error {
	return fmt.Errorf("matching its patterns against %s costs more than %d units (one compiled instruction against one byte), "+
		"the budget of one reconcile; ignoring it whole", against, MatchBudget)
}

// CheckBudget reports, with an error naming the named-reload annotation,
// when matching its patterns against names, the configs of the kind in
// the workload's namespace, costs more than MatchBudget. The caller then
// ignores the annotation whole (Named), as one over MaxItems, so that
// what it reloads on never depends on how far a match got.
func (p Policy) CheckBudget(names []string) error {
	if !slices.ContainsFunc(p.Named, func(m Matcher) bool { return !m.Literal() }) {
		return nil
	}
	if cost(p.Named, slices.Values(names), 0) <= MatchBudget {
		return nil
	}
	return fmt.Errorf("%s %q: %w", p.where, p.namedKey, errOverBudget(fmt.Sprintf("the %d %ss of the namespace", len(names), p.kind)))
}

// CheckBudget reports, with an error naming the reload-on-keys annotation,
// when matching its key patterns against the keys of the configs it lists
// costs more than MatchBudget; configs are the workload's configs and
// their key tables. The caller then reads the annotation as invalid (the
// zero KeySpec: a reload on any data change).
func (s KeySpec) CheckBudget(configs iter.Seq2[refs.Ref, digest.KeyTable]) error {
	var spent int64
	for ref, table := range configs {
		ms, ok := s.Listed(ref)
		if !ok {
			continue
		}
		keys := func(yield func(string) bool) {
			for k := range table.All() {
				if !yield(k) {
					return
				}
			}
		}
		if spent = cost(ms, keys, spent); spent > MatchBudget {
			return fmt.Errorf("%s %q: %w; reloading on any data change", s.where, s.key, errOverBudget("the keys of the configs it lists"))
		}
	}
	return nil
}

// KeysDigest is table.Of the keys that match one of ms, remembered per
// table and selection, so that the forms of a 1 MiB ConfigMap's table
// compared in every reconcile are matched once. The memo is keyed by two
// independent 64-bit keyed hashes of the table and the items: their seeds
// are random per process and never shown, so a tenant cannot aim at a
// collision.
func KeysDigest(table digest.KeyTable, ms []Matcher) string {
	key := selectionKey(table, ms)
	if v, ok := selections.Get(key); ok {
		if d, ok := v.(string); ok { // only KeysDigest adds, so always
			return d
		}
	}
	d := table.Of(func(k string) bool { return slices.ContainsFunc(ms, func(m Matcher) bool { return m.Match(k) }) })
	selections.Add(key, d)
	return d
}

// selectionKey names table and the items of ms in the selections memo;
// each item is written after its length, so that no two lists of items
// write the same bytes.
func selectionKey(table digest.KeyTable, ms []Matcher) [2]uint64 {
	var key [2]uint64
	for i, seed := range seeds {
		var h maphash.Hash
		h.SetSeed(seed)
		_, _ = h.WriteString(string(table)) // a maphash.Hash never fails to write
		for _, m := range ms {
			_, _ = h.Write(binary.LittleEndian.AppendUint64(nil, uint64(len(m.item))))
			_, _ = h.WriteString(m.item)
		}
		key[i] = h.Sum64()
	}
	return key
}
