package explain

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/internal/digest"
	"github.com/ripple-dev/ripple/internal/gather"
	"github.com/ripple-dev/ripple/internal/metainfo"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/rollout"
	"github.com/ripple-dev/ripple/internal/source"
	"github.com/ripple-dev/ripple/internal/standing"
	"github.com/ripple-dev/ripple/internal/workload"
)

// Explainer explains workloads from what Reader reads: the API server,
// or another reader such as manifest files.
type Explainer struct {
	Reader   client.Reader
	Settings metainfo.Settings
	// Digester digests the configs as the controller's caches do, with
	// its key ring when it could be read (digestkey.Read).
	Digester digest.Digester
	// Events lists Ripple's last events on a workload; nil when there are
	// none to read (offline).
	Events func(ctx context.Context, kind string, obj client.Object) ([]Event, error)
	// Findings lists the problems found in the objects of a workload's
	// report: the workload and the sources it lists. Nil when nothing looks
	// for them (live); when set, All lists the workloads with findings too.
	Findings func(r Report) []Finding
	// Rollouts reads how a workload's rollout stands by its status
	// (workload.RolloutOf); nil where the objects hold no status
	// (manifest files): complete.
	Rollouts func(workload.Kind, client.Object) rollout.Status
	Now      func() time.Time
}

// Explain explains the workload ns/name of kind.
func (e Explainer) Explain(ctx context.Context, kind Kind, ns, name string) (Report, error) {
	obj := kind.New()
	if err := e.Reader.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, obj); err != nil {
		return Report{}, permissionError(err, "get", kind, ns)
	}
	return e.explain(ctx, kind, obj)
}

// All explains every opted-in workload of kinds in namespace ns (every
// namespace when empty): those with a trigger annotation, or all with
// --auto-reload-all, and with Findings those with findings. Kinds whose API
// is not served are skipped.
func (e Explainer) All(ctx context.Context, kinds []Kind, ns string) (List, error) {
	out := List{Items: []Report{}}
	var err error
	out.Unlisted, err = e.each(ctx, kinds, ns, func(kind Kind, obj client.Object, optedIn bool) error {
		r, err := e.explain(ctx, kind, obj)
		switch {
		case apierrors.IsForbidden(err):
			// One workload's config the user may not read (view and a
			// Secret) is told, and the others are still explained.
			out.Unplanned = append(out.Unplanned, Unplanned{Ref: workload.RefTo(kind.Kind, obj), Why: err.Error()})
			return nil
		case err != nil:
			return err
		}
		if optedIn || len(r.Findings) > 0 {
			out.Items = append(out.Items, r)
		}
		return nil
	})
	return out, err
}

// each calls fn on every workload of kinds in ns that is opted in or,
// with findings, on every workload; optedIn says which. The kinds the
// user may not list (an optional or declared kind the built-in view role
// does not cover) are returned, and the others still gone through.
func (e Explainer) each(ctx context.Context, kinds []Kind, ns string, fn func(kind Kind, obj client.Object, optedIn bool) error) ([]Unlisted, error) {
	var unlisted []Unlisted
	for _, kind := range kinds {
		list := kind.NewList()
		err := e.Reader.List(ctx, list, client.InNamespace(ns))
		switch {
		case apimeta.IsNoMatchError(err) || apierrors.IsNotFound(err):
			continue // an optional kind whose API is not served
		case apierrors.IsForbidden(err):
			unlisted = append(unlisted, Unlisted{Kind: kind.Name(), Why: permissionError(err, "list", kind, ns).Error()})
			continue
		case err != nil:
			return unlisted, fmt.Errorf("listing %ss: %w", kind.Name(), err)
		}
		items, err := apimeta.ExtractList(list)
		if err != nil {
			return unlisted, err
		}
		for _, item := range items {
			obj, ok := item.(client.Object)
			optedIn := ok && e.optedIn(kind, obj)
			if !ok || !optedIn && e.Findings == nil {
				continue
			}
			if err := fn(kind, obj, optedIn); err != nil {
				return unlisted, err
			}
		}
	}
	return unlisted, nil
}

