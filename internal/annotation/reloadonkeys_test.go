package annotation

import (
	"slices"
	"strings"
	"testing"

	"github.com/ripple-dev/ripple/internal/refs"
)

func TestParseKeySpec(t *testing.T) {
	keys := DefaultKeys(DefaultPrefix)
	cm := func(name string) refs.Ref { return refs.Ref{Kind: refs.ConfigMap, Name: name} }
	sec := func(name string) refs.Ref { return refs.Ref{Kind: refs.Secret, Name: name} }
	for _, tc := range []struct {
		name, value string
		on          bool
		listed      map[refs.Ref][]string // ref -> the listed items
		err         string
	}{
		{name: "true", value: "true", on: true},
		{name: "false", value: "false"},
		{name: "empty", value: ""},
		{name: "a list", value: "app-config[db.url, feature.*], tls-secret[ca.crt]", on: true,
			listed: map[refs.Ref][]string{cm("app-config"): {"db.url", "feature.*"}, sec("app-config"): {"db.url", "feature.*"}, cm("tls-secret"): {"ca.crt"}, cm("other"): nil}},
		{name: "kinds", value: "configmap/app[a], Secret/app[b]", on: true,
			listed: map[refs.Ref][]string{cm("app"): {"a"}, sec("app"): {"b"}}},
		{name: "a pattern with brackets", value: "true,app[key[0-9]]", on: true, listed: map[refs.Ref][]string{cm("app"): {"key[0-9]"}}},
		{name: "keys with capitals and underscores are exact", value: "app[DB_URL]", on: true, listed: map[refs.Ref][]string{cm("app"): {"DB_URL"}}},
		{name: "unbalanced", value: "app[a", err: "unbalanced"},
		{name: "unbalanced close", value: "app]a[", err: "unbalanced"},
		{name: "empty list", value: "app[]", err: "empty"},
		{name: "bad pattern", value: "app[(]", err: "invalid key pattern"},
		{name: "bad kind", value: "deployment/app[a]", err: "configmap or secret"},
		{name: "bad name", value: "App[a]", err: "not a config name"},
		{name: "garbage", value: "yes", err: "neither true"},
		{name: "false with more", value: "false, app[a]", err: "alone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec, err := ParseKeySpec(keys, map[string]string{keys.ReloadOnKeys: tc.value}, nil)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), keys.ReloadOnKeys) {
					t.Fatalf("error %v, want one naming %s and saying %q", err, keys.ReloadOnKeys, tc.err)
				}
				if spec.On {
					t.Error("an invalid value opts in")
				}
				return
			}
			if err != nil || spec.On != tc.on {
				t.Fatalf("on %v, error %v; want %v", spec.On, err, tc.on)
			}
			for ref, want := range tc.listed {
				ms, ok := spec.Listed(ref)
				var got []string
				for _, m := range ms {
					got = append(got, m.String())
				}
				if ok != (want != nil) || !slices.Equal(got, want) {
					t.Errorf("%s: listed %q (%v), want %q", ref, got, ok, want)
				}
			}
		})
	}
}

func TestKeyMatchers(t *testing.T) {
	spec, err := ParseKeySpec(DefaultKeys(""), map[string]string{"ripple.dev/reload-on-keys": "app[db.url,feature.*]"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ms, _ := spec.Listed(refs.Ref{Kind: refs.ConfigMap, Name: "app"})
	match := func(k string) bool { return slices.ContainsFunc(ms, func(m Matcher) bool { return m.Match(k) }) }
	for k, want := range map[string]bool{"db.url": true, "dbXurl": false, "feature.a": true, "feature.b.c": true, "features": true, "other": false} {
		if match(k) != want {
			t.Errorf("%s: %v, want %v", k, !want, want)
		}
	}
}

// Like the triggers, the key is read from the pod template when the
// metadata has none; the metadata wins.
func TestKeySpecWhere(t *testing.T) {
	keys := DefaultKeys("")
	spec, err := ParseKeySpec(keys, nil, map[string]string{keys.ReloadOnKeys: "true"})
	if err != nil || !spec.On {
		t.Fatalf("from the template: on %v, error %v", spec.On, err)
	}
	spec, err = ParseKeySpec(keys, map[string]string{keys.ReloadOnKeys: "false"}, map[string]string{keys.ReloadOnKeys: "true"})
	if err != nil || spec.On {
		t.Fatalf("metadata false, template true: on %v, error %v", spec.On, err)
	}
	if _, err = ParseKeySpec(keys, nil, map[string]string{keys.ReloadOnKeys: "x["}); err == nil || !strings.Contains(err.Error(), "pod template annotation") {
		t.Fatalf("error %v, want one saying it is on the pod template", err)
	}
}
