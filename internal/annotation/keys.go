package annotation

import "github.com/ripple-dev/ripple/internal/refs"

// DefaultPrefix is the prefix of the keys Ripple adds on top of Reloader's.
const DefaultPrefix = "ripple.dev"

// LastReloadedFrom (A17) is written on the pod template by the annotations
// strategy. Reloader has no flag to rename it.
const LastReloadedFrom = "reloader.stakater.com/last-reloaded-from"

// Keys holds every annotation key Ripple reads or writes. Reloader lets flags
// rename some of them; the rest are fixed. The key is a struct rather than a
// set of constants because the renamable ones come from flags, and the whole
// set travels with the rest of the validated configuration.
type Keys struct {
	// Auto (A1) opts a workload into reloads for every referenced config.
	Auto string
	// ConfigMapAuto, SecretAuto and SecretProviderClassAuto (A2-A4) do the
	// same for one kind of config only.
	ConfigMapAuto, SecretAuto, SecretProviderClassAuto string

	// ConfigMapReload, SecretReload and SecretProviderClassReload (A5-A7) list
	// the configs, by name or pattern, that reload the workload.
	ConfigMapReload, SecretReload, SecretProviderClassReload string

	// Search (A8) goes on a workload, Match (A9) and Ignore (A10) on a config.
	Search, Match, Ignore string

	// ConfigMapSelector and SecretSelector are Ripple's own, read on the
	// workload, else its pod template: a label selector (kubectl syntax)
	// of the configs of its namespace that reload it, as if each were
	// named (docs/selectors.md).
	ConfigMapSelector, SecretSelector string

	// ConfigMapExclude, SecretExclude and SecretProviderClassExclude
	// (A11-A13) list configs that never reload the workload.
	ConfigMapExclude, SecretExclude, SecretProviderClassExclude string

	// RolloutStrategy (A14) is read from Argo Rollouts, PausePeriod (A15)
	// from Deployments, and PausedAt (A16) is written on paused Deployments.
	RolloutStrategy, PausePeriod, PausedAt string

	// SettleWindow is Ripple's own: how long to wait for a burst of config
	// changes to settle before rolling the workload once.
	SettleWindow string
	// MinRolloutInterval is Ripple's own: the least time between two
	// rollouts of the workload (overrides --min-rollout-interval).
	MinRolloutInterval string
	// Applied is Ripple's own: the workload-metadata record of the config
	// digests that have already been applied.
	Applied string
	// ReloadOnKeys is Ripple's own: the workload reloads only when the keys
	// it uses change (KeySpec). AppliedAlias is written by Ripple with it:
	// which digest a value shown on the pod template stands for, so that
	// turning it on or off rolls nothing by itself.
	ReloadOnKeys, AppliedAlias string
	// CronJobReload is Ripple's own: "run" or "template", how a CronJob
	// takes a reload (overrides --cronjob-reload).
	CronJobReload string
	// PendingJob is written by Ripple on a CronJob: the pod template of a
	// Job decided but not yet created.
	PendingJob string
	// ReloadWindow and ReloadPolicy are Ripple's own: when a reload may
	// roll the workload (reload windows) and whether it rolls by itself,
	// waits for approval or only notifies (change policies). Both are read
	// on the workload, its pod template and its Namespace.
	ReloadWindow, ReloadPolicy string
	// Approval is written by `ripple approve` on a workload: the change
	// set (configs and digests) its approver lets roll.
	Approval string
	// RestartMethod and MaxUnavailable are Ripple's own: how a reload
	// restarts the workload ("template", "evict", "delete" or "in-place";
	// overrides --restart-method) and how many pods a restart of its pods
	// takes down at once. Both are read on the workload, else its pod
	// template.
	RestartMethod, MaxUnavailable string
	// RestartContainers and InPlaceFallback are Ripple's own, read like
	// RestartMethod: which containers the in-place method restarts, and
	// what it does with a pod it cannot restart in place ("none" or
	// "evict").
	RestartContainers, InPlaceFallback string
	// ReloadAction and ReloadDelay are Ripple's own, read on the workload,
	// else its pod template: the HTTP call ("[METHOD ]:PORT/PATH") that
	// reloads each pod instead of a restart, and how long after a change
	// Ripple makes it (the kubelet's time to update mounted files).
	ReloadAction, ReloadDelay string
	// RestartedAt is written by Ripple with the applied record when a
	// reload restarts pods: the change set's time, so the pods created up
	// to it are the ones left to restart.
	RestartedAt string
	// RecreateRecord labels, and Replaces annotates, the ConfigMaps in which
	// Ripple records a Job it is re-creating.
	RecreateRecord, Replaces string
	// Canary and CanaryBake are Ripple's own, on a config (or its
	// Namespace): how many of the workloads a change rolls go first, and
	// how long they must stay healthy before the rest roll. CanaryFirst
	// marks a workload to be chosen first; CanaryResume is written on the
	// config by `ripple resume`: the digest of a halted change to continue.
	// CanaryRecord labelled the ConfigMaps in which Ripple before
	// ConfigRollouts recorded a canaried change (carried over once).
	// CanaryQuery is a Namespace's own condition for the query gate, beside
	// --canary-query: read on Namespaces only, as a query runs with
	// Ripple's credentials.
	Canary, CanaryBake, CanaryFirst, CanaryResume, CanaryRecord, CanaryQuery string
	// AckRollouts is Ripple's own, on a config: how many rollouts its
	// writer acknowledges, which lets a write above the admission guard's
	// limit through. MaxRollouts is a Namespace's own limit for that
	// guard, in place of --admission-max-rollouts.
	AckRollouts, MaxRollouts string
	// RestartPods is Ripple's own, on a config: a label selector of pods
	// in its namespace that a change of its data evicts, those no
	// workload of Ripple's owns (package configpods).
	RestartPods string
	// SharedWith is Ripple's own, on a config: the namespaces whose
	// workloads may follow it by a cross-namespace reference in a
	// named-reload annotation ("namespace/name"), a comma list or "*".
	// Only who may write the config grants it.
	SharedWith string
	// Pin is Ripple's own, on a workload: "true" makes each reload (with
	// --pinning) copy the configs its template reads into immutable
	// copies and name them in Pinned, on the template, which the chart's
	// admission policy points new pods at (package pin).
	Pin, Pinned string
}

