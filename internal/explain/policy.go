package explain

import (
	"time"

	"github.com/ripple-dev/ripple/internal/annotation"
	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/reason"
	"github.com/ripple-dev/ripple/internal/refs"
)

const (
	fromMetadata = "metadata"
	fromTemplate = "podTemplate"
)

// policyKey is an annotation key Ripple reads on a workload, and the
// source kinds whose triggers it is one of (none: read from the metadata
// only).
type policyKey struct {
	key      string
	triggers []refs.Kind
	// template: read on the pod template too, whatever the triggers.
	template bool
}

func policyKeys(k annotation.Keys) []policyKey {
	sourceKinds := refs.Kinds()
	keys := []policyKey{{key: k.Auto, triggers: sourceKinds}}
	for _, kind := range sourceKinds {
		keys = append(keys, policyKey{key: k.TypedAutoKey(kind), triggers: []refs.Kind{kind}})
	}
	for _, kind := range sourceKinds {
		keys = append(keys, policyKey{key: k.ReloadKey(kind), triggers: []refs.Kind{kind}})
	}
	keys = append(keys, policyKey{key: k.Search, triggers: sourceKinds})
	for _, kind := range sourceKinds {
		keys = append(keys, policyKey{key: k.ExcludeKey(kind)})
	}
	for _, key := range []string{k.SettleWindow, k.PausePeriod, k.PausedAt, k.RolloutStrategy, k.CronJobReload, k.Pin} {
		keys = append(keys, policyKey{key: key})
	}
	return append(keys, policyKey{key: k.RestartMethod, template: true}, policyKey{key: k.MaxUnavailable, template: true},
		policyKey{key: k.RestartContainers, template: true}, policyKey{key: k.InPlaceFallback, template: true},
		policyKey{key: k.RestartedAt})
}

// policy lists the workload's annotations Ripple reads, where each is,
// and why one does not count.
func policy(f Facts) []PolicyEntry {
	keys := f.Settings.Plan.Keys
	meta, tpl := f.Object.GetAnnotations(), tplAnnotations(f.Template)
	out := []PolicyEntry{}
	for _, pk := range policyKeys(keys) {
		if v, ok := meta[pk.key]; ok {
			out = append(out, PolicyEntry{Key: pk.key, Value: v, From: fromMetadata})
		}
		v, ok := tpl[pk.key]
		if !ok {
			continue
		}
		e := PolicyEntry{Key: pk.key, Value: v, From: fromTemplate}
		switch {
		case pk.template:
			if _, onMeta := meta[pk.key]; onMeta {
				e.Note = "not read: the workload metadata has this key, which wins"
			}
		case len(pk.triggers) == 0:
			e.Note = "not read: Ripple reads this key on the workload metadata only"
		case !readFromTemplate(keys, pk.triggers, meta, tpl):
			e.Note = "not read: the workload metadata has trigger annotations, and then (as in Reloader) none are read from the pod template"
		}
		out = append(out, e)
	}
	return out
}

// readFromTemplate reports whether the triggers of any of kinds are read
// from the pod template.
func readFromTemplate(keys annotation.Keys, kinds []refs.Kind, meta, tpl map[string]string) bool {
	for _, kind := range kinds {
		if annotation.Parse(keys, kind, meta, tpl).FromTemplate {
			return true
		}
	}
	return false
}

// waiting says what Ripple waits for: the settle window of a change, the
// end of its pause period, or an owner's resume.
func waiting(f Facts) []Wait {
	var out []Wait
	if w, ok := settleWait(f); ok {
		out = append(out, w)
	}
	if w, ok := pauseWait(f); ok {
		out = append(out, w)
	}
	if w, ok := holdWait(f); ok {
		out = append(out, w)
	}
	if w, ok := windowWait(f); ok {
		out = append(out, w)
	}
	if w, ok := slotWait(f); ok {
		out = append(out, w)
	}
	if w, ok := canaryWait(f); ok {
		out = append(out, w)
	}
	return out
}

// slotWait is a wait for a rollout slot: the plan has changes to roll and
// Ripple's newest event on the workload is RolloutQueued, with no Reloaded
// after it.
func slotWait(f Facts) (Wait, bool) {
	if len(f.Plan.Changes) == 0 || f.Plan.Wait > 0 {
		return Wait{}, false
	}
	for _, e := range f.Events {
		switch reason.Reason(e.Reason) {
		case reason.RolloutQueued:
			return Wait{For: waitSlot, Setting: "--max-concurrent-rollouts", Message: e.Message}, true
		case reason.Reloaded:
			return Wait{}, false
		}
	}
	return Wait{}, false
}

// holdWait is the storm breaker's hold, from Ripple's events (newest
// first; a hold lives only in Ripple's memory): on when the newest
// ReloadHeld has no ReloadResumed or Reloaded after it.
func holdWait(f Facts) (Wait, bool) {
	for _, e := range f.Events {
		switch reason.Reason(e.Reason) {
		case reason.ReloadHeld:
			return Wait{For: waitHold, Setting: "--flap-threshold", Message: e.Message +
				"; Ripple rolls the latest data once the configs have been quiet for --flap-quiet-period"}, true
		case reason.ReloadResumed, reason.Reloaded:
			return Wait{}, false
		}
	}
	return Wait{}, false
}

// settleWait is the wait for the settle window (or the minimum rollout
// interval) the plan told of; Setting names where it is set, with the
// flag's origin as explain read it.
func settleWait(f Facts) (Wait, bool) {
	n, ok := f.Plan.Notice(reason.SettleWindow)
	if !ok {
		return Wait{}, false
	}
	key, flag := f.Settings.Plan.Keys.SettleWindow, "settle-window"
	if f.Plan.Spaced {
		key, flag = f.Settings.Plan.Keys.MinRolloutInterval, "min-rollout-interval"
	}
	until := f.Now.Add(f.Plan.Wait)
	w := Wait{For: waitSettle, Setting: key, Until: &until, Message: n.Message}
	if _, ok := f.Object.GetAnnotations()[key]; !ok {
		w.Setting = f.Settings.Flag(flag)
	}
	return w, true
}

// pauseWait is the wait of a paused workload, as the plan's Paused
// notice tells it: for the end of Ripple's pause period, or for its owner
// to resume it.
func pauseWait(f Facts) (Wait, bool) {
	if f.Template == nil {
		return Wait{}, false
	}
	n, until, ok := plan.PauseNotice(f.Input)
	switch {
	case !ok:
		return Wait{}, false
	case until.IsZero():
		return Wait{For: waitOwner, Setting: "spec.paused", Message: n.Message}, true
	}
	return Wait{For: waitPause, Setting: f.Settings.Plan.Keys.PausePeriod, Until: &until, Message: n.Message}, true
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }
