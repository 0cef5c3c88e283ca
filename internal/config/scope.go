package config

import (
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
)

// ScopeOptions say which namespaces and sources Ripple watches.
type ScopeOptions struct {
	Namespaces []string
	// KubernetesNamespace is $KUBERNETES_NAMESPACE: single-namespace mode.
	KubernetesNamespace   string
	NamespacesToIgnore    []string
	NamespaceSelector     []string
	ResourceLabelSelector []string
	ShardCount            int
	ShardIndex            int
}

// Scope is the validated scope.
type Scope struct {
	// Namespaces limits every watch to these namespaces; empty means all.
	Namespaces []string
	// NamespacesToIgnore are never watched (global mode).
	NamespacesToIgnore []string
	// NamespaceSelector selects the namespaces to act in; nil means all.
	NamespaceSelector labels.Selector
	// ResourceSelector selects the sources to watch; nil means all.
	ResourceSelector labels.Selector
	// Shard is this replica's share of the namespaces in scope.
	Shard Shard
}

// Shard is one of Count replicas that split the namespaces between them:
// a namespace belongs to shard fnv32a(name) % Count (see
// dependents.ShardOf). Count 1 is one replica for every namespace.
type Shard struct{ Count, Index int }

// Sharded reports whether the namespaces are split between replicas.
func (s Shard) Sharded() bool { return s.Count > 1 }

func (o *ScopeOptions) readEnv(lookup func(string) string) {
	o.KubernetesNamespace = lookup("KUBERNETES_NAMESPACE")
}

// BindFlags registers the scope flags.
func (o *ScopeOptions) BindFlags(fs *pflag.FlagSet) {
	fs.StringSliceVar(&o.Namespaces, "namespaces", o.Namespaces, "Watch only these namespaces (scoped mode: namespaced Roles are enough). Takes precedence over $KUBERNETES_NAMESPACE. Default: all namespaces.")
	fs.StringSliceVar(&o.NamespacesToIgnore, "namespaces-to-ignore", o.NamespacesToIgnore, "Namespaces not to watch at all (global mode only).")
	fs.StringSliceVar(&o.NamespaceSelector, "namespace-selector", o.NamespaceSelector, `Label selector of the namespaces to act in (global mode only), e.g. "team=a" or the legacy "team:a", "team:*". Labelling a namespace brings it in scope at once.`)
	fs.StringSliceVar(&o.ResourceLabelSelector, "resource-label-selector", o.ResourceLabelSelector, "Label selector of the ConfigMaps and Secrets to watch; others are not cached. Same syntax as --namespace-selector.")
	fs.IntVar(&o.ShardCount, "shard-count", o.ShardCount, "Split the namespaces between this many Ripple Deployments: each acts only in the namespaces whose FNV-1a hash modulo the count is its --shard-index, and holds a Lease of its own. 1: no sharding.")
	fs.IntVar(&o.ShardIndex, "shard-index", o.ShardIndex, "This replica's shard, from 0 to --shard-count - 1.")
}

// validate resolves the scope as Reloader does: --namespaces, else
// $KUBERNETES_NAMESPACE, else every namespace. It returns warnings for
// settings that do not apply.
func (o *ScopeOptions) validate(errs *problems) (Scope, []string) {
	var s Scope
	var warnings []string
	s.Namespaces = trimmed(o.Namespaces)
	if len(s.Namespaces) == 0 && strings.TrimSpace(o.KubernetesNamespace) != "" {
		s.Namespaces = []string{strings.TrimSpace(o.KubernetesNamespace)}
	}
	for _, ns := range s.Namespaces {
		if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
			errs.bad("namespaces", "%q is not a namespace name: %s", ns, strings.Join(msgs, "; "))
		}
	}
	if len(s.Namespaces) == 0 {
		s.NamespacesToIgnore = trimmed(o.NamespacesToIgnore)
		sel, err := ParseSelector(o.NamespaceSelector)
		if err != nil {
			errs.bad("namespace-selector", "%v", err)
		}
		s.NamespaceSelector = sel
	} else if len(trimmed(o.NamespacesToIgnore)) > 0 || len(trimmed(o.NamespaceSelector)) > 0 {
		warnings = append(warnings, "--namespaces-to-ignore and --namespace-selector apply in global mode only; they are ignored when --namespaces or $KUBERNETES_NAMESPACE is set")
	}
	sel, err := ParseSelector(o.ResourceLabelSelector)
	if err != nil {
		errs.bad("resource-label-selector", "%v", err)
	}
	s.ResourceSelector = sel
	s.Shard = o.shard(errs)
	return s, warnings
}

func (o *ScopeOptions) shard(errs *problems) Shard {
	if o.ShardCount < 1 {
		errs.bad("shard-count", "%d: must be at least 1", o.ShardCount)
		return Shard{Count: 1}
	}
	if o.ShardIndex < 0 || o.ShardIndex >= o.ShardCount {
		errs.bad("shard-index", "%d: must be from 0 to --shard-count - 1 (%d)", o.ShardIndex, o.ShardCount-1)
		return Shard{Count: 1}
	}
	return Shard{Count: o.ShardCount, Index: o.ShardIndex}
}
