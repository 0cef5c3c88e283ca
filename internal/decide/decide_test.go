package decide

import (
	"strings"
	"testing"

	"github.com/ripple-dev/ripple/internal/annotation"
	"github.com/ripple-dev/ripple/internal/refs"
)

const (
	cmReload   = "configmap.reloader.stakater.com/reload"
	secReload  = "secret.reloader.stakater.com/reload"
	spcReload  = "secretproviderclass.reloader.stakater.com/reload"
	auto       = "reloader.stakater.com/auto"
	cmAuto     = "configmap.reloader.stakater.com/auto"
	secAuto    = "secret.reloader.stakater.com/auto"
	search     = "reloader.stakater.com/search"
	match      = "reloader.stakater.com/match"
	ignore     = "reloader.stakater.com/ignore"
	cmExclude  = "configmaps.exclude.reloader.stakater.com/reload"
	secExclude = "secrets.exclude.reloader.stakater.com/reload"
)

// tc is one case: the workload's annotations and the changed config go
// through annotation.Parse, as in the reconciler, so the tables exercise
// the same path production does.
type tc struct {
	name       string
	keys       *annotation.Keys // nil means the defaults
	meta, tpl  map[string]string
	ref        refs.Ref
	cfg        map[string]string // the config's annotations
	referenced bool
	all        bool // --auto-reload-all

	reload bool
	reason Reason
	msg    []string // substrings the message must contain
}

var (
	cmApp  = refs.Ref{Kind: refs.ConfigMap, Name: "app"}
	secApp = refs.Ref{Kind: refs.Secret, Name: "app"}
)

func run(t *testing.T, tests []tc) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			keys := annotation.DefaultKeys("")
			if tt.keys != nil {
				keys = *tt.keys
			}
			got := Decide(Input{
				Keys:          keys,
				Policy:        annotation.Parse(keys, tt.ref.Kind, tt.meta, tt.tpl),
				Source:        Source{Ref: tt.ref, Annotations: tt.cfg},
				Referenced:    tt.referenced,
				AutoReloadAll: tt.all,
			})
			if got.Reload != tt.reload || got.Reason != tt.reason {
				t.Errorf("Decide() = {Reload: %v, Reason: %s}, want {Reload: %v, Reason: %s}; message: %s",
					got.Reload, got.Reason, tt.reload, tt.reason, got.Message)
			}
			for _, want := range tt.msg {
				if !strings.Contains(got.Message, want) {
					t.Errorf("message %q does not contain %q", got.Message, want)
				}
			}
		})
	}
}

