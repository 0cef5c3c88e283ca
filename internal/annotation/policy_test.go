package annotation

import (
	"errors"
	"reflect"
	"regexp/syntax"
	"strings"
	"testing"

	"github.com/ripple-dev/ripple/internal/refs"
)

// view is the comparable shape of a Policy: matchers by item and kind,
// errors by the item they name.
type view struct {
	Named        []string
	Literal      []bool
	Search       bool
	Auto         bool
	AutoKey      string
	AutoSet      bool
	Exclude      []string
	FromTemplate bool
	Invalid      []string
}

func viewOf(p Policy) view {
	v := view{
		Search:       p.Search,
		Auto:         p.Auto,
		AutoKey:      p.AutoKey,
		AutoSet:      p.AutoSet,
		Exclude:      p.Exclude,
		FromTemplate: p.FromTemplate,
	}
	for _, m := range p.Named {
		v.Named = append(v.Named, m.String())
		v.Literal = append(v.Literal, m.Literal())
	}
	return v
}

const (
	cmReload   = "configmap.reloader.stakater.com/reload"
	secReload  = "secret.reloader.stakater.com/reload"
	spcReload  = "secretproviderclass.reloader.stakater.com/reload"
	auto       = "reloader.stakater.com/auto"
	cmAuto     = "configmap.reloader.stakater.com/auto"
	secAuto    = "secret.reloader.stakater.com/auto"
	spcAuto    = "secretproviderclass.reloader.stakater.com/auto"
	search     = "reloader.stakater.com/search"
	cmExclude  = "configmaps.exclude.reloader.stakater.com/reload"
	secExclude = "secrets.exclude.reloader.stakater.com/reload"
)

