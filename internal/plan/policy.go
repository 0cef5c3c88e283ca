package plan

import (
	"fmt"
	"strings"
)

// Policy says whether a reload of a workload rolls it by itself (Auto,
// Reloader's behaviour and the default), waits for an approval of its
// change set (Manual) or is only reported (Notify: a dry-run of one
// workload).
type Policy string

// The change policies.
const (
	Auto   = Policy("auto")
	Manual = Policy("manual")
	Notify = Policy("notify")
)

// ParsePolicy reads a policy as written on a workload, its Namespace or
// --reload-policy; empty is Auto.
func ParsePolicy(v string) (Policy, error) {
	switch p := Policy(strings.ToLower(strings.TrimSpace(v))); p {
	case "":
		return Auto, nil
	case Auto, Manual, Notify:
		return p, nil
	}
	return Auto, fmt.Errorf("%q is not a reload policy: use auto, manual or notify", v)
}

// Where a governing setting of a workload (its reload window, reload
// policy, restart method and max-unavailable) comes from, in order of
// precedence.
const (
	FromWorkload  = "workload"
	FromTemplate  = "pod template"
	FromNamespace = "namespace"
	FromFlag      = "flag"
)

// Governing returns the value of a setting that governs when and whether a
// workload rolls (key is its annotation): the workload's annotation, else
// its pod template's, else its Namespace's, else def, the flag's; and where
// the value came from. An annotation that is present wins even when empty
// (empty means "no window" and "auto": how a workload opts out of its
// Namespace's default).
func (w Workload) Governing(key, def string) (value, from string) {
	if v, ok := w.Annotations[key]; ok {
		return v, FromWorkload
	}
	if w.Template != nil {
		if v, ok := w.Template.Annotations[key]; ok {
			return v, FromTemplate
		}
	}
	if v, ok := w.NamespaceAnnotations[key]; ok {
		return v, FromNamespace
	}
	return def, FromFlag
}
