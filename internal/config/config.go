// Package config turns Ripple's command-line flags and environment
// variables into a validated, immutable Config. Flag names, defaults and
// meanings are Stakater Reloader's, so a Reloader Deployment's arguments
// work unchanged; Ripple's own additions are listed in --help with their
// defaults.
//
// The flags come in groups (scope, workload kinds, reload behaviour,
// annotation keys, operations, alerts, leader election), each an Options
// struct with its own BindFlags and a validate step that turns it into its
// part of the Config. Errors name the flag at fault and what it accepts.
package config

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/ripple-dev/ripple/internal/declared"
	"github.com/ripple-dev/ripple/internal/refs"
)

// Options are the raw flag and environment values, by group.
type Options struct {
	Kubeconfig string
	ScopeOptions
	WorkloadOptions
	KindsOptions
	ReloadOptions
	KeyOptions
	OperationsOptions
	AlertOptions
	ElectionOptions
	AdmissionOptions
}

// NewOptions returns the defaults.
func NewOptions() *Options {
	return &Options{
		ScopeOptions:      ScopeOptions{ShardCount: 1},
		ReloadOptions:     defaultReloadOptions(),
		WorkloadOptions:   WorkloadOptions{CronJobReload: "run", RestartMethod: "template"},
		KeyOptions:        defaultKeyOptions(),
		OperationsOptions: defaultOperationsOptions(),
		ElectionOptions:   defaultElectionOptions(),
		AdmissionOptions:  defaultAdmissionOptions(),
	}
}

// ReadEnv reads the environment variables Reloader reads; lookup is
// os.Getenv in the binary.
func (o *Options) ReadEnv(lookup func(string) string) {
	o.ScopeOptions.readEnv(lookup)
	o.ReloadOptions.readEnv(lookup)
	o.OperationsOptions.readEnv(lookup)
	o.AlertOptions.readEnv(lookup)
	o.ElectionOptions.readEnv(lookup)
}

// BindFlags registers every flag on fs.
func (o *Options) BindFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "Path to a kubeconfig file. Default: $KUBECONFIG, then the in-cluster config, then $HOME/.kube/config.")
	o.ScopeOptions.BindFlags(fs)
	o.WorkloadOptions.BindFlags(fs)
	o.KindsOptions.BindFlags(fs)
	o.ReloadOptions.BindFlags(fs)
	o.KeyOptions.BindFlags(fs)
	o.OperationsOptions.BindFlags(fs)
	o.AlertOptions.BindFlags(fs)
	o.ElectionOptions.BindFlags(fs)
	o.AdmissionOptions.BindFlags(fs)
}

// Config is the validated configuration; it is not changed after start.
type Config struct {
	Kubeconfig string
	Scope
	Workloads
	// DeclaredKinds are the kinds of --workload-kinds-preset and
	// --workload-kinds.
	DeclaredKinds []declared.Kind
	Reload
	Operations
	Election
	// Admission is the admission webhook's (off without an address).
	Admission Admission
	// Alert, when URL is set, sends a message per rollout.
	Alert Alert
	// MetaInfo, when Namespace is set, is published in Reloader's
	// reloader-meta-info ConfigMap.
	MetaInfo MetaInfo
	// Namespace is Ripple's own namespace, where it keeps the records of
	// the Jobs it re-creates: $POD_NAMESPACE, else the pod's namespace,
	// else "default" (out of a cluster).
	Namespace string
	// Warnings are accepted but ineffective settings, logged at start.
	Warnings []string
}

// problems collects the validation errors of a group, each naming its flag.
type problems []error

func (p *problems) bad(flag, format string, args ...any) {
	*p = append(*p, fmt.Errorf("--%s: %s", flag, fmt.Sprintf(format, args...)))
}

// Config validates o. Each error names the flag at fault and what it accepts.
func (o *Options) Config() (Config, error) {
	var errs problems
	cfg := Config{Kubeconfig: o.Kubeconfig}
	cfg.Scope, cfg.Warnings = o.ScopeOptions.validate(&errs)
	cfg.Workloads = o.WorkloadOptions.validate(&errs)
	cfg.DeclaredKinds = o.KindsOptions.validate(&errs)
	keys := o.KeyOptions.validate(&errs)
	cfg.Reload = o.ReloadOptions.validate(&errs, keys)
	if cfg.CSI {
		cfg.Kinds = append(cfg.Kinds, refs.SecretProviderClass)
	}
	cfg.Operations = o.OperationsOptions.validate(&errs)
	cfg.Election = o.ElectionOptions.validate(&errs, cfg.Shard)
	cfg.Admission = o.AdmissionOptions.validate(&errs, cfg.Operations)
	if cfg.Admission.Addr != "" && cfg.WebhookURL != "" {
		errs.bad("admission-bind-address", "webhook mode (--webhook-url) rolls nothing: the admission webhook would warn of rollouts that never happen")
	}
	cfg.Namespace = ownNamespace(o.PodNamespace)
	if msgs := validation.IsDNS1123Label(cfg.Namespace); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("$POD_NAMESPACE: %q is not a namespace: %s", cfg.Namespace, strings.Join(msgs, "; ")))
	}
	var alertWarnings []string
	cfg.Alert, alertWarnings = o.AlertOptions.validate(&errs)
	cfg.Warnings = append(cfg.Warnings, alertWarnings...)
	for _, w := range []string{looseBool("reload-on-create", o.reloadOnCreateRaw), looseBool("reload-on-delete", o.reloadOnDeleteRaw),
		looseBool("is-Argo-Rollouts", o.argoRolloutsRaw)} {
		if w != "" {
			cfg.Warnings = append(cfg.Warnings, w)
		}
	}
	if o.MetaInfoNamespace != "" {
		cfg.MetaInfo = MetaInfo{Namespace: o.MetaInfoNamespace, Deployment: o.MetaInfoDeployment, Options: o.reloaderOptions(keys)}
	}
	return cfg, errors.Join(errs...)
}

// InClusterNamespace is where a pod finds its own namespace.
const InClusterNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// ownNamespace is Ripple's own namespace: env ($POD_NAMESPACE), else the
// namespace of the pod it runs in, else "default".
func ownNamespace(env string) string {
	if ns := strings.TrimSpace(env); ns != "" {
		return ns
	}
	if b, err := os.ReadFile(InClusterNamespace); err == nil && strings.TrimSpace(string(b)) != "" {
		return strings.TrimSpace(string(b))
	}
	return "default"
}
