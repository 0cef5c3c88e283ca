package config

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
)

// trimmed returns the non-empty items of a list flag, trimmed.
func trimmed(items []string) []string {
	var out []string
	for _, s := range items {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// ParseSelector parses a label selector flag in Reloader's syntax: the
// items are joined with commas, and the legacy forms "k:v" (k=v) and "k:*"
// or "k=*" (k exists) are accepted in any requirement, also beside set
// requirements in one item ("env in (a,b),team:x"). No items means no
// selector (nil).
func ParseSelector(items []string) (labels.Selector, error) {
	var parts []string
	for _, item := range trimmed(items) {
		for _, req := range splitRequirements(strings.Trim(item, `"`)) { // charts quote selectors holding commas
			switch req = strings.TrimSpace(req); {
			case strings.HasSuffix(req, ":*") || strings.HasSuffix(req, "=*"):
				req = req[:len(req)-2]
			case strings.Contains(req, ":") && !strings.ContainsAny(req, "=!() "):
				kv := strings.SplitN(req, ":", 3)
				req = kv[0] + "=" + kv[1]
			}
			parts = append(parts, req)
		}
	}
	if len(parts) == 0 {
		return nil, nil
	}
	sel, err := labels.Parse(strings.Join(parts, ","))
	if err != nil {
		return nil, fmt.Errorf("%q is not a label selector: %w", strings.Join(parts, ","), err)
	}
	return sel, nil
}

// splitRequirements splits a selector at the commas outside parentheses.
// A CSV flag may also have split "in (a,b)" at its comma; such pieces are
// returned unchanged and joined again by the caller.
func splitRequirements(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, c := range s {
		switch c {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}
