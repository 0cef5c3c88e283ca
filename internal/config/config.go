// Package config turns Ripple's command-line flags into a validated,
// immutable Config. Flag names, defaults and meanings are Stakater
// Reloader's, so a Reloader Deployment's arguments work unchanged; Ripple's
// own additions are listed in --help with their defaults.
package config

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/ripple-dev/ripple/internal/annotation"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/strategy"
)

// Options are the raw flag values.
type Options struct {
	Kubeconfig string
	Namespaces []string

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
		HealthAddr:                    ":9091",
		LogLevel:                      "info",
	}
}

// BindFlags registers every flag on fs.
func (o *Options) BindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "Path to a kubeconfig file. Default: $KUBECONFIG, then the in-cluster config, then $HOME/.kube/config.")

	fs.StringSliceVar(&o.Namespaces, "namespaces", o.Namespaces, "Watch only these namespaces (scoped mode: namespaced Roles are enough). Default: all namespaces.")
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

	fs.Float32Var(&o.KubeAPIQPS, "kube-api-qps", o.KubeAPIQPS, "Queries per second to the Kubernetes API.")
	fs.IntVar(&o.KubeAPIBurst, "kube-api-burst", o.KubeAPIBurst, "Burst of queries to the Kubernetes API.")
	fs.StringVar(&o.MetricsAddr, "metrics-bind-address", o.MetricsAddr, `Address of the Prometheus /metrics endpoint; "0" disables it.`)
	fs.StringVar(&o.HealthAddr, "health-probe-bind-address", o.HealthAddr, `Address of the /healthz and /readyz endpoints; "0" disables them.`)

	fs.StringVar(&o.LogFormat, "log-format", o.LogFormat, `Log format: "json", or "" / "text" for human-readable lines.`)
	fs.StringVar(&o.LogLevel, "log-level", o.LogLevel, "Log level: trace, debug, info, warning, error, fatal or panic.")
}

// Config is the validated configuration; it is not changed after start.
type Config struct {
	Kubeconfig string
	// Namespaces limits every watch to these namespaces; empty means all.
	Namespaces []string

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
		Kubeconfig:    o.Kubeconfig,
		Namespaces:    trimmed(o.Namespaces),
		AutoReloadAll: o.AutoReloadAll,
		SettleWindow:  o.SettleWindow,
		KubeAPIQPS:    o.KubeAPIQPS,
		KubeAPIBurst:  o.KubeAPIBurst,
		MetricsAddr:   o.MetricsAddr,
		HealthAddr:    o.HealthAddr,
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

	return cfg, errors.Join(errs...)
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
