package annotation

import (
	"errors"
	"fmt"
	"strings"

	"github.com/ripple-dev/ripple/internal/refs"
)

// KeySpec is what a workload's reload-on-keys annotation says: whether it
// reloads only when the keys it uses change, and the key lists it gives
// for some configs.
//
// The value is a comma list of items: "true" (the keys the pod template
// names count) and, for any config, "name[key,pattern,...]", optionally
// with the kind, "configmap/name[...]" or "secret/name[...]"; a bare name
// lists both kinds. A list of items opts in as "true" does: the configs it
// names count the keys listed, the others the keys the pod template names.
// "false" or an empty value opts out.
type KeySpec struct {
	// On is set when the workload reloads on the keys it uses only.
	On    bool
	lists []keyList
	// where and key name the annotation in messages (CheckBudget).
	where, key string
}

// keyList is one "name[...]" item.
type keyList struct {
	kind refs.Kind // empty for both kinds
	name string
	keys []Matcher
}

// ParseKeySpec reads the reload-on-keys annotation from the workload
// metadata, else from the pod template. An invalid value gives the zero
// KeySpec, which is Reloader's behaviour, and an error naming the key.
func ParseKeySpec(keys Keys, meta, tpl map[string]string) (KeySpec, error) {
	where, v, ok := "annotation", "", false
	if v, ok = meta[keys.ReloadOnKeys]; !ok {
		where = "pod template annotation"
		if v, ok = tpl[keys.ReloadOnKeys]; !ok {
			return KeySpec{}, nil
		}
	}
	spec, err := parseKeySpec(v)
	if err != nil {
		return KeySpec{}, fmt.Errorf("%s %q: %w; reloading on any data change", where, keys.ReloadOnKeys, err)
	}
	spec.where, spec.key = where, keys.ReloadOnKeys
	return spec, nil
}

// CheckKeySpec reports why v is not a valid reload-on-keys value, for
// `ripple lint`; nil when it is.
func CheckKeySpec(v string) error {
	_, err := parseKeySpec(v)
	return err
}

func parseKeySpec(v string) (KeySpec, error) {
	items, err := splitTop(v)
	if err != nil {
		return KeySpec{}, err
	}
	var spec KeySpec
	total := 0
	for _, item := range items {
		switch item {
		case "true":
			spec.On = true
		case "false":
			if len(items) > 1 {
				return KeySpec{}, errors.New(`"false" must stand alone`)
			}
		default:
			l, err := parseKeyList(item)
			if err != nil {
				return KeySpec{}, err
			}
			// Bound the keys of the whole value, not of each list, so
			// that a value compiles at most MaxItems patterns.
			if total += len(l.keys); total > MaxItems {
				return KeySpec{}, fmt.Errorf("more than %d keys in all", MaxItems)
			}
			spec.On, spec.lists = true, append(spec.lists, l)
		}
	}
	return spec, nil
}

// parseKeyList parses one "[kind/]name[key,...]" item.
func parseKeyList(item string) (keyList, error) {
	open := strings.IndexByte(item, '[')
	if open < 0 || !strings.HasSuffix(item, "]") {
		return keyList{}, fmt.Errorf("%s is neither true nor name[key,...]", quoteItem(item))
	}
	var l keyList
	l.name = strings.TrimSpace(item[:open])
	if kind, name, ok := strings.Cut(l.name, "/"); ok {
		switch strings.ToLower(kind) {
		case "configmap":
			l.kind = refs.ConfigMap
		case "secret":
			l.kind = refs.Secret
		default:
			return keyList{}, fmt.Errorf("%s: the kind must be configmap or secret", quoteItem(item))
		}
		l.name = strings.TrimSpace(name)
	}
	if l.name == "" || !isNameLiteral(l.name) || checkLen(l.name) != nil {
		return keyList{}, fmt.Errorf("%s: %s is not a config name", quoteItem(item), quoteItem(l.name))
	}
	keys, err := splitTop(item[open+1 : len(item)-1])
	if err != nil {
		return keyList{}, fmt.Errorf("%s: key list: %w", quoteItem(item), err)
	}
	if len(keys) == 0 {
		return keyList{}, fmt.Errorf("%s: the key list is empty", quoteItem(item))
	}
	for _, k := range keys {
		m, err := newKeyMatcher(k)
		if err != nil {
			return keyList{}, fmt.Errorf("%s: invalid key pattern %s: %w", quoteItem(item), quoteItem(k), err)
		}
		l.keys = append(l.keys, m)
	}
	return l, nil
}

// splitTop splits a comma list at bracket depth 0, trims items and drops
// empty ones; brackets must balance, and there may be at most MaxItems.
func splitTop(v string) ([]string, error) {
	var out []string
	depth, start := 0, 0
	add := func(end int) {
		if item := strings.TrimSpace(v[start:end]); item != "" && len(out) <= MaxItems {
			out = append(out, item)
		}
		start = end + 1
	}
	for i := 0; i < len(v); i++ {
		switch v[i] {
		case '[':
			depth++
		case ']':
			if depth--; depth < 0 {
				return nil, errors.New("unbalanced brackets")
			}
		case ',':
			if depth == 0 {
				add(i)
			}
		}
	}
	if depth != 0 {
		return nil, errors.New("unbalanced brackets")
	}
	add(len(v))
	if len(out) > MaxItems {
		return nil, fmt.Errorf("more than %d items", MaxItems)
	}
	return out, nil
}

// newKeyMatcher builds the matcher of a key item. As for config names, an
// item made only of characters valid in a key ([-._a-zA-Z0-9]) is exact
// ("db.url" matches only db.url); any other is an anchored regular
// expression ("feature.*").
func newKeyMatcher(item string) (Matcher, error) { return compile(item, isKeyLiteral) }

func isKeyLiteral(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (c < '0' || c > '9') && c != '.' && c != '-' && c != '_' {
			return false
		}
	}
	return true
}

// Listed returns the key matchers the annotation lists for ref; ok is
// false when it lists none, and the keys the pod template names count.
func (s KeySpec) Listed(ref refs.Ref) (keys []Matcher, ok bool) {
	for _, l := range s.lists {
		if l.name == ref.Name && (l.kind == "" || l.kind == ref.Kind) {
			keys, ok = append(keys, l.keys...), true
		}
	}
	return keys, ok
}
