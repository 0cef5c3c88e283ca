package plan

import (
	"encoding/json"
	"slices"

	"github.com/ripple-dev/ripple/internal/annotation"
	"github.com/ripple-dev/ripple/internal/refs"
)

// Per-key reloads. A workload with the reload-on-keys annotation rolls only
// when the keys that count for it change: for each source, the keys its
// annotation lists, else the keys its pod template names (an env var's
// valueFrom, a volume's items); a source used whole (envFrom, a volume
// without items, or not referenced at all) counts every key and keeps
// Reloader's digest. The digest compared and written for a source whose
// keys are selected is digest.KeyTable.Of those keys.
//
// Switching the annotation on or off changes the form of the digest, not
// the data, so it must roll nothing by itself: an applied value equal to
// the other form of the current data is no change, and an alias recorded
// on the workload (AppliedAlias: the value shown, and the digest it stands
// for) keeps it so until the data changes. The alias names the shown value,
// so one left behind by a later rollout matches nothing.

// selection is which keys of a source count for a workload.
type selection struct {
	// names are the keys, or the listed patterns, that count; nil means
	// every key, and Reloader's digest.
	names  []string
	counts func(key string) bool
	// listed are the annotation's matchers, when it lists the keys: their
	// digest is remembered per table (annotation.KeysDigest).
	listed []annotation.Matcher
}

// keySelection returns the keys of ref that count under spec, given where
// the pod template uses it.
func keySelection(spec annotation.KeySpec, uses []refs.Use, ref refs.Ref) selection {
	if ref.Kind == refs.SecretProviderClass {
		return selection{}
	}
	if ms, ok := spec.Listed(ref); ok {
		s := selection{listed: ms, counts: func(k string) bool {
			return slices.ContainsFunc(ms, func(m annotation.Matcher) bool { return m.Match(k) })
		}}
		for _, m := range ms {
			s.names = append(s.names, m.String())
		}
		return s
	}
	keys, all := refs.Keys(uses, ref)
	if all || len(keys) == 0 {
		return selection{}
	}
	return selection{names: keys, counts: func(k string) bool {
		_, found := slices.BinarySearch(keys, k)
		return found
	}}
}

// sum returns the digest of src under s.
func (s selection) sum(src Source) string {
	switch {
	case s.counts == nil:
		return src.Digest
	case s.listed != nil:
		return annotation.KeysDigest(src.Keys, s.listed)
	}
	return src.Keys.Of(s.counts)
}

// alias says that the applied value Shown stands for the digest Means of
// the current data.
type alias struct {
	Shown string `json:"shown"`
	Means string `json:"means"`
	// Template is set when a change of the pod template made after the
	// config's applied the data (template.go).
	Template bool `json:"template,omitempty"`
}

// appliedAliases reads the workload's aliases, keyed by refs.Ref.String();
// a malformed value counts as none.
func appliedAliases(annotations map[string]string, keys annotation.Keys) map[string]alias {
	out := map[string]alias{}
	if v := annotations[keys.AppliedAlias]; v != "" {
		_ = json.Unmarshal([]byte(v), &out)
	}
	return out
}

// equivalent reports whether the applied value last, which differs from
// sum, still stands for the current data of src: the alias recorded for
// last says so or, with none, last is the current data's other form:
// Reloader's digest when keys are selected (opted in since), else the
// per-key digest of the keys the pod template names (opted out since).
// Each form of the data counts (Source.Others: the other --digest mode,
// the previous key, the unkeyed tables from before keys existed), so that
// switching modes, rotating the key or upgrading rolls nothing.
func (wv view) equivalent(src Source, sel selection, last, sum string) bool {
	forms := append([]Source{src}, otherForms(src)...)
	if a, ok := wv.aliases[src.Ref.String()]; ok && a.Shown == last {
		return a.Means == sum || slices.ContainsFunc(forms, func(f Source) bool { return sel.sum(f) == a.Means })
	}
	inferred := keySelection(annotation.KeySpec{}, wv.uses, src.Ref)
	return slices.ContainsFunc(forms, func(f Source) bool {
		switch {
		case sel.sum(f) == last:
			return true
		case sel.counts != nil:
			return last == f.Digest
		}
		return inferred.counts != nil && last == inferred.sum(f)
	})
}

// otherForms are src with each of its other forms of digests.
func otherForms(src Source) []Source {
	out := make([]Source, len(src.Others))
	for i, f := range src.Others {
		out[i] = Source{Ref: src.Ref, Digest: f.Digest, Keys: f.Keys}
	}
	return out
}

// aliasWrite returns the aliases to store: one per source whose applied
// value stands for its current digest. It returns nil when there are none
// or they are stored already; stale aliases are left, as they name values
// no longer shown.
func aliasWrite(in Input, sources []SourcePlan) *string {
	out := map[string]alias{}
	for _, sp := range sources {
		switch {
		case sp.State == Unchanged && sp.means != "":
			out[sp.Ref.String()] = alias{Shown: sp.Digest, Means: sp.means}
		case sp.State == RolledBack:
			out[sp.Ref.String()] = alias{Shown: sp.Applied, Means: sp.Digest}
		case sp.State == TemplateApplied:
			out[sp.Ref.String()] = alias{Shown: sp.Applied, Means: sp.Digest, Template: true}
		}
	}
	if len(out) == 0 {
		return nil
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil
	}
	v := string(b)
	if v == in.Workload.Annotations[in.Keys.AppliedAlias] {
		return nil
	}
	return &v
}
