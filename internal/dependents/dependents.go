// Package dependents finds the workloads that depend on a source through
// cache field indexes, so that a change never lists workloads from the API
// server. Reload mode maps source events to workloads with it, and webhook
// mode names the workloads that would reload.
package dependents

import (
	"context"
	"fmt"
	"hash/fnv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/internal/annotation"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/source"
	"github.com/ripple-dev/ripple/internal/workload"
)

// indexSources is the field index from a source to the workloads that may
// depend on it. Its values are "<Kind>/<name>" for every source the pod
// template or the workload's own fields (workload.FieldReferrer)
// reference or a named-reload annotation names literally, and
// "<Kind>/*" when a named-reload annotation holds a pattern (valid or not:
// patterns are compiled at plan time only). It may hold
// more than the workload really reloads on; the plan decides exactly.
const indexSources = "ripple.dev/sources"

// indexTemplateRef indexes workloads by the Deployment they take their
// template from (an Argo Rollout's workloadRef).
const indexTemplateRef = "ripple.dev/workload-ref"

func sourceKey(kind refs.Kind, name string) string { return string(kind) + "/" + name }

// patternKey cannot clash with a sourceKey: names never contain '*'.
func patternKey(kind refs.Kind) string { return string(kind) + "/*" }

// Finder is what reload and webhook mode ask about sources and
// namespaces: which workloads may use a source (Index, the cache lookup)
// and which namespaces this replica acts in (Scope, the namespace selector
// and the shard). The two are apart so that neither decides the other's
// question: the lookup returns every dependent, and callers apply the
// scope to the workload they act on.
type Finder struct {
	Index
	Scope
}

// Index finds dependents in the cache's field indexes.
type Index struct {
	// Reader is the cache, with the indexes Register added.
	Reader      client.Reader
	Keys        annotation.Keys
	SourceKinds []refs.Kind
	// Error reports an index value that could not be computed.
	Error func(err error, obj client.Object)
}

// Scope is the set of namespaces this replica acts in.
type Scope struct {
	// Reader is the cache holding the namespaces --namespace-selector
	// selects (read only when Selective).
	Reader client.Reader
	// Selective is set with --namespace-selector: only the namespaces in
	// the (label-filtered) namespace cache are in scope.
	Selective bool
	// ShardCount and ShardIndex are --shard-count and --shard-index: only
	// the namespaces ShardOf puts in shard ShardIndex are in scope.
	ShardCount, ShardIndex int
}

// InScope reports whether namespace ns is this shard's and selected by
// --namespace-selector. Only selected namespaces are cached, so a cache
// miss means "not selected".
func (s *Scope) InScope(ctx context.Context, ns string) (bool, error) {
	if !s.Owns(ns) {
		return false, nil
	}
	if !s.Selective {
		return true, nil
	}
	err := s.Reader.Get(ctx, types.NamespacedName{Name: ns}, NamespaceObject())
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// Owns reports whether namespace ns is this shard's (always, unsharded).
// Unlike the --namespace-selector scope, a namespace always has an owner,
// so nothing needs doing in the others'.
func (s *Scope) Owns(ns string) bool {
	return s.ShardCount <= 1 || ShardOf(ns, s.ShardCount) == s.ShardIndex
}

// ShardOf is the shard, from 0 to count-1, that owns namespace ns: the
// 32-bit FNV-1a hash of its name modulo count. It depends on the name
// alone, so every replica agrees without talking to the others, and it
// must never change: shards of different versions would disagree.
func ShardOf(ns string, count int) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(ns))    // a hash.Hash never fails to write
	return int(h.Sum32()) % count // int holds every uint32 on Ripple's 64-bit platforms
}

// NamespaceObject is a Namespace as the metadata-only cache holds it.
func NamespaceObject() *metav1.PartialObjectMetadata {
	ns := &metav1.PartialObjectMetadata{}
	ns.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	return ns
}