func TestDecidePrecedence(t *testing.T) {
	run(t, []tc{
		{
			name:       "ignore on the config beats named",
			meta:       map[string]string{cmReload: "app"},
			ref:        cmApp,
			cfg:        map[string]string{ignore: "true"},
			referenced: true,
			reason:     Ignored,
			msg:        []string{`ConfigMap "app"`, `"` + ignore + `"`},
		},
		{
			name:       "ignore beats auto, search and auto-reload-all",
			meta:       map[string]string{auto: "true", search: "true"},
			ref:        cmApp,
			cfg:        map[string]string{ignore: "true", match: "true"},
			referenced: true,
			all:        true,
			reason:     Ignored,
		},
		{
			name:       "ignore beats exclude",
			meta:       map[string]string{cmExclude: "app", auto: "true"},
			ref:        cmApp,
			cfg:        map[string]string{ignore: "true"},
			referenced: true,
			reason:     Ignored,
		},
		{
			name:       "ignore must be exactly true",
			meta:       map[string]string{cmReload: "app"},
			ref:        cmApp,
			cfg:        map[string]string{ignore: "True"},
			reload:     true,
			reason:     NamedMatch,
			referenced: true,
		},
		{
			name:       "ignore on the workload is not a thing",
			meta:       map[string]string{cmReload: "app", ignore: "true"},
			ref:        cmApp,
			referenced: true,
			reload:     true,
			reason:     NamedMatch,
		},
		{
			name:       "exclude beats named",
			meta:       map[string]string{cmExclude: "app", cmReload: "app"},
			ref:        cmApp,
			referenced: true,
			reason:     Excluded,
			msg:        []string{`ConfigMap "app"`, `"` + cmExclude + `"`},
		},
		{
			name:       "exclude beats search",
			meta:       map[string]string{cmExclude: "other, app", search: "true"},
			ref:        cmApp,
			cfg:        map[string]string{match: "true"},
			referenced: true,
			reason:     Excluded,
		},
		{
			name:       "exclude beats auto",
			meta:       map[string]string{secExclude: "app", auto: "true"},
			ref:        secApp,
			referenced: true,
			reason:     Excluded,
			msg:        []string{`Secret "app"`, `"` + secExclude + `"`},
		},
		{
			name:       "exclude beats auto-reload-all",
			meta:       map[string]string{cmExclude: "app"},
			ref:        cmApp,
			referenced: true,
			all:        true,
			reason:     Excluded,
		},
		{
			name:       "exclude is an exact name, not a pattern",
			meta:       map[string]string{cmExclude: "app.*,ap", auto: "true"},
			ref:        cmApp,
			referenced: true,
			reload:     true,
			reason:     AutoMatch,
		},
		{
			name:   "exclude of the other kind does not apply",
			meta:   map[string]string{secExclude: "app", cmReload: "app"},
			ref:    cmApp,
			reload: true,
			reason: NamedMatch,
		},
		{
			name:       "exclude is read from metadata only",
			tpl:        map[string]string{cmExclude: "app", cmReload: "app"},
			ref:        cmApp,
			referenced: true,
			reload:     true,
			reason:     NamedMatch,
		},
		{
			name:       "exclude on metadata applies to triggers from the template",
			meta:       map[string]string{cmExclude: "app"},
			tpl:        map[string]string{cmReload: "app"},
			ref:        cmApp,
			referenced: true,
			reason:     Excluded,
		},
		{
			name:   "auto false does not block named",
			meta:   map[string]string{auto: "false", cmAuto: "false", cmReload: "app"},
			ref:    cmApp,
			reload: true,
			reason: NamedMatch,
			msg:    []string{`ConfigMap "app"`, `"` + cmReload + `"`, `"app"`},
		},
		{
			name:   "named needs no reference",
			meta:   map[string]string{cmReload: "app"},
			ref:    cmApp,
			reload: true,
			reason: NamedMatch,
		},
		{
			name:       "named is checked before search",
			meta:       map[string]string{cmReload: "app", search: "true"},
			ref:        cmApp,
			cfg:        map[string]string{match: "true"},
			referenced: true,
			reload:     true,
			reason:     NamedMatch,
		},
		{
			name:   "named of the other kind does not trigger",
			meta:   map[string]string{secReload: "app"},
			ref:    cmApp,
			reason: NotOptedIn,
		},
		{
			name:       "search and match reload a referencing workload",
			meta:       map[string]string{search: "true"},
			ref:        cmApp,
			cfg:        map[string]string{match: "true"},
			referenced: true,
			reload:     true,
			reason:     SearchMatch,
			msg:        []string{`ConfigMap "app"`, `"` + search + `"`, `"` + match + `"`},
		},
		{
			name:   "search needs a reference",
			meta:   map[string]string{search: "true"},
			ref:    cmApp,
			cfg:    map[string]string{match: "true"},
			reason: NotReferenced,
			msg:    []string{`ConfigMap "app"`, `"` + search + `"`},
		},
		{
			name:       "search without match on the config",
			meta:       map[string]string{search: "true"},
			ref:        cmApp,
			referenced: true,
			reason:     NotOptedIn,
		},
		{
			name:       "match must be exactly true",
			meta:       map[string]string{search: "true"},
			ref:        cmApp,
			cfg:        map[string]string{match: "TRUE"},
			referenced: true,
			reason:     NotOptedIn,
		},
		{
			name:       "search must be exactly true",
			meta:       map[string]string{search: "1"},
			ref:        cmApp,
			cfg:        map[string]string{match: "true"},
			referenced: true,
			reason:     NotOptedIn,
		},
		{
			name:       "match on the workload does not count",
			meta:       map[string]string{search: "true", match: "true"},
			ref:        cmApp,
			referenced: true,
			reason:     NotOptedIn,
		},
		{
			name:       "auto reloads a referencing workload",
			meta:       map[string]string{auto: "true"},
			ref:        cmApp,
			referenced: true,
			reload:     true,
			reason:     AutoMatch,
			msg:        []string{`ConfigMap "app"`, `"` + auto + `"`},
		},
		{
			name:   "auto needs a reference",
			meta:   map[string]string{auto: "true"},
			ref:    cmApp,
			reason: NotReferenced,
			msg:    []string{`ConfigMap "app"`, `"` + auto + `"`},
		},
		{
			name:       "typed auto for this kind reloads",
			meta:       map[string]string{secAuto: "true"},
			ref:        secApp,
			referenced: true,
			reload:     true,
			reason:     AutoMatch,
			msg:        []string{`"` + secAuto + `"`},
		},
		{
			name:   "typed auto needs a reference",
			meta:   map[string]string{cmAuto: "true"},
			ref:    cmApp,
			reason: NotReferenced,
			msg:    []string{`"` + cmAuto + `"`},
		},
		{
			name:       "typed auto of the other kind does not trigger",
			meta:       map[string]string{cmAuto: "true"},
			ref:        secApp,
			referenced: true,
			reason:     NotOptedIn,
		},
		{
			name:       "search and auto both set: search reloads",
			meta:       map[string]string{search: "true", auto: "true"},
			ref:        cmApp,
			cfg:        map[string]string{match: "true"},
			referenced: true,
			reload:     true,
			reason:     SearchMatch,
		},
		{
			name:       "search and auto both set: auto reloads an unmatched config",
			meta:       map[string]string{search: "true", auto: "true"},
			ref:        cmApp,
			referenced: true,
			reload:     true,
			reason:     AutoMatch,
		},
		{
			name:       "search and auto both set: neither without a reference",
			meta:       map[string]string{search: "true", auto: "true"},
			ref:        cmApp,
			cfg:        map[string]string{match: "true"},
			referenced: false,
			reason:     NotReferenced,
		},
		{
			name:       "auto false and no other trigger",
			meta:       map[string]string{auto: "false"},
			ref:        cmApp,
			referenced: true,
			reason:     NotOptedIn,
			msg:        []string{`ConfigMap "app"`, `"` + cmReload + `"`, `"` + auto + `"`, `"` + cmAuto + `"`, `"` + search + `"`},
		},
		{
			name:       "no annotations at all",
			ref:        cmApp,
			referenced: true,
			reason:     NotOptedIn,
		},
	})
}

