// Package plan decides, as one pure function, what a reconcile does to a
// workload and why. Its Input is what the reconciler gathered from the
// caches (the workload, every source that may reload it, what Ripple
// remembers of the workload, and the clock); its Plan says, for each source, the
// decision with its reason, which sources changed, how long to wait for
// the settle window, and the one write to make: the pod template with the
// reload applied, the applied record and the pause-period writes.
//
// The package also owns that memory (Memory: the settle schedule, the
// storm breaker, the place in line for a rollout slot, the rollout being
// followed) and every transition of it, including the admission of a
// rollout under the caps (Admit) and the following of a rollout to its end
// (Memory.Follow).
//
// Nothing here reads the cluster or the clock, so every rule is tested in
// tables. The reconciler acts on the Plan and reports it.
package plan

import (
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ripple-dev/ripple/internal/annotation"
	"github.com/ripple-dev/ripple/internal/canary"
	"github.com/ripple-dev/ripple/internal/decide"
	"github.com/ripple-dev/ripple/internal/digest"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/strategy"
	"github.com/ripple-dev/ripple/internal/workload"
)

// Settings are the flags a plan depends on.
type Settings struct {
	Keys     annotation.Keys
	Strategy strategy.Strategy
	// SourceKinds are the source kinds in play, in order.
	SourceKinds    []refs.Kind
	AutoReloadAll  bool
	ReloadOnCreate bool
	ReloadOnDelete bool
	// SyncAfterRestart makes sources created before Started count as
	// created too (with ReloadOnCreate).
	SyncAfterRestart bool
	// SettleWindow is the default settle window.
	SettleWindow time.Duration
	// MinRolloutInterval is the default least time between two rollouts
	// of a workload; 0 means none.
	MinRolloutInterval time.Duration
	// Flap are the flap breaker's limits.
	Flap Flap
	// Rollouts cap and time the rollouts Ripple follows.
	Rollouts RolloutLimits
	// Started is when this Ripple started watching.
	Started time.Time
	// DryRun decides as usual but rolls nothing: the write keeps only the
	// baseline record, so that the rollouts dry-run held back still happen
	// once it is off.
	DryRun bool
	// ReloadWindow and ReloadPolicy are the defaults of the reload-window
	// and reload-policy annotations (--reload-window, --reload-policy), as
	// written: a workload or its Namespace overrides them (Governing).
	ReloadWindow, ReloadPolicy string
	// RestartMethod is the default restart method (--restart-method),
	// parsed: a workload or its Namespace overrides it (RestartOf).
	RestartMethod string
	// Canary is how changes are canaried by default (--canary,
	// --canary-bake): a config or its Namespace overrides it (CanaryOf).
	Canary canary.Spec
	// UnkeptRolls is --canary-unkept=roll: a canaried change that no
	// canary can be kept for (Input.CanaryUnkept) rolls without one, with
	// a Warning; otherwise it is held until one can be.
	UnkeptRolls bool
	// NamespaceDefaults makes gather read the workload's Namespace's
	// annotations (Workload.NamespaceAnnotations), with --namespace-defaults.
	NamespaceDefaults bool
	// Governance (docs/change-policies.md, docs/security.md):
	// ApprovalMaxAge bounds an approval's age (--approval-max-age; 0: no
	// bound); ApprovalsVerified says an admission policy checks an
	// approval's "by" (--approvals-verified).
	ApprovalMaxAge    time.Duration
	ApprovalsVerified bool
	// TightenOnly lets a workload's own reload-policy and reload-window
	// annotations only tighten its Namespace's or the flag's
	// (--tighten-only, tighten.go).
	TightenOnly bool
	// DeleteNamespaces allow the delete restart method only in those
	// namespaces (--restart-delete-namespaces); empty: everywhere.
	DeleteNamespaces []string
	// Pinning lets a workload's reloads pin its configs (--pinning,
	// ripple.dev/pin, pin.go): the template they write names immutable
	// copies of the data it was built for.
	Pinning bool
	// PinRefusal says why pinning is off although --pinning asks for it
	// (the API server cannot point pods at copies, pin.Refusal): a
	// workload that asks to pin is told, at each rollout.
	PinRefusal string
	// Watched and Unwatched are the namespaces whose configs Ripple reads
	// (--namespaces; empty: every one) and never reads
	// (--namespaces-to-ignore): a cross-namespace reference to a config
	// outside them is not followed (Watches).
	Watched, Unwatched []string
}

