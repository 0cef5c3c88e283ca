// Package config turns Ripple's command-line flags into a validated,
// immutable Config. Flag names, defaults and meanings are Stakater
// Reloader's, so a Reloader Deployment's arguments work unchanged; Ripple's
// own additions are listed in --help with their defaults.
package config

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/ripple-dev/ripple/internal/annotation"
	"github.com/ripple-dev/ripple/internal/notify"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/strategy"
)

// Options are the raw flag values.
type Options struct {
	Kubeconfig string
	Namespaces []string
	// KubernetesNamespace is $KUBERNETES_NAMESPACE: single-namespace mode.
	KubernetesNamespace   string
	NamespacesToIgnore    []string
	NamespaceSelector     []string
	ResourceLabelSelector []string

	ReloadOnCreate   bool
	ReloadOnDelete   bool
	SyncAfterRestart bool

	IgnoredWorkloadTypes []string
	ArgoRollouts         bool
	OpenShift            bool
	CSIIntegration       bool
	CronJobReload        string
	WebhookURL           string

	EnableHA                bool
	LeaderElect             bool
	LeaderElectionID        string
	LeaderElectionNamespace string
	LeaseDuration           time.Duration
	RenewDeadline           time.Duration
	RetryPeriod             time.Duration
	GracefulShutdownTimeout time.Duration
	PodName                 string
	PodNamespace            string
	// MetaInfoNamespace and MetaInfoDeployment are $RELOADER_NAMESPACE and
	// $RELOADER_DEPLOYMENT_NAME.
	MetaInfoNamespace, MetaInfoDeployment string
	MetricsByNamespace                    bool
	// Reloader's alerting environment variables.
	AlertOnReload, AlertSink, AlertWebhookURL, AlertWebhookProxy, AlertAdditionalInfo string
	EnablePprof                                                                       bool
	PprofAddr                                                                         string

	ReloadStrategy    string
	AutoReloadAll     bool
	ResourcesToIgnore []string
	SettleWindow      time.Duration
	AnnotationPrefix  string

	// Annotation renames, as Reloader's flags.
	AutoAnnotation, ConfigMapAutoAnnotation, SecretAutoAnnotation string
	ConfigMapAnnotation, SecretAnnotation                         string
	AutoSearchAnnotation, SearchMatchAnnotation, IgnoreAnnotation string
	PauseDeploymentAnnotation, PauseDeploymentTimeAnnotation      string

	KubeAPIQPS   float32
	KubeAPIBurst int

	MetricsAddr string
	HealthAddr  string

	LogFormat string
	LogLevel  string
}

// NewOptions returns the defaults.
func NewOptions() *Options {
	keys := annotation.DefaultKeys(annotation.DefaultPrefix)
	return &Options{
		ReloadStrategy:                "env-vars",
		CronJobReload:                 "run",
		SettleWindow:                  time.Second,
		AnnotationPrefix:              annotation.DefaultPrefix,
		AutoAnnotation:                keys.Auto,
		ConfigMapAutoAnnotation:       keys.ConfigMapAuto,
		SecretAutoAnnotation:          keys.SecretAuto,
		ConfigMapAnnotation:           keys.ConfigMapReload,
		SecretAnnotation:              keys.SecretReload,
		AutoSearchAnnotation:          keys.Search,
		SearchMatchAnnotation:         keys.Match,
		IgnoreAnnotation:              keys.Ignore,
		PauseDeploymentAnnotation:     keys.PausePeriod,
		PauseDeploymentTimeAnnotation: keys.PausedAt,
		KubeAPIQPS:                    20,
		KubeAPIBurst:                  30,
		MetricsAddr:                   ":9090",
		LeaderElectionID:              "stakater-reloader-lock",
		LeaseDuration:                 15 * time.Second,
		RenewDeadline:                 10 * time.Second,
		RetryPeriod:                   2 * time.Second,
		GracefulShutdownTimeout:       30 * time.Second,
		HealthAddr:                    "",
		PprofAddr:                     ":6060",
		LogLevel:                      "info",
	}
}

