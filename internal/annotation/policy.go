package annotation

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/ripple-dev/ripple/internal/refs"
)

// Policy is what a workload's annotations say about one kind of config source.
type Policy struct {
	// Named holds the items of the named-reload key for the kind (A5-A7):
	// the comma list, each item trimmed, empty items dropped, invalid
	// patterns left out (see Invalid).
	Named []Matcher
	// Search is true when the search key (A8) is exactly "true".
	Search bool
	// Auto is true when the auto key (A1) or the typed-auto key for this kind
	// (A2-A4) parses as true with strconv.ParseBool.
	Auto bool
	// AutoKey is the key that turned Auto on (A1 when both did), for
	// messages; empty when Auto is false.
	AutoKey string
	// AutoSet is true when the auto key or the typed-auto key for this kind
	// is present with a non-empty value. Reloader lets any such value,
	// including "false" and garbage, turn off --auto-reload-all.
	AutoSet bool
	// Exclude holds the exact names from the exclude key for this kind
	// (A11-A13), trimmed, empty items dropped. Reloader reads it from the
	// workload metadata only, never from the pod template. It has the
	// bounds of the named-reload key: an item longer than MaxItemLen (no
	// config's name is) is left out, and a value of more than MaxItems
	// items sets ExcludeAll, each reported in Invalid.
	Exclude []string
	// ExcludeAll is set when the exclude key lists more than MaxItems
	// items: the list is not read, and since it could name any config of
	// the kind, it excludes them all. Failing closed keeps a workload
	// from reloading on a config its owner excluded; the Warning says
	// how to fix it.
	ExcludeAll bool
	// Shared counts the cross-namespace references ("namespace/name",
	// shared.go) in Named, at most MaxShared.
	Shared int
	// Selector is the kind's label selector (SelectorOf): the configs
	// it selects reload the workload as if named. Nil without one, or
	// when it is invalid: SelectorInvalid says why, naming the
	// annotation. SelectorWhere names its annotation in messages.
	Selector        labels.Selector
	SelectorWhere   string
	SelectorInvalid error
	// FromTemplate is true when the trigger keys were read from the pod
	// template because the workload metadata carries none of them.
	FromTemplate bool
	// Invalid holds one error per named item that is not a valid pattern
	// and per exclude item or list over the bounds. The rest of the list
	// still applies, as in Reloader, which skips bad items; callers
	// surface these as warnings.
	Invalid []error

	// kind, namedKey and where name the named-reload annotation in
	// messages (CheckBudget).
	kind            refs.Kind
	namedKey, where string
}

// Parse reads the policy for configs of kind from the workload metadata
// annotations meta and the pod-template annotations tpl. Either map may be
// nil.
//
// Like Reloader, it reads the four trigger keys for the kind (named reload,
// auto, typed auto, search) from the metadata when any one of them is present
// there, and otherwise from the pod template. The choice is all or nothing
// and made per kind: metadata with only a Secret reload key still sends a
// ConfigMap lookup to the template. Exclude is always read from the metadata.
func Parse(keys Keys, kind refs.Kind, meta, tpl map[string]string) Policy {
	reloadKey := keys.ReloadKey(kind)
	typedKey := keys.TypedAutoKey(kind)
	triggers := []string{reloadKey, keys.Auto, typedKey, keys.Search}

	p := Policy{kind: kind, namedKey: reloadKey}
	src := meta
	if !hasAny(meta, triggers) && hasAny(tpl, triggers) {
		src = tpl
		p.FromTemplate = true
	}
	get := func(key string) string {
		if key == "" {
			return ""
		}
		return src[key]
	}

	auto, typed := get(keys.Auto), get(typedKey)
	switch {
	case parseBool(auto):
		p.Auto, p.AutoKey = true, keys.Auto
	case parseBool(typed):
		p.Auto, p.AutoKey = true, typedKey
	}
	p.AutoSet = auto != "" || typed != ""
	p.Search = IsTrue(get(keys.Search))

	p.where = "annotation"
	if p.FromTemplate {
		p.where = "pod template annotation"
	}
	where := p.where
	items, err := boundedList(get(reloadKey))
	if err != nil {
		p.Invalid = append(p.Invalid, fmt.Errorf("%s %q: %w; ignoring them all", where, reloadKey, err))
	}
	for _, item := range items {
		if ok, err := sharedItem(item); ok {
			p.shared(item, err)
			continue
		}
		m, err := newMatcher(item)
		if err != nil {
			p.Invalid = append(p.Invalid, fmt.Errorf("%s %q: invalid pattern %s: %w", where, reloadKey, quoteItem(item), err))
			continue
		}
		p.Named = append(p.Named, m)
	}

	p.excludes(keys.ExcludeKey(kind), meta)
	p.Selector, p.SelectorWhere, p.SelectorInvalid = SelectorOf(keys, kind, meta, tpl)
	return p
}

