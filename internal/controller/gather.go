package controller

import (
	"context"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/internal/annotation"
	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/source"
	"github.com/ripple-dev/ripple/internal/workload"
)

// gather reads from the cache everything the plan of obj looks at: every
// source that may reload it, and the settle state. It decides nothing.
func (r *Reconciler) gather(ctx context.Context, obj client.Object, tpl *corev1.PodTemplateSpec) (plan.Input, error) {
	in := plan.Input{Settings: r.Settings, Pending: r.pendingOf(client.ObjectKeyFromObject(obj)), Now: r.Clock.Now()}
	in.SourceKinds = slices.DeleteFunc(slices.Clone(r.Settings.SourceKinds), func(k refs.Kind) bool {
		return k == refs.SecretProviderClass && !r.Rotations.Served() // the CSI driver's API is not served (yet)
	})
	in.Workload = plan.Workload{
		Namespace:     obj.GetNamespace(),
		Annotations:   obj.GetAnnotations(),
		Created:       obj.GetCreationTimestamp().Time,
		Template:      tpl,
		KeepsTemplate: r.Kind.KeepsTemplate(obj),
	}
	if pz, ok := r.Kind.(workload.Pauser); ok {
		in.Workload.Pausable, in.Workload.Paused = true, pz.Paused(obj)
	}
	if c, ok := r.Kind.(workload.Checker); ok {
		in.Workload.Invalid = c.Check(obj)
	}
	record := plan.AppliedRecord(obj.GetAnnotations(), r.Settings.Keys)
	for _, kind := range in.SourceKinds {
		names, err := r.candidates(ctx, kind, obj, tpl, record)
		if err != nil {
			return in, err
		}
		for _, name := range names {
			src, err := r.source(ctx, obj.GetNamespace(), refs.Ref{Kind: kind, Name: name})
			if err != nil {
				return in, err
			}
			in.Sources = append(in.Sources, src)
		}
	}
	return in, nil
}

// candidates lists the names of sources of kind that may reload the
// workload: those it references, those its named-reload annotation names,
// and those in its applied record (a deleted source matched by a pattern
// can no longer be listed).
func (r *Reconciler) candidates(ctx context.Context, kind refs.Kind, obj client.Object, tpl *corev1.PodTemplateSpec, record map[string]string) ([]string, error) {
	var names []string
	for _, ref := range refs.All(&tpl.Spec) {
		if ref.Kind == kind {
			names = append(names, ref.Name)
		}
	}
	for key := range record {
		if name, ok := strings.CutPrefix(key, string(kind)+"/"); ok {
			names = append(names, name)
		}
	}
	named := annotation.Parse(r.Settings.Keys, kind, obj.GetAnnotations(), tpl.Annotations).Named
	patterns := false
	for _, m := range named {
		if m.Literal() {
			names = append(names, m.String())
		} else {
			patterns = true
		}
	}
	if patterns {
		list := source.List(kind)
		if err := r.Client.List(ctx, list, client.InNamespace(obj.GetNamespace())); err != nil {
			return nil, err
		}
		for _, name := range source.Names(list) {
			if slices.ContainsFunc(named, func(m annotation.Matcher) bool { return m.Match(name) }) {
				names = append(names, name)
			}
		}
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

// source reads one source from the cache; for a SecretProviderClass, also
// what its pods mounted when no change was seen since start.
func (r *Reconciler) source(ctx context.Context, ns string, ref refs.Ref) (plan.Source, error) {
	src := plan.Source{Ref: ref}
	obj := source.Object(ref.Kind)
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: ref.Name}, obj)
	if err != nil && !apierrors.IsNotFound(err) {
		return src, err
	}
	if err == nil {
		src.Found, src.Annotations, src.Created = true, obj.GetAnnotations(), obj.GetCreationTimestamp().Time
		src.Digest = source.Digest(obj)
	}
	if ref.Kind != refs.SecretProviderClass || !src.Found {
		return src, nil
	}
	if src.Digest = r.Rotations.Latest(ns, ref.Name); src.Digest != "" {
		return src, nil
	}
	list := source.PodStatusList()
	if err := r.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
		return src, err
	}
	src.Mounts = map[string]int{}
	for i := range list.Items {
		if spc, sum := source.ClassOf(&list.Items[i]); spc == ref.Name && sum != "" {
			src.Mounts[sum]++
		}
	}
	return src, nil
}
