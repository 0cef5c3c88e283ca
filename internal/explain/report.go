// Package explain says why Ripple reloads a workload or not. A Report is
// built from the very inputs and planner the controller uses (gather,
// plan.For), so it explains what the controller does rather than a second
// reading of the rules. It is recomputed from cluster state each time; the
// history comes from the Events Ripple records on the workload. Nothing
// about decisions is stored on workloads: that would be one more write per
// reconcile on every workload.
//
// The objects come through a client.Reader: the API server for a live
// cluster, or any other reader (manifest files) with Findings of its own.
package explain

import (
	"time"

	"github.com/ripple-dev/ripple/internal/metainfo"
	"github.com/ripple-dev/ripple/internal/reason"
	"github.com/ripple-dev/ripple/internal/standing"
	"github.com/ripple-dev/ripple/internal/workload"
)

// Report explains one workload. It is the schema of `ripple explain -o
// json|yaml`; docs/explain.md documents every field.
type Report struct {
	Workload workload.Ref `json:"workload"`
	// State and Reason are where the workload stands (standing.Workload):
	// the words a ConfigRollout and `ripple plan` say, and a reason of
	// the registry (internal/reason).
	State  standing.State `json:"state"`
	Reason reason.Reason  `json:"reason"`
	// Verdict is one line for people, naming the annotation or flag at play.
	Verdict string `json:"verdict"`
	// Sources are every source the workload uses or names.
	Sources []Source `json:"sources"`
	// Policy are the workload's Ripple and Reloader annotations.
	Policy []PolicyEntry `json:"policy"`
	// ReloadWindow is the reload window that governs the workload; nil
	// when none does.
	ReloadWindow *ReloadWindow `json:"reloadWindow,omitempty"`
	// ReloadPolicy is the workload's reload policy, where it was set, and
	// what waits for an approval; nil without a pod template.
	ReloadPolicy *ReloadPolicy `json:"reloadPolicy,omitempty"`
	// Restart is how a reload restarts the workload, when not by its pod
	// template (the evict, delete or in-place restart method).
	Restart *Restart `json:"restart,omitempty"`
	// Pinning says whether a reload pins the workload's configs; nil when
	// it does not ask (docs/pinning.md).
	Pinning *Pinning `json:"pinning,omitempty"`
	// Waiting says what Ripple waits for before acting, and until when.
	Waiting []Wait `json:"waiting,omitempty"`
	// Notices are what the controller tells of the workload as the plan
	// stands (Events, alerts), the same notices with the same messages; the
	// invalid annotations are Warnings.
	Notices []Notice `json:"notices,omitempty"`
	// Warnings are the invalid annotations Ripple reports as
	// InvalidAnnotation events.
	Warnings []string `json:"warnings,omitempty"`
	// Ownership flags a pod template another controller owns, or a reload
	// another manager reverted (a ReloadReverted event), with what to do.
	Ownership []string `json:"ownership,omitempty"`
	// Shard names the Ripple shard that acts in the workload's namespace,
	// when the namespaces are split between shards.
	Shard *Shard `json:"shard,omitempty"`
	// Settings are the settings of Ripple that matter, with their origin;
	// SettingsFrom says where those not given as flags were read.
	Settings     []metainfo.Setting `json:"settings"`
	SettingsFrom string             `json:"settingsFrom"`
	// Events are Ripple's last events on the workload, newest first.
	Events []Event `json:"events,omitempty"`
	// Findings are problems found in the objects themselves (lint), for
	// readers that look for them (manifest files).
	Findings []Finding `json:"findings,omitempty"`
}

// Pinning is the pinning of a workload that asks for it (ripple.dev/pin).
type Pinning struct {
	// On says each reload copies the configs the pod template reads into
	// immutable copies, which its new pods read.
	On bool `json:"on"`
	// Refused says why not: --pinning is not given, or the API server
	// does not serve what pinning needs (MutatingAdmissionPolicy).
	Refused string `json:"refused,omitempty"`
	// Copies is the record on the pod template of the copies its new pods
	// read (ripple.dev/pinned); empty before its first pinned reload.
	Copies string `json:"copies,omitempty"`
}

// Restart is the restart method in effect on a workload
// (docs/restart-methods.md).
type Restart struct {
	// Method is "evict", "delete", "in-place" or "reload-action".
	Method         string `json:"method"`
	MaxUnavailable int    `json:"maxUnavailable"`
	// Containers and Fallback are the in-place method's: the containers
	// named to restart (none: those with a RestartContainer resize
	// policy), and "none" or "evict".
	Containers []string `json:"containers,omitempty"`
	Fallback   string   `json:"inPlaceFallback,omitempty"`
	// Action and Delay are the reload-action method's: the call, and how
	// long after a change it is made.
	Action string `json:"reloadAction,omitempty"`
	Delay  string `json:"reloadDelay,omitempty"`
	// Since is the restart in progress: the change set's time, whose
	// older pods are left to restart; nil when none is.
	Since *time.Time `json:"since,omitempty"`
}

