package annotation

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/ripple-dev/ripple/internal/digest"
	"github.com/ripple-dev/ripple/internal/refs"
)

// names returns n distinct names of length bytes.
func names(n, length int, prefix string) []string {
	out := make([]string, n)
	for i := range out {
		s := fmt.Sprintf("%s%d-", prefix, i)
		out[i] = s + strings.Repeat("a", length-len(s))
	}
	return out
}

// The named-reload annotation's match budget: the costliest patterns the
// compile bounds accept, a hundred of them against a hundred names of
// 253 bytes (a gather took 9.1 s with "(?:.*){240}!"), are over it, with
// an error naming the annotation; what real workloads write, in a
// namespace of 2,000 configs, is well within it.
func TestPolicyMatchBudget(t *testing.T) {
	keys := DefaultKeys("")
	hostile := Parse(keys, refs.ConfigMap, map[string]string{cmReload: itemList(MaxItems, ".*a.*a.*a.*a%d")}, nil)
	if len(hostile.Invalid) != 0 || len(hostile.Named) != MaxItems {
		t.Fatalf("the hostile items do not pass the compile bounds: %v", hostile.Invalid)
	}
	err := hostile.CheckBudget(names(100, MaxItemLen, "cfg-"))
	want := `annotation "` + cmReload + `": matching its patterns against the 100 ConfigMaps of the namespace costs more than 8000000 units`
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("CheckBudget of 100 hostile items = %v, want %q...", err, want)
	}
	tpl := Parse(keys, refs.Secret, nil, map[string]string{secReload: "x.*"})
	if err := tpl.CheckBudget(names(5000, MaxItemLen, "x-")); err == nil || !strings.HasPrefix(err.Error(), `pod template annotation "`+secReload+`": `) {
		t.Errorf("CheckBudget on the pod template = %v, want an error naming it there", err)
	}
	for _, value := range []string{
		"app-config-.*, app-secret-.*, db-.*",                     // literal starts: a comparison a name
		".*-config, (frontend|backend)-(config|settings)-v[0-9]+", // none
		strings.Repeat("exact-name,", MaxItems-1) + "x",           // names only
	} {
		p := Parse(keys, refs.ConfigMap, map[string]string{cmReload: value}, nil)
		if err := p.CheckBudget(names(2000, 40, "app-config-")); err != nil {
			t.Errorf("CheckBudget(%.40q...) against 2,000 names: %v", value, err)
		}
	}
}

