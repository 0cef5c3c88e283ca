package history

import (
	"encoding/json"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/ripple-dev/ripple/internal/annotation"
	"github.com/ripple-dev/ripple/internal/digest"
	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/strategy"
)

// Where a revision's digest of a config was read.
const (
	fromEnv        = "env"
	fromAnnotation = "annotation"
	fromRecord     = "record"
	fromDeleted    = "deleted"
)

// sourceKinds are the config kinds, for reading a kind back from the type
// Reloader writes in env var names and annotations.
var sourceKinds = []refs.Kind{refs.ConfigMap, refs.Secret, refs.SecretProviderClass}

// configs are the configs rev was built for: every config its template
// references or records a digest for, in the order of refs (kind, then
// name), then the env vars that name no config known now. The digest is
// read as the planner reads what was applied: the template first (the
// strategy of the Ripple, then the other), else the applied record. A
// config whose env var name collides with another's is read from the
// record only, as the planner does.
func configs(in Input, rev Revision) []Config {
	tpl := rev.Template
	if tpl == nil {
		tpl = &corev1.PodTemplateSpec{}
	}
	cands := candidates(in, rev, tpl)
	ambiguous := collisions(cands)
	record := plan.AppliedRecord(rev.Annotations, in.Keys)
	used := refs.All(&tpl.Spec)
	out := []Config{}
	mapped := map[string]bool{}
	for _, ref := range cands {
		if !ambiguous[ref] {
			mapped[strategy.EnvVarName(ref)] = true
		}
		c := Config{Kind: string(ref.Kind), Name: ref.Name}
		sum, from := applied(in.Strategy, tpl, ref, ambiguous[ref])
		if from == "" {
			if v, ok := record[ref.String()]; ok {
				sum, from = v, fromRecord
			}
		}
		if from == "" && !slices.Contains(used, ref) {
			continue
		}
		c.full, c.From, c.Digest = sum, from, short(sum)
		if sum == digest.DeleteMarker {
			c.From, c.Digest = fromDeleted, ""
		}
		out = append(out, c)
	}
	return append(out, unnamed(tpl, mapped)...)
}

// candidates are the configs rev may have been built for: those that may
// reload the workload now, those rev's template references, the one its
// last-reloaded-from annotation names and those in its applied record.
func candidates(in Input, rev Revision, tpl *corev1.PodTemplateSpec) []refs.Ref {
	out := slices.Clone(in.Configs)
	out = append(out, refs.All(&tpl.Spec)...)
	if ref, ok := annotated(tpl); ok {
		out = append(out, ref)
	}
	for key := range plan.AppliedRecord(rev.Annotations, in.Keys) {
		kind, name, ok := strings.Cut(key, "/")
		if ok && slices.Contains(sourceKinds, refs.Kind(kind)) {
			out = append(out, refs.Ref{Kind: refs.Kind(kind), Name: name})
		}
	}
	slices.SortFunc(out, func(a, b refs.Ref) int {
		if c := strings.Compare(string(a.Kind), string(b.Kind)); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return slices.Compact(out)
}

// collisions are the candidates whose env var name another shares
// (Reloader's names collide: a-b and a.b).
func collisions(cands []refs.Ref) map[refs.Ref]bool {
	bySlot := map[string][]refs.Ref{}
	for _, ref := range cands {
		slot := strategy.EnvVarName(ref)
		bySlot[slot] = append(bySlot[slot], ref)
	}
	out := map[refs.Ref]bool{}
	for _, rs := range bySlot {
		for _, ref := range rs {
			out[ref] = len(rs) > 1
		}
	}
	return out
}

// applied reads the digest of ref on tpl: the strategy s's slot first,
// then the other strategy's. from is empty when neither has it.
func applied(s strategy.Strategy, tpl *corev1.PodTemplateSpec, ref refs.Ref, ambiguous bool) (sum, from string) {
	order := []strategy.Strategy{strategy.EnvVars{}, strategy.Annotations{}}
	if s != nil && s.Name() == (strategy.Annotations{}).Name() {
		slices.Reverse(order)
	}
	for _, st := range order {
		if _, env := st.(strategy.EnvVars); env && ambiguous {
			continue
		}
		if v, ok := st.Applied(tpl, ref); ok {
			if _, env := st.(strategy.EnvVars); env {
				return v, fromEnv
			}
			return v, fromAnnotation
		}
	}
	return "", ""
}

// annotated is the config the last-reloaded-from annotation names.
func annotated(tpl *corev1.PodTemplateSpec) (refs.Ref, bool) {
	raw, ok := tpl.Annotations[annotation.LastReloadedFrom]
	if !ok {
		return refs.Ref{}, false
	}
	var v struct {
		Type string `json:"type"`
		Name string `json:"name"`
	}
	if json.Unmarshal([]byte(raw), &v) != nil || v.Name == "" {
		return refs.Ref{}, false
	}
	for _, k := range sourceKinds {
		if k.Type() == v.Type {
			return refs.Ref{Kind: k, Name: v.Name}, true
		}
	}
	return refs.Ref{}, false
}

// unnamed are the reload env vars on tpl that name none of the configs
// mapped (a config no longer used, whose env var a reload left behind).
func unnamed(tpl *corev1.PodTemplateSpec, mapped map[string]bool) []Config {
	var out []Config
	seen := map[string]bool{}
	for _, c := range tpl.Spec.Containers {
		for _, e := range c.Env {
			kind, ok := slotKind(e.Name)
			if !ok || mapped[e.Name] || seen[e.Name] {
				continue
			}
			seen[e.Name] = true
			out = append(out, Config{Kind: string(kind), Slot: e.Name, Digest: short(e.Value), From: fromEnv, full: e.Value})
		}
	}
	slices.SortFunc(out, func(a, b Config) int { return strings.Compare(a.Slot, b.Slot) })
	return out
}

// slotKind is the config kind of a reload env var name
// (STAKATER_<NAME>_<TYPE>); ok is false for any other name.
func slotKind(name string) (refs.Kind, bool) {
	if !strings.HasPrefix(name, "STAKATER_") {
		return "", false
	}
	for _, k := range sourceKinds {
		if strings.HasSuffix(name, "_"+k.Type()) {
			return k, true
		}
	}
	return "", false
}