// ReadEnv reads the environment variables Reloader reads; lookup is
// os.Getenv in the binary.
func (o *Options) ReadEnv(lookup func(string) string) {
	o.KubernetesNamespace = lookup("KUBERNETES_NAMESPACE")
	o.PodName = lookup("POD_NAME")
	o.PodNamespace = lookup("POD_NAMESPACE")
	o.MetaInfoNamespace = lookup("RELOADER_NAMESPACE")
	o.MetaInfoDeployment = lookup("RELOADER_DEPLOYMENT_NAME")
	o.MetricsByNamespace = lookup("METRICS_COUNT_BY_NAMESPACE") == "enabled"
	o.AlertOnReload = lookup("ALERT_ON_RELOAD")
	o.AlertSink = lookup("ALERT_SINK")
	o.AlertWebhookURL = lookup("ALERT_WEBHOOK_URL")
	o.AlertWebhookProxy = lookup("ALERT_WEBHOOK_PROXY")
	o.AlertAdditionalInfo = lookup("ALERT_ADDITIONAL_INFO")
}

// BindFlags registers every flag on fs.
func (o *Options) BindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "Path to a kubeconfig file. Default: $KUBECONFIG, then the in-cluster config, then $HOME/.kube/config.")

	fs.StringSliceVar(&o.Namespaces, "namespaces", o.Namespaces, "Watch only these namespaces (scoped mode: namespaced Roles are enough). Takes precedence over $KUBERNETES_NAMESPACE. Default: all namespaces.")
	fs.StringSliceVar(&o.NamespacesToIgnore, "namespaces-to-ignore", o.NamespacesToIgnore, "Namespaces not to watch at all (global mode only).")
	fs.StringSliceVar(&o.NamespaceSelector, "namespace-selector", o.NamespaceSelector, `Label selector of the namespaces to act in (global mode only), e.g. "team=a" or the legacy "team:a", "team:*". Labelling a namespace brings it in scope at once.`)
	fs.StringSliceVar(&o.ResourceLabelSelector, "resource-label-selector", o.ResourceLabelSelector, "Label selector of the ConfigMaps and Secrets to watch; others are not cached. Same syntax as --namespace-selector.")
	fs.BoolVar(&o.ReloadOnCreate, "reload-on-create", o.ReloadOnCreate, "Also reload when a config a workload reloads on is created after the workload.")
	fs.BoolVar(&o.ReloadOnDelete, "reload-on-delete", o.ReloadOnDelete, "Also reload when such a config is deleted (env-vars: the env var is removed; annotations: the delete-marker hash is written).")
	fs.BoolVar(&o.SyncAfterRestart, "sync-after-restart", o.SyncAfterRestart, "With --reload-on-create, also treat configs created while Ripple was not running as created. (Changes made while it was down are always applied on start.)")
	fs.StringSliceVar(&o.IgnoredWorkloadTypes, "ignored-workload-types", o.IgnoredWorkloadTypes, `Workload kinds never to reload: "jobs", "cronjobs" or both (case-insensitive).`)
	fs.BoolVar(&o.ArgoRollouts, "is-Argo-Rollouts", o.ArgoRollouts, "Also reload Argo Rollouts (argoproj.io/v1alpha1), once their API is served. The reloader.stakater.com/rollout-strategy: restart annotation sets spec.restartAt instead of changing the template.")
	fs.BoolVar(&o.OpenShift, "is-openshift", o.OpenShift, "Also reload OpenShift DeploymentConfigs (apps.openshift.io/v1), once their API is served.")
	fs.BoolVar(&o.CSIIntegration, "enable-csi-integration", o.CSIIntegration, "Also reload on Secrets Store CSI driver changes: the SecretProviderClassPodStatus objects of a SecretProviderClass a workload mounts, once their API is served.")
	fs.StringVar(&o.CronJobReload, "cronjob-reload", o.CronJobReload, `How a CronJob takes a reload: "run" starts a Job from its template now (Reloader's behaviour; nothing runs while it is suspended), "template" patches its job template so the next scheduled runs carry the change. The <annotation-prefix>/cronjob-reload annotation overrides it per CronJob.`)
	fs.StringVar(&o.WebhookURL, "webhook-url", o.WebhookURL, `Instead of reloading, POST every config data change in scope (and creations and deletions with --reload-on-create and --reload-on-delete) to this URL, as JSON: {"webhook":"update successful","event":...,"kind":...,"namespace":...,"name":...,"workloads":[...]}.`)
	fs.BoolVar(&o.EnableHA, "enable-ha", o.EnableHA, "Run as one of several replicas: only the holder of the Lease stakater-reloader-lock in $POD_NAMESPACE acts. Needs $POD_NAME and $POD_NAMESPACE.")
	fs.BoolVar(&o.EnablePprof, "enable-pprof", o.EnablePprof, "Serve Go pprof profiles on --pprof-addr (never on the metrics port).")
	fs.StringVar(&o.PprofAddr, "pprof-addr", o.PprofAddr, "Address of the pprof endpoint.")
	fs.StringVar(&o.ReloadStrategy, "reload-strategy", o.ReloadStrategy, `How a reload is written on the pod template: "env-vars" (a STAKATER_<NAME>_<TYPE> env var holding the config's SHA1) or "annotations" (the reloader.stakater.com/last-reloaded-from annotation).`)
	fs.BoolVar(&o.AutoReloadAll, "auto-reload-all", o.AutoReloadAll, "Reload every workload on changes of the configs it references, unless it sets an auto annotation itself.")
	fs.StringSliceVar(&o.ResourcesToIgnore, "resources-to-ignore", o.ResourcesToIgnore, `Do not watch this kind of config: "configmaps" or "secrets" (not both).`)
	fs.DurationVar(&o.SettleWindow, "settle-window", o.SettleWindow, "Changes to one workload's configs that arrive within this window of each other become one rollout; 0 acts at once. A workload can override it with the <annotation-prefix>/settle-window annotation.")
	fs.StringVar(&o.AnnotationPrefix, "annotation-prefix", o.AnnotationPrefix, "Prefix of Ripple's own annotations (settle-window, applied).")

	fs.StringVar(&o.AutoAnnotation, "auto-annotation", o.AutoAnnotation, "Annotation that opts a workload in to reloads on every referenced config.")
	fs.StringVar(&o.ConfigMapAutoAnnotation, "configmap-auto-annotation", o.ConfigMapAutoAnnotation, "Annotation that opts a workload in to reloads on referenced ConfigMaps.")
	fs.StringVar(&o.SecretAutoAnnotation, "secret-auto-annotation", o.SecretAutoAnnotation, "Annotation that opts a workload in to reloads on referenced Secrets.")
	fs.StringVar(&o.ConfigMapAnnotation, "configmap-annotation", o.ConfigMapAnnotation, "Annotation listing the ConfigMaps (names or patterns) that reload a workload.")
	fs.StringVar(&o.SecretAnnotation, "secret-annotation", o.SecretAnnotation, "Annotation listing the Secrets (names or patterns) that reload a workload.")
	fs.StringVar(&o.AutoSearchAnnotation, "auto-search-annotation", o.AutoSearchAnnotation, "Annotation that makes a workload reload on referenced configs that carry the match annotation.")
	fs.StringVar(&o.SearchMatchAnnotation, "search-match-annotation", o.SearchMatchAnnotation, "Annotation on a config that makes search workloads reload on it.")
	fs.StringVar(&o.IgnoreAnnotation, "ignore-annotation", o.IgnoreAnnotation, "Annotation on a config that keeps it from reloading anything.")
	fs.StringVar(&o.PauseDeploymentAnnotation, "pause-deployment-annotation", o.PauseDeploymentAnnotation, "Annotation holding a Deployment's pause period.")
	fs.StringVar(&o.PauseDeploymentTimeAnnotation, "pause-deployment-time-annotation", o.PauseDeploymentTimeAnnotation, "Annotation where the pause start time is recorded.")

	fs.Float32Var(&o.KubeAPIQPS, "kube-api-qps", o.KubeAPIQPS, "Client-side limit of queries per second to the Kubernetes API, for the whole process: discovery, lists, uncached reads and Events (client-go never limits watches). Reload writes are not held by it: they are bounded by the workers (4 per kind) and the API server's priority and fairness, so a change used by hundreds of workloads is not throttled.")
	fs.IntVar(&o.KubeAPIBurst, "kube-api-burst", o.KubeAPIBurst, "Burst of the --kube-api-qps limit.")
	fs.StringVar(&o.MetricsAddr, "metrics-bind-address", o.MetricsAddr, `Address of the Prometheus /metrics endpoint; "0" disables it.`)
	fs.StringVar(&o.HealthAddr, "health-probe-bind-address", o.HealthAddr, `Serve /healthz and /readyz on this address instead of with /metrics, /live, /healthz and /readyz on --metrics-bind-address ("0" disables them).`)
	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect, "Use leader election, as --enable-ha, without needing $POD_NAME; the Lease namespace is --leader-election-namespace, else $POD_NAMESPACE, else the pod's own.")
	fs.StringVar(&o.LeaderElectionID, "leader-election-id", o.LeaderElectionID, "Name of the Lease. Reloader's name, so Reloader and Ripple replicas never act at once.")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", o.LeaderElectionNamespace, "Namespace of the Lease; default $POD_NAMESPACE.")
	fs.DurationVar(&o.LeaseDuration, "leader-election-lease-duration", o.LeaseDuration, "How long standbys wait before taking over a Lease that is not renewed.")
	fs.DurationVar(&o.RenewDeadline, "leader-election-renew-deadline", o.RenewDeadline, "How long the leader keeps trying to renew before it gives up leading; less than the lease duration.")
	fs.DurationVar(&o.RetryPeriod, "leader-election-retry-period", o.RetryPeriod, "How often candidates try to acquire or renew the Lease.")
	fs.DurationVar(&o.GracefulShutdownTimeout, "graceful-shutdown-timeout", o.GracefulShutdownTimeout, "On SIGTERM, how long in-flight reloads may take before Ripple exits; the Lease is released at once.")

	fs.StringVar(&o.LogFormat, "log-format", o.LogFormat, `Log format: "json", or "" / "text" for human-readable lines.`)
	fs.StringVar(&o.LogLevel, "log-level", o.LogLevel, "Log level: trace, debug, info, warning, error, fatal or panic.")
}