// DefaultKeys returns Reloader's default keys and Ripple's own keys under
// prefix (for example "ripple.dev"). An empty prefix means DefaultPrefix, so a
// zero-valued option can never produce keys like "/applied".
func DefaultKeys(prefix string) Keys {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	return Keys{
		Auto:                    "reloader.stakater.com/auto",
		ConfigMapAuto:           "configmap.reloader.stakater.com/auto",
		SecretAuto:              "secret.reloader.stakater.com/auto",
		SecretProviderClassAuto: "secretproviderclass.reloader.stakater.com/auto",

		ConfigMapReload:           "configmap.reloader.stakater.com/reload",
		SecretReload:              "secret.reloader.stakater.com/reload",
		SecretProviderClassReload: "secretproviderclass.reloader.stakater.com/reload",

		Search: "reloader.stakater.com/search",
		Match:  "reloader.stakater.com/match",
		Ignore: "reloader.stakater.com/ignore",

		ConfigMapExclude:           "configmaps.exclude.reloader.stakater.com/reload",
		SecretExclude:              "secrets.exclude.reloader.stakater.com/reload",
		SecretProviderClassExclude: "secretproviderclasses.exclude.reloader.stakater.com/reload",

		RolloutStrategy: "reloader.stakater.com/rollout-strategy",
		PausePeriod:     "deployment.reloader.stakater.com/pause-period",
		PausedAt:        "deployment.reloader.stakater.com/paused-at",

		SettleWindow:       prefix + "/settle-window",
		MinRolloutInterval: prefix + "/min-rollout-interval",
		Applied:            prefix + "/applied",
		ReloadOnKeys:       prefix + "/reload-on-keys",
		AppliedAlias:       prefix + "/applied-alias",

		ReloadWindow: prefix + "/reload-window",
		ReloadPolicy: prefix + "/reload-policy",
		Approval:     prefix + "/approval",

		RestartMethod:  prefix + "/restart-method",
		MaxUnavailable: prefix + "/max-unavailable",
		RestartedAt:    prefix + "/restarted-at",

		RestartContainers: prefix + "/restart-containers",
		InPlaceFallback:   prefix + "/in-place-fallback",
		ReloadAction:      prefix + "/reload-action",
		ReloadDelay:       prefix + "/reload-delay",

		CronJobReload:  prefix + "/cronjob-reload",
		PendingJob:     prefix + "/pending-job",
		RecreateRecord: prefix + "/recreate-job",
		Replaces:       prefix + "/replaces-uid",

		Canary:       prefix + "/canary",
		CanaryBake:   prefix + "/canary-bake",
		CanaryFirst:  prefix + "/canary-first",
		CanaryResume: prefix + "/canary-resume",
		CanaryRecord: prefix + "/canary-record",
		CanaryQuery:  prefix + "/canary-query",

		AckRollouts: prefix + "/ack-rollouts", MaxRollouts: prefix + "/max-rollouts",
		RestartPods: prefix + "/restart-pods", SharedWith: prefix + "/shared-with", Pin: prefix + "/pin", Pinned: prefix + "/pinned",
		ConfigMapSelector: prefix + "/configmap-selector", SecretSelector: prefix + "/secret-selector",
	}
}

