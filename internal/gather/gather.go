// Package gather reads what a plan looks at: the workload as the planner
// sees it and every source that may reload it. It decides nothing. The
// controller gathers from its caches; `ripple explain` from the API server
// or from manifest files, through the same code, so that it explains what
// the controller does.
package gather

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/internal/annotation"
	"github.com/ripple-dev/ripple/internal/canary"
	"github.com/ripple-dev/ripple/internal/declared"
	"github.com/ripple-dev/ripple/internal/digest"
	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/source"
	"github.com/ripple-dev/ripple/internal/workload"
)

// Gatherer reads plan inputs through a reader.
type Gatherer struct {
	// Reader reads sources. Sources read whole are digested and their
	// data dropped, as the controller's cache transform does.
	Reader   client.Reader
	Settings plan.Settings
	// Rotations is what was seen of SecretProviderClass rotations; nil,
	// or not served, leaves SecretProviderClasses out.
	Rotations *source.Rotations
	// Priors are the ConfigMaps' and Secrets' data before their latest
	// change since start; nil for none.
	Priors *source.Priors
	// Digester digests the sources read whole (the cache's are digested
	// already).
	Digester digest.Digester
	// Canaries reads the canaried changes of the workload's configs; nil
	// reads none (each is asked for).
	Canaries CanaryReader
	// ReleasesIndexed is set when Reader has ReleaseIndex.
	ReleasesIndexed bool
}

// CanaryReader reads the canaried change of a config's data, as its
// ConfigRollout keeps it.
type CanaryReader interface {
	// Canary is the canaried change of src's data in ns; false when none
	// is kept yet. An Unkept error says why none can be kept and what to
	// do: the change is then held, or rolls without a canary with
	// --canary-unkept=roll (plan.Input.CanaryUnkept).
	Canary(ctx context.Context, ns string, src plan.Source) (canary.State, bool, error)
}

// Unkept is why no canary can be kept, and what to do about it.
type Unkept string

func (u Unkept) Error() string { return string(u) }

// Why no canary can be kept, in the words of the controller and of
// explain alike.
const (
	UnkeptOff       = Unkept("ConfigRollouts, which keep canaries, are off (--config-rollouts=false): turn them on (Helm ripple.configRollouts.enabled)")
	UnkeptNotServed = Unkept("the API server does not serve ConfigRollouts (the CRD configrollouts.ripple.dev), which keep canaries: " +
		"apply the CRD (deploy/helm/ripple/files/crds/ripple.dev_configrollouts.yaml, docs/config-rollouts.md)")
)

// UnkeptForbidden is why no canary can be kept when Ripple may not list
// ConfigRollouts, the API server's message saying so.
func UnkeptForbidden(message string) Unkept {
	return Unkept("Ripple may not list ConfigRollouts, which keep canaries (" + message + "): " +
		"grant it get, list, watch, create and delete on configrollouts.ripple.dev and update on configrollouts/status (docs/config-rollouts.md)")
}

// UnkeptRefused is why no canary can be kept when the API server refused
// to create a ConfigRollout in ns (no right there, a quota), the
// server's message saying so.
func UnkeptRefused(ns, message string) Unkept {
	return Unkept("the API server refused Ripple a ConfigRollout, which keeps a canary, in namespace " + ns + " (" + message + "): " +
		"grant it create on configrollouts.ripple.dev there, or raise the namespace's quota of them (docs/config-rollouts.md)")
}