// Config is the validated configuration; it is not changed after start.
type Config struct {
	Kubeconfig string
	// Namespaces limits every watch to these namespaces; empty means all.
	Namespaces []string
	// NamespacesToIgnore are never watched (global mode).
	NamespacesToIgnore []string
	// NamespaceSelector selects the namespaces to act in; nil means all.
	NamespaceSelector labels.Selector
	// ResourceSelector selects the configs to watch; nil means all.
	ResourceSelector labels.Selector

	ReloadOnCreate   bool
	ReloadOnDelete   bool
	SyncAfterRestart bool

	Keys          annotation.Keys
	Strategy      strategy.Strategy
	AutoReloadAll bool
	// Kinds are the config kinds Ripple watches (ConfigMap, Secret).
	Kinds        []refs.Kind
	SettleWindow time.Duration

	KubeAPIQPS   float32
	KubeAPIBurst int
	MetricsAddr  string
	HealthAddr   string

	LogJSON  bool
	LogLevel LogLevel

	// IgnoreJobs and IgnoreCronJobs come from --ignored-workload-types.
	IgnoreJobs, IgnoreCronJobs bool
	// ArgoRollouts, OpenShift and CSI enable the optional kinds.
	ArgoRollouts, OpenShift, CSI bool
	// CronJobReload is "run" or "template".
	CronJobReload string

	// LeaderElection: only the holder of the Lease acts.
	LeaderElection          bool
	LeaderElectionID        string
	LeaderElectionNamespace string
	LeaseDuration           time.Duration
	RenewDeadline           time.Duration
	RetryPeriod             time.Duration
	GracefulShutdownTimeout time.Duration
	// Alert, when URL is set, sends a message per rollout.
	Alert Alert
	// MetricsByNamespace registers the namespace-labelled reload counter.
	MetricsByNamespace bool
	// WebhookURL, when set, replaces reloading with a POST per change.
	WebhookURL string
	// PprofAddr serves pprof when not empty.
	PprofAddr string
	// MetaInfo, when Namespace is set, is published in Reloader's
	// reloader-meta-info ConfigMap.
	MetaInfo MetaInfo

	// Warnings are accepted but ineffective settings, logged at start.
	Warnings []string
}

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
}

