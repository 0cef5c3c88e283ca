package controller

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ripple-dev/ripple/internal/annotation"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/workload"
)

// indexConfigs is the field index from a config to the workloads that may
// depend on it. Its values are "<Kind>/<name>" for every config the pod
// template references or a named-reload annotation names literally, and
// "<Kind>/*" when a named-reload annotation holds a pattern. It may hold
// more than the workload really reloads on; Reconcile decides exactly.
const indexConfigs = "ripple.dev/configs"

func configKey(kind refs.Kind, name string) string { return string(kind) + "/" + name }

// patternKey cannot clash with a configKey: names never contain '*'.
func patternKey(kind refs.Kind) string { return string(kind) + "/*" }

// indexValues returns the indexConfigs values of a workload.
func (r *Reconciler) indexValues(obj client.Object) []string {
	tpl := r.Kind.PodTemplate(obj)
	if tpl == nil {
		if _, ok := r.Kind.(workload.TemplateSource); !ok {
			return nil
		}
		// Its Deployment is not cached yet: the workload's own named
		// annotations still count; the Deployment's configs are found
		// through the Deployment (requestsViaTemplateRef).
		tpl = &corev1.PodTemplateSpec{}
	}
	seen := map[string]bool{}
	var out []string
	add := func(v string) {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	for _, ref := range refs.All(&tpl.Spec) {
		add(configKey(ref.Kind, ref.Name))
	}
	for _, kind := range r.Config.Kinds {
		// Named keys may sit on the metadata or, as a fallback, on the pod
		// template; index both and let Reconcile apply the precedence.
		for _, src := range []map[string]string{obj.GetAnnotations(), tpl.Annotations} {
			p := annotation.Parse(r.Config.Keys, kind, src, nil)
			for _, m := range p.Named {
				if m.Literal() {
					add(configKey(kind, m.String()))
				} else {
					add(patternKey(kind))
				}
			}
		}
	}
	return out
}

// requestsForConfig maps a config event to the workloads of r.Kind in the
// config's namespace that may depend on it, through the index: a change
// never lists workloads from the API server.
func (r *Reconciler) requestsForConfig(kind refs.Kind) func(context.Context, client.Object) []reconcile.Request {
	return func(ctx context.Context, cfg client.Object) []reconcile.Request {
		var reqs []reconcile.Request
		keys := []string{configKey(kind, cfg.GetName()), patternKey(kind)}
		if _, ok := r.Kind.(workload.TemplateSource); ok {
			reqs = r.requestsViaTemplateRef(ctx, cfg.GetNamespace(), keys)
		}
		for _, key := range keys {
			list := r.Kind.NewList()
			if err := r.Client.List(ctx, list, client.InNamespace(cfg.GetNamespace()), client.MatchingFields{indexConfigs: key}); err != nil {
				log.FromContext(ctx).Error(err, "listing dependent workloads from the cache", "kind", r.Kind.Name(), "index", key)
				continue
			}
			for _, name := range objectNames(list) {
				reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: cfg.GetNamespace(), Name: name}})
			}
		}
		if r.Metrics != nil {
			r.Metrics.Scanned(r.Kind.Name(), len(reqs))
		}
		return reqs
	}
}

// requestsForNamespace maps a namespace that came into scope to all its
// workloads of r.Kind, from the cache.
func (r *Reconciler) requestsForNamespace(ctx context.Context, ns client.Object) []reconcile.Request {
	list := r.Kind.NewList()
	if err := r.Client.List(ctx, list, client.InNamespace(ns.GetName())); err != nil {
		log.FromContext(ctx).Error(err, "listing workloads of a namespace from the cache", "kind", r.Kind.Name(), "namespace", ns.GetName())
		return nil
	}
	var reqs []reconcile.Request
	for _, name := range objectNames(list) {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns.GetName(), Name: name}})
	}
	return reqs
}
