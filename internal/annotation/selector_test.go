package annotation

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/ripple-dev/ripple/internal/refs"
)

func TestSelectorOf(t *testing.T) {
	k := DefaultKeys("")
	team := labels.Set{"team": "a", "tier": "web"}
	for _, tc := range []struct {
		name      string
		kind      refs.Kind
		meta, tpl map[string]string
		matches   bool   // whether the selector read matches team
		none      bool   // no selector read
		err       string // a substring of the error, "" for none
	}{
		{name: "on the metadata", kind: refs.ConfigMap, meta: map[string]string{k.ConfigMapSelector: "team=a"}, matches: true},
		{name: "set syntax", kind: refs.Secret, meta: map[string]string{k.SecretSelector: "tier in (web,api),!legacy"}, matches: true},
		{name: "not matching", kind: refs.ConfigMap, meta: map[string]string{k.ConfigMapSelector: "team=b"}},
		{name: "metadata beats the pod template", kind: refs.ConfigMap,
			meta: map[string]string{k.ConfigMapSelector: "team=b"}, tpl: map[string]string{k.ConfigMapSelector: "team=a"}},
		{name: "pod template as a fallback", kind: refs.ConfigMap, tpl: map[string]string{k.ConfigMapSelector: "team=a"}, matches: true},
		{name: "the other kind's key", kind: refs.Secret, meta: map[string]string{k.ConfigMapSelector: "team=a"}, none: true},
		{name: "no SecretProviderClass selector", kind: refs.SecretProviderClass, meta: map[string]string{k.ConfigMapSelector: "team=a"}, none: true},
		{name: "invalid", kind: refs.ConfigMap, meta: map[string]string{k.ConfigMapSelector: "team in (a"}, none: true,
			err: `annotation "ripple.dev/configmap-selector": invalid label selector "team in (a"`},
		{name: "invalid on the template", kind: refs.ConfigMap, tpl: map[string]string{k.ConfigMapSelector: "=x"}, none: true,
			err: `pod template annotation "ripple.dev/configmap-selector"`},
		{name: "empty selects everything: refused", kind: refs.ConfigMap, meta: map[string]string{k.ConfigMapSelector: " "}, none: true,
			err: "every config of the namespace"},
		{name: "too long", kind: refs.ConfigMap, meta: map[string]string{k.ConfigMapSelector: "a=" + strings.Repeat("b", MaxSelectorLen)}, none: true,
			err: "longer than 1024 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sel, _, err := SelectorOf(k, tc.kind, tc.meta, tc.tpl)
			if (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("error %v, want one with %q", err, tc.err)
			}
			if (sel == nil) != tc.none {
				t.Fatalf("selector %v, want none: %v", sel, tc.none)
			}
			if sel != nil && sel.Matches(team) != tc.matches {
				t.Errorf("%s matches %v: %v, want %v", sel, team, !tc.matches, tc.matches)
			}
			p := Parse(k, tc.kind, tc.meta, tc.tpl)
			if (p.Selector == nil) != tc.none || (p.SelectorInvalid != nil) != (tc.err != "") {
				t.Errorf("Parse: selector %v, invalid %v", p.Selector, p.SelectorInvalid)
			}
		})
	}
}

// A selector may select up to MaxSelected configs; past it, it is refused
// with a message naming its annotation and the count.
func TestCheckSelected(t *testing.T) {
	k := DefaultKeys("")
	p := Parse(k, refs.ConfigMap, map[string]string{k.ConfigMapSelector: "team=a"}, nil)
	if err := p.CheckSelected(MaxSelected); err != nil {
		t.Errorf("%d selected: %v", MaxSelected, err)
	}
	err := p.CheckSelected(MaxSelected + 1)
	if err == nil || !strings.Contains(err.Error(), `annotation "ripple.dev/configmap-selector" selects 101 ConfigMaps, more than 100`) {
		t.Errorf("%d selected: %v, want a refusal naming the annotation and the count", MaxSelected+1, err)
	}
}

func TestHasSelector(t *testing.T) {
	k := DefaultKeys("")
	ann := map[string]string{k.SecretSelector: "not parsed ((("}
	if !HasSelector(k, refs.Secret, ann) || HasSelector(k, refs.ConfigMap, ann) || HasSelector(k, refs.SecretProviderClass, ann) {
		t.Error("HasSelector does not tell the key's presence by kind")
	}
}