func TestDecideAutoReloadAll(t *testing.T) {
	run(t, []tc{
		{
			name:       "reloads a referencing workload with no auto annotation",
			ref:        cmApp,
			referenced: true,
			all:        true,
			reload:     true,
			reason:     AutoReloadAll,
			msg:        []string{`ConfigMap "app"`, "--auto-reload-all"},
		},
		{
			name:   "needs a reference",
			ref:    cmApp,
			all:    true,
			reason: NotReferenced,
			msg:    []string{"--auto-reload-all"},
		},
		{
			name:       "auto false blocks it",
			meta:       map[string]string{auto: "false"},
			ref:        cmApp,
			referenced: true,
			all:        true,
			reason:     NotOptedIn,
		},
		{
			name:       "auto garbage blocks it",
			meta:       map[string]string{auto: "enabled"},
			ref:        cmApp,
			referenced: true,
			all:        true,
			reason:     NotOptedIn,
		},
		{
			name:       "typed auto false for this kind blocks it",
			meta:       map[string]string{cmAuto: "false"},
			ref:        cmApp,
			referenced: true,
			all:        true,
			reason:     NotOptedIn,
		},
		{
			name:       "typed auto garbage on the template blocks it",
			tpl:        map[string]string{cmAuto: "nope"},
			ref:        cmApp,
			referenced: true,
			all:        true,
			reason:     NotOptedIn,
		},
		{
			name:       "auto with an empty value does not block it",
			meta:       map[string]string{auto: ""},
			ref:        cmApp,
			referenced: true,
			all:        true,
			reload:     true,
			reason:     AutoReloadAll,
		},
		{
			// The spec's example: secret…/auto "true" plus --auto-reload-all
			// still reloads on ConfigMap changes.
			name:       "typed auto of the other kind does not block it",
			meta:       map[string]string{secAuto: "true"},
			ref:        cmApp,
			referenced: true,
			all:        true,
			reload:     true,
			reason:     AutoReloadAll,
		},
		{
			name:       "typed auto false of the other kind does not block it",
			meta:       map[string]string{secAuto: "false"},
			ref:        cmApp,
			referenced: true,
			all:        true,
			reload:     true,
			reason:     AutoReloadAll,
		},
		{
			name:       "search without match does not block it",
			meta:       map[string]string{search: "true"},
			ref:        cmApp,
			referenced: true,
			all:        true,
			reload:     true,
			reason:     AutoReloadAll,
		},
		{
			name:       "named miss does not block it",
			meta:       map[string]string{cmReload: "other"},
			ref:        cmApp,
			referenced: true,
			all:        true,
			reload:     true,
			reason:     AutoReloadAll,
		},
		{
			name:       "off without the flag",
			ref:        cmApp,
			referenced: true,
			reason:     NotOptedIn,
		},
	})
}