// The reload-on-keys budget: key patterns the compile bounds accept over
// the keys of a 1 MiB ConfigMap (about 84 ms a key pattern before) are
// over it; listed keys and real patterns are not.
func TestKeySpecMatchBudget(t *testing.T) {
	keys := DefaultKeys("")
	cm := &corev1.ConfigMap{Data: map[string]string{}}
	for _, k := range names(4000, MaxItemLen, "k") {
		cm.Data[k] = "v"
	}
	table := digest.ConfigMapKeys(cm)
	if len(table) < 1<<20 {
		t.Fatalf("the table is %d bytes, want over 1 MiB", len(table))
	}
	configs := func(yield func(refs.Ref, digest.KeyTable) bool) {
		yield(refs.Ref{Kind: refs.ConfigMap, Name: "big"}, table)
	}
	spec, err := ParseKeySpec(keys, map[string]string{keys.ReloadOnKeys: "big[" + itemList(10, ".*a.*a.*a.*a%d") + "]"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = spec.CheckBudget(configs)
	want := `annotation "` + keys.ReloadOnKeys + `": matching its patterns against the keys of the configs it lists costs more than 8000000 units`
	if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.HasSuffix(err.Error(), "; reloading on any data change") {
		t.Errorf("CheckBudget = %v, want %q...", err, want)
	}
	for _, v := range []string{"big[feature.*,db-url]", "true", "other[.*.*.*.*x]"} {
		spec, err := ParseKeySpec(keys, map[string]string{keys.ReloadOnKeys: v}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := spec.CheckBudget(configs); err != nil {
			t.Errorf("CheckBudget(%q) = %v", v, err)
		}
	}
}

// A pattern's result is remembered per item and name: a result in the
// memo is what Match returns (planted here, a wrong one), so that a
// repeated gather runs no pattern again.
func TestMatchRemembered(t *testing.T) {
	m, err := newMatcher("remembered-[a-z]+")
	if err != nil {
		t.Fatal(err)
	}
	if !m.Match("remembered-x") || m.Match("remembered-1") {
		t.Fatal("the pattern matches wrongly")
	}
	matches.Add(matchKey{"remembered-[a-z]+", "remembered-1"}, true)
	if !m.Match("remembered-1") {
		t.Error("Match ran the pattern again instead of reading its result")
	}
	// A name without the pattern's literal start is a comparison: nothing
	// is run, and nothing remembered.
	if m.Match("other-x") {
		t.Error(`"other-x" matches`)
	}
	if _, ok := matches.Get(matchKey{"remembered-[a-z]+", "other-x"}); ok {
		t.Error("a name without the literal start was matched and remembered")
	}
}

// KeysDigest is the table's digest of the keys the patterns match, and
// is remembered per table and selection: a result in the memo (planted
// here) is what it returns.
func TestKeysDigestRemembered(t *testing.T) {
	cm := &corev1.ConfigMap{Data: map[string]string{"feature.a": "1", "feature.b": "2", "db": "3"}}
	table := digest.ConfigMapKeys(cm)
	spec, err := ParseKeySpec(DefaultKeys(""), map[string]string{DefaultKeys("").ReloadOnKeys: "app[feature.*]"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ms, _ := spec.Listed(refs.Ref{Kind: refs.ConfigMap, Name: "app"})
	want := table.Of(func(k string) bool { return strings.HasPrefix(k, "feature.") })
	if got := KeysDigest(table, ms); got != want {
		t.Fatalf("KeysDigest = %s, want %s", got, want)
	}
	selections.Add(selectionKey(table, ms), "planted")
	if got := KeysDigest(table, ms); got != "planted" {
		t.Errorf("KeysDigest = %s: it matched the keys again instead of reading its result", got)
	}
	// Another table, or other items, is another entry.
	other := maps.Clone(cm.Data)
	other["feature.c"] = "4"
	if got := KeysDigest(digest.ConfigMapKeys(&corev1.ConfigMap{Data: other}), ms); got == "planted" {
		t.Error("another table read the first one's result")
	}
	spec2, _ := ParseKeySpec(DefaultKeys(""), map[string]string{DefaultKeys("").ReloadOnKeys: "app[feature.a,feature.b]"}, nil)
	ms2, _ := spec2.Listed(refs.Ref{Kind: refs.ConfigMap, Name: "app"})
	if got := KeysDigest(table, ms2); got == "planted" || slices.Equal(ms, ms2) {
		t.Error("other items read the first ones' result")
	}
}

// itemList is a comma list of n items made by format from their index.
func itemList(n int, format string) string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf(format, i)
	}
	return strings.Join(out, ",")
}

// BenchmarkMatchCost reports what a unit of matchCost takes (ns/unit) for
// the costliest shapes the compile bounds accept, against a 253-byte
// name, and for a real pattern: docs/security.md states the figures.
func BenchmarkMatchCost(b *testing.B) {
	name := strings.Repeat("a", MaxItemLen)
	for _, item := range []string{".*a.*a.*a.*a!", "(.*)(.*)(.*)(.*)!", strings.Repeat("[a-z]?", 40) + "!", "app-config-.*"} {
		m, err := newMatcher(item)
		if err != nil {
			b.Fatal(err)
		}
		in := name
		if m.prefix != "" {
			in = m.prefix + name[len(m.prefix):]
		}
		b.Run(item, func(b *testing.B) {
			for b.Loop() {
				m.re.MatchString(in)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(int64(b.N)*m.matchCost(in)), "ns/unit")
		})
	}
}
