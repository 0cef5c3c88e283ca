package config

import "github.com/ripple-dev/ripple/internal/annotation"

// MetaInfo is what Reloader publishes about itself in its
// reloader-meta-info ConfigMap.
type MetaInfo struct {
	Namespace, Deployment string
	Options               ReloaderOptions
}

// ReloaderOptions are the options as Reloader's meta-info shows them, with
// its JSON keys. The webhook URL is shown only as set or not: it may hold
// a token.
type ReloaderOptions struct {
	AutoReloadAll                      bool     `json:"autoReloadAll"`
	ConfigmapUpdateOnChangeAnnotation  string   `json:"configmapUpdateOnChangeAnnotation"`
	SecretUpdateOnChangeAnnotation     string   `json:"secretUpdateOnChangeAnnotation"`
	ReloaderAutoAnnotation             string   `json:"reloaderAutoAnnotation"`
	IgnoreResourceAnnotation           string   `json:"ignoreResourceAnnotation"`
	ConfigmapReloaderAutoAnnotation    string   `json:"configmapReloaderAutoAnnotation"`
	SecretReloaderAutoAnnotation       string   `json:"secretReloaderAutoAnnotation"`
	ConfigmapExcludeReloaderAnnotation string   `json:"configmapExcludeReloaderAnnotation"`
	SecretExcludeReloaderAnnotation    string   `json:"secretExcludeReloaderAnnotation"`
	AutoSearchAnnotation               string   `json:"autoSearchAnnotation"`
	SearchMatchAnnotation              string   `json:"searchMatchAnnotation"`
	RolloutStrategyAnnotation          string   `json:"rolloutStrategyAnnotation"`
	PauseDeploymentAnnotation          string   `json:"pauseDeploymentAnnotation"`
	PauseDeploymentTimeAnnotation      string   `json:"pauseDeploymentTimeAnnotation"`
	LogFormat                          string   `json:"logFormat"`
	LogLevel                           string   `json:"logLevel"`
	IsArgoRollouts                     bool     `json:"isArgoRollouts"`
	ReloadStrategy                     string   `json:"reloadStrategy"`
	ReloadOnCreate                     bool     `json:"reloadOnCreate"`
	ReloadOnDelete                     bool     `json:"reloadOnDelete"`
	SyncAfterRestart                   bool     `json:"syncAfterRestart"`
	EnableHA                           bool     `json:"enableHA"`
	WebhookURL                         string   `json:"webhookUrl"`
	ResourcesToIgnore                  []string `json:"resourcesToIgnore"`
	NamespaceSelectors                 []string `json:"namespaceSelectors"`
	ResourceSelectors                  []string `json:"resourceSelectors"`
	NamespacesToIgnore                 []string `json:"namespacesToIgnore"`

	// Ripple's own, which Reloader does not show: `ripple explain` reads
	// them to decide as this Ripple does.
	Namespaces           []string `json:"namespaces"`
	IgnoredWorkloadTypes []string `json:"ignoredWorkloadTypes"`
	IsOpenShift          bool     `json:"isOpenshift"`
	EnableCSIIntegration bool     `json:"enableCsiIntegration"`
	AnnotationPrefix     string   `json:"annotationPrefix"`
	SettleWindow         string   `json:"settleWindow"`
	DryRun               bool     `json:"dryRun"`
	ReloadWindow         string   `json:"reloadWindow"`
	NamespaceDefaults    bool     `json:"namespaceDefaults"`
	// ReloadPolicy and RestartMethod are the cluster-wide defaults a
	// workload without its own annotation follows: `ripple approve` and
	// `ripple explain --pending` need them to see what waits.
	ReloadPolicy  string `json:"reloadPolicy"`
	RestartMethod string `json:"restartMethod"`
	// Canary and CanaryBake are the cluster-wide canary of config changes.
	Canary     string `json:"canary"`
	CanaryBake string `json:"canaryBake"`
	// CanaryUnkept is what a canaried change does without ConfigRollouts,
	// and ConfigRollouts whether they are on: explain says a change is
	// held as this Ripple holds it.
	CanaryUnkept   string `json:"canaryUnkept"`
	ConfigRollouts bool   `json:"configRollouts"`
	// TightenOnly, ApprovalMaxAge and ApprovalsVerified govern the policy
	// and the approvals: `ripple approve` and `ripple explain` decide with
	// them as this Ripple does.
	TightenOnly       bool   `json:"tightenOnly"`
	ApprovalMaxAge    string `json:"approvalMaxAge"`
	ApprovalsVerified bool   `json:"approvalsVerified"`
	// RestartDeleteNamespaces allow the delete restart method.
	RestartDeleteNamespaces []string `json:"restartDeleteNamespaces"`
	// Digest is --digest: explain digests configs as the controller does.
	Digest string `json:"digest"`
	// ShardCount is the same in every shard, unlike the index: explain
	// names the shard of a workload's namespace from it.
	ShardCount int `json:"shardCount"`
	// Pinning is --pinning as given: explain asks the API server itself
	// whether it serves what pinning needs, as Ripple did at start.
	Pinning bool `json:"pinning"`
}