func TestDecidePodTemplateFallback(t *testing.T) {
	run(t, []tc{
		{
			name:   "named on the template when metadata has no trigger",
			tpl:    map[string]string{cmReload: "app"},
			ref:    cmApp,
			reload: true,
			reason: NamedMatch,
			msg:    []string{`"` + cmReload + `"`, "pod template"},
		},
		{
			name:       "auto on the template",
			meta:       map[string]string{"unrelated": "x"},
			tpl:        map[string]string{auto: "true"},
			ref:        cmApp,
			referenced: true,
			reload:     true,
			reason:     AutoMatch,
			msg:        []string{"pod template"},
		},
		{
			name:       "search on the template",
			tpl:        map[string]string{search: "true"},
			ref:        cmApp,
			cfg:        map[string]string{match: "true"},
			referenced: true,
			reload:     true,
			reason:     SearchMatch,
		},
		{
			// The spec's example: metadata has the Secret reload key and the
			// template has the ConfigMap reload key.
			name:   "mixed placement: configmap change reads the template",
			meta:   map[string]string{secReload: "app"},
			tpl:    map[string]string{cmReload: "app"},
			ref:    cmApp,
			reload: true,
			reason: NamedMatch,
		},
		{
			name:   "mixed placement: secret change reads the metadata",
			meta:   map[string]string{secReload: "app"},
			tpl:    map[string]string{cmReload: "app"},
			ref:    secApp,
			reload: true,
			reason: NamedMatch,
			msg:    []string{`"` + secReload + `"`},
		},
		{
			name:   "mixed placement: secret reads only the metadata",
			meta:   map[string]string{secReload: "other"},
			tpl:    map[string]string{secReload: "app"},
			ref:    secApp,
			reason: NotOptedIn,
		},
		{
			name:       "all or nothing: metadata auto false hides template named",
			meta:       map[string]string{auto: "false"},
			tpl:        map[string]string{cmReload: "app"},
			ref:        cmApp,
			referenced: true,
			reason:     NotOptedIn,
		},
		{
			name:       "all or nothing: metadata search hides template auto",
			meta:       map[string]string{search: "false"},
			tpl:        map[string]string{auto: "true"},
			ref:        cmApp,
			referenced: true,
			reason:     NotOptedIn,
		},
		{
			name:       "metadata typed auto of the other kind does not hide the template",
			meta:       map[string]string{secAuto: "false"},
			tpl:        map[string]string{cmAuto: "true"},
			ref:        cmApp,
			referenced: true,
			reload:     true,
			reason:     AutoMatch,
		},
	})
}

