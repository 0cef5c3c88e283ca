// Package reason is the one registry of what Ripple tells about a
// workload: every reason it gives, as an Event and in `ripple explain`,
// with its Event type, the log message that goes with it, whether it
// alerts, what it means, and whether it is a reason a workload did not
// roll. The planner names the reason of each notice it decides (plan.Notice),
// the controller emits it, explain prints it, and docs/reference.md's
// Events table is generated from here; test/docs checks that every reason
// is emitted and documented, and that every reason a workload did not roll
// has its entry in docs/troubleshooting.md.
//
// Adding a reason is one entry here; nothing else declares one.
package reason

import (
	"slices"
	"sync"
)

// Reason is the CamelCase name of an outcome: an Event reason, or, for the
// outcomes that are not Events (Event false), a reason `ripple explain`
// gives.
type Reason string

// The reasons. Reloaded and ReloadFail are Reloader's.
const (
	Reloaded           Reason = "Reloaded"
	ReloadFail         Reason = "ReloadFail"
	WouldReload        Reason = "WouldReload"
	ReloadSkipped      Reason = "ReloadSkipped"
	ReloadPending      Reason = "ReloadPending"
	ApprovalSuperseded Reason = "ApprovalSuperseded"
	InvalidAnnotation  Reason = "InvalidAnnotation"
	RolloutQueued      Reason = "RolloutQueued"
	RolloutComplete    Reason = "RolloutComplete"
	RolloutStalled     Reason = "RolloutStalled"
	ReloadHeld         Reason = "ReloadHeld"
	ReloadResumed      Reason = "ReloadResumed"
	ReloadDeferred     Reason = "ReloadDeferred"
	RestartFailed      Reason = "RestartFailed"
	RestartInProgress  Reason = "RestartInProgress"
	RestartNotInPlace  Reason = "RestartNotInPlace"
	ReloadActionFailed Reason = "ReloadActionFailed"
	RolledBack         Reason = "RolledBack"
	ReloadReverted     Reason = "ReloadReverted"
	SettleWindow       Reason = "SettleWindow"
	Paused             Reason = "Paused"
	WaitingForCanary   Reason = "WaitingForCanary"
	RolloutHalted      Reason = "RolloutHalted"
	CanaryPassed       Reason = "CanaryPassed"
	CanaryUnkept       Reason = "CanaryUnkept"
	PodsEvicted        Reason = "PodsEvicted"
	PodsRestarted      Reason = "PodsRestarted"
	EvictionBlocked    Reason = "EvictionBlocked"
	SelectorTooBroad   Reason = "SelectorTooBroad"
)

// The reasons of where a workload stands (internal/standing) that no
// Event tells: `ripple explain`, `ripple plan` and a ConfigRollout's
// consumers give them. The four of a decision not to reload are
// internal/decide's, by the same names.
const (
	Applied             Reason = "Applied"
	ReloadDue           Reason = "ReloadDue"
	RolloutInProgress   Reason = "RolloutInProgress"
	NotOptedIn          Reason = "NotOptedIn"
	NotReferenced       Reason = "NotReferenced"
	Excluded            Reason = "Excluded"
	Ignored             Reason = "Ignored"
	NotSelected         Reason = "NotSelected"
	NotWatched          Reason = "NotWatched"
	RotationUnknown     Reason = "RotationUnknown"
	NoSources           Reason = "NoSources"
	NoTemplate          Reason = "NoTemplate"
	KindIgnored         Reason = "KindIgnored"
	NamespaceOutOfScope Reason = "NamespaceOutOfScope"
	WebhookMode         Reason = "WebhookMode"
	ScaledToZero        Reason = "ScaledToZero"
)

// Level is how an alert of a reason reads: a rollout (Good), something
// that waits for someone (Warning), or a failure (Danger). None sends no
// alert.
type Level int

// The alert levels.
const (
	None Level = iota
	Good
	Warning
	Danger
)

