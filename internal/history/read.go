package history

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/internal/digest"
	"github.com/ripple-dev/ripple/internal/gather"
	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/workload"
)

// Reader reads histories from the cluster. It only reads.
type Reader struct {
	Reader   client.Reader
	Settings plan.Settings
	// Digester digests the configs as the controller does; with
	// --digest=hmac-sha256 the history holds no digest of a Secret.
	Digester digest.Digester
	Now      func() time.Time
}

// Read reads the history of obj, of kind: its revisions, and the configs'
// digests now, gathered as `ripple explain` and the controller gather them.
func (r Reader) Read(ctx context.Context, kind workload.Kind, obj client.Object) (History, error) {
	revs, err := r.revisions(ctx, obj)
	if err != nil {
		return History{}, err
	}
	in := Input{
		Workload:  Workload{Kind: kind.Name(), Namespace: obj.GetNamespace(), Name: obj.GetName()},
		Revisions: revs, Keys: r.Settings.Keys, Strategy: r.Settings.Strategy, Now: map[refs.Ref]Now{},
	}
	tpl, err := workload.Template(ctx, r.Reader, kind, obj)
	if err != nil {
		return History{}, err
	}
	var unread error
	if tpl != nil {
		if unread, err = r.configsNow(ctx, kind, obj, tpl, &in); err != nil {
			return History{}, err
		}
	}
	h := Build(in)
	if unread != nil && h.Current != nil {
		h.Current.Unread = unread.Error()
	}
	if r.Digester.Mode == digest.HMACSHA256 {
		h.withoutSecretDigests()
	}
	return h, nil
}

// configsNow adds to in the configs that may reload obj, with their data
// now, gathered as the controller gathers them. A config the user may not
// read (a Secret, with the built-in view role) leaves the data now out:
// the revisions are still told, with the configs the template references,
// and unread says why the current one is not compared.
func (r Reader) configsNow(ctx context.Context, kind workload.Kind, obj client.Object, tpl *corev1.PodTemplateSpec, in *Input) (unread, _ error) {
	g := gather.Gatherer{Reader: r.Reader, Settings: r.Settings, Digester: r.Digester}
	pin, err := g.Input(ctx, kind, obj, tpl)
	switch {
	case apierrors.IsForbidden(err):
		in.Configs = refs.All(&tpl.Spec)
		return err, nil
	case err != nil:
		return nil, fmt.Errorf("reading the configs of %s %s/%s: %w", kind.Name(), obj.GetNamespace(), obj.GetName(), err)
	}
	pin.Now = r.Now()
	p := plan.For(pin)
	for i, src := range pin.Sources {
		sum := src.Digest
		if i < len(p.Sources) && p.Sources[i].Digest != "" {
			sum = p.Sources[i].Digest // what a reload would write: per key with reload-on-keys
		}
		in.Configs = append(in.Configs, src.Ref)
		in.Now[src.Ref] = Now{Found: src.Found, Digest: sum}
	}
	return nil, nil
}

// revisions reads the revisions the cluster keeps of obj: the ReplicaSets
// or ControllerRevisions its selector matches that it controls.
func (r Reader) revisions(ctx context.Context, obj client.Object) ([]Revision, error) {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		rss, err := r.replicaSets(ctx, obj, o.Spec.Selector)
		return FromReplicaSets(rss, false), err
	case *appsv1.StatefulSet:
		return r.controllerRevisions(ctx, obj, o.Spec.Selector)
	case *appsv1.DaemonSet:
		return r.controllerRevisions(ctx, obj, o.Spec.Selector)
	case *unstructured.Unstructured:
		if o.GetKind() == workload.RolloutGVK.Kind {
			sel, err := rolloutSelector(o)
			if err != nil {
				return nil, err
			}
			rss, err := r.replicaSets(ctx, obj, sel)
			return FromReplicaSets(rss, true), err
		}
	}
	return nil, fmt.Errorf("%s %s/%s keeps no revisions: history covers Deployments, StatefulSets, DaemonSets and Argo Rollouts",
		obj.GetObjectKind().GroupVersionKind().Kind, obj.GetNamespace(), obj.GetName())
}

func rolloutSelector(o *unstructured.Unstructured) (*metav1.LabelSelector, error) {
	m, ok, err := unstructured.NestedMap(o.Object, "spec", "selector")
	if err != nil {
		return nil, fmt.Errorf("reading spec.selector of Rollout %s/%s: %w", o.GetNamespace(), o.GetName(), err)
	}
	if !ok {
		return nil, nil
	}
	sel := &metav1.LabelSelector{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, sel); err != nil {
		return nil, fmt.Errorf("reading spec.selector of Rollout %s/%s: %w", o.GetNamespace(), o.GetName(), err)
	}
	return sel, nil
}

func (r Reader) replicaSets(ctx context.Context, owner client.Object, sel *metav1.LabelSelector) ([]appsv1.ReplicaSet, error) {
	opts, err := listOptions(owner, sel)
	if err != nil {
		return nil, err
	}
	list := &appsv1.ReplicaSetList{}
	if err := r.Reader.List(ctx, list, opts...); err != nil {
		return nil, fmt.Errorf("listing the ReplicaSets of %s/%s: %w", owner.GetNamespace(), owner.GetName(), err)
	}
	var out []appsv1.ReplicaSet
	for _, rs := range list.Items {
		if controlledBy(&rs, owner.GetUID()) {
			out = append(out, rs)
		}
	}
	return out, nil
}

func (r Reader) controllerRevisions(ctx context.Context, owner client.Object, sel *metav1.LabelSelector) ([]Revision, error) {
	opts, err := listOptions(owner, sel)
	if err != nil {
		return nil, err
	}
	list := &appsv1.ControllerRevisionList{}
	if err := r.Reader.List(ctx, list, opts...); err != nil {
		return nil, fmt.Errorf("listing the ControllerRevisions of %s/%s: %w", owner.GetNamespace(), owner.GetName(), err)
	}
	var crs []appsv1.ControllerRevision
	for _, cr := range list.Items {
		if controlledBy(&cr, owner.GetUID()) {
			crs = append(crs, cr)
		}
	}
	return FromControllerRevisions(crs)
}

func listOptions(owner client.Object, sel *metav1.LabelSelector) ([]client.ListOption, error) {
	opts := []client.ListOption{client.InNamespace(owner.GetNamespace())}
	if sel == nil {
		return opts, nil
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return nil, fmt.Errorf("the selector of %s/%s: %w", owner.GetNamespace(), owner.GetName(), err)
	}
	if s.Empty() {
		return opts, nil
	}
	return append(opts, client.MatchingLabelsSelector{Selector: s}), nil
}

// controlledBy reports whether obj's controller is the object with uid.
func controlledBy(obj metav1.Object, uid types.UID) bool {
	ref := metav1.GetControllerOf(obj)
	return ref != nil && ref.UID == uid
}