// Watches reports whether Ripple reads the configs of namespace ns.
func (s Settings) Watches(ns string) bool {
	return (len(s.Watched) == 0 || slices.Contains(s.Watched, ns)) && !slices.Contains(s.Unwatched, ns)
}

// Workload is the workload as gathered.
type Workload struct {
	// Kind (e.g. Deployment), Namespace and Name name it in notices.
	Kind, Namespace, Name string
	Annotations           map[string]string
	// NamespaceAnnotations are its Namespace's, for the defaults a
	// Namespace sets for its workloads (Governing); nil when not read.
	NamespaceAnnotations map[string]string
	Created              time.Time
	// Template is the pod template the reload is written on (for a Rollout
	// with a workloadRef, its Deployment's). Never nil.
	Template *corev1.PodTemplateSpec
	// TemplateHash is TemplateHash(Template) when the caller plans the
	// same template more than once (a verdict's plans); empty, For
	// computes it.
	TemplateHash string
	// KeepsTemplate is set when the kind's reload leaves its own template
	// alone (a CronJob starting a Job, an Argo Rollout restart): only the
	// applied record then tells what was applied.
	KeepsTemplate bool
	// Restartable is set for the kinds that take the restart methods
	// (workload.Restarter); Restart is how the workload takes a reload, as
	// resolved by RestartOf.
	Restartable bool
	Restart     workload.Restart
	// Pausable kinds take a pause period; Paused is their spec.paused.
	Pausable, Paused bool
	// Invalid are the kind's own annotation problems (workload.Checker).
	Invalid []string
	// FieldRefs are the configs the workload's own fields name, outside
	// its pod template (a declared kind's refs): the annotations that
	// follow references follow them as the template's.
	FieldRefs []refs.FieldRef
	// OverBudget are the kinds of config whose named-reload annotation
	// costs more than annotation.MatchBudget to match against the configs
	// of the namespace: the gather matched none of it and said why in
	// Invalid, and the plan ignores it whole.
	OverBudget []refs.Kind
	// TooBroad are the label-selector annotations that select more than
	// annotation.MaxSelected configs: the gather selected none of them,
	// and the plan ignores them (selector.go).
	TooBroad []TooBroad
	// RollsWithTemplate is set when a change of the pod template by anyone
	// starts new pods (not a CronJob's or a Job's): template.go.
	RollsWithTemplate bool
	// Version is the workload's resourceVersion, which orders a change of
	// its template against a config's (template.go); empty when its
	// template is another object's (a Rollout's workloadRef).
	Version string
	// RecordRestored is set when the applied record's current value was
	// written by another manager than Ripple (workload.ForeignAnnotation):
	// `kubectl rollout undo` of a Deployment restores it with the template
	// (rollback.go). RestoredBy is no earlier than when it was: the latest
	// write by another manager (workload.LastForeignWrite); zero when
	// unknown.
	RecordRestored bool
	RestoredBy     time.Time
	// LastWriter names the manager that wrote the workload last, other
	// than Ripple and status writers (workload.LastWriter): the one a
	// revert notice names.
	LastWriter string
	// Release names the workload's Helm release while an install, upgrade
	// or rollback of it is pending (gather.PendingRelease): a change set
	// waits for it (settle.go). The controller reads it only for a plan
	// that would roll.
	Release string
}

// Source is one source that may reload the workload, as gathered.
type Source struct {
	Ref refs.Ref
	// Found is false when the source does not exist (any more).
	Found bool
	// UID is the source object's.
	UID         types.UID
	Annotations map[string]string
	// Labels are the source's, which a workload's label selector matches.
	Labels map[string]string
	// Digest is the Reloader digest of its data.
	Digest string
	// Keys are the per-key digests of a ConfigMap's or Secret's data.
	Keys digest.KeyTable
	// Others are the other forms of Digest and Keys for the same data
	// (the other --digest mode, the previous key, unkeyed): an applied
	// value in one of them is no change (keys.go).
	Others  []digest.Form
	Created time.Time
	// Written is when its data was last written (source.Written); zero
	// when unknown. A client may write it (managedFields), so it is a hint.
	Written time.Time
	// Version is its resourceVersion, which only the API server sets: an
	// approval binds to it.
	Version string
	// Mounts are, for a SecretProviderClass, the digests of what its pods
	// mounted; Digest is then the latest change seen, if any.
	Mounts map[string]int
	// Before is, for a ConfigMap or Secret, its data before the latest
	// change this Ripple saw of it; nil when it saw none.
	Before *Before
}

