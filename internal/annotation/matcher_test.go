package annotation

import "testing"

func TestMatcher(t *testing.T) {
	tests := []struct {
		name    string
		item    string
		literal bool
		match   []string
		noMatch []string
	}{
		{
			name:    "plain name is exact",
			item:    "app-config",
			literal: true,
			match:   []string{"app-config"},
			noMatch: []string{"app-config-2", "my-app-config", "app", ""},
		},
		{
			// The fixed Reloader bug: "." is a dot, not a wildcard.
			name:    "dot in name is literal",
			item:    "app.config",
			literal: true,
			match:   []string{"app.config"},
			noMatch: []string{"app-config", "appxconfig", "app.config.old"},
		},
		{
			name:    "digits and dashes only",
			item:    "0-1.2",
			literal: true,
			match:   []string{"0-1.2"},
			noMatch: []string{"0-112"},
		},
		{
			name:    "star makes a pattern",
			item:    "app-config-.*",
			match:   []string{"app-config-", "app-config-v2", "app-config-a.b"},
			noMatch: []string{"app-config", "my-app-config-v2"},
		},
		{
			name:    "pattern is anchored at both ends",
			item:    "[a-z]+-cfg",
			match:   []string{"web-cfg"},
			noMatch: []string{"web-cfg-2", "1web-cfg", "x-web-cfg2"},
		},
		{
			// Reloader's "^a|b$" would match "abc" and "xyb"; the group anchors
			// the whole alternation.
			name:    "alternation anchors as a whole",
			item:    "a|b",
			match:   []string{"a", "b"},
			noMatch: []string{"abc", "xyb", "a|b"},
		},
		{
			name:    "escaped dot in a pattern",
			item:    `app\.v[0-9]`,
			match:   []string{"app.v1"},
			noMatch: []string{"app-v1"},
		},
		{
			name:    "upper case is compiled as a pattern",
			item:    "App",
			match:   []string{"App"},
			noMatch: []string{"app"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := newMatcher(tt.item)
			if err != nil {
				t.Fatalf("newMatcher(%q) error: %v", tt.item, err)
			}
			if m.Literal() != tt.literal {
				t.Errorf("Literal() = %v, want %v", m.Literal(), tt.literal)
			}
			if m.String() != tt.item {
				t.Errorf("String() = %q, want %q", m.String(), tt.item)
			}
			for _, name := range tt.match {
				if !m.Match(name) {
					t.Errorf("Match(%q) = false, want true", name)
				}
			}
			for _, name := range tt.noMatch {
				if m.Match(name) {
					t.Errorf("Match(%q) = true, want false", name)
				}
			}
		})
	}
}

func TestMatcherInvalid(t *testing.T) {
	tests := []struct {
		name string
		item string
	}{
		{name: "unclosed class", item: "app["},
		{name: "unclosed group", item: "(app"},
		{name: "dangling repeat", item: "*app"},
		// Valid once wrapped in ^(?:...)$, but not as written.
		{name: "group breakout", item: "a)|(b"},
		{name: "repeat too large", item: "a{1001}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if m, err := newMatcher(tt.item); err == nil {
				t.Errorf("newMatcher(%q) = %#v, want error", tt.item, m)
			}
		})
	}
}

func TestZeroMatcher(t *testing.T) {
	var m Matcher
	if !m.Literal() || m.Match("app") || !m.Match("") {
		t.Errorf("zero Matcher: Literal=%v Match(app)=%v Match(\"\")=%v, want true false true",
			m.Literal(), m.Match("app"), m.Match(""))
	}
}
