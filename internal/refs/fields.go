package refs

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Field is a field path of a custom resource whose string values name
// configs of Kind in the object's namespace (a declared kind's refs), e.g.
// spec.target.template.templateFrom[].configMap.name: dotted field names,
// a name followed by [] stepping into every item of a list.
type Field struct {
	Path string
	Kind Kind
	segs []segment
}

// segment is one field name of a path; list: the field is a list, and
// the rest of the path is read in each of its items.
type segment struct {
	name string
	list bool
}

// FieldVia is a Use's Via when a custom resource's field names the config.
const FieldVia Via = "field"

// fieldName is one segment of a field path, without its [].
var fieldName = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// ParseField parses a field path naming configs of kind (ConfigMap or
// Secret); the error says what is wrong with it.
func ParseField(path string, kind Kind) (Field, error) {
	if kind != ConfigMap && kind != Secret {
		return Field{}, fmt.Errorf("%q is not a config kind a field can name; use ConfigMap or Secret", kind)
	}
	if path == "" {
		return Field{}, errors.New("missing: a field path such as spec.configMap.name")
	}
	f := Field{Path: path, Kind: kind}
	for i, s := range strings.Split(path, ".") {
		name, list := strings.CutSuffix(s, "[]")
		if !fieldName.MatchString(name) {
			return Field{}, fmt.Errorf("%q: field %d, %q, is not a field name (letters, digits, - and _, with [] after a list)", path, i+1, s)
		}
		f.segs = append(f.segs, segment{name: name, list: list})
	}
	if f.segs[0].name == "metadata" || f.segs[0].name == "status" {
		return Field{}, fmt.Errorf("%q is under %s; a config a resource uses is named in its spec", path, f.segs[0].name)
	}
	return f, nil
}

// Within reports whether the field is at or under the plain field path
// prefix (a declared kind's template path, which has no lists).
func (f Field) Within(prefix []string) bool {
	if len(prefix) == 0 || len(f.segs) < len(prefix) {
		return false
	}
	for i, p := range prefix {
		if f.segs[i].name != p || (f.segs[i].list && i < len(prefix)-1) {
			return false
		}
	}
	return true
}

// FieldRef is a config a custom resource's field names, and that field's
// path (Field.Path).
type FieldRef struct {
	Ref
	Path string
}

// Use is the reference as a use of the config: its whole data, as Ripple
// cannot tell which keys the resource's controller reads.
func (r FieldRef) Use() Use { return Use{Ref: r.Ref, Via: FieldVia, Field: r.Path} }

// FieldRefs reads the configs that content, an object's unstructured
// content, names at fields, de-duplicated (the first field naming a config
// kept). It reads at most limit string values: past them it stops and
// reports over, so that a resource with thousands of names costs the same
// as one with limit. A missing field, a value of another type than the
// path says, and a string that cannot be a config's name name nothing.
func FieldRefs(content map[string]any, fields []Field, limit int) (out []FieldRef, over bool) {
	seen := map[Ref]bool{}
	read := 0
	for _, f := range fields {
		for name := range f.values(content) {
			if read++; read > limit {
				return out, true
			}
			ref := Ref{Kind: f.Kind, Name: name}
			if seen[ref] || len(validation.IsDNS1123Subdomain(name)) > 0 {
				continue
			}
			seen[ref] = true
			out = append(out, FieldRef{Ref: ref, Path: f.Path})
		}
	}
	return out, false
}

// values are the strings at the field's path in content, in order.
func (f Field) values(content map[string]any) func(yield func(string) bool) {
	return func(yield func(string) bool) {
		walk(content, f.segs, yield)
	}
}

// walk yields the strings at path under v; false when yield stopped it.
func walk(v any, path []segment, yield func(string) bool) bool {
	if len(path) == 0 {
		s, ok := v.(string)
		return !ok || s == "" || yield(s)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return true
	}
	next, ok := m[path[0].name]
	if !ok {
		return true
	}
	if !path[0].list {
		return walk(next, path[1:], yield)
	}
	items, ok := next.([]any)
	if !ok {
		return true
	}
	for _, item := range items {
		if !walk(item, path[1:], yield) {
			return false
		}
	}
	return true
}