func TestParse(t *testing.T) {
	renamed := DefaultKeys("")
	renamed.Auto = "example.com/auto"
	renamed.ConfigMapAuto = "example.com/cm-auto"
	renamed.ConfigMapReload = "example.com/cm-reload"
	renamed.Search = "example.com/search"

	tests := []struct {
		name    string
		keys    *Keys // nil means DefaultKeys
		kind    refs.Kind
		meta    map[string]string
		tpl     map[string]string
		want    view
		invalid []string // items expected in Invalid, in order
	}{
		{
			name: "no annotations",
			kind: refs.ConfigMap,
		},
		{
			name: "named list is trimmed, empty items and trailing comma dropped",
			kind: refs.ConfigMap,
			meta: map[string]string{cmReload: " app ,, app.config,app-.* , "},
			want: view{Named: []string{"app", "app.config", "app-.*"}, Literal: []bool{true, true, false}},
		},
		{
			name:    "invalid pattern recorded, the rest kept",
			kind:    refs.ConfigMap,
			meta:    map[string]string{cmReload: "app[,good,(bad"},
			want:    view{Named: []string{"good"}, Literal: []bool{true}},
			invalid: []string{"app[", "(bad"},
		},
		{
			name: "only whitespace and commas",
			kind: refs.ConfigMap,
			meta: map[string]string{cmReload: " , ,"},
		},
		{
			name: "named key of another kind is not read",
			kind: refs.ConfigMap,
			meta: map[string]string{secReload: "app"},
		},
		{
			name: "secret named key",
			kind: refs.Secret,
			meta: map[string]string{secReload: "db-creds"},
			want: view{Named: []string{"db-creds"}, Literal: []bool{true}},
		},
		{
			name: "secretproviderclass named key",
			kind: refs.SecretProviderClass,
			meta: map[string]string{spcReload: "vault-.*"},
			want: view{Named: []string{"vault-.*"}, Literal: []bool{false}},
		},
		{
			name: "auto true",
			kind: refs.ConfigMap,
			meta: map[string]string{auto: "true"},
			want: view{Auto: true, AutoKey: auto, AutoSet: true},
		},
		{
			name: "auto accepts ParseBool spellings",
			kind: refs.Secret,
			meta: map[string]string{auto: "T"},
			want: view{Auto: true, AutoKey: auto, AutoSet: true},
		},
		{
			name: "auto 1",
			kind: refs.Secret,
			meta: map[string]string{auto: "1"},
			want: view{Auto: true, AutoKey: auto, AutoSet: true},
		},
		{
			name: "auto false is set but off",
			kind: refs.ConfigMap,
			meta: map[string]string{auto: "false"},
			want: view{AutoSet: true},
		},
		{
			name: "auto garbage is set but off",
			kind: refs.ConfigMap,
			meta: map[string]string{auto: "yes"},
			want: view{AutoSet: true},
		},
		{
			name: "auto with spaces is not trimmed",
			kind: refs.ConfigMap,
			meta: map[string]string{auto: " true"},
			want: view{AutoSet: true},
		},
		{
			name: "auto empty is neither on nor set",
			kind: refs.ConfigMap,
			meta: map[string]string{auto: ""},
		},
		{
			name: "typed auto for this kind",
			kind: refs.ConfigMap,
			meta: map[string]string{cmAuto: "true"},
			want: view{Auto: true, AutoKey: cmAuto, AutoSet: true},
		},
		{
			name: "typed auto for secretproviderclass",
			kind: refs.SecretProviderClass,
			meta: map[string]string{spcAuto: "true"},
			want: view{Auto: true, AutoKey: spcAuto, AutoSet: true},
		},
		{
			name: "typed auto of the other kind neither triggers nor counts as set",
			kind: refs.ConfigMap,
			meta: map[string]string{secAuto: "true"},
		},
		{
			name: "typed auto true wins over auto false",
			kind: refs.Secret,
			meta: map[string]string{auto: "false", secAuto: "true"},
			want: view{Auto: true, AutoKey: secAuto, AutoSet: true},
		},
		{
			name: "auto is reported when both are true",
			kind: refs.Secret,
			meta: map[string]string{auto: "true", secAuto: "true"},
			want: view{Auto: true, AutoKey: auto, AutoSet: true},
		},
		{
			name: "search exactly true",
			kind: refs.ConfigMap,
			meta: map[string]string{search: "true"},
			want: view{Search: true},
		},
		{
			name: "search True is not true",
			kind: refs.ConfigMap,
			meta: map[string]string{search: "True"},
		},
		{
			name: "pod template fallback when metadata has no trigger",
			kind: refs.ConfigMap,
			meta: map[string]string{"unrelated": "x"},
			tpl:  map[string]string{cmReload: "app", auto: "false", search: "true"},
			want: view{Named: []string{"app"}, Literal: []bool{true}, Search: true, AutoSet: true, FromTemplate: true},
		},
		{
			// The example from the spec: the swap is decided per kind.
			name: "mixed placement, configmap reads the template",
			kind: refs.ConfigMap,
			meta: map[string]string{secReload: "creds"},
			tpl:  map[string]string{cmReload: "app"},
			want: view{Named: []string{"app"}, Literal: []bool{true}, FromTemplate: true},
		},
		{
			name: "mixed placement, secret reads the metadata",
			kind: refs.Secret,
			meta: map[string]string{secReload: "creds"},
			tpl:  map[string]string{cmReload: "app", secReload: "other"},
			want: view{Named: []string{"creds"}, Literal: []bool{true}},
		},
		{
			name: "fallback is all or nothing: metadata auto hides template named",
			kind: refs.ConfigMap,
			meta: map[string]string{auto: "false"},
			tpl:  map[string]string{cmReload: "app", search: "true"},
			want: view{AutoSet: true},
		},
		{
			name: "presence with an empty value still blocks the fallback",
			kind: refs.ConfigMap,
			meta: map[string]string{search: ""},
			tpl:  map[string]string{auto: "true"},
		},
		{
			name: "typed auto for this kind on metadata blocks the fallback",
			kind: refs.ConfigMap,
			meta: map[string]string{cmAuto: "false"},
			tpl:  map[string]string{auto: "true"},
			want: view{AutoSet: true},
		},
		{
			name: "typed auto for the other kind on metadata does not block the fallback",
			kind: refs.ConfigMap,
			meta: map[string]string{secAuto: "true"},
			tpl:  map[string]string{auto: "true"},
			want: view{Auto: true, AutoKey: auto, AutoSet: true, FromTemplate: true},
		},
		{
			name: "exclude from metadata, trimmed, trailing comma dropped",
			kind: refs.ConfigMap,
			meta: map[string]string{cmExclude: " a , b.c ,", auto: "true"},
			want: view{Auto: true, AutoKey: auto, AutoSet: true, Exclude: []string{"a", "b.c"}},
		},
		{
			name: "exclude on the pod template is ignored",
			kind: refs.ConfigMap,
			tpl:  map[string]string{cmExclude: "a", auto: "true"},
			want: view{Auto: true, AutoKey: auto, AutoSet: true, FromTemplate: true},
		},
		{
			name: "exclude stays on metadata when triggers come from the template",
			kind: refs.Secret,
			meta: map[string]string{secExclude: "creds"},
			tpl:  map[string]string{secAuto: "true"},
			want: view{Auto: true, AutoKey: secAuto, AutoSet: true, Exclude: []string{"creds"}, FromTemplate: true},
		},
		{
			name: "exclude of the other kind is not read",
			kind: refs.ConfigMap,
			meta: map[string]string{secExclude: "app"},
		},
		{
			name: "exclude does not count as a trigger for the fallback",
			kind: refs.ConfigMap,
			meta: map[string]string{cmExclude: "a"},
			tpl:  map[string]string{search: "true"},
			want: view{Search: true, Exclude: []string{"a"}, FromTemplate: true},
		},
		{
			name:    "invalid pattern on the template",
			kind:    refs.ConfigMap,
			tpl:     map[string]string{cmReload: "ok,x["},
			want:    view{Named: []string{"ok"}, Literal: []bool{true}, FromTemplate: true},
			invalid: []string{"x["},
		},
		{
			name: "renamed keys are read",
			keys: &renamed,
			kind: refs.ConfigMap,
			meta: map[string]string{"example.com/cm-reload": "app", "example.com/auto": "true", "example.com/search": "true"},
			want: view{Named: []string{"app"}, Literal: []bool{true}, Search: true, Auto: true, AutoKey: "example.com/auto", AutoSet: true},
		},
		{
			name: "renamed typed auto",
			keys: &renamed,
			kind: refs.ConfigMap,
			meta: map[string]string{"example.com/cm-auto": "true"},
			want: view{Auto: true, AutoKey: "example.com/cm-auto", AutoSet: true},
		},
		{
			name: "default names are dead after renaming",
			keys: &renamed,
			kind: refs.ConfigMap,
			meta: map[string]string{cmReload: "app", auto: "true", search: "true"},
		},
		{
			name: "unknown kind reads only the untyped keys",
			kind: refs.Kind("Pod"),
			meta: map[string]string{cmReload: "app", auto: "true", cmExclude: "app"},
			want: view{Auto: true, AutoKey: auto, AutoSet: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			keys := DefaultKeys("")
			if tt.keys != nil {
				keys = *tt.keys
			}
			p := Parse(keys, tt.kind, tt.meta, tt.tpl)
			if got := viewOf(p); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Parse() =\n%+v\nwant\n%+v", got, tt.want)
			}
			if len(p.Invalid) != len(tt.invalid) {
				t.Fatalf("Invalid = %v, want %d errors for %q", p.Invalid, len(tt.invalid), tt.invalid)
			}
			key := keys.ReloadKey(tt.kind)
			for i, err := range p.Invalid {
				msg := err.Error()
				if !strings.Contains(msg, `"`+key+`"`) || !strings.Contains(msg, `"`+tt.invalid[i]+`"`) {
					t.Errorf("Invalid[%d] = %q, want it to name key %q and item %q", i, msg, key, tt.invalid[i])
				}
				if p.FromTemplate != strings.Contains(msg, "pod template") {
					t.Errorf("Invalid[%d] = %q, want it to say pod template: %v", i, msg, p.FromTemplate)
				}
				var serr *syntax.Error
				if !errors.As(err, &serr) {
					t.Errorf("Invalid[%d] = %v, want it to wrap a *syntax.Error", i, err)
				}
				if msg != strings.ToLower(msg[:1])+msg[1:] {
					t.Errorf("Invalid[%d] = %q, want a lower-case message", i, msg)
				}
			}
		})
	}
}