// Before is a source's data before a change, and when the change was seen.
// A workload that existed then and has nothing applied yet (its baseline
// not written: its first reconcile waited behind others at start) takes it
// as applied, so that the change rolls it rather than becoming its
// baseline.
type Before struct {
	Digest string
	Keys   digest.KeyTable
	Seen   time.Time
}

// Pending is the settle state of a workload: the change set waiting for
// its settle window to close. It is part of the workload's Memory: losing
// it on restart delays a rollout by one window and loses nothing.
type Pending struct {
	// ID identifies the change set.
	ID          string
	First, Last time.Time
	// Version is the resourceVersion of the latest source event of the
	// set, when known (template.go).
	Version string
}

// Input is everything a plan looks at.
type Input struct {
	Settings
	Workload Workload
	// Sources are every source that may reload the workload, sorted by
	// kind order, then name.
	Sources []Source
	// Memory is what Ripple remembers of the workload: For looks at its
	// settle schedule (Pending), storm-breaker state (Storm) and the pod
	// template it last saw (Template).
	Memory
	// Canaries are the canaried changes of the workload's configs, as
	// their ConfigRollouts keep them (canary.go); a change missing here is
	// asked for (Plan.CanaryAsks) and waits until the change controller
	// chooses its canaries.
	Canaries map[refs.Ref]canary.State
	// CanaryUnkept, when set, says why no canary can be kept (the change
	// controller is off, its API is not served or forbidden) and what to
	// do: a canaried change is then held (CanaryUnkept notices), or, with
	// UnkeptRolls, rolls without one, with a Warning that says so.
	CanaryUnkept string
	Now          time.Time

	// sourced, when set (Sourced), holds the sources stage of the first
	// plan of this input, for the plans made of it again.
	sourced *sourcesOnce
}

// sourcesOnce is the sources stage of one input, made once.
type sourcesOnce struct {
	once     sync.Once
	sources  []SourcePlan
	changes  []strategy.Change
	warnings []string
}

// Sourced is in made to be planned several times, at other times (Now),
// settle schedules (Memory.Pending) or canaries (Canaries) alone: For
// decides its sources, which depend on none of these, only the first
// time. Nothing else of it may differ between the plans (the sources,
// the workload, its annotations, the settings): a verdict plans each
// reader two to four times, and the sources are half the cost of a plan.
func Sourced(in Input) Input {
	in.sourced = &sourcesOnce{}
	return in
}

// State says what a source means for the workload:
//
//   - NotReloading: the decision says it does not reload the workload, or
//     there is no container to write on.
//   - Baseline: first seen; its digest is recorded, nothing rolls.
//   - Unchanged: the applied digest is current.
//   - Changed: its data changed since it was applied.
//   - Created: created after the workload (--reload-on-create).
//   - Deleted: deleted, and --reload-on-delete rolls it.
//   - Missing: deleted; its last applied digest is kept so that a
//     re-created source with other data is a change.
//   - Untracked: deleted with nothing applied, or a SecretProviderClass no
//     pod mounts.
//   - RolledBack: the pod template was rolled back to a revision built for
//     older data than Ripple last applied, which is still the current data:
//     the pods read it, so nothing rolls (rollback.go).
//   - TemplateApplied: the pod template was changed by someone else after
//     the change was first seen (e.g. helm upgrade): the pods that change
//     started read the current data, so nothing rolls (template.go).
type State string

// The source states.
const (
	NotReloading = State("NotReloading")
	Baseline     = State("Baseline")
	Unchanged    = State("Unchanged")
	Changed      = State("Changed")
	Created      = State("Created")
	Deleted      = State("Deleted")
	Missing      = State("Missing")
	Untracked    = State("Untracked")
	RolledBack   = State("RolledBack")
	// TemplateApplied stays the state until the source changes again.
	TemplateApplied = State("TemplateApplied")
)

