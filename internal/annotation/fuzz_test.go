package annotation

import (
	"regexp"
	"strings"
	"testing"

	"github.com/ripple-dev/ripple/internal/refs"
)

// FuzzMatcher checks that any item either is rejected or matches as
// documented: a literal exactly, a pattern as ^(?:item)$ would.
func FuzzMatcher(f *testing.F) {
	for _, s := range []string{"app-config", "app.config", "app-config-.*", "a|b", "a)|(b", "[a-z]{1,63}", "(a{30}){30}", "App", ""} {
		f.Add(s, "app-config")
	}
	f.Fuzz(func(t *testing.T, item, name string) {
		m, err := newMatcher(item)
		if err != nil {
			return
		}
		if len(item) > MaxItemLen || m.String() != item {
			t.Fatalf("accepted %q as %q", item, m.String())
		}
		if m.Literal() {
			if m.Match(name) != (name == item) {
				t.Fatalf("literal %q matches %q: %v", item, name, m.Match(name))
			}
			return
		}
		re := regexp.MustCompile("^(?:" + item + ")$")
		if m.Match(name) != re.MatchString(name) {
			t.Fatalf("pattern %q matches %q: %v", item, name, m.Match(name))
		}
	})
}

// checkPolicy checks what holds of any policy: within the bounds, each
// error naming the reload key, the search value read as exactly "true",
// and Names (the index's cheap reading) consistent with the compiled items.
func checkPolicy(t *testing.T, keys Keys, p Policy, src map[string]string) {
	t.Helper()
	if len(p.Named) > MaxItems || p.Search != (src[keys.Search] == "true") {
		t.Fatalf("%d named, search %v for %q", len(p.Named), p.Search, src[keys.Search])
	}
	for _, err := range p.Invalid {
		if !strings.Contains(err.Error(), keys.ConfigMapReload) {
			t.Fatalf("error %v does not name %s", err, keys.ConfigMapReload)
		}
	}
	names, pattern := Names(keys, refs.ConfigMap, src)
	for _, m := range p.Named {
		if len(m.String()) > MaxItemLen {
			t.Fatalf("item of %d bytes accepted", len(m.String()))
		}
		if m.Literal() && !strings.Contains(","+strings.Join(names, ",")+",", ","+m.String()+",") {
			t.Fatalf("literal %q not in Names %q", m.String(), names)
		}
		if !m.Literal() && !pattern {
			t.Fatalf("pattern %q but Names reports none", m.String())
		}
	}
}

// FuzzParseKeySpec checks that any reload-on-keys value is either
// rejected with a message naming the annotation and opting out, or read
// within the bounds.
func FuzzParseKeySpec(f *testing.F) {
	for _, s := range []string{"true", "false", "", "app-config[db.url, feature.*], tls-secret[ca.crt]", "configmap/app[a], Secret/app[b]",
		"true,app[key[0-9]]", "app[a", "app]a[", "app[]", "app[(]", "deployment/app[a]", "false, app[a]", "app[(k{30}){30}]"} {
		f.Add(s, "app")
	}
	f.Fuzz(func(t *testing.T, v, name string) {
		keys := DefaultKeys("")
		spec, err := ParseKeySpec(keys, nil, map[string]string{keys.ReloadOnKeys: v})
		if err != nil {
			if spec.On || !strings.Contains(err.Error(), keys.ReloadOnKeys) {
				t.Fatalf("error %v with On=%v", err, spec.On)
			}
			return
		}
		total := 0
		for _, l := range spec.lists {
			total += len(l.keys)
			if len(l.name) > MaxItemLen || !isNameLiteral(l.name) {
				t.Fatalf("config name %q accepted", l.name)
			}
		}
		if total > MaxItems {
			t.Fatalf("%d keys accepted", total)
		}
		for _, kind := range refs.Kinds() {
			listed, ok := spec.Listed(refs.Ref{Kind: kind, Name: name})
			if ok != (len(listed) > 0) || (ok && !spec.On) {
				t.Fatalf("Listed(%s/%s) = %v, %v with On=%v", kind, name, listed, ok, spec.On)
			}
		}
	})
}
