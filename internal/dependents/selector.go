package dependents

import (
	"context"
	"fmt"
	"slices"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/internal/annotation"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/source"
	"github.com/ripple-dev/ripple/internal/workload"
)

// selectorKey indexes the workloads that carry a label-selector annotation
// for configs of kind (on the metadata or the pod template), valid or not:
// the selector is parsed when a config event is matched against it, never
// while the cache syncs. It cannot clash with a sourceKey: names never
// contain '='.
func selectorKey(kind refs.Kind) string { return string(kind) + "/=" }

// Selecting returns the workloads of kind in ns whose label selector for
// configs of srcKind matches any of the label sets (every workload with a
// selector when sets is nil: the config's labels are not known). The
// workloads come from the index, one lookup, and each selector is matched
// in memory (parsed once per value, annotation.Selector): the cost is the
// namespace's selecting workloads, never a LIST to the API server.
func (f *Index) Selecting(ctx context.Context, kind workload.Kind, ns string, srcKind refs.Kind, sets []map[string]string) ([]client.Object, error) {
	if f.Keys.SelectorKey(srcKind) == "" || !slices.Contains(f.SourceKinds, srcKind) {
		return nil, nil
	}
	list := kind.NewList()
	err := f.Reader.List(ctx, list, client.InNamespace(ns), client.MatchingFields{indexSources: selectorKey(srcKind)}, client.UnsafeDisableDeepCopy)
	if err != nil {
		return nil, fmt.Errorf("listing %ss from the cache by label selector: %w", kind.Name(), err)
	}
	items, err := apimeta.ExtractList(list)
	if err != nil {
		return nil, err
	}
	var out []client.Object
	for _, item := range items {
		obj, ok := item.(client.Object)
		if ok && (sets == nil || f.selects(kind, obj, srcKind, sets)) {
			out = append(out, obj)
		}
	}
	return out, nil
}

// selects reports whether obj's selector for srcKind matches any of sets.
// An invalid selector selects nothing (the plan warns of it).
func (f *Index) selects(kind workload.Kind, obj client.Object, srcKind refs.Kind, sets []map[string]string) bool {
	tpl, _ := kind.PodTemplate(obj)
	var tplAnn map[string]string
	if tpl != nil {
		tplAnn = tpl.Annotations
	}
	sel, _, err := annotation.SelectorOf(f.Keys, srcKind, obj.GetAnnotations(), tplAnn)
	if err != nil || sel == nil {
		return false
	}
	return slices.ContainsFunc(sets, func(set map[string]string) bool { return sel.Matches(labels.Set(set)) })
}

// labelsOf reads src's labels from the cache: nil (unknown) when it is not
// there, or not a kind a selector selects.
func (f *Index) labelsOf(ctx context.Context, ns string, src refs.Ref) []map[string]string {
	if f.Keys.SelectorKey(src.Kind) == "" || !slices.Contains(f.SourceKinds, src.Kind) {
		return nil
	}
	obj := source.Object(src.Kind)
	if err := f.Reader.Get(ctx, types.NamespacedName{Namespace: ns, Name: src.Name}, obj); err != nil {
		return nil
	}
	return []map[string]string{obj.GetLabels()}
}