// SourcePlan is the plan for one source, with its reason.
type SourcePlan struct {
	Ref      refs.Ref
	Decision decide.Decision
	State    State
	// Digest is the current digest; Applied the one the workload shows.
	// Digest is per-key (digest.KeyTable.Of the keys that count) when Keys
	// is set, else Reloader's; when what the workload shows stands for the
	// current data in the other form, Digest is what it shows (keys.go).
	Digest, Applied string
	// Keys are the keys that count for the workload, or the patterns its
	// reload-on-keys annotation lists, when it reloads on some keys of the
	// source only; nil means every key (Reloader's behaviour).
	Keys []string
	// means is the current digest that Digest stands for when they differ.
	means string
	// noticed is set on a RolledBack source whose rollback no alias
	// records yet: this plan is the first to see it.
	noticed bool
	// Reverted is set when another manager removed the value Ripple's last
	// rollout wrote on the template; the source then counts as applied
	// (revert.go).
	Reverted bool
}

// Plan is what a reconcile does.
type Plan struct {
	Sources []SourcePlan
	// Changes are the sources whose new digest must be written.
	Changes []strategy.Change
	// Warnings are invalid annotations, for Warning events.
	Warnings []string
	// RolledBack are the sources of a rollback this plan is the first to
	// see (State RolledBack): the write records it, so it is reported once.
	RolledBack []SourcePlan
	// Reverted are the reverted sources this plan is the first to see
	// since Ripple's last rollout, for a ReloadReverted event.
	Reverted []SourcePlan
	// RevertHeld is set when the rollout is held because it would write
	// the change set its last MaxAttempts rollouts wrote (revert.go); Held
	// is then set on the first plan that holds it.
	RevertHeld, HeldNoticed bool
	// WithTemplate are the sources this plan records as applied by a
	// change of the pod template made after them (State TemplateApplied),
	// instead of rolling.
	WithTemplate []SourcePlan
	// TemplateFirst is set on a plan that rolls although the pod template
	// was changed by someone else while its change set waited: a config
	// changed after the template did, so its pods may have read older data.
	TemplateFirst bool
	// Template is the pod template as seen by this plan, to keep.
	Template TemplateSeen
	// Pending is the settle state to keep; zero means none.
	Pending Pending
	// Wait is how long to wait for the settle window before acting; while
	// it is positive, Update is empty.
	Wait time.Duration
	// Seen is when the changes were first seen.
	Seen time.Time
	// Update is the one write to make; empty when there is nothing to do.
	Update workload.Update
	// WouldReload is set in dry-run mode when the plan would roll the
	// workload; Update then writes no template.
	WouldReload bool
	// Requeue is when to look again to resume a paused workload.
	Requeue time.Duration
	// Storm is the storm-breaker state to keep; Hold is set while the
	// flap breaker holds the workload, Resumed on the plan that ends a
	// hold, and Spaced when Wait is the minimum rollout interval, Interval.
	Storm    Storm
	Hold     *Hold
	Resumed  bool
	Spaced   bool
	Interval time.Duration
	// Deferred is set when the reload waits for the workload's reload
	// window (window.go); Update then writes no template, and Requeue is
	// the next opening.
	Deferred *Deferred
	// Policy is the workload's reload policy and PolicyFrom where it
	// comes from (Governing); Awaiting is the change set a manual policy
	// holds for an approval, Approving what the plan does with the
	// workload's approval (approval.go). Changes then only hold what was
	// approved.
	Policy     Policy
	PolicyFrom string
	Awaiting   *Awaiting
	Approving  *Approving
	// CanaryAsks are the canaried changes whose state the input lacks: the
	// plan holds the workload until the controller plans again with them.
	CanaryAsks []canary.Ask
	// Notices are what the plan decided to tell, in the order of the
	// stages that decided them (notice.go).
	Notices []Notice
	// record is the applied record the write leaves on the workload (its
	// JSON), when the write changes it.
	record string
	// onTemplate is what the write shows on the template (Memory.OnTemplate).
	onTemplate string
}