// Alert configures Reloader-style alerts.
type Alert struct {
	Sink           notify.Sink
	URL            string
	Proxy          *url.URL
	AdditionalInfo string
}

// LogLevel is a verbosity: 0 is info, higher is more verbose, negative
// quieter, as logr's V levels.
type LogLevel int

// Config validates o. Each error names the flag at fault and what it accepts.
func (o *Options) Config() (Config, error) {
	var errs []error
	bad := func(flag, format string, args ...any) {
		errs = append(errs, fmt.Errorf("--%s: %s", flag, fmt.Sprintf(format, args...)))
	}

	cfg := Config{
		Kubeconfig:       o.Kubeconfig,
		Namespaces:       trimmed(o.Namespaces),
		ReloadOnCreate:   o.ReloadOnCreate,
		ReloadOnDelete:   o.ReloadOnDelete,
		SyncAfterRestart: o.SyncAfterRestart,
		AutoReloadAll:    o.AutoReloadAll,
		SettleWindow:     o.SettleWindow,
		KubeAPIQPS:       o.KubeAPIQPS,
		KubeAPIBurst:     o.KubeAPIBurst,
		MetricsAddr:      o.MetricsAddr,
		HealthAddr:       o.HealthAddr,
	}

	// Scope, as Reloader resolves it: --namespaces, else
	// $KUBERNETES_NAMESPACE, else every namespace.
	if len(cfg.Namespaces) == 0 && strings.TrimSpace(o.KubernetesNamespace) != "" {
		cfg.Namespaces = []string{strings.TrimSpace(o.KubernetesNamespace)}
	}
	for _, ns := range cfg.Namespaces {
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			bad("namespaces", "%q is not a namespace name: %s", ns, strings.Join(errs, "; "))
		}
	}
	if len(cfg.Namespaces) == 0 {
		cfg.NamespacesToIgnore = trimmed(o.NamespacesToIgnore)
		sel, err := ParseSelector(o.NamespaceSelector)
		if err != nil {
			bad("namespace-selector", "%v", err)
		}
		cfg.NamespaceSelector = sel
	} else if len(trimmed(o.NamespacesToIgnore)) > 0 || len(trimmed(o.NamespaceSelector)) > 0 {
		cfg.Warnings = append(cfg.Warnings, "--namespaces-to-ignore and --namespace-selector apply in global mode only; they are ignored when --namespaces or $KUBERNETES_NAMESPACE is set")
	}
	sel, err := ParseSelector(o.ResourceLabelSelector)
	if err != nil {
		bad("resource-label-selector", "%v", err)
	}
	cfg.ResourceSelector = sel

	for _, w := range trimmed(o.IgnoredWorkloadTypes) {
		switch strings.ToLower(w) {
		case "jobs":
			cfg.IgnoreJobs = true
		case "cronjobs":
			cfg.IgnoreCronJobs = true
		default:
			bad("ignored-workload-types", "%q is not a workload type; use jobs, cronjobs or both", w)
		}
	}
	cfg.ArgoRollouts, cfg.OpenShift, cfg.CSI = o.ArgoRollouts, o.OpenShift, o.CSIIntegration
	switch v := strings.ToLower(strings.TrimSpace(o.CronJobReload)); v {
	case "run", "template":
		cfg.CronJobReload = v
	default:
		bad("cronjob-reload", "%q is not a mode; use run or template", o.CronJobReload)
	}
	if o.WebhookURL != "" {
		if u, err := url.Parse(o.WebhookURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("webhook-url", "must be an http or https URL")
		}
		cfg.WebhookURL = o.WebhookURL
	}
	if o.EnableHA && (o.PodName == "" || o.PodNamespace == "") {
		bad("enable-ha", "needs the POD_NAME and POD_NAMESPACE environment variables (set them from the pod's metadata with the downward API)")
	}
	cfg.LeaderElection = o.EnableHA || o.LeaderElect
	cfg.LeaderElectionID = o.LeaderElectionID
	cfg.LeaderElectionNamespace = o.LeaderElectionNamespace
	if cfg.LeaderElectionNamespace == "" {
		cfg.LeaderElectionNamespace = o.PodNamespace
	}
	cfg.LeaseDuration, cfg.RenewDeadline, cfg.RetryPeriod = o.LeaseDuration, o.RenewDeadline, o.RetryPeriod
	cfg.GracefulShutdownTimeout = o.GracefulShutdownTimeout
	cfg.MetricsByNamespace = o.MetricsByNamespace
	if o.AlertOnReload == "true" {
		cfg.Alert = Alert{
			Sink:           notify.ParseSink(o.AlertSink),
			URL:            strings.TrimSpace(o.AlertWebhookURL),
			AdditionalInfo: o.AlertAdditionalInfo,
		}
		if u, err := url.Parse(cfg.Alert.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, errors.New("ALERT_WEBHOOK_URL: ALERT_ON_RELOAD=true needs an http or https URL here"))
		}
		if p := strings.TrimSpace(o.AlertWebhookProxy); p != "" {
			u, err := url.Parse(p)
			if err != nil || u.Host == "" {
				errs = append(errs, errors.New("ALERT_WEBHOOK_PROXY: not a proxy URL such as http://proxy:3128"))
			}
			cfg.Alert.Proxy = u
		}
	}
	if cfg.LeaderElection {
		if errs := validation.IsDNS1123Subdomain(o.LeaderElectionID); len(errs) > 0 {
			bad("leader-election-id", "%q is not a Lease name: %s", o.LeaderElectionID, strings.Join(errs, "; "))
		}
		for _, d := range []struct {
			flag string
			v    time.Duration
		}{{"leader-election-lease-duration", o.LeaseDuration}, {"leader-election-renew-deadline", o.RenewDeadline}, {"leader-election-retry-period", o.RetryPeriod}} {
			if d.v < time.Second || d.v%time.Second != 0 {
				bad(d.flag, "%s must be a whole number of seconds, at least 1s", d.v)
			}
		}
		if o.RenewDeadline >= o.LeaseDuration {
			bad("leader-election-renew-deadline", "%s must be less than --leader-election-lease-duration %s", o.RenewDeadline, o.LeaseDuration)
		}
		if o.RetryPeriod >= o.RenewDeadline {
			bad("leader-election-retry-period", "%s must be less than --leader-election-renew-deadline %s", o.RetryPeriod, o.RenewDeadline)
		}
	}
	if o.GracefulShutdownTimeout < 0 {
		bad("graceful-shutdown-timeout", "%s is negative", o.GracefulShutdownTimeout)
	}
	if o.EnablePprof {
		if o.PprofAddr == "" || o.PprofAddr == o.MetricsAddr || (o.HealthAddr != "" && o.PprofAddr == o.HealthAddr) {
			bad("pprof-addr", "%q must be an address of its own, not the metrics or health address", o.PprofAddr)
		}
		cfg.PprofAddr = o.PprofAddr
	}

	st, err := strategy.New(o.ReloadStrategy)
	if err != nil {
		bad("reload-strategy", "%q is not a strategy; use env-vars or annotations", o.ReloadStrategy)
	}
	cfg.Strategy = st

	ignore := map[string]bool{}
	for _, r := range o.ResourcesToIgnore {
		r = strings.ToLower(strings.TrimSpace(r))
		if r != "configmaps" && r != "secrets" {
			bad("resources-to-ignore", "%q is not a resource; use configmaps or secrets", r)
			continue
		}
		ignore[r] = true
	}
	if ignore["configmaps"] && ignore["secrets"] {
		bad("resources-to-ignore", "cannot ignore both configmaps and secrets; scale Ripple to zero instead")
	}
	if !ignore["configmaps"] {
		cfg.Kinds = append(cfg.Kinds, refs.ConfigMap)
	}
	if !ignore["secrets"] {
		cfg.Kinds = append(cfg.Kinds, refs.Secret)
	}
	if o.CSIIntegration {
		cfg.Kinds = append(cfg.Kinds, refs.SecretProviderClass)
	}

	if o.SettleWindow < 0 {
		bad("settle-window", "%s is negative; use 0 to act at once or a positive duration such as 1s", o.SettleWindow)
	}
	if o.AnnotationPrefix == "" || strings.Contains(o.AnnotationPrefix, "/") {
		bad("annotation-prefix", "%q is not an annotation prefix; use a DNS subdomain such as ripple.dev", o.AnnotationPrefix)
	}
	keys := annotation.DefaultKeys(o.AnnotationPrefix)
	for _, r := range []struct {
		flag, value string
		key         *string
	}{
		{"auto-annotation", o.AutoAnnotation, &keys.Auto},
		{"configmap-auto-annotation", o.ConfigMapAutoAnnotation, &keys.ConfigMapAuto},
		{"secret-auto-annotation", o.SecretAutoAnnotation, &keys.SecretAuto},
		{"configmap-annotation", o.ConfigMapAnnotation, &keys.ConfigMapReload},
		{"secret-annotation", o.SecretAnnotation, &keys.SecretReload},
		{"auto-search-annotation", o.AutoSearchAnnotation, &keys.Search},
		{"search-match-annotation", o.SearchMatchAnnotation, &keys.Match},
		{"ignore-annotation", o.IgnoreAnnotation, &keys.Ignore},
		{"pause-deployment-annotation", o.PauseDeploymentAnnotation, &keys.PausePeriod},
		{"pause-deployment-time-annotation", o.PauseDeploymentTimeAnnotation, &keys.PausedAt},
	} {
		if strings.TrimSpace(r.value) == "" {
			bad(r.flag, "must not be empty")
			continue
		}
		*r.key = r.value
	}
	cfg.Keys = keys
	if a, ok := st.(strategy.Annotations); ok {
		a.Key = keys.LastReloadedFrom
		cfg.Strategy = a
	}

	if o.KubeAPIQPS <= 0 {
		bad("kube-api-qps", "%v must be positive", o.KubeAPIQPS)
	}
	if o.KubeAPIBurst <= 0 {
		bad("kube-api-burst", "%d must be positive", o.KubeAPIBurst)
	}

	switch strings.ToLower(o.LogFormat) {
	case "json":
		cfg.LogJSON = true
	case "", "text":
	default:
		bad("log-format", "%q is not a format; use json or text", o.LogFormat)
	}
	level, ok := parseLogLevel(o.LogLevel)
	if !ok {
		bad("log-level", "%q is not a level; use trace, debug, info, warning, error, fatal or panic", o.LogLevel)
	}
	cfg.LogLevel = level

	if ns := strings.TrimSpace(o.MetaInfoNamespace); ns != "" {
		cfg.MetaInfo = MetaInfo{Namespace: ns, Deployment: strings.TrimSpace(o.MetaInfoDeployment), Options: o.reloaderOptions(keys)}
	}

	return cfg, errors.Join(errs...)
}