func TestDecideMatching(t *testing.T) {
	spc := refs.Ref{Kind: refs.SecretProviderClass, Name: "vault-db"}
	run(t, []tc{
		{
			name:   "regex item",
			meta:   map[string]string{cmReload: "app-config-.*"},
			ref:    refs.Ref{Kind: refs.ConfigMap, Name: "app-config-v2"},
			reload: true,
			reason: NamedMatch,
			msg:    []string{`"app-config-.*"`},
		},
		{
			name:   "regex item is anchored",
			meta:   map[string]string{cmReload: "config-.*"},
			ref:    refs.Ref{Kind: refs.ConfigMap, Name: "app-config-v2"},
			reason: NotOptedIn,
		},
		{
			name:   "literal item with a dot matches itself",
			meta:   map[string]string{cmReload: "app.config"},
			ref:    refs.Ref{Kind: refs.ConfigMap, Name: "app.config"},
			reload: true,
			reason: NamedMatch,
		},
		{
			// Fixed Reloader bug: the dot is not a wildcard.
			name:   "literal item with a dot does not match a dash",
			meta:   map[string]string{cmReload: "app.config"},
			ref:    refs.Ref{Kind: refs.ConfigMap, Name: "app-config"},
			reason: NotOptedIn,
		},
		{
			name:   "trailing comma",
			meta:   map[string]string{cmReload: "other,app,"},
			ref:    cmApp,
			reload: true,
			reason: NamedMatch,
		},
		{
			name:   "items are trimmed",
			meta:   map[string]string{cmReload: "  other ,\tapp  "},
			ref:    cmApp,
			reload: true,
			reason: NamedMatch,
		},
		{
			name:   "invalid regex is skipped, later items still match",
			meta:   map[string]string{cmReload: "app[,ap+"},
			ref:    cmApp,
			reload: true,
			reason: NamedMatch,
			msg:    []string{`"ap+"`},
		},
		{
			name:   "secretproviderclass named",
			meta:   map[string]string{spcReload: "vault-.*"},
			ref:    spc,
			reload: true,
			reason: NamedMatch,
			msg:    []string{`SecretProviderClass "vault-db"`, `"` + spcReload + `"`},
		},
	})
}

func TestDecideRenamedKeys(t *testing.T) {
	keys := annotation.DefaultKeys("")
	keys.Auto = "example.com/auto"
	keys.SecretAuto = "example.com/secret-auto"
	keys.ConfigMapReload = "example.com/cm-reload"
	keys.Search = "example.com/search"
	keys.Match = "example.com/match"
	keys.Ignore = "example.com/ignore"
	run(t, []tc{
		{
			name:   "renamed named key",
			keys:   &keys,
			meta:   map[string]string{"example.com/cm-reload": "app"},
			ref:    cmApp,
			reload: true,
			reason: NamedMatch,
			msg:    []string{`"example.com/cm-reload"`},
		},
		{
			name:       "renamed auto",
			keys:       &keys,
			meta:       map[string]string{"example.com/auto": "true"},
			ref:        cmApp,
			referenced: true,
			reload:     true,
			reason:     AutoMatch,
			msg:        []string{`"example.com/auto"`},
		},
		{
			name:       "renamed typed auto",
			keys:       &keys,
			meta:       map[string]string{"example.com/secret-auto": "true"},
			ref:        secApp,
			referenced: true,
			reload:     true,
			reason:     AutoMatch,
		},
		{
			name:       "renamed search and match",
			keys:       &keys,
			meta:       map[string]string{"example.com/search": "true"},
			ref:        cmApp,
			cfg:        map[string]string{"example.com/match": "true"},
			referenced: true,
			reload:     true,
			reason:     SearchMatch,
			msg:        []string{`"example.com/search"`, `"example.com/match"`},
		},
		{
			name:       "renamed ignore",
			keys:       &keys,
			meta:       map[string]string{"example.com/cm-reload": "app"},
			ref:        cmApp,
			cfg:        map[string]string{"example.com/ignore": "true"},
			referenced: true,
			reason:     Ignored,
			msg:        []string{`"example.com/ignore"`},
		},
		{
			name:       "default names do nothing once renamed",
			keys:       &keys,
			meta:       map[string]string{cmReload: "app", auto: "true", secAuto: "true", search: "true"},
			ref:        cmApp,
			cfg:        map[string]string{match: "true", ignore: "true"},
			referenced: true,
			reason:     NotOptedIn,
		},
		{
			// A renamed auto key frees the default name, so the default no
			// longer blocks --auto-reload-all either.
			name:       "default auto name does not block auto-reload-all once renamed",
			keys:       &keys,
			meta:       map[string]string{auto: "false"},
			ref:        cmApp,
			referenced: true,
			all:        true,
			reload:     true,
			reason:     AutoReloadAll,
		},
	})
}

