// Package decide answers one question for the reconciler: should this
// workload reload because this config changed, and why.
//
// The answer follows Stakater Reloader's precedence exactly (resource ignore,
// then exclude, named match, search/match, auto, --auto-reload-all), because
// users depend on it. It is a pure function of its Input so that every rule
// can be tested in a table; gathering the inputs and acting on the decision
// happen elsewhere. Skipping ignored workload kinds (jobs, cronjobs) is also
// done elsewhere, before Decide is called.
package decide

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/ripple-dev/ripple/internal/annotation"
	"github.com/ripple-dev/ripple/internal/refs"
)

// Source is what decide needs to know about a changed source (a
// ConfigMap, Secret or SecretProviderClass).
type Source struct {
	Ref refs.Ref
	// Annotations are the source's own metadata annotations, where the
	// ignore and match keys live.
	Annotations map[string]string
	// Labels are the source's labels, which a workload's label selector
	// matches; Found is false when it no longer exists.
	Labels map[string]string
	Found  bool
}

// Input is everything Decide looks at.
type Input struct {
	Keys annotation.Keys
	// Policy is the workload's policy, parsed for Source.Ref.Kind.
	Policy annotation.Policy
	Source Source
	// Referenced is true when the workload's pod template references the
	// config, or a field of its own does (Field).
	Referenced bool
	// Field is the field path of the workload's own field that references
	// the config (a declared kind's refs), when its pod template does not.
	Field string
	// AutoReloadAll is the --auto-reload-all flag.
	AutoReloadAll bool
	// Applied is true when the workload shows a digest of the config (its
	// pod template or its applied record): a config gone that a label
	// selector had selected is known by it alone.
	Applied bool
}

// Reason is a machine-readable, CamelCase cause of a Decision.
type Reason string

// Reasons a workload does or does not reload.
const (
	// Ignored: the config has the ignore annotation set to "true".
	Ignored Reason = "Ignored"
	// Excluded: the workload's exclude annotation lists the config.
	Excluded Reason = "Excluded"
	// NamedMatch: the config's name matches the named-reload annotation.
	// No reference is needed.
	NamedMatch Reason = "NamedMatch"
	// SelectorMatch: the config's labels match the workload's label
	// selector annotation, or the config is gone and the workload, which
	// has a selector, shows a digest of it. No reference is needed.
	SelectorMatch Reason = "SelectorMatch"
	// SearchMatch: the workload searches, the config is marked as a match,
	// and the workload references it.
	SearchMatch Reason = "SearchMatch"
	// AutoMatch: auto or typed auto is on and the workload references the
	// config.
	AutoMatch Reason = "AutoMatch"
	// AutoReloadAll: --auto-reload-all is on, the workload has no auto
	// setting of its own, and it references the config.
	AutoReloadAll Reason = "AutoReloadAll"
	// NotReferenced: search, auto or --auto-reload-all would apply, but the
	// workload does not reference the config.
	NotReferenced Reason = "NotReferenced"
	// NotOptedIn: nothing on the workload asks for a reload on this config.
	NotOptedIn Reason = "NotOptedIn"
)

// Decision is the outcome of Decide.
type Decision struct {
	Reload bool
	Reason Reason
	// Message is a human sentence for events and explain output. It names
	// the annotation key at play and never includes config data.
	Message string
}

