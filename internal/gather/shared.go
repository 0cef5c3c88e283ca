package gather

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ripple-dev/ripple/internal/annotation"
	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/source"
)

// read reads the sources of kind named names into in: each of the
// workload's namespace, and each config of another namespace
// ("namespace/name", a cross-namespace reference) that is shared with it.
// A reference that is not is left out of the plan whole, with why in
// in.Workload.Invalid: no digest, no state, nothing of the config.
func (g Gatherer) read(ctx context.Context, in *plan.Input, kind refs.Kind, names []string) error {
	for _, name := range names {
		ref := refs.Ref{Kind: kind, Name: name}
		if _, _, ok := annotation.SplitShared(name); ok {
			src, refused, err := g.shared(ctx, in.Workload.Namespace, ref)
			switch {
			case err != nil:
				return err
			case refused != "":
				in.Workload.Invalid = append(in.Workload.Invalid, refused)
				continue
			}
			in.Sources = append(in.Sources, src)
			continue
		}
		src, err := g.source(ctx, in.Workload.Namespace, ref)
		if err != nil {
			return err
		}
		in.Sources = append(in.Sources, src)
	}
	return nil
}

// shared reads the config of ref, a cross-namespace reference of a
// workload of namespace ns, when its namespace is watched and the config
// shares it with ns; else it returns why it is not followed. The words
// are the same for a config that does not exist and one not shared, so
// that a tenant learns nothing of another namespace's configs.
func (g Gatherer) shared(ctx context.Context, ns string, ref refs.Ref) (plan.Source, string, error) {
	other, name, _ := annotation.SplitShared(ref.Name)
	key := g.Settings.Keys.ReloadKey(ref.Kind)
	if !g.Settings.Watches(other) {
		return plan.Source{}, fmt.Sprintf("annotation %q: %s %q is in namespace %q, which this Ripple does not watch (--namespaces, --namespaces-to-ignore): it is not followed",
			key, ref.Kind, ref.Name, other), nil
	}
	obj := source.Object(ref.Kind)
	err := g.Reader.Get(ctx, types.NamespacedName{Namespace: other, Name: name}, obj)
	switch {
	case apierrors.IsForbidden(err):
		// ripple explain on a tenant's credentials, which need not read
		// the other namespace: say so, without guessing.
		return plan.Source{}, fmt.Sprintf("annotation %q: cannot tell whether %s %q is shared with this namespace: these credentials may not read it (needs get on %ss in namespace %s)",
			key, ref.Kind, ref.Name, strings.ToLower(string(ref.Kind)), other), nil
	case err != nil && !apierrors.IsNotFound(err):
		return plan.Source{}, "", err
	case err != nil || !annotation.Granted(g.Settings.Keys, obj.GetAnnotations(), ns):
		return plan.Source{}, NotShared(g.Settings.Keys, ref, ns), nil
	}
	src, err := g.source(ctx, other, refs.Ref{Kind: ref.Kind, Name: name})
	// Following starts with the grant: a change seen before it (the
	// priors) is not the workload's to roll, so its first sight is a
	// baseline whenever the grant came.
	src.Ref, src.Before = ref, nil
	return src, "", err
}

// NotShared is why a cross-namespace reference ref of a workload of
// namespace ns is not followed: the config does not exist or is not
// shared with ns, which it never tells apart.
func NotShared(keys annotation.Keys, ref refs.Ref, ns string) string {
	return fmt.Sprintf("annotation %q: %s %q is not shared with this namespace: Ripple follows a config of another namespace only while it carries %q listing %q (or %q)",
		keys.ReloadKey(ref.Kind), ref.Kind, ref.Name, keys.SharedWith, ns, annotation.GrantAll)
}