// optedIn reports whether a trigger annotation, or --auto-reload-all,
// asks for reloads of obj.
func (e Explainer) optedIn(kind Kind, obj client.Object) bool {
	if e.Settings.Config.AutoReloadAll {
		return true
	}
	keys := e.Settings.Plan.Keys
	triggers := []string{keys.Auto, keys.Search}
	for _, k := range refs.Kinds() {
		triggers = append(triggers, keys.TypedAutoKey(k), keys.ReloadKey(k))
	}
	tpl, _ := kind.PodTemplate(obj)
	for _, key := range triggers {
		if _, ok := obj.GetAnnotations()[key]; ok {
			return true
		}
		if _, ok := tplAnnotations(tpl)[key]; ok {
			return true
		}
	}
	return false
}

func tplAnnotations(tpl *corev1.PodTemplateSpec) map[string]string {
	if tpl == nil {
		return nil
	}
	return tpl.Annotations
}

// explain builds the report of obj.
func (e Explainer) explain(ctx context.Context, kind Kind, obj client.Object) (Report, error) {
	f := Facts{Kind: kind, Object: obj, Settings: e.Settings, Now: e.Now()}
	if e.Rollouts != nil {
		st := e.Rollouts(kind.Kind, obj)
		f.Rollout = &st
	}
	tpl, err := workload.Template(ctx, e.Reader, kind.Kind, obj)
	if err != nil {
		return Report{}, err
	}
	f.Template = tpl
	if tpl == nil {
		f.NoTemplate = noTemplate(kind, obj)
	} else {
		if err := e.plan(ctx, &f); err != nil {
			return Report{}, err
		}
	}
	if f.OutOfScope, err = e.outOfScope(ctx, obj.GetNamespace()); err != nil {
		return Report{}, err
	}
	if e.Events != nil {
		if f.Events, err = e.Events(ctx, eventKind(kind), obj); err != nil {
			return Report{}, fmt.Errorf("reading the events of %s %s/%s: %w", kind.Name(), obj.GetNamespace(), obj.GetName(), err)
		}
	}
	r := Build(f)
	r.Ownership = ownership(obj, f.Events)
	e.traces(ctx, obj.GetNamespace(), r.Sources)
	if e.Findings != nil {
		r.Findings = e.Findings(r)
	}
	return r, nil
}

// plan gathers the plan input as the controller does and plans. The
// controller keeps the settle state in memory; here it is rebuilt from
// when the changed sources were last written (standing.Planned, as
// `ripple plan` rebuilds it).
func (e Explainer) plan(ctx context.Context, f *Facts) error {
	view := &cacheView{Reader: e.Reader, selector: e.Settings.Config.ResourceSelector,
		written: map[refs.Ref]time.Time{}, unselected: map[refs.Ref]string{}}
	g := gather.Gatherer{Reader: view, Settings: e.Settings.Plan, Digester: e.Digester, Canaries: canaries{reader: e.Reader, ring: e.Digester.Ring, off: !e.Settings.Config.ConfigRollouts}}
	in, err := g.Input(ctx, f.Kind.Kind, f.Object, f.Template)
	if err != nil {
		return fmt.Errorf("reading the sources of %s %s/%s: %w", f.Kind.Name(), f.Object.GetNamespace(), f.Object.GetName(), err)
	}
	in.Now = f.Now
	p := standing.Planned(in, func(ref refs.Ref) time.Time { return view.written[ref] })
	f.Input, f.Plan, f.Written, f.Unselected = in, p, view.written, view.unselected
	return nil
}

// cacheView reads sources as the controller's cache holds them: one
// outside --resource-label-selector is not found. It notes when each
// source was last written, which the source's transform drops with its
// data, and the labels of those the selector leaves out.
type cacheView struct {
	client.Reader
	selector   labels.Selector
	written    map[refs.Ref]time.Time
	unselected map[refs.Ref]string
}

func (v *cacheView) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if err := v.Reader.Get(ctx, key, obj, opts...); err != nil {
		return err
	}
	ref, ok := sourceRef(obj, key.Name)
	if !ok {
		return nil
	}
	v.written[ref] = source.LastWrite(obj)
	if v.selector != nil && !v.selector.Matches(labels.Set(obj.GetLabels())) {
		v.unselected[ref] = showLabels(obj.GetLabels())
		return apierrors.NewNotFound(corev1.Resource(strings.ToLower(string(ref.Kind))+"s"), key.Name)
	}
	return nil
}