// Reloads reports whether the plan rolls the workload.
func (p Plan) Reloads() bool { return p.Update.Reloads() }

// Writes reports whether the plan writes anything.
func (p Plan) Writes() bool {
	return p.Update.Reloads() || p.Update.Annotations != nil || p.Update.Paused != nil
}

// For plans a reconcile of the workload in: it runs the stages in order
// until one decides the plan (stages).
func For(in Input) Plan {
	pl, _ := plannings.Get().(*planning)
	*pl = planning{in: in}
	for _, s := range stages() {
		if s.run(pl) {
			break
		}
	}
	pl.p.finish(in)
	p := pl.p
	*pl = planning{} // it keeps nothing of this plan
	plannings.Put(pl)
	return p
}

// plannings are For's plannings, used again: the stages are called
// through function values, so a planning is on the heap, and at over
// 3 KB it was most of what a plan allocated (an admission verdict makes
// hundreds of plans).
var plannings = sync.Pool{New: func() any { return new(planning) }}

// planning is a plan being made: the plan, and what the stages pass on.
type planning struct {
	in Input
	p  Plan
	// w is the plan the write is built from: p, or what the manual policy
	// lets through of it.
	w Plan
	// settleWindow and period are the workload's settle window and pause
	// period.
	settleWindow, period time.Duration
	// release is the pending Helm release the change set waits for.
	release string
}

// stage is one step of For. run returns true when the plan is decided:
// the stages after it do not run.
type stage struct {
	name string
	run  func(*planning) bool
}

// stages are the steps of For, in order. Each decides one rule, with the
// notices it tells (notice.go); a new rule is a new stage.
func stages() []stage {
	return []stage{
		{"sources", (*planning).sources},   // each source's decision and state; rollbacks and reverts seen
		{"settings", (*planning).settings}, // the workload's settle window, pause period, reload policy; its template seen
		{"settle", (*planning).settle},     // the settle window of the change set
		{"storm", (*planning).storm},       // flap breaker and minimum rollout interval: wait
		{"template", (*planning).template}, // a pod template changed after the configs applied them
		{"approval", (*planning).approval}, // the manual policy: only approved changes go on
		{"canary", (*planning).canary},     // a canaried change: its canaries first, the rest once they baked
		{"window", (*planning).window},     // the reload window: defer
		{"notify", (*planning).notify},     // --dry-run and the notify policy: tell, roll nothing
		{"write", (*planning).write},       // the one write, or a hold after MaxAttempts rollouts
	}
}

func (pl *planning) sources() bool {
	in, p := pl.in, &pl.p
	if m := in.sourced; m != nil {
		m.once.Do(func() { m.sources, m.changes, m.warnings = sources(in) })
		// Copies: the stages after this one change the plan's own.
		p.Sources, p.Changes, p.Warnings = slices.Clone(m.sources), slices.Clone(m.changes), slices.Clone(m.warnings)
	} else {
		p.Sources, p.Changes, p.Warnings = sources(in)
	}
	for _, sp := range p.Sources {
		if sp.noticed {
			p.RolledBack = append(p.RolledBack, sp)
		}
	}
	p.Reverted = revertsNoticed(in, p.Sources)
	return false
}

func (pl *planning) settings() bool {
	in, p := pl.in, &pl.p
	var warning string
	pl.settleWindow, warning = SettleWindow(in.Workload.Annotations, in.Keys, in.SettleWindow)
	p.Warnings = appendNonEmpty(append(p.Warnings, in.Workload.Invalid...), warning)
	pl.period, warning = pausePeriod(in)
	p.Warnings = appendNonEmpty(p.Warnings, warning)
	hash := in.Workload.TemplateHash
	if hash == "" {
		hash = TemplateHash(in.Workload.Template)
	}
	p.Template = in.Template.Saw(hash, in.Now, in.Workload.Version)
	p.Policy, p.PolicyFrom, warning = policy(in)
	p.Warnings = appendNonEmpty(p.Warnings, warning)
	if in.TightenOnly {
		p.Warnings = appendNonEmpty(p.Warnings, governingWindow(in.Workload, in.Settings, in.Now).loosened)
	}
	return false
}

