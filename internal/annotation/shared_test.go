package annotation

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/ripple-dev/ripple/internal/refs"
)

func TestSharedReferences(t *testing.T) {
	keys := DefaultKeys("")
	tests := []struct {
		name, value string
		kind        refs.Kind
		named       []string
		invalid     string // a substring of the only Invalid error; "" for none
	}{
		{name: "namespace/name", value: "a/shared", kind: refs.ConfigMap, named: []string{"a/shared"}},
		{name: "beside a plain name", value: "app, istio-system/ca.bundle", kind: refs.Secret, named: []string{"app", "istio-system/ca.bundle"}},
		{name: "two slashes", value: "a/b/c", kind: refs.ConfigMap, invalid: `malformed reference "a/b/c"`},
		{name: "no namespace", value: "/shared", kind: refs.ConfigMap, invalid: `"" is not a namespace name`},
		{name: "no name", value: "a/", kind: refs.ConfigMap, invalid: `"" is not an object name`},
		{name: "upper case", value: "A/shared", kind: refs.ConfigMap, invalid: `"A" is not a namespace name`},
		{name: "dot in namespace", value: "a.b/shared", kind: refs.ConfigMap, invalid: `"a.b" is not a namespace name`},
		{name: "underscore in name", value: "a/my_config", kind: refs.ConfigMap, invalid: `"my_config" is not an object name`},
		{name: "not for SecretProviderClasses", value: "a/vault", kind: refs.SecretProviderClass, invalid: "only ConfigMaps and Secrets"},
		// Pattern syntax around a "/" stays a pattern, as in Reloader:
		// the alternation matches "app".
		{name: "a pattern with a slash", value: "app|a/b", kind: refs.ConfigMap, named: []string{"app|a/b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			meta := map[string]string{keys.ReloadKey(tt.kind): tt.value}
			p := Parse(keys, tt.kind, meta, nil)
			var got []string
			for _, m := range p.Named {
				got = append(got, m.String())
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.named) {
				t.Errorf("named %v, want %v", got, tt.named)
			}
			switch {
			case tt.invalid == "" && len(p.Invalid) > 0:
				t.Errorf("invalid %v, want none", p.Invalid)
			case tt.invalid != "" && (len(p.Invalid) != 1 || !strings.Contains(p.Invalid[0].Error(), tt.invalid)):
				t.Errorf("invalid %v, want one with %q", p.Invalid, tt.invalid)
			case tt.invalid != "" && !strings.Contains(p.Invalid[0].Error(), keys.ReloadKey(tt.kind)):
				t.Errorf("invalid %v does not name the annotation", p.Invalid)
			}
			names, _ := Names(keys, tt.kind, meta)
			for _, n := range tt.named {
				if strings.Contains(n, "/") && !strings.Contains(n, "|") && !slices.Contains(names, n) {
					t.Errorf("index names %v lack %q", names, n)
				}
			}
		})
	}
}

// A workload follows at most MaxShared references to other namespaces;
// the rest are left out with one Warning each, in the index too.
func TestSharedBound(t *testing.T) {
	keys := DefaultKeys("")
	var items []string
	for i := range MaxShared + 2 {
		items = append(items, fmt.Sprintf("ns%d/shared", i))
	}
	meta := map[string]string{keys.ConfigMapReload: "local," + strings.Join(items, ",")}
	p := Parse(keys, refs.ConfigMap, meta, nil)
	if p.Shared != MaxShared || len(p.Named) != MaxShared+1 {
		t.Errorf("%d shared of %d named, want %d of %d", p.Shared, len(p.Named), MaxShared, MaxShared+1)
	}
	if len(p.Invalid) != 2 || !strings.Contains(p.Invalid[0].Error(), `"ns16/shared" is past the 16 references`) {
		t.Errorf("invalid %v, want ns16 and ns17 past the bound", p.Invalid)
	}
	names, _ := Names(keys, refs.ConfigMap, meta)
	if len(names) != MaxShared+1 || slices.Contains(names, "ns16/shared") {
		t.Errorf("index names %v, want local and the first %d", names, MaxShared)
	}
}

func TestGranted(t *testing.T) {
	keys := DefaultKeys("")
	tests := []struct {
		name  string
		ann   map[string]string
		ns    string
		grant bool
	}{
		{name: "no annotation", ann: nil, ns: "b"},
		{name: "listed", ann: map[string]string{keys.SharedWith: "a, b"}, ns: "b", grant: true},
		{name: "not listed", ann: map[string]string{keys.SharedWith: "a,c"}, ns: "b"},
		{name: "everyone", ann: map[string]string{keys.SharedWith: "*"}, ns: "b", grant: true},
		{name: "prefix is no grant", ann: map[string]string{keys.SharedWith: "b*"}, ns: "b"},
		{name: "empty", ann: map[string]string{keys.SharedWith: ""}, ns: "b"},
		{name: "over the bound", ann: map[string]string{keys.SharedWith: "b" + strings.Repeat(",x", MaxItems)}, ns: "b"},
		{name: "another key", ann: map[string]string{"example.com/shared-with": "b"}, ns: "b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Granted(keys, tt.ann, tt.ns); got != tt.grant {
				t.Errorf("Granted = %v, want %v", got, tt.grant)
			}
		})
	}
}

func TestSplitShared(t *testing.T) {
	if ns, name, ok := SplitShared("a/shared"); !ok || ns != "a" || name != "shared" {
		t.Errorf("SplitShared(a/shared) = %q, %q, %v", ns, name, ok)
	}
	if _, _, ok := SplitShared("shared"); ok {
		t.Error("a plain name split")
	}
}