// An exclude list over its bound fails closed: it could name any config
// of its kind, so it excludes them all, beating a named match, auto and
// --auto-reload-all, and says why; configs of the other kind still
// reload. Before, the list was ignored whole and "app" reloaded.
func TestDecideExcludeOverBoundExcludesAll(t *testing.T) {
	over := make([]string, annotation.MaxItems+1)
	for i := range over {
		over[i] = "other-" + strings.Repeat("x", i%7)
	}
	list := strings.Join(over, ",")
	run(t, []tc{
		{
			name: "named match", meta: map[string]string{cmExclude: list, cmReload: "app"}, ref: cmApp, referenced: true,
			reason: Excluded, msg: []string{`"` + cmExclude + `"`, "more than 100 items", "excludes every ConfigMap"},
		},
		{name: "auto", meta: map[string]string{cmExclude: list, auto: "true"}, ref: cmApp, referenced: true, reason: Excluded},
		{name: "auto-reload-all", meta: map[string]string{cmExclude: list}, ref: cmApp, referenced: true, all: true, reason: Excluded},
		{
			name: "the other kind", meta: map[string]string{cmExclude: list, auto: "true"}, ref: secApp, referenced: true,
			reload: true, reason: AutoMatch,
		},
		{
			name: "at the bound", meta: map[string]string{cmExclude: strings.Join(over[:annotation.MaxItems], ","), auto: "true"},
			ref: cmApp, referenced: true, reload: true, reason: AutoMatch,
		},
	})
}

func TestDecideSelector(t *testing.T) {
	k := annotation.DefaultKeys("")
	sel := map[string]string{k.ConfigMapSelector: "team=a"}
	team := map[string]string{"team": "a"}
	for _, tc := range []struct {
		name    string
		meta    map[string]string
		cfg     map[string]string // the config's annotations
		labels  map[string]string
		found   bool
		applied bool
		reload  bool
		reason  Reason
	}{
		{name: "matching labels reload, unreferenced", meta: sel, labels: team, found: true, reload: true, reason: SelectorMatch},
		{name: "other labels do not", meta: sel, labels: map[string]string{"team": "b"}, found: true, reason: NotOptedIn},
		{name: "no labels do not", meta: sel, found: true, reason: NotOptedIn},
		{name: "gone and shown: it was selected", meta: sel, applied: true, reload: true, reason: SelectorMatch},
		{name: "gone and never shown", meta: sel, reason: NotOptedIn},
		{name: "relabelled out while shown", meta: sel, labels: map[string]string{"team": "b"}, found: true, applied: true, reason: NotOptedIn},
		{name: "no selector", meta: map[string]string{}, labels: team, found: true, reason: NotOptedIn},
		{name: "ignore beats it", meta: sel, cfg: map[string]string{k.Ignore: "true"}, labels: team, found: true, reason: Ignored},
		{name: "exclude beats it", meta: map[string]string{k.ConfigMapSelector: "team=a", k.ConfigMapExclude: "app"}, labels: team, found: true, reason: Excluded},
		{name: "named decides first", meta: map[string]string{k.ConfigMapSelector: "team=a", k.ConfigMapReload: "app"}, labels: team, found: true, reload: true, reason: NamedMatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(Input{
				Keys:    k,
				Policy:  annotation.Parse(k, refs.ConfigMap, tc.meta, nil),
				Source:  Source{Ref: cmApp, Annotations: tc.cfg, Labels: tc.labels, Found: tc.found},
				Applied: tc.applied,
			})
			if d.Reload != tc.reload || d.Reason != tc.reason {
				t.Errorf("Decide() = {%v, %s} (%s), want {%v, %s}", d.Reload, d.Reason, d.Message, tc.reload, tc.reason)
			}
			if d.Reason == SelectorMatch && !strings.Contains(d.Message, k.ConfigMapSelector) {
				t.Errorf("message %q does not name the annotation", d.Message)
			}
		})
	}
}