// Info is what the registry says of one reason.
type Info struct {
	Reason Reason
	// Event is set when the reason is recorded as a core/v1 Event on the
	// workload; Warning makes it a Warning Event (else Normal).
	Event, Warning bool
	// Log is the constant message of its log line; Debug logs it at debug
	// level (a notice told on every reconcile).
	Log   string
	Debug bool
	// Alert is the level of its alert, when alerts are on.
	Alert Level
	// NotRolled is set on the reasons a changed workload did not roll:
	// each has an entry in docs/troubleshooting.md headed by the reason.
	NotRolled bool
	// When says what it means, for docs/reference.md.
	When string
}

// Type is the core/v1 Event type of r.
func (i Info) Type() string {
	if i.Warning {
		return "Warning"
	}
	return "Normal"
}

// All returns the registry, in the order docs/reference.md lists it.
func All() []Info {
	return append([]Info{
		{Reason: Reloaded, Event: true, Log: "reloaded", Alert: Good, When: "A rollout was written (Reloader's reason)."},
		{Reason: ReloadFail, Event: true, Warning: true, Log: "reload failed", When: "The rollout's write failed (Reloader's reason)."},
		{Reason: WouldReload, Event: true, Log: "would reload", Alert: Good, NotRolled: true,
			When: "--dry-run, or the notify reload policy: the rollout that was not written (alerted under the notify policy only)."},
		{Reason: ReloadSkipped, Event: true, Log: "reload skipped", NotRolled: true,
			When: "A reload was decided but not written; the message says why, e.g. the pod template was changed after the config (helm upgrade), so its new pods read the new data (docs/rollbacks.md)."},
		{Reason: ReloadPending, Event: true, Log: "reload pending approval", Alert: Warning, NotRolled: true,
			When: "The manual reload policy: a change set waits for an approval (ripple approve); once per change set, naming the configs and the digests of ConfigMaps (never a Secret's)."},
		{Reason: ApprovalSuperseded, Event: true, Warning: true, Log: "approval not applied: superseded",
			When: "An approval named a digest that is no longer the pending one (the config changed again since, its data was written again after the approval, or nothing was pending), or it expired (--approval-max-age, no time, a time in the future): not applied, removed."},
		{Reason: InvalidAnnotation, Event: true, Warning: true, Log: "invalid annotation", Debug: true, When: "An annotation value was invalid, or a declared kind's object names more configs in its refs than are read; the message names it."},
		{Reason: SelectorTooBroad, Event: true, Warning: true, Log: "label selector refused: it selects too many configs", Debug: true,
			When: "A workload's ripple.dev/configmap-selector or secret-selector selects more than 100 configs of its namespace: refused whole, no config reloads the workload by it, while its other configs still do; the message names the annotation and the count (docs/selectors.md)."},
		{Reason: RolloutQueued, Event: true, Log: "waiting for a rollout slot", NotRolled: true,
			When: "The rollout waits for a slot (--max-concurrent-rollouts, --max-concurrent-rollouts-per-namespace); once per wait."},
		{Reason: RolloutComplete, Event: true, Log: "rollout complete", When: "A rollout Ripple started completed."},
		{Reason: RolloutStalled, Event: true, Warning: true, Log: "rollout stalled", Alert: Danger,
			When: "A rollout Ripple started stalled (--rollout-timeout, progress deadline)."},
		{Reason: ReloadHeld, Event: true, Warning: true, Log: "reload held: its configs keep changing", Alert: Warning, NotRolled: true,
			When: "The flap breaker holds the workload; once per hold."},
		{Reason: ReloadResumed, Event: true, Log: "resumed after a hold", When: "The hold ended."},
		{Reason: ReloadDeferred, Event: true, Log: "reload deferred by the reload window", Alert: Warning, NotRolled: true,
			When: "The reload waits for the workload's reload window (or for an invalid window to be fixed); once per change set, naming the next opening (docs/change-policies.md)."},
		{Reason: RestartFailed, Event: true, Warning: true, Log: "restart failed", NotRolled: true,
			When: "With the evict, delete or in-place restart method or a reload action: Ripple may not list, evict, delete or resize the workload's pods (a reload action lists them, and evicts one with in-place-fallback: evict); with ripple.dev/restart-pods on a config, Ripple may not list or evict the pods it selects (the Event is the config's). The message names the permission and the Helm chart value that grants it, and Ripple tries again a minute later (docs/restart-methods.md)."},
		{Reason: RestartNotInPlace, Event: true, Warning: true, Log: "pod not restarted in place", Alert: Warning,
			When: "With the in-place restart method: a pod cannot be restarted in place (no RestartContainer resizePolicy, BestEffort, a resize infeasible or refused, a Vertical Pod Autoscaler resizing it in place, a config mounted with subPath); the message names the pod, its containers and why, and says whether Ripple evicts it instead (in-place-fallback) or leaves it with its old configuration; once per pod and restart (docs/restart-methods.md)."},
		{Reason: ReloadActionFailed, Event: true, Warning: true, Log: "pod not reloaded by its reload action", Alert: Warning,
			When: "With a reload action: a pod cannot be reloaded by it (its endpoint failed 3 times, it uses the host's network, or no container has the named port); the message names the pod, the action and why, and says whether Ripple evicts it instead (in-place-fallback) or leaves it with its old configuration; once per pod and restart (docs/restart-methods.md)."},
		{Reason: RestartInProgress, NotRolled: true,
			When: "Not an Event: `ripple explain` says the evict, delete or in-place restart method, or a reload action, is restarting (or calling) the workload's pods, max-unavailable at a time (docs/restart-methods.md)."},
		{Reason: RolledBack, Event: true, Log: "rolled back", NotRolled: true,
			When: "The pod template was rolled back to a revision built for older config data than Ripple applied: nothing rolls; the message names the data the revision was built for and the data its pods read (docs/rollbacks.md)."},
		{Reason: ReloadReverted, Event: true, Warning: true, Log: "reload reverted", Alert: Warning, NotRolled: true,
			When: "Another manager removed the value Ripple's rollout wrote on the pod template (its rewrite restarted the pods), or a change set was rolled twice and not kept: Ripple does not write it again until the next config change; the message names the manager (docs/gitops.md)."},
		{Reason: SettleWindow, Log: "waiting for the settle window", Debug: true, NotRolled: true,
			When: "Not an Event: a change waits for the settle window to close (--settle-window), or for the minimum rollout interval since the last rollout (--min-rollout-interval); a debug log line and `ripple explain` say so."},
		{Reason: Paused, NotRolled: true,
			When: "Not an Event: `ripple explain` says Ripple paused the workload (pause-period) and resumes it later."},
		{Reason: WaitingForCanary, Event: true, Log: "waiting for the canary of a change", NotRolled: true,
			When: "A canaried change (ripple.dev/canary) rolls its canaries first: the workload waits until they rolled and stayed healthy for the bake; once per change, naming the canaries (docs/canary.md)."},
		{Reason: RolloutHalted, Event: true, Warning: true, Log: "change halted by its canary", Alert: Danger, NotRolled: true,
			When: "A canary of a canaried change stalled or turned unhealthy during the bake: no other workload rolls the change until the config changes again or `ripple resume` continues it. On the config (with the alert) and on each held workload (docs/canary.md)."},
		{Reason: CanaryUnkept, Event: true, Warning: true, Log: "change held: no canary can be kept", Alert: Warning, NotRolled: true,
			When: "A canaried change cannot be canaried: the ConfigRollout CRD is not served, Ripple may not list ConfigRollouts, the API server refuses to create them (no right, a quota), the namespace holds --config-rollouts-per-namespace changes in flight, --config-rollouts=false, or a Secret's change without the digest key. The change is held (--canary-unkept=hold, the default): no workload rolls it until a canary can be kept, and then it rolls with its canary. Once per change on the config (with the alert) and on each held workload, naming what is missing (docs/canary.md)."},
		{Reason: CanaryPassed, Event: true, Log: "canary passed",
			When: "On the config: the canaries of a change rolled and stayed healthy for the bake (or `ripple resume` continued a halted change); the other workloads roll it (docs/canary.md)."},
		{Reason: PodsEvicted, Event: true, Log: "evicted pods a config selects",
			When: "On a config with restart-pods: the pods it names were evicted for a change of its data, max-unavailable at a time (docs/restart-methods.md#pods-a-config-selects)."},
		{Reason: PodsRestarted, Event: true, Log: "pods a config selects restarted",
			When: "On a config with restart-pods: every pod its selector selects that no workload of Ripple's owns was created after the change (docs/restart-methods.md#pods-a-config-selects)."},
		{Reason: EvictionBlocked, Event: true, Warning: true, Log: "eviction refused by a PodDisruptionBudget",
			When: "On a config with restart-pods: a PodDisruptionBudget allows no eviction of a pod it selects; Ripple tries again every second. Once per change (docs/restart-methods.md#pods-a-config-selects)."},
	}, standings()...)
}