// Register adds kind's indexes to indexer.
func (f *Index) Register(ctx context.Context, indexer client.FieldIndexer, kind workload.Kind) error {
	if err := indexer.IndexField(ctx, kind.New(), indexSources, f.indexValues(kind)); err != nil {
		return fmt.Errorf("indexing %s by source: %w", kind.Name(), err)
	}
	ts, ok := kind.(workload.TemplateSource)
	if !ok {
		return nil
	}
	refOf := func(obj client.Object) []string {
		if name, ok := ts.TemplateRef(obj); ok {
			return []string{name}
		}
		return nil
	}
	if err := indexer.IndexField(ctx, kind.New(), indexTemplateRef, refOf); err != nil {
		return fmt.Errorf("indexing %s by workloadRef: %w", kind.Name(), err)
	}
	return nil
}

// indexValues returns the indexSources values of a workload.
func (f *Index) indexValues(kind workload.Kind) client.IndexerFunc {
	return func(obj client.Object) []string {
		tpl, err := kind.PodTemplate(obj)
		if err != nil && f.Error != nil {
			f.Error(err, obj)
		}
		if tpl == nil {
			// No template of its own (a workloadRef Rollout, a Job left to
			// its CronJob): its own named annotations still count; a
			// workloadRef Deployment's sources are found through the
			// Deployment (viaTemplateRef).
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
			add(sourceKey(ref.Kind, ref.Name))
		}
		if fr, ok := kind.(workload.FieldReferrer); ok {
			// The configs its own fields name (a declared kind's refs).
			fields, _ := fr.FieldRefs(obj)
			for _, f := range fields {
				add(sourceKey(f.Kind, f.Name))
			}
		}
		for _, sk := range f.SourceKinds {
			// Named keys may sit on the metadata or, as a fallback, on the
			// pod template; index both and let the plan apply the
			// precedence.
			// Patterns are never compiled here: an index function runs
			// for every workload while the cache syncs, and a tenant's
			// pattern must not be able to delay that.
			for _, ann := range []map[string]string{obj.GetAnnotations(), tpl.Annotations} {
				names, pattern := annotation.Names(f.Keys, sk, ann)
				for _, name := range names {
					add(sourceKey(sk, name))
				}
				if pattern {
					add(patternKey(sk))
				}
				if annotation.HasSelector(f.Keys, sk, ann) {
					add(selectorKey(sk))
				}
			}
		}
		return out
	}
}

// Of returns the workloads of kind in the source's namespace that may
// depend on it. They are the cache's own objects, not copies: callers only
// read them. The workloads whose label selector selects it are matched
// against its labels as the cache holds them (all of them when it is gone
// from the cache: the plan decides).
func (f *Index) Of(ctx context.Context, kind workload.Kind, ns string, src refs.Ref) ([]client.Object, error) {
	return f.OfLabelled(ctx, kind, ns, src, f.labelsOf(ctx, ns, src))
}

// OfLabelled is Of for a source whose labels the caller knows: each set of
// sets (an update that changed them gives both), or nil when unknown.
func (f *Index) OfLabelled(ctx context.Context, kind workload.Kind, ns string, src refs.Ref, sets []map[string]string) ([]client.Object, error) {
	keys := []string{sourceKey(src.Kind, src.Name), patternKey(src.Kind)}
	var out []client.Object
	seen := map[types.NamespacedName]bool{}
	add := func(obj client.Object) {
		if key := client.ObjectKeyFromObject(obj); !seen[key] {
			seen[key] = true
			out = append(out, obj)
		}
	}
	selecting, err := f.Selecting(ctx, kind, ns, src.Kind, sets)
	if err != nil {
		return nil, err
	}
	for _, obj := range selecting {
		add(obj)
	}
	for _, key := range keys {
		list := kind.NewList()
		err := f.Reader.List(ctx, list, client.InNamespace(ns), client.MatchingFields{indexSources: key}, client.UnsafeDisableDeepCopy)
		if err != nil {
			return nil, fmt.Errorf("listing %ss from the cache by source %s: %w", kind.Name(), key, err)
		}
		items, err := apimeta.ExtractList(list)
		if err != nil {
			return nil, err
		}
		for _, item := range items {
			if obj, ok := item.(client.Object); ok {
				add(obj)
			}
		}
	}
	if _, ok := kind.(workload.TemplateSource); !ok {
		return out, nil
	}
	via, err := f.viaTemplateRef(ctx, kind, ns, keys)
	if err != nil {
		return nil, err
	}
	for _, name := range via {
		obj := kind.New()
		if err := f.Reader.Get(ctx, name, obj); err == nil {
			add(obj)
		}
	}
	return out, nil
}