func (v *cacheView) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	switch list.(type) {
	case *corev1.ConfigMapList, *corev1.SecretList:
		if v.selector != nil {
			opts = append(opts, client.MatchingLabelsSelector{Selector: v.selector})
		}
	}
	return v.Reader.List(ctx, list, opts...)
}

// sourceRef is the ref of obj when it is a ConfigMap or a Secret.
func sourceRef(obj client.Object, name string) (refs.Ref, bool) {
	switch obj.(type) {
	case *corev1.ConfigMap:
		return refs.Ref{Kind: refs.ConfigMap, Name: name}, true
	case *corev1.Secret:
		return refs.Ref{Kind: refs.Secret, Name: name}, true
	}
	return refs.Ref{}, false
}

// outOfScope says why namespace ns is out of the Ripple's scope; empty
// when it is in.
func (e Explainer) outOfScope(ctx context.Context, ns string) (string, error) {
	s := e.Settings
	scope := s.Config.Scope
	switch {
	case len(scope.Namespaces) > 0 && !slices.Contains(scope.Namespaces, ns):
		return fmt.Sprintf("namespace %q is not watched: %s", ns, s.Flag("namespaces")), nil
	case slices.Contains(scope.NamespacesToIgnore, ns):
		return fmt.Sprintf("namespace %q is ignored: %s", ns, s.Flag("namespaces-to-ignore")), nil
	case scope.NamespaceSelector == nil || len(scope.Namespaces) > 0:
		return "", nil
	}
	n := &corev1.Namespace{}
	err := e.Reader.Get(ctx, types.NamespacedName{Name: ns}, n)
	if apierrors.IsNotFound(err) {
		// Only manifest files lack the namespace of a workload: its labels
		// are unknown, so it counts as selected.
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading namespace %s: %w", ns, err)
	}
	if scope.NamespaceSelector.Matches(labels.Set(n.Labels)) {
		return "", nil
	}
	return fmt.Sprintf("namespace %q (labels %s) is not selected by %s", ns, showLabels(n.Labels), s.Flag("namespace-selector")), nil
}

func showLabels(l map[string]string) string {
	if len(l) == 0 {
		return "none"
	}
	return labels.Set(l).String()
}

// noTemplate says why a workload has no pod template to reload.
func noTemplate(kind Kind, obj client.Object) string {
	if ts, ok := kind.Kind.(workload.TemplateSource); ok {
		if name, ok := ts.TemplateRef(obj); ok {
			return fmt.Sprintf("its workloadRef Deployment %q does not exist", name)
		}
	}
	if owner := ownerKinds(obj); owner != "" {
		return fmt.Sprintf("it is controlled by %s, which takes the reloads", owner)
	}
	return "it has no pod template"
}

func ownerKinds(obj client.Object) string {
	var out []string
	for _, o := range obj.GetOwnerReferences() {
		if o.Controller != nil && *o.Controller {
			out = append(out, fmt.Sprintf("%s %q", o.Kind, o.Name))
		}
	}
	return strings.Join(out, ", ")
}

// eventKind is the kind the workload's Events name: a declared kind's
// own, not its name qualified by its group (StatefulSet.apps.kruise.io).
func eventKind(k Kind) string {
	if d, ok := k.Kind.(workload.DeclaredKind); ok {
		return d.Declared().Kind
	}
	return k.Name()
}

// permissionError names the permission a read of a declared kind lacked (its
// resource is the user's to grant: the chart grants only the declared
// kinds'); other errors are returned as they are.
func permissionError(err error, verb string, kind Kind, ns string) error {
	d, ok := kind.Kind.(workload.DeclaredKind)
	if !ok || !apierrors.IsForbidden(err) {
		return err
	}
	where := "in namespace " + ns
	if ns == "" {
		where = "in every namespace"
	}
	gr := d.Declared().GVR().GroupResource()
	return fmt.Errorf("cannot read %ss: needs %s on %s %s: %w", kind.Name(), verb, gr.String(), where, err)
}
