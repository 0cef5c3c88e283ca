package plan

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/strategy"
)

// The reload policy gates a plan whose settle window and storm breaker
// let it roll:
//
//   - auto: it rolls (Reloader's behaviour, the default).
//   - notify: a dry-run of this workload: WouldReload, only the baseline
//     record is written, so that switching to auto rolls the held-back
//     change once.
//   - manual: the change set waits for an approval (the approval
//     annotation, written by `ripple approve`) naming each config and its
//     digest. An approved config whose digest is still the current one
//     rolls, once, and the same write removes the approval; the rest waits
//     for an approval of its own. An approval of a digest that is not
//     current (the config changed again since) is reported and dropped,
//     never applied.
//
// An approval is bound to the change it approves and to a time. Each
// approved config carries the resourceVersion of the config it saw
// (Source.Version), which only the API server sets: data written again
// after the approval, even with the approved digest (A→B→A→B), has
// another one and is not approved by it: it is stale. Approvals written
// before that carry when the data was written instead (Source.Written: a
// managedFields time, to the second), which any client that writes the
// config may set: such an approval fails closed when the time it saw is
// gone from the config (cleared) or is ahead of its own time; without
// that time either it is
// bound by its own time, At: data written after At is not approved. An
// approved config may name no digest when it names a version (`ripple
// approve` without Ripple's digest key): the version pins the data. An
// approval older than Settings.ApprovalMaxAge, without a time, or from
// the future (the approver's clock ahead by more than approvalSkew)
// applies to nothing: it is reported and dropped like a stale one.
//
// An invalid policy is a warning and counts as manual: an owner who wrote a
// policy wanted the workload gated, and a reload that waits says so
// (ReloadPending) where a silent rollout could not be taken back.
//
// Whether a change set waits is derived from the objects (what the
// workload shows applied against the current digests), so a restart loses
// no pending change; the memory only keeps which change set was reported
// (Memory.Awaiting), so that ReloadPending is emitted once per change set.

// Approval is an approval of a workload's pending changes, the JSON value
// of the approval annotation.
type Approval struct {
	// Changes are the approved configs with the digest approved, as the
	// plan's Changes carry them.
	Changes []Approved `json:"changes"`
	// By and At say who approved, and when. By is the approver's own word
	// unless an admission policy checks it (Settings.ApprovalsVerified;
	// the API server's audit log is the record). At bounds the approval's
	// age (Settings.ApprovalMaxAge).
	By string    `json:"by,omitempty"`
	At time.Time `json:"at,omitzero"`
	// Now asks to roll even outside the workload's reload window: an
	// emergency fix.
	Now bool `json:"now,omitempty"`
}

// Approved is one approved config: its reference (refs.Ref.String(), e.g.
// ConfigMap/app) and its digest (empty when Version names the data).
type Approved struct {
	Config string `json:"config"`
	Digest string `json:"digest"`
	// Written is when the approved data was written, as its managedFields
	// said (Source.Written); zero when unknown.
	Written time.Time `json:"written,omitzero"`
	// Version is the resourceVersion of the config the approval saw
	// (Source.Version); empty in approvals written before it was recorded.
	Version string `json:"version,omitempty"`
}

// approvalSkew is how far ahead of Ripple's clock an approval's time may
// be: the approver's clock may be a little ahead, never hours.
const approvalSkew = 5 * time.Minute

// ApprovalOf is the approval of what waits: the value `ripple approve`
// writes.
func ApprovalOf(w Awaiting, by string, at time.Time, now bool) Approval {
	a := Approval{By: by, At: at.UTC().Truncate(time.Second), Now: now}
	for _, c := range w.Changes {
		a.Changes = append(a.Changes, Approved{Config: c.Ref.String(), Digest: c.Hash, Written: w.Written[c.Ref], Version: w.Versions[c.Ref]})
	}
	return a
}

