package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
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
// write on it, so Ripple's own writes never count, and when and at which
// resourceVersion of the workload it saw the hash change: at a source
// event (Memory.SawTemplate) or a plan, whichever comes first. A source
// event keeps its object's resourceVersion with the change set
// (Memory.SourceVersion). The template and the sources come through
// separate watches, whose events can arrive in either order and seconds
// apart on a busy API server, so the resourceVersions decide when both are
// known: one etcd orders every write, and the workload's version when the
// change was seen is at or after the template's write. Only a template
// change after the last change of the set applies it. Without versions
// (a Rollout's workloadRef, a change set found by a plan), the times Ripple
// saw them decide: a template change seen at or after the last change of
// the set applies it. One seen between the first and the last change rolls,
// and says so (Plan.TemplateFirst). Only the pod template counts, not the
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
	// Changed is when Ripple saw Hash change, and Version the workload's
	// resourceVersion then; zero when it has seen no change since it first
	// saw the template.
	Changed time.Time
	Version string
}

// Saw is s after the template was seen with hash at t, in the workload at
// version.
func (s TemplateSeen) Saw(hash string, t time.Time, version string) TemplateSeen {
	switch {
	case hash == "" || hash == s.Hash:
		return s
	case s.Hash == "":
		return TemplateSeen{Hash: hash} // first sight: no change seen
	}
	return TemplateSeen{Hash: hash, Changed: t, Version: version}
}

// SawTemplate is the memory after a source event at t found the pod
// template with hash, in the workload at version.
func (m Memory) SawTemplate(hash string, t time.Time, version string) Memory {
	m.Template = m.Template.Saw(hash, t, version)
	return m
}

// PlannedFrom is the memory after plan p, which For made from read: the
// memory as it was when the plan read it; m is the memory now. A source
// event noticed in between (Notice, SawTemplate, SourceVersion) changed the
// settle schedule or the template: that is kept, since the plan did not
// see it and the event queued a reconcile that will, so that its time and
// version still order it against a template change.
func (m Memory) PlannedFrom(read Memory, p Plan) Memory {
	if m.Pending == read.Pending && m.Template == read.Template {
		return m.Planned(p)
	}
	pending, seen := m.Pending, m.Template
	m = m.Planned(p)
	m.Pending, m.Template = pending, seen.Saw(p.Template.Hash, p.Template.Changed, p.Template.Version)
	return m
}

// SourceVersion is the memory after a source event noticed (Notice) came
// with the source at version: the latest of the set's.
func (m Memory) SourceVersion(version string) Memory {
	if v, ok := parseVersion(version); ok && !m.Pending.First.IsZero() {
		if old, known := parseVersion(m.Pending.Version); !known || v > old {
			m.Pending.Version = version
		}
	}
	return m
}

// after reports whether the template change t came after the last change
// of the set p: by resourceVersion when both are known, else by when Ripple
// saw them.
func after(t TemplateSeen, p Pending) bool {
	tv, ok := parseVersion(t.Version)
	pv, known := parseVersion(p.Version)
	if ok && known {
		return tv > pv
	}
	return !t.Changed.Before(p.Last) && !t.Changed.Before(p.First)
}

// parseVersion reads a resourceVersion as the etcd revision it is.
func parseVersion(v string) (uint64, bool) {
	n, err := strconv.ParseUint(v, 10, 64)
	return n, err == nil
}

// withTemplate applies the rule to p, whose settle window has closed: when
// someone else changed the pod template after the last change of the set,
// each changed source becomes TemplateApplied and nothing rolls. A change
// set with a created or deleted source rolls as before.
func withTemplate(in Input, p *Plan) {
	changed, pending := p.Template.Changed, p.Pending
	switch {
	case len(p.Changes) == 0 || !in.Workload.RollsWithTemplate || changed.IsZero() || pending.First.IsZero():
		return
	case !after(p.Template, pending):
		p.TemplateFirst = !changed.Before(pending.First) // a config changed after the template did
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
	// The settle schedule stays until the record is written (Memory.Wrote):
	// the write right after a template change often meets the workload
	// controller's status write (a conflict), and the plan made again must
	// order the template change against the same change set, not a new one.
	p.Changes = nil
}

// byTemplate reports whether withTemplate recorded that the applied value
// last stands for sum, the current data of ref: it stays TemplateApplied
// until the data changes again.
func (wv view) byTemplate(ref refs.Ref, last, sum string) bool {
	a, ok := wv.aliases[ref.String()]
	return ok && a.Template && a.Shown == last && a.Means == sum
}
