package plan

import (
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/ripple-dev/ripple/internal/strategy"
)

// Reverts. Ripple writes a reload by server-side apply, so a GitOps tool
// re-applying its manifest keeps Ripple's value (workload/apply.go). An
// owner that rewrites the whole pod template (an operator re-rendering the
// Deployment it owns, a tool replacing the object) removes it: the owner's
// rewrite rolled the pods, which read the current data, so there is
// nothing to roll, and writing the value back would only start a fight
// with the owner, one rollout per round.
//
// A revert and a rollback are told apart by what the template and the
// record show (rollback.go):
//
//   - rollback: the template shows an older value of Ripple's slot (a
//     revision restored: `kubectl rollout undo`, a restore of a template
//     that carried Ripple's value), or a Deployment's undo restored an
//     older applied record with it;
//   - revert: Ripple's last rollout wrote the source's current digest on
//     the template (Memory.OnTemplate), the template no longer has the
//     slot at all, and the record was kept or removed, not restored to an
//     older one.
//
// A revert is reported once (ReloadReverted, naming the manager), the
// source counts as applied, and the record keeps its digest. As a
// backstop for any loop, a rollout that would write the same applied
// record as the last MaxAttempts rollouts of the workload is held
// (RevertHeld): the workload does not keep what Ripple writes. Both live in
// memory only: after a restart, the template and the record decide as
// before.

// MaxAttempts is how many rollouts of one change set (the same applied
// record) Ripple makes before it holds the workload.
const MaxAttempts = 2

// reverted marks sp reverted: Ripple's last rollout wrote its current
// digest on the template, which no longer shows the source at all
// (shown), and the record was not restored to an older digest. sp then
// counts as applied, Unchanged.
func reverted(wv view, sp *SourcePlan, shown bool) {
	key := sp.Ref.String()
	w, known := wv.onTemplate[key]
	if shown || !known || w != sp.Digest {
		return
	}
	switch sp.State {
	case Unchanged, Changed, Baseline, RolledBack:
	default:
		return
	}
	if rec, ok := wv.record[key]; ok && rec != w {
		return // an older record came back with the template: an undo
	}
	sp.State, sp.Applied, sp.means, sp.noticed = Unchanged, w, "", false
	sp.Reverted = true
}

// onTemplate is the value of Memory.OnTemplate for a write of changes on
// tpl: each change the strategy shows on tpl, as ref=digest;.
func onTemplate(st strategy.Strategy, changes []strategy.Change, tpl *corev1.PodTemplateSpec) string {
	var b strings.Builder
	for _, c := range changes {
		if got, ok := st.Applied(tpl, c.Ref); ok && !c.Deleted && got == c.Hash {
			b.WriteString(c.Ref.String() + "=" + c.Hash + ";")
		}
	}
	return b.String()
}

func parseOnTemplate(v string) map[string]string {
	out := map[string]string{}
	for _, kv := range strings.Split(v, ";") {
		if k, d, ok := strings.Cut(kv, "="); ok {
			out[k] = d
		}
	}
	return out
}

// revertsNoticed are the reverted sources of p that this plan is the first
// to see since Ripple's last rollout of the workload.
func revertsNoticed(in Input, sources []SourcePlan) []SourcePlan {
	if in.RevertSeen != "" && in.RevertSeen == in.OnTemplate {
		return nil
	}
	var out []SourcePlan
	for _, sp := range sources {
		if sp.Reverted {
			out = append(out, sp)
		}
	}
	return out
}

// heldAfterAttempts reports whether p, a rollout, writes the applied record
// the last MaxAttempts rollouts already wrote.
func heldAfterAttempts(in Input, p Plan) bool {
	return p.record != "" && p.record == in.Applied && in.Tries >= MaxAttempts
}