func (o *Options) reloaderOptions(k annotation.Keys) ReloaderOptions {
	webhook := ""
	if o.WebhookURL != "" {
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
	}
}

// nonNil makes an empty list show as [] rather than null, as Reloader's does.
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// parseLogLevel maps Reloader's logrus level names to logr verbosity.
func parseLogLevel(s string) (LogLevel, bool) {
	switch strings.ToLower(s) {
	case "trace":
		return 2, true
	case "debug":
		return 1, true
	case "info":
		return 0, true
	case "warning", "warn":
		return -1, true
	case "error":
		return -2, true
	case "fatal", "panic":
		return -3, true
	}
	return 0, false
}

// trimmed returns the non-empty items of a list flag, trimmed.
func trimmed(items []string) []string {
	var out []string
	for _, s := range items {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// ParseSelector parses a label selector flag in Reloader's syntax: the
// items are joined with commas, and the legacy forms "k:v" (k=v) and "k:*"
// or "k=*" (k exists) are accepted in any requirement, also beside set
// requirements in one item ("env in (a,b),team:x"). No items means no
// selector (nil).
func ParseSelector(items []string) (labels.Selector, error) {
	var parts []string
	for _, item := range trimmed(items) {
		for _, req := range splitRequirements(strings.Trim(item, `"`)) { // charts quote selectors holding commas
			switch req = strings.TrimSpace(req); {
			case strings.HasSuffix(req, ":*") || strings.HasSuffix(req, "=*"):
				req = req[:len(req)-2]
			case strings.Contains(req, ":") && !strings.ContainsAny(req, "=!() "):
				kv := strings.SplitN(req, ":", 3)
				req = kv[0] + "=" + kv[1]
			}
			parts = append(parts, req)
		}
	}
	if len(parts) == 0 {
		return nil, nil
	}
	sel, err := labels.Parse(strings.Join(parts, ","))
	if err != nil {
		return nil, fmt.Errorf("%q is not a label selector: %w", strings.Join(parts, ","), err)
	}
	return sel, nil
}

// splitRequirements splits a selector at the commas outside parentheses.
// A CSV flag may also have split "in (a,b)" at its comma; such pieces are
// returned unchanged and joined again by the caller.
func splitRequirements(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, c := range s {
		switch c {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}
