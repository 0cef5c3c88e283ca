package annotation

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/ripple-dev/ripple/internal/refs"
)

// MaxShared is the most cross-namespace references ("namespace/name")
// one named-reload annotation may follow. Each costs an index lookup per
// event of the config it names and a read per reconcile of the workload;
// the use cases (a CA bundle, a mesh revision tag) need one or two.
// Those past it are left out with a Warning.
const MaxShared = 16

// GrantAll in a config's shared-with annotation shares it with every
// namespace.
const GrantAll = "*"

// A named-reload item is a cross-namespace reference when it is a
// namespace, a "/" and a name. An object name never holds a "/", so such
// an item matched nothing before it meant a reference: reading it so
// changes nothing a Reloader user rolls. An item made of name characters
// (any case, and "_") around a "/" that is not a valid reference cannot be
// a pattern that matches a name either, so it is reported as malformed
// rather than kept as a pattern that silently matches nothing.

// SplitShared splits the name of a cross-namespace reference,
// "namespace/name", into its two parts; ok is false for a plain name.
func SplitShared(name string) (ns, local string, ok bool) {
	return strings.Cut(name, "/")
}

// sharedItem reports whether item is meant as a cross-namespace reference,
// and why it is not a valid one (nil when it is).
func sharedItem(item string) (bool, error) {
	if !strings.Contains(item, "/") || !refLike(item) {
		return false, nil
	}
	ns, name, _ := strings.Cut(item, "/")
	switch {
	case strings.Contains(name, "/"):
		return true, fmt.Errorf("a reference to another namespace is namespace/name, with one \"/\"")
	case len(validation.IsDNS1123Label(ns)) > 0:
		return true, fmt.Errorf("%s is not a namespace name (lower-case letters, digits and \"-\", at most 63)", quoteItem(ns))
	case len(validation.IsDNS1123Subdomain(name)) > 0:
		return true, fmt.Errorf("%s is not an object name (lower-case letters, digits, \"-\" and \".\", at most 253)", quoteItem(name))
	}
	return true, nil
}

// refLike reports whether s is made only of characters of names, "_",
// upper-case letters and "/": no pattern syntax, so a "/" in it can only be
// meant as namespace/name.
func refLike(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isNameLiteral(string(c)) && (c < 'A' || c > 'Z') && c != '_' && c != '/' {
			return false
		}
	}
	return true
}

// shared adds item, a cross-namespace reference, to the policy's named
// items within the bounds: for ConfigMaps and Secrets only (a
// SecretProviderClass is read through its pods, in the workload's own
// namespace), at most MaxShared of them.
func (p *Policy) shared(item string, err error) {
	switch {
	case err != nil:
		p.Invalid = append(p.Invalid, fmt.Errorf("%s %q: malformed reference %s: %w", p.where, p.namedKey, quoteItem(item), err))
	case p.kind != refs.ConfigMap && p.kind != refs.Secret:
		p.Invalid = append(p.Invalid, fmt.Errorf("%s %q: %s names another namespace; only ConfigMaps and Secrets may be shared across namespaces",
			p.where, p.namedKey, quoteItem(item)))
	case p.Shared >= MaxShared:
		p.Invalid = append(p.Invalid, fmt.Errorf("%s %q: %s is past the %d references to other namespaces an annotation may follow; it is not followed",
			p.where, p.namedKey, quoteItem(item), MaxShared))
	default:
		p.Shared++
		p.Named = append(p.Named, Matcher{item: item})
	}
}

// Granted reports whether a config whose annotations are ann is shared
// with namespace ns by its shared-with key: a comma list of namespace
// names, or "*". A list over MaxItems grants nothing.
func Granted(keys Keys, ann map[string]string, ns string) bool {
	v, ok := ann[keys.SharedWith]
	if !ok {
		return false
	}
	items, err := boundedList(v)
	return err == nil && (slices.Contains(items, ns) || slices.Contains(items, GrantAll))
}
