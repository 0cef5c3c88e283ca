package plan

import (
	"cmp"
	"encoding/json"
	"iter"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/ripple-dev/ripple/internal/annotation"
	"github.com/ripple-dev/ripple/internal/decide"
	"github.com/ripple-dev/ripple/internal/digest"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/strategy"
)

// sources decides for every source whether it reloads the workload and
// whether it changed, and returns the invalid annotations found.
func sources(in Input) ([]SourcePlan, []strategy.Change, []string) {
	var warnings []string
	wv := view{
		policies:   map[refs.Kind]annotation.Policy{},
		ambiguous:  ambiguousRefs(in),
		record:     AppliedRecord(in.Workload.Annotations, in.Keys),
		restored:   in.Workload.RecordRestored,
		restoredBy: in.Workload.RestoredBy,
		written:    parseRecord(in.Applied),
		onTemplate: parseOnTemplate(in.OnTemplate),
		aliases:    appliedAliases(in.Workload.Annotations, in.Keys),
		uses:       Uses(in.Workload),
	}
	if in.Rollout.StaleVersion != "" && in.Workload.Version == in.Rollout.StaleVersion {
		// The copy read is the one Ripple's last rollout was written on:
		// it does not show that write yet. Read against what the write
		// put there, its older template would look like a rollback (or a
		// revert) of it; read alone, the change is still due.
		wv.written, wv.onTemplate = nil, nil
	}
	for _, kind := range in.SourceKinds {
		p := kindPolicy(in.Keys, kind, in.Workload)
		for _, err := range p.Invalid {
			warnings = append(warnings, err.Error())
		}
		if p.SelectorInvalid != nil {
			warnings = append(warnings, p.SelectorInvalid.Error())
		}
		wv.policies[kind] = p
	}
	var err error
	if wv.spec, err = annotation.ParseKeySpec(in.Keys, in.Workload.Annotations, in.Workload.Template.Annotations); err != nil {
		warnings = append(warnings, err.Error())
	}
	if err := wv.spec.CheckBudget(keyTables(in.Sources)); err != nil {
		warnings, wv.spec = append(warnings, err.Error()), annotation.KeySpec{}
	}
	var plans []SourcePlan
	var changes []strategy.Change
	for _, src := range in.Sources {
		sp, change := source(in, src, wv)
		plans = append(plans, sp)
		if change != nil {
			changes = append(changes, *change)
		}
	}
	return plans, changes, warnings
}

// view is what the plan of every source reads from the workload.
type view struct {
	policies  map[refs.Kind]annotation.Policy
	ambiguous map[refs.Ref]bool
	record    map[string]string
	// restored is set when another manager wrote the record's current
	// value: it came back with the template (rollback.go).
	restored bool
	// restoredBy is no earlier than the restore (Workload.RestoredBy).
	restoredBy time.Time
	written    map[string]string
	// onTemplate is what Ripple's last rollout wrote on the template.
	onTemplate map[string]string
	aliases    map[string]alias
	spec       annotation.KeySpec
	uses       []refs.Use
}

// Reloads reports whether a change of src reloads the workload under its
// annotations, whatever was applied before: webhook mode names these.
func Reloads(s Settings, w Workload, src Source) bool {
	d, container := decision(s, w, src, kindPolicy(s.Keys, src.Ref.Kind, w), false)
	return d.Reload && container != ""
}

// kindPolicy is the workload's policy for configs of kind, without its
// named-reload items when matching them was over the budget.
func kindPolicy(keys annotation.Keys, kind refs.Kind, w Workload) annotation.Policy {
	p := annotation.Parse(keys, kind, w.Annotations, w.Template.Annotations)
	if slices.Contains(w.OverBudget, kind) {
		p.Named = nil
	}
	if slices.ContainsFunc(w.TooBroad, func(tb TooBroad) bool { return tb.Kind == kind }) {
		p.Selector = nil
	}
	return p
}

// keyTables are the sources' key tables, for the reload-on-keys budget.
func keyTables(sources []Source) iter.Seq2[refs.Ref, digest.KeyTable] {
	return func(yield func(refs.Ref, digest.KeyTable) bool) {
		for _, src := range sources {
			if !yield(src.Ref, src.Keys) {
				return
			}
		}
	}
}