// All returns every key in k, in field order: the keys Ripple reads and
// the ones it writes. [LastReloadedFrom] is not a field and not listed.
func (k Keys) All() []string {
	return []string{
		k.Auto, k.ConfigMapAuto, k.SecretAuto, k.SecretProviderClassAuto,
		k.ConfigMapReload, k.SecretReload, k.SecretProviderClassReload,
		k.Search, k.Match, k.Ignore,
		k.ConfigMapExclude, k.SecretExclude, k.SecretProviderClassExclude,
		k.RolloutStrategy, k.PausePeriod, k.PausedAt,
		k.SettleWindow, k.MinRolloutInterval, k.Applied, k.ReloadOnKeys, k.AppliedAlias, k.CronJobReload, k.PendingJob,
		k.ReloadWindow, k.ReloadPolicy, k.Approval,
		k.RestartMethod, k.MaxUnavailable, k.RestartedAt, k.RestartContainers, k.InPlaceFallback,
		k.ReloadAction, k.ReloadDelay,
		k.RecreateRecord, k.Replaces,
		k.Canary, k.CanaryBake, k.CanaryFirst, k.CanaryResume, k.CanaryRecord, k.CanaryQuery,
		k.AckRollouts, k.MaxRollouts, k.RestartPods, k.SharedWith,
		k.ConfigMapSelector, k.SecretSelector,
		k.Pin, k.Pinned,
	}
}

// ReloadKey returns the named-reload key (A5-A7) for kind, or "" for a kind
// Ripple does not know.
func (k Keys) ReloadKey(kind refs.Kind) string {
	return byKind(kind, k.ConfigMapReload, k.SecretReload, k.SecretProviderClassReload)
}

// SelectorKey returns the label-selector key for kind, or "" for a kind
// that cannot be selected by label (a SecretProviderClass).
func (k Keys) SelectorKey(kind refs.Kind) string {
	return byKind(kind, k.ConfigMapSelector, k.SecretSelector, "")
}

// TypedAutoKey returns the typed-auto key (A2-A4) for kind, or "" for a kind
// Ripple does not know.
func (k Keys) TypedAutoKey(kind refs.Kind) string {
	return byKind(kind, k.ConfigMapAuto, k.SecretAuto, k.SecretProviderClassAuto)
}

// ExcludeKey returns the exclude key (A11-A13) for kind, or "" for a kind
// Ripple does not know.
func (k Keys) ExcludeKey(kind refs.Kind) string {
	return byKind(kind, k.ConfigMapExclude, k.SecretExclude, k.SecretProviderClassExclude)
}

// byKind picks the key of a source kind.
func byKind(kind refs.Kind, configMap, secret, spc string) string {
	switch kind {
	case refs.ConfigMap:
		return configMap
	case refs.Secret:
		return secret
	case refs.SecretProviderClass:
		return spc
	}
	return ""
}