// CheckSelected refuses the selector when it selects n configs, more than
// MaxSelected: the error names its annotation and the count.
func (p Policy) CheckSelected(n int) error {
	if n <= MaxSelected {
		return nil
	}
	return fmt.Errorf("%s selects %d %ss, more than %d: refused, it reloads the workload on none of them until it selects at most %d",
		p.SelectorWhere, n, p.kind, MaxSelected, MaxSelected)
}

// excludes reads the exclude key from the workload metadata meta within
// the bounds, adding what it rejects to Invalid. The items are plain
// names, compared, never compiled; the bounds keep a tenant's value from
// costing every reconcile of its workload a split of 256 KiB.
func (p *Policy) excludes(key string, meta map[string]string) {
	if key == "" {
		return
	}
	items, err := boundedList(meta[key])
	if err != nil {
		p.ExcludeAll = true
		p.Invalid = append(p.Invalid, fmt.Errorf("annotation %q: %w; excluding every %s instead, until it lists at most %d",
			key, err, p.kind, MaxItems))
		return
	}
	for _, item := range items {
		if err := checkLen(item); err != nil {
			p.Invalid = append(p.Invalid, fmt.Errorf("annotation %q: item %s is %w: no config has such a name", key, quoteItem(item), err))
			continue
		}
		p.Exclude = append(p.Exclude, item)
	}
}

// Names returns the named-reload items for configs of kind in ann without
// compiling anything, for a cache index that must stay cheap: the exact
// names, and whether any other item (a pattern, valid or not) is listed.
// It applies the same bounds as Parse, so that an annotation Parse rejects
// whole indexes nothing; the plan decides what the patterns match.
func Names(keys Keys, kind refs.Kind, ann map[string]string) (names []string, pattern bool) {
	key := keys.ReloadKey(kind)
	if key == "" {
		return nil, false
	}
	items, _ := boundedList(ann[key])
	shared := 0
	for _, item := range items {
		isShared, err := sharedItem(item)
		switch {
		case checkLen(item) != nil:
		case isShared:
			// As Parse keeps them: valid, of a kind that may be shared,
			// within MaxShared.
			if err == nil && (kind == refs.ConfigMap || kind == refs.Secret) && shared < MaxShared {
				shared++
				names = append(names, item)
			}
		case isNameLiteral(item):
			names = append(names, item)
		default:
			pattern = true
		}
	}
	return names, pattern
}

// IsTrue reports whether v is exactly "true". Reloader compares the search,
// match and ignore values as plain strings, so "True" or "1" do not count.
func IsTrue(v string) bool { return v == "true" }

// parseBool is strconv.ParseBool with errors meaning false, as in Reloader.
func parseBool(v string) bool {
	b, err := strconv.ParseBool(v)
	return err == nil && b
}

// hasAny reports whether m has any of keys, even with an empty value: in
// Reloader presence alone decides where the triggers are read from.
func hasAny(m map[string]string, keys []string) bool {
	for _, k := range keys {
		if k == "" {
			continue
		}
		if _, ok := m[k]; ok {
			return true
		}
	}
	return false
}

// boundedList splits a comma list of at most MaxItems items, trims items
// and drops empty ones; a longer list gives no item and an error. Reloader
// keeps empty items, which then match only the empty name, so dropping
// them changes nothing for real objects.
func boundedList(v string) ([]string, error) {
	var out []string
	n := 0
	for item := range strings.SplitSeq(v, ",") {
		if item = strings.TrimSpace(item); item == "" {
			continue
		}
		if n++; n <= MaxItems {
			out = append(out, item)
		}
	}
	if n > MaxItems {
		return nil, errTooMany(n)
	}
	return out, nil
}

// quoteItem quotes an item for a message, cut to MaxItemLen bytes so that
// an overlong one does not flood the Event that reports it.
func quoteItem(item string) string {
	if len(item) > MaxItemLen {
		return strconv.Quote(item[:MaxItemLen]) + "..."
	}
	return strconv.Quote(item)
}