// decision decides whether src reloads the workload, and the container a
// reload is written on; applied tells whether the workload shows a digest
// of src (a label selector's config gone is known by it alone).
func decision(s Settings, w Workload, src Source, policy annotation.Policy, applied bool) (decide.Decision, string) {
	container, referenced := refs.Target(&w.Template.Spec, src.Ref)
	field := ""
	if !referenced {
		// A config the workload's own field names: its reload is written
		// on the first container, as a named reload's.
		if i := slices.IndexFunc(w.FieldRefs, func(f refs.FieldRef) bool { return f.Ref == src.Ref }); i >= 0 {
			referenced, field = true, w.FieldRefs[i].Path
		}
	}
	return decide.Decide(decide.Input{
		Keys:          s.Keys,
		Policy:        policy,
		Source:        decide.Source{Ref: src.Ref, Annotations: src.Annotations, Labels: src.Labels, Found: src.Found},
		Referenced:    referenced,
		Field:         field,
		AutoReloadAll: s.AutoReloadAll,
		Applied:       applied,
	}), container
}

// Uses are where workload w uses its configs: its pod template's uses,
// then its own fields' (each reading every key).
func Uses(w Workload) []refs.Use {
	out := refs.Uses(&w.Template.Spec)
	for _, f := range w.FieldRefs {
		out = append(out, f.Use())
	}
	return out
}

// source plans one source; the change is nil when it does not roll.
func source(in Input, src Source, wv view) (SourcePlan, *strategy.Change) {
	d, container := decision(in.Settings, in.Workload, src, wv.policies[src.Ref.Kind], wv.shows(in, src.Ref))
	sp := SourcePlan{Ref: src.Ref, State: NotReloading, Decision: d}
	if !sp.Decision.Reload || container == "" {
		return sp, nil
	}
	last, ok := "", false
	if !wv.ambiguous[src.Ref] {
		last, ok = in.Strategy.Applied(in.Workload.Template, src.Ref)
	}
	shown := ok || wv.ambiguous[src.Ref]
	if !ok {
		last, ok = wv.record[src.Ref.String()]
	}
	// A delete already rolled leaves no state to compare with.
	ok = ok && last != digest.DeleteMarker
	if ok {
		sp.Applied = last
	}
	if src.Found {
		found(in, src, wv, &sp, last, ok)
		rolledBack(wv, src, &sp)
		reverted(wv, &sp, shown)
	} else {
		sp.State, sp.Digest = gone(in, src, ok, d.Reason == decide.SelectorMatch)
	}
	if sp.State != Changed && sp.State != Created && sp.State != Deleted {
		return sp, nil
	}
	return sp, &strategy.Change{
		Ref: src.Ref, Namespace: in.Workload.Namespace, Container: container,
		Hash: sp.Digest, Deleted: sp.State == Deleted,
	}
}

// found sets the state and digest of a source that exists; last is the
// applied digest if ok.
func found(in Input, src Source, wv view, sp *SourcePlan, last string, ok bool) {
	sel := selection{}
	if wv.spec.On {
		sel = keySelection(wv.spec, wv.uses, src.Ref)
	}
	sp.Keys = sel.names
	if b := src.Before; !ok && b != nil && existedAt(in.Workload, b.Seen) {
		last, ok = sel.sum(Source{Digest: b.Digest, Keys: b.Keys}), true
		sp.Applied = last
	}
	sum, mounted := sel.sum(src), true
	if src.Ref.Kind == refs.SecretProviderClass {
		sum, mounted = mountedDigest(src, last)
	}
	sp.Digest = sum
	switch {
	case !mounted:
		sp.State = Untracked
	case ok && last == sum:
		sp.State = Unchanged
	case ok && wv.byTemplate(src.Ref, last, sum):
		sp.State = TemplateApplied // recorded by withTemplate; sp.Applied is last
	case ok && wv.equivalent(src, sel, last, sum):
		sp.State, sp.Digest, sp.means = Unchanged, last, sum
	case ok:
		sp.State = Changed
	case created(in, src, sp.Decision.Reason == decide.SelectorMatch):
		sp.State = Created
	default:
		// A source seen for the first time is a baseline, not a change.
		sp.State = Baseline
	}
}

// existedAt reports whether the workload existed before t. Creation
// times have one-second granularity: a workload created in the second of
// t does not count, since it may have been created with the new data.
func existedAt(w Workload, t time.Time) bool {
	return w.Created.Before(t.Truncate(time.Second))
}

// gone is the state and digest of a source that does not exist; ok tells
// whether a digest was applied. A config a label selector had selected
// left the selection: that is a change of what the workload reads, so it
// rolls as --reload-on-delete rolls a named one (selector.go).
func gone(in Input, src Source, ok, selected bool) (State, string) {
	switch {
	case src.Ref.Kind == refs.SecretProviderClass:
		return Untracked, "" // the driver keeps serving what it mounted
	case ok && (in.ReloadOnDelete || selected):
		return Deleted, digest.DeleteMarker
	case ok:
		return Missing, ""
	}
	return Untracked, ""
}