// expired says why the approval applies to nothing at now: no time, a
// time in the future, or older than maxAge (0: no bound); empty when it is
// in force.
func (a Approval) expired(now time.Time, maxAge time.Duration) string {
	at := a.At.UTC().Format(time.RFC3339)
	switch {
	case a.At.IsZero():
		return `it has no "at" time, so its age is unknown`
	case a.At.After(now.Add(approvalSkew)):
		return fmt.Sprintf("its time %s is more than %s ahead of Ripple's clock", at, approvalSkew)
	case maxAge > 0 && now.Sub(a.At) > maxAge:
		return fmt.Sprintf("it was written at %s, more than %s ago (--approval-max-age)", at, maxAge)
	}
	return ""
}

// names reports whether ap names the change c: its config, and its digest
// or, with none, a version.
func (ap Approved) names(c strategy.Change) bool {
	return ap.Config == c.Ref.String() && (ap.Digest == c.Hash || (ap.Digest == "" && ap.Version != ""))
}

// approves reports whether a approves c, of source s: the same
// config and digest, and the config the approval saw (its resourceVersion
// or, in an approval without one, data written no later than it saw).
func (a Approval) approves(c strategy.Change, s Source) bool {
	i := slices.IndexFunc(a.Changes, func(ap Approved) bool { return ap.names(c) })
	if i < 0 {
		return false
	}
	ap := a.Changes[i]
	if ap.Version != "" {
		return ap.Version == s.Version
	}
	switch {
	case !ap.Written.IsZero() && s.Written.IsZero(): // the time it saw was cleared
		return false
	case ap.Written.After(a.At.Add(approvalSkew)): // it saw a write time set ahead of its own
		return false
	}
	bound := ap.Written
	if bound.IsZero() {
		bound = a.At
	}
	return s.Written.IsZero() || !s.Written.After(bound)
}

// ApproveCommand is the command that approves what waits on w.
func ApproveCommand(w Workload) string {
	return fmt.Sprintf("ripple approve %s/%s -n %s", strings.ToLower(w.Kind), w.Name, w.Namespace)
}

// Awaiting is a change set that waits for an approval.
type Awaiting struct {
	// Changes are the configs waiting, with their current digests, and
	// Written when each one's data was written (Source.Written) and
	// Versions their resourceVersions (Source.Version), for the approval.
	Changes  []strategy.Change
	Written  map[refs.Ref]time.Time
	Versions map[refs.Ref]string
	// ID identifies the change set; Since is when it was first seen
	// waiting (as far as this Ripple remembers: a restart starts it again).
	ID    string
	Since time.Time
	// Began is set on the plan that first sees this change set waiting,
	// so that it is reported once.
	Began bool
}

// Approving is what a plan does with the workload's approval.
type Approving struct {
	Approval
	// Applied are the approved changes this plan rolls.
	Applied []strategy.Change
	// Stale are the approved configs whose digest is not the current
	// pending one: superseded by a later change, data written again since
	// the approval, or nothing pending.
	Stale []Approved
	// Expired says why the approval applies to nothing (Approval.expired).
	Expired string
	// Verified is set when an admission policy checks who approves
	// (Settings.ApprovalsVerified): By is then the approver's username.
	Verified bool
}

// AwaitingState is what the memory keeps of a change set waiting for
// approval: which one was reported, and since when it waits.
type AwaitingState struct {
	ID    string
	Since time.Time
}

// policy returns the workload's reload policy and where it comes from;
// an invalid value is a warning and counts as Manual.
func policy(in Input) (Policy, string, string) {
	v, from := in.Workload.Governing(in.Keys.ReloadPolicy, in.ReloadPolicy)
	pol, err := ParsePolicy(v)
	if err != nil {
		where := ""
		if from == FromNamespace {
			where = " on the namespace"
		}
		pol, from, _ = tightPolicy(in, Manual, v, from)
		return pol, from, fmt.Sprintf("annotation %q%s: %v; reloads wait for an approval (manual) until it is fixed", in.Keys.ReloadPolicy, where, err)
	}
	return tightPolicy(in, pol, v, from)
}