// Input reads everything the plan of obj, of kind, looks at, but for the
// settle state and the clock, which are the caller's: the workload as the
// planner sees it, and every source that may reload it.
func (g Gatherer) Input(ctx context.Context, kind workload.Kind, obj client.Object, tpl *corev1.PodTemplateSpec) (plan.Input, error) {
	in := plan.Input{Settings: g.Settings}
	in.SourceKinds = slices.DeleteFunc(slices.Clone(g.Settings.SourceKinds), func(k refs.Kind) bool {
		return k == refs.SecretProviderClass && !g.Rotations.Served() // the CSI driver's API is not served (yet)
	})
	in.Workload = Workload(kind, obj, tpl)
	in.Workload.RecordRestored = workload.ForeignAnnotation(obj, g.Settings.Keys.Applied)
	in.Workload.RestoredBy = workload.LastForeignWrite(obj)
	if g.Settings.NamespaceDefaults {
		var err error
		if in.Workload.NamespaceAnnotations, err = g.NamespaceAnnotations(ctx, obj.GetNamespace()); err != nil {
			return in, err
		}
	}
	// Resolved once, with the Namespace's defaults: the plan, the pod
	// restart and explain all read it from here.
	var problems []string
	in.Workload.Restart, problems = plan.RestartOf(in.Workload, g.Settings)
	in.Workload.Invalid = append(in.Workload.Invalid, problems...)
	record := plan.AppliedRecord(obj.GetAnnotations(), g.Settings.Keys)
	for _, kind := range in.SourceKinds {
		names, over, err := g.candidates(ctx, kind, obj, tpl, in.Workload.FieldRefs, record)
		if err != nil {
			return in, err
		}
		selected, broad, err := g.selected(ctx, kind, obj, tpl)
		if err != nil {
			return in, err
		}
		if broad != nil {
			in.Workload.TooBroad = append(in.Workload.TooBroad, plan.TooBroad{Kind: kind, Message: broad.Error()})
		}
		names = slices.Compact(slices.Sorted(slices.Values(append(names, selected...))))
		if over != nil {
			in.Workload.Invalid = append(in.Workload.Invalid, over.Error())
			in.Workload.OverBudget = append(in.Workload.OverBudget, kind)
		}
		if err := g.read(ctx, &in, kind, names); err != nil {
			return in, err
		}
	}
	if problem := plan.RefuseAction(&in.Workload, in.Sources, g.Settings.Keys); problem != "" {
		in.Workload.Invalid = append(in.Workload.Invalid, problem)
	}
	if problem := plan.RefuseInPlace(&in.Workload, in.Sources, g.Settings.Keys); problem != "" {
		in.Workload.Invalid = append(in.Workload.Invalid, problem)
	}
	if slices.Contains(in.SourceKinds, refs.Secret) {
		// Read whether a change set waits for it or not: the plan is made
		// once, with every input it may need (no Secrets watched: no
		// records to read, and no informer started for them).
		in.Workload.Release = PendingRelease(ctx, g.Reader, obj, g.ReleasesIndexed)
	}
	return in, g.canaries(ctx, &in)
}

// canaries reads the canaried changes of in's configs whose changes are
// canaried: the plan is made once, with every input it needs.
func (g Gatherer) canaries(ctx context.Context, in *plan.Input) error {
	if g.Canaries == nil {
		return nil
	}
	for _, src := range in.Sources {
		if !src.Found || (src.Ref.Kind != refs.ConfigMap && src.Ref.Kind != refs.Secret) {
			continue
		}
		if spec, _ := plan.CanaryOf(src, in.Workload.NamespaceAnnotations, g.Settings); !spec.On() {
			continue
		}
		c, ok, err := g.Canaries.Canary(ctx, in.Workload.Namespace, src)
		var unkept Unkept
		switch {
		case errors.As(err, &unkept):
			in.CanaryUnkept = string(unkept)
			return nil
		case err != nil:
			return err
		case ok:
			if in.Canaries == nil {
				in.Canaries = map[refs.Ref]canary.State{}
			}
			in.Canaries[src.Ref] = c
		}
	}
	return nil
}

// Workload is obj, of kind, with its pod template tpl, as the planner
// sees it.
func Workload(kind workload.Kind, obj client.Object, tpl *corev1.PodTemplateSpec) plan.Workload {
	w := plan.Workload{
		Kind:          kind.Name(),
		Name:          obj.GetName(),
		LastWriter:    workload.LastWriter(obj),
		Namespace:     obj.GetNamespace(),
		Annotations:   obj.GetAnnotations(),
		Created:       obj.GetCreationTimestamp().Time,
		Template:      tpl,
		KeepsTemplate: kind.KeepsTemplate(obj),
	}
	if pz, ok := kind.(workload.Pauser); ok {
		w.Pausable, w.Paused = true, pz.Paused(obj)
	}
	if c, ok := kind.(workload.Checker); ok {
		w.Invalid = c.Check(obj)
	}
	if fr, ok := kind.(workload.FieldReferrer); ok {
		var over bool
		if w.FieldRefs, over = fr.FieldRefs(obj); over {
			w.Invalid = append(w.Invalid, fmt.Sprintf("its fields (the refs of kind %s) hold more than %d names; only the first %d are followed",
				kind.Name(), declared.MaxRefValues, declared.MaxRefValues))
		}
	}
	_, w.Restartable = kind.(workload.Restarter)
	if tr, ok := kind.(workload.TemplateRoller); ok {
		w.RollsWithTemplate = tr.RollsWithTemplate()
	}
	w.Version = Version(kind, obj)
	return w
}

// Version is the resourceVersion that orders a change of obj's pod
// template against a config's (plan.Workload.Version): obj's, or empty
// when obj takes its template from a Deployment (a Rollout's workloadRef),
// whose writes obj's version does not follow.
func Version(kind workload.Kind, obj client.Object) string {
	if ts, ok := kind.(workload.TemplateSource); ok {
		if _, ref := ts.TemplateRef(obj); ref {
			return ""
		}
	}
	return obj.GetResourceVersion()
}