// standings are the reasons of where a workload stands that are not
// Events (docs/config-rollouts.md, "Where a workload stands").
func standings() []Info {
	return []Info{
		{Reason: Applied, NotRolled: true,
			When: "Not an Event: the workload runs what its configs hold (it was reloaded, or the data is its baseline) and its rollout is complete: nothing to roll."},
		{Reason: ReloadDue,
			When: "Not an Event: a change is due and nothing holds it: Ripple rolls the workload now, or when a rollout slot frees."},
		{Reason: RolloutInProgress,
			When: "Not an Event: the workload applied the change and its rollout is in progress (`kubectl rollout status`)."},
		{Reason: NotOptedIn, NotRolled: true,
			When: "Not an Event: the workload reads the config but no annotation (or --auto-reload-all) asks for its reloads: it keeps the old data until someone restarts it."},
		{Reason: NotReferenced, NotRolled: true,
			When: "Not an Event: a reload annotation names the config, but the pod template does not read it."},
		{Reason: Excluded, NotRolled: true,
			When: "Not an Event: the workload excludes the config (its exclude annotation)."},
		{Reason: Ignored, NotRolled: true,
			When: "Not an Event: the config is annotated to be ignored."},
		{Reason: NotSelected, NotRolled: true,
			When: "Not an Event: the config is outside --resource-label-selector: Ripple does not watch it."},
		{Reason: NotWatched, NotRolled: true,
			When: "Not an Event: Ripple does not watch configs of this kind (--resources-to-ignore, or SecretProviderClasses without --enable-csi-integration)."},
		{Reason: RotationUnknown,
			When: "Not an Event: `ripple explain` cannot tell a SecretProviderClass rotation: the controller sees it in SecretProviderClassPodStatus changes and keeps it in memory."},
		{Reason: NoSources,
			When: "Not an Event: the pod template uses no ConfigMap or Secret and no annotation names one."},
		{Reason: NoTemplate, NotRolled: true,
			When: "Not an Event: the workload has no pod template of its own to reload (a Job its CronJob controls, a Rollout whose workloadRef Deployment does not exist)."},
		{Reason: KindIgnored, NotRolled: true,
			When: "Not an Event: Ripple does not reload workloads of this kind (--ignored-workload-types, or --is-Argo-Rollouts / --is-openshift not set)."},
		{Reason: NamespaceOutOfScope, NotRolled: true,
			When: "Not an Event: the workload's namespace is outside Ripple's scope (--namespaces, --namespaces-to-ignore, --namespace-selector)."},
		{Reason: ScaledToZero,
			When: "Not an Event: a workload Ripple rolls that is scaled to zero (spec.replicas 0, no replica left) stands complete in a change, in its ConfigRollout and in explain and plan alike, whether it applied the change yet or not: no pod of it runs the old data, and a pod it starts reads the new (docs/config-rollouts.md)."},
		{Reason: WebhookMode, NotRolled: true,
			When: "Not an Event: Ripple runs with --webhook-url: it posts each change to the webhook and reloads nothing."},
	}
}

// Lookup returns what the registry says of r, and whether r is in it.
func Lookup(r Reason) (Info, bool) {
	i, ok := index()[r]
	return i, ok
}

// index is the registry by reason, made once: a plan looks reasons up
// for each of its notices, and an admission verdict makes plans by the
// hundred.
var index = sync.OnceValue(func() map[Reason]Info {
	all := All()
	out := make(map[Reason]Info, len(all))
	for _, i := range slices.Backward(all) { // the first of a reason listed twice, as the scan found it
		out[i.Reason] = i
	}
	return out
})

// Of returns what the registry says of r; an unknown reason is a Normal
// Event with no alert, logged with its name.
func Of(r Reason) Info {
	if i, ok := Lookup(r); ok {
		return i
	}
	return Info{Reason: r, Event: true, Log: string(r)}
}