func (o *Options) reloaderOptions(k annotation.Keys) ReloaderOptions {
	webhook := ""
	if o.webhookURL() != "" {
		webhook = "(set)"
	}
	return ReloaderOptions{
		AutoReloadAll:                      o.AutoReloadAll,
		ConfigmapUpdateOnChangeAnnotation:  k.ConfigMapReload,
		SecretUpdateOnChangeAnnotation:     k.SecretReload,
		ReloaderAutoAnnotation:             k.Auto,
		IgnoreResourceAnnotation:           k.Ignore,
		ConfigmapReloaderAutoAnnotation:    k.ConfigMapAuto,
		SecretReloaderAutoAnnotation:       k.SecretAuto,
		ConfigmapExcludeReloaderAnnotation: k.ConfigMapExclude,
		SecretExcludeReloaderAnnotation:    k.SecretExclude,
		AutoSearchAnnotation:               k.Search,
		SearchMatchAnnotation:              k.Match,
		RolloutStrategyAnnotation:          k.RolloutStrategy,
		PauseDeploymentAnnotation:          k.PausePeriod,
		PauseDeploymentTimeAnnotation:      k.PausedAt,
		LogFormat:                          o.LogFormat,
		LogLevel:                           o.LogLevel,
		IsArgoRollouts:                     o.ArgoRollouts,
		ReloadStrategy:                     o.ReloadStrategy,
		ReloadOnCreate:                     o.ReloadOnCreate,
		ReloadOnDelete:                     o.ReloadOnDelete,
		SyncAfterRestart:                   o.SyncAfterRestart,
		EnableHA:                           o.EnableHA,
		WebhookURL:                         webhook,
		ResourcesToIgnore:                  nonNil(trimmed(o.ResourcesToIgnore)),
		NamespaceSelectors:                 nonNil(trimmed(o.NamespaceSelector)),
		ResourceSelectors:                  nonNil(trimmed(o.ResourceLabelSelector)),
		NamespacesToIgnore:                 nonNil(trimmed(o.NamespacesToIgnore)),
		Namespaces:                         nonNil(trimmed(append(o.Namespaces, o.scopeNamespaceFromEnv()...))),
		IgnoredWorkloadTypes:               nonNil(trimmed(o.IgnoredWorkloadTypes)),
		IsOpenShift:                        o.OpenShift,
		EnableCSIIntegration:               o.CSIIntegration,
		AnnotationPrefix:                   o.AnnotationPrefix,
		SettleWindow:                       o.SettleWindow.String(),
		ReloadWindow:                       o.ReloadWindow,
		NamespaceDefaults:                  o.NamespaceDefaults,
		ReloadPolicy:                       o.ReloadPolicy,
		RestartMethod:                      o.RestartMethod,
		Canary:                             o.Canary,
		CanaryBake:                         o.CanaryBake.String(),
		CanaryUnkept:                       o.CanaryUnkept,
		ConfigRollouts:                     o.ConfigRollouts,
		DryRun:                             o.DryRun,
		Digest:                             o.Digest,
		ShardCount:                         o.ShardCount,
		Pinning:                            o.Pinning,
		TightenOnly:                        o.TightenOnly,
		ApprovalMaxAge:                     o.ApprovalMaxAge.String(),
		ApprovalsVerified:                  o.ApprovalsVerified,
		RestartDeleteNamespaces:            nonNil(trimmed(o.RestartDeleteNamespaces)),
	}
}

// nonNil makes an empty list show as [] rather than null, as Reloader's does.
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// scopeNamespaceFromEnv is $KUBERNETES_NAMESPACE when it sets the scope:
// --namespaces is not set.
func (o *Options) scopeNamespaceFromEnv() []string {
	if len(trimmed(o.Namespaces)) > 0 {
		return nil
	}
	return []string{o.KubernetesNamespace}
}