// settle sets the settle state of p's change set, the wait for its settle
// window and when it was first seen. A change set already waiting for an
// approval has settled: its settle state is dropped, so that the next
// change opens a window of its own.
func (pl *planning) settle() bool {
	in, p := pl.in, &pl.p
	p.Seen = in.Now
	if id := changeID(p.Changes); len(p.Changes) > 0 && id != in.Awaiting.ID {
		p.Pending, p.Wait = settle(in.Pending, id, pl.settleWindow, in.Now)
		if !p.Pending.First.IsZero() {
			p.Seen = p.Pending.First
		}
		if holdsForRelease(in, p.Pending, pl.settleWindow) {
			pl.release, p.Wait = in.Workload.Release, max(p.Wait, ReleasePoll)
		}
	}
	return false
}

// storm applies the storm breaker; the plan waits for it or for its
// settle window.
func (pl *planning) storm() bool {
	p := &pl.p
	p.Wait = max(p.Wait, guard(pl.in, p))
	switch {
	case p.Hold != nil:
		p.tell(holdNotice(*p))
	case p.Wait > 0:
		p.tell(settleNotice(pl.in, *p, pl.settleWindow, pl.release))
	}
	return p.Wait > 0
}

// template records as applied the changes a template change made after
// them applied: they need no rollout, approval or window.
func (pl *planning) template() bool {
	withTemplate(pl.in, &pl.p)
	pl.w = pl.p
	return false
}

// approval keeps, under the manual policy, only the approved changes.
func (pl *planning) approval() bool {
	in, p := pl.in, &pl.p
	if p.Policy != Manual || in.DryRun {
		return false
	}
	pl.w = gate(in, p)
	if p.Awaiting != nil {
		p.tell(pendingNotice(in, p.Awaiting))
	}
	if p.Approving != nil && len(p.Approving.Stale) > 0 {
		p.tell(supersededNotice(p.Approving))
	}
	return false
}

// window defers the reload while the reload window is closed, unless an
// approval overrides it (--now).
func (pl *planning) window() bool {
	p := &pl.p
	if p.Approving != nil && p.Approving.Now || !deferral(pl.in, p, pl.period) {
		return false
	}
	p.tell(deferredNotice(*p))
	return true
}

// notify tells of the rollout --dry-run or the notify policy holds back.
func (pl *planning) notify() bool {
	in, p := pl.in, &pl.p
	if !in.DryRun && p.Policy != Notify {
		return false
	}
	p.Update, p.Requeue = dryRun(in, *p, pl.period)
	if p.WouldReload = len(p.Changes) > 0; p.WouldReload {
		p.tell(wouldReloadNotice(in, *p))
	}
	return true
}

// write sets the one write of p, built from w (p, or what the manual
// policy lets through of it), and the applied record it leaves.
func (pl *planning) write() bool {
	in, p, w := pl.in, &pl.p, pl.w
	p.Update, p.Requeue = update(in, w, pl.period)
	if p.Update.Template != nil {
		p.Warnings = append(p.Warnings, pinTemplate(in, p.Update.Template)...)
	}
	if p.Approving != nil {
		p.Update.Annotations = dropApproval(in, p.Update.Annotations)
	}
	if p.Reloads() {
		p.record = in.Workload.Annotations[in.Keys.Applied]
		if v := p.Update.Annotations[in.Keys.Applied]; v != nil {
			p.record = *v
		}
		if heldAfterAttempts(in, *p) {
			p.RevertHeld, p.HeldNoticed = true, in.Held != p.record
			p.Update, p.Requeue = workload.Update{}, 0
			return true
		}
		p.onTemplate = onTemplate(in.Strategy, p.Changes, p.Update.Template)
	}
	return true
}

// finish adds the notices that only the whole plan tells: the end of a
// hold (whether it rolls), reverts, what the write records instead of a
// rollout, and the warnings.
func (p *Plan) finish(in Input) {
	if p.Resumed {
		p.tell(resumedNotice(*p))
	}
	revertNotices(in, p)
	recordNotices(in, p)
	warningNotices(p)
	tooBroadNotices(in, p)
}

func appendNonEmpty(list []string, s string) []string {
	if s == "" {
		return list
	}
	return append(list, s)
}