// gate applies the manual policy to p: it keeps in p.Changes only the
// approved changes, sets what waits (Awaiting) and what the approval did
// (Approving), and returns the plan the write is built from: the approved
// changes, and the sources as if the rest had not happened, so that their
// applied digests stay and they still show as changes next time.
func gate(in Input, p *Plan) Plan {
	a, present, warning := approval(in)
	p.Warnings = appendNonEmpty(p.Warnings, warning)
	approved, waiting := []strategy.Change(nil), p.Changes
	if present {
		p.Approving, waiting = approving(in, a, p.Changes)
		approved = p.Approving.Applied
	}
	written := writtenOf(in.Sources)
	if len(waiting) > 0 {
		id := changeID(waiting)
		since := p.Seen
		if in.Awaiting.ID == id {
			since = in.Awaiting.Since
		}
		p.Awaiting = &Awaiting{Changes: waiting, ID: id, Since: since, Began: in.Awaiting.ID != id, Written: written, Versions: versionsOf(in.Sources)}
	}
	p.Changes = approved
	w := *p
	w.Sources = make([]SourcePlan, 0, len(p.Sources))
	for _, sp := range p.Sources {
		if slices.ContainsFunc(waiting, func(c strategy.Change) bool { return c.Ref == sp.Ref }) {
			switch sp.State {
			case Changed:
				sp.Digest = sp.Applied
			case Created:
				continue
			}
		}
		w.Sources = append(w.Sources, sp)
	}
	return w
}

// approving is what the approval a does with the changes: those it
// approves roll (Applied), the others wait; an approved config that does
// not roll is stale.
func approving(in Input, a Approval, changes []strategy.Change) (*Approving, []strategy.Change) {
	ap := &Approving{Approval: a, Expired: a.expired(in.Now, in.ApprovalMaxAge), Verified: in.ApprovalsVerified}
	var waiting []strategy.Change
	for _, c := range changes {
		i := slices.IndexFunc(in.Sources, func(s Source) bool { return s.Ref == c.Ref })
		if ap.Expired == "" && i >= 0 && a.approves(c, in.Sources[i]) {
			ap.Applied = append(ap.Applied, c)
		} else {
			waiting = append(waiting, c)
		}
	}
	for _, ok := range a.Changes {
		if !slices.ContainsFunc(ap.Applied, ok.names) {
			ap.Stale = append(ap.Stale, ok)
		}
	}
	return ap, waiting
}

// writtenOf is when each source's data was written, where known.
func writtenOf(sources []Source) map[refs.Ref]time.Time {
	written := map[refs.Ref]time.Time{}
	for _, s := range sources {
		if !s.Written.IsZero() {
			written[s.Ref] = s.Written
		}
	}
	return written
}

// versionsOf is each found source's resourceVersion.
func versionsOf(sources []Source) map[refs.Ref]string {
	out := map[refs.Ref]string{}
	for _, s := range sources {
		if s.Version != "" {
			out[s.Ref] = s.Version
		}
	}
	return out
}

// approval reads the workload's approval: whether one is present, and a
// warning when it is not valid JSON (it is then not applied, and left for
// its writer to replace).
func approval(in Input) (Approval, bool, string) {
	v, ok := in.Workload.Annotations[in.Keys.Approval]
	if !ok {
		return Approval{}, false, ""
	}
	var a Approval
	if err := json.Unmarshal([]byte(v), &a); err != nil {
		return Approval{}, false, fmt.Sprintf("annotation %q: not an approval (%v); write it with `ripple approve`", in.Keys.Approval, err)
	}
	return a, true, ""
}

// dropApproval adds to u the removal of the approval a plan acted on:
// applied or stale, it is spent.
func dropApproval(in Input, u map[string]*string) map[string]*string {
	if u == nil {
		u = map[string]*string{}
	}
	u[in.Keys.Approval] = nil
	return u
}

// awaiting is the memory's state of what p leaves waiting for approval.
func (p Plan) awaiting() AwaitingState {
	if p.Awaiting == nil {
		return AwaitingState{}
	}
	return AwaitingState{ID: p.Awaiting.ID, Since: p.Awaiting.Since}
}