// InNamespace returns every workload of kind in ns.
func (f *Index) InNamespace(ctx context.Context, kind workload.Kind, ns string) ([]types.NamespacedName, error) {
	names, err := f.list(ctx, kind.NewList(), ns, "", "")
	if err != nil {
		return nil, fmt.Errorf("listing %ss of namespace %s from the cache: %w", kind.Name(), ns, err)
	}
	return names, nil
}

// UsingTemplateOf returns the workloads of kind that take their template
// from Deployment dep.
func (f *Index) UsingTemplateOf(ctx context.Context, kind workload.Kind, ns, dep string) ([]types.NamespacedName, error) {
	names, err := f.list(ctx, kind.NewList(), ns, indexTemplateRef, dep)
	if err != nil {
		return nil, fmt.Errorf("listing %ss by workloadRef from the cache: %w", kind.Name(), err)
	}
	return names, nil
}

// viaTemplateRef maps the Deployments that depend on a source (by their
// own index) to the workloads of kind that take their template from one of
// them.
func (f *Index) viaTemplateRef(ctx context.Context, kind workload.Kind, ns string, keys []string) ([]types.NamespacedName, error) {
	var out []types.NamespacedName
	for _, key := range keys {
		deps, err := f.list(ctx, workload.Deployment.NewList(), ns, indexSources, key)
		if err != nil {
			return nil, fmt.Errorf("listing Deployments from the cache by source %s: %w", key, err)
		}
		for _, dep := range deps {
			names, err := f.UsingTemplateOf(ctx, kind, ns, dep.Name)
			if err != nil {
				return nil, err
			}
			out = append(out, names...)
		}
	}
	return out, nil
}

func (f *Index) list(ctx context.Context, list client.ObjectList, ns, index, value string) ([]types.NamespacedName, error) {
	opts := []client.ListOption{client.InNamespace(ns)}
	if index != "" {
		opts = append(opts, client.MatchingFields{index: value})
	}
	if err := f.Reader.List(ctx, list, opts...); err != nil {
		return nil, err
	}
	names := source.Names(list)
	out := make([]types.NamespacedName, len(names))
	for i, name := range names {
		out[i] = types.NamespacedName{Namespace: ns, Name: name}
	}
	return out, nil
}

// Shared returns the workloads of kind in other namespaces than ns that
// name src, of namespace ns, by a cross-namespace reference
// ("namespace/name" in a named-reload annotation) and whose namespace
// granted admits: one lookup of the index across namespaces, never a
// LIST. A workload that takes its template from a Deployment (a
// workloadRef Rollout) is found by its own annotations only.
func (f *Index) Shared(ctx context.Context, kind workload.Kind, ns string, src refs.Ref, granted func(ns string) bool) ([]client.Object, error) {
	list := kind.NewList()
	key := sourceKey(src.Kind, ns+"/"+src.Name)
	if err := f.Reader.List(ctx, list, client.MatchingFields{indexSources: key}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing %ss from the cache by shared source %s: %w", kind.Name(), key, err)
	}
	items, err := apimeta.ExtractList(list)
	if err != nil {
		return nil, err
	}
	var out []client.Object
	for _, item := range items {
		if obj, ok := item.(client.Object); ok && obj.GetNamespace() != ns && granted(obj.GetNamespace()) {
			out = append(out, obj)
		}
	}
	return out, nil
}
