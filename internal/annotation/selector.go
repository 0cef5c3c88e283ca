package annotation

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/lru"

	"github.com/ripple-dev/ripple/internal/refs"
)

// The bounds on a label-selector annotation (ConfigMapSelector,
// SecretSelector). A tenant writes the value and Ripple matches it against
// every config event of the namespace, so both the value and what it may
// select are bounded.
const (
	// MaxSelected is the most configs of a kind one selector may select:
	// a selector matching more is refused whole (the workload's other
	// configs still reload it), as each selected config is read and
	// recorded like a named one.
	MaxSelected = 100
	// MaxSelectorLen is the longest selector value, in bytes: real ones
	// are a few requirements ("team=a,tier in (web,api)").
	MaxSelectorLen = 1024
)

// parsedSelectors memoizes Selector by value: the index lookup of a config
// event matches it against each selecting workload of the namespace, and
// should parse nothing it parsed before. It changes no result.
var parsedSelectors = lru.New(CachedPatterns)

// parsedSelector is one parsed value, or why it is not a valid selector.
type parsedSelector struct {
	sel labels.Selector
	err error
}

// errEmptySelector is an empty selector value: in kubectl's syntax it
// selects everything, which nobody writes on purpose.
var errEmptySelector = errors.New("empty: it would select every config of the namespace")

// SelectorOf is the label selector of kind's selector annotation on a
// workload, read from its metadata meta, else its pod template tpl, and
// the key as it names it ("annotation ..." or "pod template annotation
// ..."), for messages. The selector is nil when neither carries the key,
// or when its value is not a valid selector (err says why, naming the
// annotation).
func SelectorOf(keys Keys, kind refs.Kind, meta, tpl map[string]string) (sel labels.Selector, where string, err error) {
	key := keys.SelectorKey(kind)
	if key == "" {
		return nil, "", nil
	}
	v, ok := meta[key]
	where = fmt.Sprintf("annotation %q", key)
	if !ok {
		if v, ok = tpl[key]; !ok {
			return nil, "", nil
		}
		where = "pod template " + where
	}
	sel, err = Selector(v)
	if err != nil {
		return nil, where, fmt.Errorf("%s: invalid label selector %s: %w", where, quoteItem(v), err)
	}
	return sel, where, nil
}

// HasSelector reports whether ann carries kind's selector key, parsing
// nothing: for the cache index, which must stay cheap.
func HasSelector(keys Keys, kind refs.Kind, ann map[string]string) bool {
	key := keys.SelectorKey(kind)
	_, ok := ann[key]
	return key != "" && ok
}

// Selector parses v, a label selector in kubectl's syntax, within the
// bounds, through the cache.
func Selector(v string) (labels.Selector, error) {
	if got, ok := parsedSelectors.Get(v); ok {
		if p, ok := got.(parsedSelector); ok { // only Selector adds, so always
			return p.sel, p.err
		}
	}
	var p parsedSelector
	switch {
	case len(v) > MaxSelectorLen:
		p.err = fmt.Errorf("longer than %d bytes", MaxSelectorLen)
	case strings.TrimSpace(v) == "":
		p.err = errEmptySelector
	default:
		p.sel, p.err = labels.Parse(v)
	}
	if len(v) <= MaxSelectorLen {
		parsedSelectors.Add(v, p)
	}
	return p.sel, p.err
}