// candidates lists the names of sources of kind that may reload the
// workload: those it references (in its template or its fields), those its named-reload annotation names,
// and those in its applied record (a deleted source matched by a pattern
// can no longer be listed). When matching the annotation's patterns
// against the namespace's sources would cost more than the budget
// (annotation.MatchBudget), it matches none and returns why as over.
func (g Gatherer) candidates(ctx context.Context, kind refs.Kind, obj client.Object, tpl *corev1.PodTemplateSpec,
	fields []refs.FieldRef, record map[string]string) (_ []string, over, _ error) {
	var names []string
	for _, ref := range refs.All(&tpl.Spec) {
		if ref.Kind == kind {
			names = append(names, ref.Name)
		}
	}
	for _, f := range fields {
		if f.Kind == kind {
			names = append(names, f.Name)
		}
	}
	for key := range record {
		// A config of another namespace is followed only while the
		// annotation names it (shared.go), not for its record.
		if name, ok := strings.CutPrefix(key, string(kind)+"/"); ok && !strings.Contains(name, "/") {
			names = append(names, name)
		}
	}
	policy := annotation.Parse(g.Settings.Keys, kind, obj.GetAnnotations(), tpl.Annotations)
	patterns := false
	for _, m := range policy.Named {
		if m.Literal() {
			names = append(names, m.String())
		} else {
			patterns = true
		}
	}
	if patterns {
		list := source.List(kind)
		if err := g.Reader.List(ctx, list, client.InNamespace(obj.GetNamespace())); err != nil {
			return nil, nil, err
		}
		all := source.Names(list)
		if over = policy.CheckBudget(all); over == nil {
			for _, name := range all {
				if slices.ContainsFunc(policy.Named, func(m annotation.Matcher) bool { return m.Match(name) }) {
					names = append(names, name)
				}
			}
		}
	}
	slices.Sort(names)
	return slices.Compact(names), over, nil
}

// source reads one source; for a SecretProviderClass, also what its pods
// mounted when no change was seen since start.
func (g Gatherer) source(ctx context.Context, ns string, ref refs.Ref) (plan.Source, error) {
	src := plan.Source{Ref: ref}
	obj := source.Object(ref.Kind)
	err := g.Reader.Get(ctx, types.NamespacedName{Namespace: ns, Name: ref.Name}, obj)
	switch {
	case apierrors.IsForbidden(err):
		// ripple explain or history on a tenant's credentials: the
		// built-in view role reads no Secrets, and a plan without one of
		// its sources would be wrong.
		return src, fmt.Errorf("cannot read %s %s/%s, which the workload may use (needs get on %ss in namespace %s%s): %w",
			ref.Kind, ns, ref.Name, strings.ToLower(string(ref.Kind)), ns, viewNote(ref.Kind), err)
	case err != nil && !apierrors.IsNotFound(err):
		return src, err
	}
	if err == nil {
		// A no-op on a cached source, which is already digested.
		_, _ = source.Transform(g.Digester, obj)
	}
	if err == nil {
		src.Found, src.UID, src.Annotations, src.Created = true, obj.GetUID(), obj.GetAnnotations(), obj.GetCreationTimestamp().Time
		src.Labels = obj.GetLabels()
		src.Written, src.Version = source.Written(obj), obj.GetResourceVersion()
		src.Digest, src.Keys, src.Others = source.Digest(obj), source.Keys(obj), source.Others(obj)
		if p, ok := g.Priors.Of(ns, ref); ok && p.UID == obj.GetUID() {
			src.Before = &plan.Before{Digest: p.Digest, Keys: p.Keys, Seen: p.Seen}
		}
	}
	if ref.Kind != refs.SecretProviderClass || !src.Found {
		return src, nil
	}
	if src.Digest = g.Rotations.Latest(ns, ref.Name); src.Digest != "" {
		return src, nil
	}
	list := source.PodStatusList()
	if err := g.Reader.List(ctx, list, client.InNamespace(ns)); err != nil {
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

// viewNote tells a tenant with the built-in view role why it cannot read a
// Secret, which explain could not tell apart from a missing right.
func viewNote(kind refs.Kind) string {
	if kind == refs.Secret {
		return "; the built-in view role has none: ripple explain secret/<name> shows its change as Ripple records it"
	}
	return ""
}

// NamespaceAnnotations are the annotations of Namespace ns, for the
// defaults it sets for its workloads (--namespace-defaults): nil when it
// is not found. A Namespace the reader may not read (ripple explain or
// approve on credentials without that right) is an error naming the
// permission: taking the flag's default instead could approve nothing or
// report a wrong policy.
func (g Gatherer) NamespaceAnnotations(ctx context.Context, ns string) (map[string]string, error) {
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	err := g.Reader.Get(ctx, types.NamespacedName{Name: ns}, obj)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case apierrors.IsForbidden(err):
		return nil, fmt.Errorf("cannot read Namespace %q (needs get on namespaces) to resolve its reload policy and reload window (--namespace-defaults): %w", ns, err)
	case err != nil:
		return nil, fmt.Errorf("reading Namespace %s: %w", ns, err)
	}
	if obj.Annotations == nil {
		return map[string]string{}, nil
	}
	return obj.Annotations, nil
}
