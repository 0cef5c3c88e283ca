package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/strategy"
)

// Template changed with the config. `helm upgrade` (or any apply) that
// changes a workload's pod template and its ConfigMap at once already
// starts pods that read the new data: rolling them again for the config
// would make two rollouts of one change. So when the pod template was
// changed by someone else after the change set was seen, and before Ripple
// applied it, the plan records the change set as applied (an alias on the
// workload: the value the template shows stands for the current data, as
// keys.go and rollback.go use it) instead of rolling.
//
// The order is what Ripple observed. Its memory keeps a hash of the pod
// template as last seen (Memory.Template), without the values reloaders
// write on it, so Ripple's own writes never count, and when it saw the
// hash change: at a source event (Memory.SawTemplate) or a plan, whichever
// comes first. The template and the sources come through separate watches,
// so a template change that arrives with a config event (Ripple had not
// seen it before) counts as made with it. Only a template change seen at
// or after the last change of the set applies it; one seen between the
// first and the last rolls, and says so (Plan.TemplateFirst); one seen
// before the set is an older change. Only the pod template counts, not the
// generation, which a scale (an HPA) moves too.
//
// The memory is lost on restart: the first sight of a template has no
// change time, so the change set rolls as before, which is never wrong,
// only one rollout more.

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

// TemplateSeen is the pod template as Ripple last saw it.
type TemplateSeen struct {
	// Hash is its TemplateHash.
	Hash string
	// Changed is when Ripple saw Hash change; zero when it has seen no
	// change since it first saw the template.
	Changed time.Time
}

// Saw is s after the template was seen with hash at t.
func (s TemplateSeen) Saw(hash string, t time.Time) TemplateSeen {
	switch {
	case hash == "" || hash == s.Hash:
		return s
	case s.Hash == "":
		return TemplateSeen{Hash: hash} // first sight: no change seen
	}
	return TemplateSeen{Hash: hash, Changed: t}
}

// SawTemplate is the memory after a source event at t found the pod
// template with hash.
func (m Memory) SawTemplate(hash string, t time.Time) Memory {
	m.Template = m.Template.Saw(hash, t)
	return m
}

// withTemplate applies the rule to p, whose settle window has closed: when
// someone else changed the pod template at or after the last change of the
// set, each changed source becomes TemplateApplied and nothing rolls. A
// change set with a created or deleted source rolls as before.
func withTemplate(in Input, p *Plan) {
	changed, pending := p.Template.Changed, p.Pending
	switch {
	case len(p.Changes) == 0 || !in.Workload.RollsWithTemplate || changed.IsZero() || pending.First.IsZero() || changed.Before(pending.First):
		return
	case changed.Before(pending.Last):
		p.TemplateFirst = true // a config changed after the template did
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