func TestIsTrue(t *testing.T) {
	tests := []struct {
		name string
		v    string
		want bool
	}{
		{name: "true", v: "true", want: true},
		{name: "capitalised", v: "True"},
		{name: "one", v: "1"},
		{name: "padded", v: " true"},
		{name: "empty", v: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsTrue(tt.v); got != tt.want {
				t.Errorf("IsTrue(%q) = %v, want %v", tt.v, got, tt.want)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	f.Add(" app , app.config,app-.*,, ", "true", "false", "true", "a, b ,", true)
	f.Add("x[,(y,a)|(b", "garbage", "", "True", "", false)
	f.Add("", "", "", "", "", true)
	f.Add("a|b,\\", "1", "T", "true", ",,,", false)
	f.Add(strings.Repeat("a,", MaxItems+1), "false", "", "yes", "", true)
	f.Add("[a-z]{1000}, x, "+strings.Repeat("y", MaxItemLen+1), "", "True", "1", "a,,b", false)
	f.Fuzz(func(t *testing.T, named, autoV, typedV, searchV, exclude string, onMeta bool) {
		keys := DefaultKeys("")
		triggers := map[string]string{cmReload: named, auto: autoV, cmAuto: typedV, search: searchV}
		meta := map[string]string{cmExclude: exclude}
		var tpl map[string]string
		if onMeta {
			for k, v := range triggers {
				meta[k] = v
			}
		} else {
			tpl = triggers
		}

		p := Parse(keys, refs.ConfigMap, meta, tpl)

		if p.FromTemplate == onMeta {
			t.Errorf("FromTemplate = %v with triggers on metadata = %v", p.FromTemplate, onMeta)
		}
		items := 0
		for item := range strings.SplitSeq(named, ",") {
			if strings.TrimSpace(item) != "" {
				items++
			}
		}
		if items > MaxItems {
			if len(p.Named) != 0 || len(p.Invalid) != 1 {
				t.Errorf("%d items: %d matchers, %d invalid; want the value rejected whole", items, len(p.Named), len(p.Invalid))
			}
		} else if got := len(p.Named) + len(p.Invalid); got != items {
			t.Errorf("%d matchers + %d invalid, want %d non-empty items in %q", len(p.Named), len(p.Invalid), items, named)
		}
		src := meta
		if p.FromTemplate {
			src = tpl
		}
		checkPolicy(t, keys, p, src)
		for _, m := range p.Named {
			s := m.String()
			if s == "" || s != strings.TrimSpace(s) || strings.Contains(s, ",") {
				t.Errorf("matcher item %q is not a trimmed, non-empty list item", s)
			}
			if !m.Literal() {
				continue
			}
			if !m.Match(s) {
				t.Errorf("literal %q does not match itself", s)
			}
			for _, other := range []string{s + "x", "x" + s, s[:len(s)-1], strings.ReplaceAll(s, ".", "-")} {
				if other != s && m.Match(other) {
					t.Errorf("literal %q matches %q", s, other)
				}
			}
		}
		for _, e := range p.Exclude {
			if e == "" || e != strings.TrimSpace(e) {
				t.Errorf("exclude item %q is not trimmed and non-empty", e)
			}
		}
		if p.Auto && !p.AutoSet {
			t.Errorf("Auto without AutoSet")
		}
		if p.Search != (searchV == "true") {
			t.Errorf("Search = %v for %q", p.Search, searchV)
		}
	})
}
