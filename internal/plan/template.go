package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	corev1 "k8s.io/api/core/v1"

	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/strategy"
)

// Template changed with the config. `helm upgrade` (or any apply) that
// changes a workload's pod template and its ConfigMap at once already
// starts pods that read the new data: rolling them again for the config
// would make two rollouts of one change. So when the pod template was
// changed by someone else after a change set was first seen, and before
// Ripple applied it, the plan records the change set as applied (an alias
// on the workload: the value the template shows stands for the current
// data, as keys.go and rollback.go use it) instead of rolling.
//
// The order is what Ripple observed: the settle schedule keeps a hash of
// the pod template as it was when the change set was first seen (at the
// source event, Memory.SawTemplate, or at the first plan that found it),
// without the values reloaders write on it, so Ripple's own writes never
// count. A source event that arrives after the template moved away from
// that hash means a config changed after the template did: the pods the
// template change started may have read older data, so the change set
// rolls as before (Plan.TemplateFirst). Only the pod template counts, not
// the generation, which a scale (an HPA) moves too.
//
// The hash lives in memory only: after a restart the change set rolls as
// before, which is never wrong, only one rollout more.

// TemplateHash is the hash of tpl without the values reloaders write on it
// (strategy.Unmarked): it changes only when someone else changes the pod
// template.
func TemplateHash(tpl *corev1.PodTemplateSpec) string {
	if tpl == nil {
		return ""
	}
	b, err := json.Marshal(strategy.Unmarked(tpl))
	if err != nil {
		return "" // unreachable for a typed pod template; the rule is then off
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:12])
}

// SawTemplate is the memory after a source event, once noticed, found the
// pod template at hash: the first of a change set keeps it; a later one
// that finds another template came after someone changed the template, so
// the change set rolls.
func (m Memory) SawTemplate(hash string) Memory {
	switch {
	case hash == "" || m.Pending.First.IsZero():
	case m.Pending.Template == "":
		m.Pending.Template = hash
	case m.Pending.Template != hash:
		m.Pending.Moved = true
	}
	return m
}

// withTemplate applies the rule to p, whose settle window has closed: when
// the pod template, now at hash, was changed by someone else after the
// change set was first seen and no change came after it, each changed
// source becomes TemplateApplied and nothing rolls. A change set with a
// created or deleted source rolls as before.
func withTemplate(in Input, p *Plan, hash string) {
	pending := in.Pending
	switch {
	case len(p.Changes) == 0 || !in.Workload.RollsWithTemplate || pending.Template == "" || pending.Template == hash:
		return
	case pending.Moved:
		p.TemplateFirst = true
		return
	}
	for _, sp := range p.Sources {
		if sp.State == Created || sp.State == Deleted {
			return
		}
	}
	for i := range p.Sources {
		sp := &p.Sources[i]
		if sp.State == Changed {
			sp.State = TemplateApplied
			p.WithTemplate = append(p.WithTemplate, *sp)
		}
	}
	p.Changes, p.Pending = nil, Pending{}
}

// byTemplate reports whether withTemplate recorded that the applied value
// last stands for sum, the current data of ref: it stays TemplateApplied
// until the data changes again.
func (wv view) byTemplate(ref refs.Ref, last, sum string) bool {
	a, ok := wv.aliases[ref.String()]
	return ok && a.Template && a.Shown == last && a.Means == sum
}