// ambiguousRefs are the sources whose state the template cannot tell: they
// share where the strategy records them with another source (colliding env
// var names), or the kind's reload (or the evict or delete restart method)
// leaves the template alone.
func ambiguousRefs(in Input) map[refs.Ref]bool {
	bySlot := map[string][]refs.Ref{}
	for _, src := range in.Sources {
		slot := in.Strategy.Slot(src.Ref)
		bySlot[slot] = append(bySlot[slot], src.Ref)
	}
	out := map[refs.Ref]bool{}
	for _, rs := range bySlot {
		for _, ref := range rs {
			out[ref] = len(rs) > 1 || in.Workload.KeepsTemplate || in.Workload.Restart.Pods()
		}
	}
	return out
}

// created reports whether --reload-on-create makes the source's creation a
// change: it was created after the workload, and after Ripple started
// unless --sync-after-restart is set. Timestamps have one-second
// granularity, so a source and a workload applied together do not count.
// A config a label selector selects (selected) needs no flag: its
// creation adds to what the workload reads (selector.go).
func created(in Input, src Source, selected bool) bool {
	if (!in.ReloadOnCreate && !selected) || !src.Created.After(in.Workload.Created) {
		return false
	}
	return in.SyncAfterRestart || !src.Created.Before(in.Started.Truncate(time.Second))
}

// mountedDigest is the digest of a SecretProviderClass: the latest change
// seen, or after a restart, when none was seen, the applied digest if a pod
// still shows it (no change yet), else the one most pods show. During a
// rotation some pods show the new versions and some the old, so the latest
// change wins: a rotation rolls once and never back. mounted is false when
// no pod mounts it.
func mountedDigest(src Source, applied string) (sum string, mounted bool) {
	if src.Digest != "" {
		return src.Digest, true
	}
	if len(src.Mounts) == 0 {
		return "", false
	}
	if src.Mounts[applied] > 0 {
		return applied, true
	}
	sums := make([]string, 0, len(src.Mounts))
	for sum := range src.Mounts {
		sums = append(sums, sum)
	}
	slices.SortFunc(sums, func(a, b string) int {
		return cmp.Or(src.Mounts[b]-src.Mounts[a], strings.Compare(a, b))
	})
	return sums[0], true
}

// AppliedRecord reads the workload's record of applied source digests,
// keyed by refs.Ref.String(). A malformed record counts as empty: the next
// write replaces it.
func AppliedRecord(annotations map[string]string, keys annotation.Keys) map[string]string {
	return parseRecord(annotations[keys.Applied])
}

func parseRecord(v string) map[string]string {
	rec := map[string]string{}
	if v != "" {
		_ = json.Unmarshal([]byte(v), &rec)
	}
	return rec
}

// record returns the applied record to store on the workload metadata: the
// digest of every tracked (or deleted but not rolled) source that the new
// pod template does not already show, that this write rolls, or that the
// record holds already. That is the baseline of sources never rolled, so
// that a change made while Ripple is down is still seen as a change, and,
// for a source Ripple rolled, the digest it wrote on the template: a
// rollback of the template leaves it behind (rollback.go). A template
// showing a reloader's value that Ripple never rolled (Reloader's, on
// migration) adds nothing. It returns nil when no record is needed or it
// is unchanged.
func record(in Input, sources []SourcePlan, tpl *corev1.PodTemplateSpec) *string {
	ambiguous := ambiguousRefs(in)
	old := AppliedRecord(in.Workload.Annotations, in.Keys)
	rec := map[string]string{}
	for _, sp := range sources {
		sum := sp.Digest
		switch sp.State {
		case Missing, TemplateApplied:
			sum = sp.Applied
		case Baseline, Unchanged, Changed, Created, RolledBack:
		default:
			continue
		}
		_, kept := old[sp.Ref.String()]
		if sp.Reverted && !kept {
			continue // the owner removed the record too: writing it back would fight it (revert.go)
		}
		if shown, ok := in.Strategy.Applied(tpl, sp.Ref); !ok || shown != sum || ambiguous[sp.Ref] || kept ||
			sp.State == Changed || sp.State == Created {
			rec[sp.Ref.String()] = sum
		}
	}
	if len(rec) == 0 {
		// Leave a record this Ripple has no use for: another Ripple with
		// an overlapping scope may own it, and a stale one costs nothing.
		return nil
	}
	b, err := json.Marshal(rec) // map keys are sorted: the value is stable
	if err != nil {
		return nil
	}
	v := string(b)
	if v == in.Workload.Annotations[in.Keys.Applied] {
		return nil
	}
	return &v
}