// Shard is one of Count Ripple shards: the one run with --shard-index=Index.
type Shard struct {
	Index int `json:"index"`
	Count int `json:"count"`
}

// Source is one source and what it means for the workload.
type Source struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
	// Found is false when it does not exist.
	Found bool `json:"found"`
	// Uses are where the pod template uses it; none for a source only
	// named by an annotation or the applied record.
	Uses []Use `json:"uses"`
	// Digest is the short digest of its data now; Applied the one the
	// workload shows. Digests are SHA1s, never data.
	Digest  string `json:"digest,omitempty"`
	Applied string `json:"applied,omitempty"`
	// State is the planner's state (Baseline, Unchanged, Changed, ...), or
	// NotWatched for a kind this Ripple does not watch.
	State string `json:"state"`
	// Reload, Reason and Message are the decision: Reason is the
	// decision's (internal/decide), or the registry's NotSelected,
	// NotWatched or RotationUnknown for a config Ripple does not see.
	Reload  bool   `json:"reload"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
	// Keys are the keys (or patterns) whose change reloads the workload,
	// with the per-key reload annotation; empty means every key.
	Keys []string `json:"keys,omitempty"`
	// Hint is a likely mistake behind a NotOptedIn decision.
	Hint string `json:"hint,omitempty"`
	// LastWrite is when the source was last written (its managedFields).
	LastWrite *time.Time `json:"lastWrite,omitempty"`
	// Trace is the trace id of the config's newest change, as its
	// ConfigRollout records it when Ripple exports traces
	// (docs/tracing.md).
	Trace string `json:"trace,omitempty"`
}

// Use is one place the pod template uses a source.
type Use struct {
	// Container reads it; empty for a volume no container mounts.
	Container string `json:"container,omitempty"`
	// Init is set for an init container.
	Init bool `json:"init,omitempty"`
	// Via is env, envFrom, volume, projected or csi; field for a field
	// of the workload's own that names it (a declared kind's refs).
	Via    string `json:"via"`
	Volume string `json:"volume,omitempty"`
	// Field is that field's path, e.g.
	// spec.target.template.templateFrom[].configMap.name.
	Field string `json:"field,omitempty"`
	// Keys are the keys read; empty means all.
	Keys []string `json:"keys,omitempty"`
}

// PolicyEntry is one annotation of the workload that Ripple reads.
type PolicyEntry struct {
	Key   string `json:"key"`
	Value string `json:"value"`
	// From is "metadata" or "podTemplate".
	From string `json:"from"`
	// Note says when the annotation does not count, and why.
	Note string `json:"note,omitempty"`
}

// Wait is something Ripple waits for.
type Wait struct {
	// For is "settleWindow", "pausePeriod", "owner" (paused by its
	// owner), "hold" (the storm breaker holds it), "rolloutSlot" (over
	// --max-concurrent-rollouts), "restart", "canary" (a canaried change
	// waits for its canaries) or "halted" (a canary halted it).
	For string `json:"for"`
	// Until is when the wait ends, if known.
	Until *time.Time `json:"until,omitempty"`
	// Setting is the annotation key or flag that sets it.
	Setting string `json:"setting"`
	Message string `json:"message"`
}

// Event is one of Ripple's events on the workload.
type Event struct {
	Type    string    `json:"type"`
	Reason  string    `json:"reason"`
	Message string    `json:"message"`
	Time    time.Time `json:"time"`
	// Age is how long ago, as kubectl shows it.
	Age   string `json:"age"`
	Count int32  `json:"count,omitempty"`
}

// Notice is one of the plan's notices (plan.Notice).
type Notice struct {
	Reason string `json:"reason"`
	// Type is the Event's type, Normal or Warning; empty for a notice
	// that is not an Event.
	Type    string `json:"type,omitempty"`
	Message string `json:"message"`
	// Told is set when Ripple told it already: it recorded it, or its
	// memory says so (the controller's; explain has none, so a notice told
	// once per change set shows untold here).
	Told bool `json:"told,omitempty"`
}

// Finding is a problem found in an object.
type Finding struct {
	// Severity is "error" or "warning".
	Severity string `json:"severity"`
	// Object is "Kind namespace/name".
	Object string `json:"object"`
	// Key is the annotation key at fault, if any.
	Key     string `json:"key,omitempty"`
	Message string `json:"message"`
}

// List is the report of --all: one Report per opted-in workload (and,
// from files, per workload with findings).
type List struct {
	Items []Report `json:"items"`
	// Findings are every finding in the files, those on no listed
	// workload included; only from files.
	Findings []Finding `json:"findings,omitempty"`
	// Unplanned are the workloads explain could not plan with the user's
	// rights (a Secret the built-in view role may not read), and why.
	Unplanned []Unplanned `json:"unplanned,omitempty"`
	// Unlisted are the kinds of workload the user may not list.
	Unlisted []Unlisted `json:"unlisted,omitempty"`
}