// Decide reports whether the workload should reload for the config, in
// Reloader's order: ignore on the config beats everything; an exact-name
// exclude (or an exclude list over its bound, which excludes every config
// of its kind) beats every trigger; a named match reloads even without a
// reference (the reconciler then targets container #0); search/match, auto
// and --auto-reload-all reload only a workload that references the config,
// and --auto-reload-all only when the workload sets neither auto key.
func Decide(in Input) Decision {
	keys, p := in.Keys, in.Policy
	ref := in.Source.Ref
	what := fmt.Sprintf("%s %q", ref.Kind, ref.Name)
	where := ""
	if p.FromTemplate {
		where = " on the pod template"
	}

	if annotation.IsTrue(in.Source.Annotations[keys.Ignore]) {
		return Decision{Reason: Ignored, Message: fmt.Sprintf("%s has %q set to \"true\"", what, keys.Ignore)}
	}
	if slices.Contains(p.Exclude, ref.Name) {
		return Decision{Reason: Excluded, Message: fmt.Sprintf("%s is listed in %q", what, keys.ExcludeKey(ref.Kind))}
	}
	if p.ExcludeAll {
		return Decision{Reason: Excluded, Message: fmt.Sprintf("%s may be listed in %q, which lists more than %d items and so excludes every %s",
			what, keys.ExcludeKey(ref.Kind), annotation.MaxItems, ref.Kind)}
	}
	for _, m := range p.Named {
		if m.Match(ref.Name) {
			return Decision{Reload: true, Reason: NamedMatch,
				Message: fmt.Sprintf("%s matches %q in %q%s", what, m.String(), keys.ReloadKey(ref.Kind), where)}
		}
	}

	// The remaining triggers all need a reference. The first that applies
	// names the reason, as in Reloader, which stops at the first trigger.
	if d, ok := selected(in, what); ok {
		return d
	}

	var trigger Reason
	var cond, by string // why the trigger applies, continuing the sentence; its name
	switch {
	case p.Search && annotation.IsTrue(in.Source.Annotations[keys.Match]):
		trigger, by = SearchMatch, fmt.Sprintf("%q", keys.Search)
		cond = fmt.Sprintf(", has %q set to \"true\" and the workload has %q set to \"true\"%s", keys.Match, keys.Search, where)
	case p.Auto:
		trigger, by = AutoMatch, fmt.Sprintf("%q", p.AutoKey)
		cond = fmt.Sprintf(" and the workload has %q set to true%s", p.AutoKey, where)
	case in.AutoReloadAll && !p.AutoSet:
		trigger, by = AutoReloadAll, "--auto-reload-all"
		cond = fmt.Sprintf(", --auto-reload-all is set and the workload sets neither %q nor %q", keys.Auto, keys.TypedAutoKey(ref.Kind))
	default:
		return Decision{Reason: NotOptedIn, Message: fmt.Sprintf("%s is not selected by %q, %q, %q or %q%s",
			what, keys.ReloadKey(ref.Kind), keys.Auto, keys.TypedAutoKey(ref.Kind), keys.Search, where)}
	}
	if !in.Referenced {
		return Decision{Reason: NotReferenced, Message: fmt.Sprintf("%s is not referenced by the pod template, so %s does not apply", what, by)}
	}
	by = "the pod template"
	if in.Field != "" {
		by = "the workload's field " + in.Field
	}
	return Decision{Reload: true, Reason: trigger, Message: fmt.Sprintf("%s is referenced by %s%s", what, by, cond)}
}

// selected decides a config by the workload's label selector, after the
// named match: one its selector matches reloads the workload, and so does
// one gone that it shows a digest of (the labels of a deleted config are
// not known any more: it was selected when it was recorded, unless
// something else chose it, which decides before). A config whose labels no
// longer match is not selected and leaves the record without a rollout.
func selected(in Input, what string) (Decision, bool) {
	p := in.Policy
	if p.Selector == nil {
		return Decision{}, false
	}
	switch {
	case in.Source.Found && p.Selector.Matches(labels.Set(in.Source.Labels)):
		return Decision{Reload: true, Reason: SelectorMatch,
			Message: fmt.Sprintf("%s has labels matching %q in %s", what, p.Selector.String(), p.SelectorWhere)}, true
	case !in.Source.Found && in.Applied:
		return Decision{Reload: true, Reason: SelectorMatch,
			Message: fmt.Sprintf("%s, which the workload shows a digest of, is gone, and %s selects configs by label", what, p.SelectorWhere)}, true
	}
	return Decision{}, false
}
