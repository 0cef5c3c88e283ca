package pin

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/internal/refs"
)

// revision is one revision of a workload, as its controller keeps it (a
// ReplicaSet, a ControllerRevision), the record of copies its template
// carries, and its number.
type revision struct {
	ref    metav1.OwnerReference
	record string
	number int64
	obj    client.Object
}

// Adopt hands the copies that owner's revisions name to those revisions:
// each copy owner still owns is owned instead by every revision whose
// template names it, so that the revision history limit that prunes a
// revision prunes its copies (the garbage collector deletes a copy with
// its last owner), and deleting the workload, which deletes its
// revisions, deletes them too. key is the record's annotation. Copies
// are read and written as metadata only: no Secret data is read. Kinds
// whose revisions Ripple does not read (declared kinds) keep their copies
// until they are deleted.
func (c Copier) Adopt(ctx context.Context, owner client.Object, key string) error {
	revs, err := revisions(ctx, c.API, owner, key)
	if err != nil || len(revs) == 0 {
		return err
	}
	byCopy := map[copyKey][]metav1.OwnerReference{}
	for _, r := range revs {
		pins, err := Parse(r.record)
		if err != nil {
			continue // not Ripple's record: the policy skips it too
		}
		for _, p := range pins {
			k := copyKey{kind: p.Ref.Kind, name: p.Name()}
			byCopy[k] = append(byCopy[k], r.ref)
		}
	}
	for k, owners := range byCopy {
		if err := c.handOver(ctx, owner, k, owners); err != nil {
			return err
		}
	}
	return nil
}

// copyKey names a copy.
type copyKey struct {
	kind refs.Kind
	name string
}

// handOver replaces owner among the owners of the copy k by revisions,
// if owner is one of them and the copy is Ripple's. The workloads that
// share a copy complete their rollouts at about the same time: their
// hand-overs take turns (Verified.lock), and one that another writer
// got ahead of reads the copy again.
func (c Copier) handOver(ctx context.Context, owner client.Object, k copyKey, revisions []metav1.OwnerReference) error {
	key := types.NamespacedName{Namespace: owner.GetNamespace(), Name: k.name}
	defer c.Verified.lock(key)()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		m := &metav1.PartialObjectMetadata{}
		m.SetGroupVersionKind(objectKind(k.kind))
		if err := c.API.Get(ctx, key, m); err != nil {
			return client.IgnoreNotFound(err)
		}
		owners := m.GetOwnerReferences()
		if m.GetLabels()[CopyLabel] != "true" || !slices.ContainsFunc(owners, func(o metav1.OwnerReference) bool { return o.UID == owner.GetUID() }) {
			return nil // handed over already, or not Ripple's copy
		}
		base := m.DeepCopy()
		owners = slices.DeleteFunc(slices.Clone(owners), func(o metav1.OwnerReference) bool { return o.UID == owner.GetUID() })
		for _, r := range revisions {
			if !slices.ContainsFunc(owners, func(o metav1.OwnerReference) bool { return o.UID == r.UID }) {
				owners = append(owners, r)
			}
		}
		m.SetOwnerReferences(owners)
		// Locked on the resourceVersion read, as an owner added meanwhile
		// must not be dropped.
		return c.Client.Patch(ctx, m, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
	})
	if err != nil {
		return fmt.Errorf("handing %s %q to its revisions: %w", k.kind, k.name, err)
	}
	c.Verified.forget(key, owner.GetUID())
	return nil
}

// revisions are owner's revisions that carry a record: the ReplicaSets of
// a Deployment or an Argo Rollout, the ControllerRevisions of a
// StatefulSet or DaemonSet, listed around the cache (Ripple caches
// neither) by the workload's selector and kept when owner controls them.
func revisions(ctx context.Context, api client.Reader, owner client.Object, key string) ([]revision, error) {
	sel, numbered, err := selectorOf(owner)
	if err != nil || sel == nil {
		return nil, err
	}
	selector, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil || selector.Empty() {
		return nil, err // an empty selector would list every revision of the namespace
	}
	opts := []client.ListOption{client.InNamespace(owner.GetNamespace()), client.MatchingLabelsSelector{Selector: selector}}
	var out []revision
	if numbered != "" {
		var l appsv1.ReplicaSetList
		if err := api.List(ctx, &l, opts...); err != nil {
			return nil, err
		}
		for i := range l.Items {
			rs := &l.Items[i]
			if rec := rs.Spec.Template.Annotations[key]; rec != "" && metav1.IsControlledBy(rs, owner) {
				n, _ := strconv.ParseInt(rs.Annotations[numbered], 10, 64)
				out = append(out, revision{ref: revisionRef("ReplicaSet", rs), record: rec, number: n, obj: rs})
			}
		}
		return out, nil
	}
	var l appsv1.ControllerRevisionList
	if err := api.List(ctx, &l, opts...); err != nil {
		return nil, err
	}
	for i := range l.Items {
		cr := &l.Items[i]
		if rec := revisionRecord(cr, key); rec != "" && metav1.IsControlledBy(cr, owner) {
			out = append(out, revision{ref: revisionRef("ControllerRevision", cr), record: rec, number: cr.Revision, obj: cr})
		}
	}
	return out, nil
}

// selectorOf is the selector of owner's pods, and for a workload whose
// revisions are ReplicaSets the annotation that numbers them (empty for
// ControllerRevisions); nil for a kind whose revisions Ripple does not
// read.
func selectorOf(owner client.Object) (sel *metav1.LabelSelector, numbered string, err error) {
	switch o := owner.(type) {
	case *appsv1.Deployment:
		return o.Spec.Selector, deploymentRevision, nil
	case *appsv1.StatefulSet:
		return o.Spec.Selector, "", nil
	case *appsv1.DaemonSet:
		return o.Spec.Selector, "", nil
	case *unstructured.Unstructured:
		if o.GroupVersionKind().GroupKind() != rolloutKind {
			return nil, "", nil
		}
		m, ok, err := unstructured.NestedMap(o.Object, "spec", "selector")
		if err != nil || !ok {
			return nil, "", err
		}
		sel = &metav1.LabelSelector{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, sel); err != nil {
			return nil, "", fmt.Errorf("the selector of Rollout %s: %w", o.GetName(), err)
		}
		return sel, rolloutRevision, nil
	}
	return nil, "", nil
}

// rolloutKind is Argo Rollouts' workload, whose revisions are ReplicaSets
// numbered by rolloutRevision and labelled by rolloutHash.
var rolloutKind = schema.GroupKind{Group: "argoproj.io", Kind: "Rollout"}

const (
	rolloutRevision = "rollout.argoproj.io/revision"
	rolloutHash     = "rollouts-pod-template-hash"
)

// deploymentRevision numbers a Deployment's ReplicaSets (the Deployment
// controller's annotation, which kubectl rollout history reads).
const deploymentRevision = "deployment.kubernetes.io/revision"

func revisionRef(kind string, o metav1.Object) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: appsv1.SchemeGroupVersion.String(), Kind: kind, Name: o.GetName(), UID: o.GetUID()}
}

// revisionRecord is the record of a StatefulSet's or DaemonSet's
// ControllerRevision: its data is the patch that restores the template.
func revisionRecord(cr *appsv1.ControllerRevision, key string) string {
	var d struct {
		Spec struct {
			Template struct {
				Metadata struct {
					Annotations map[string]string `json:"annotations"`
				} `json:"metadata"`
			} `json:"template"`
		} `json:"spec"`
	}
	if json.Unmarshal(cr.Data.Raw, &d) != nil {
		return ""
	}
	return d.Spec.Template.Metadata.Annotations[key]
}

// objectKind is the GroupVersionKind of a config kind's objects.
func objectKind(k refs.Kind) schema.GroupVersionKind {
	if k == refs.Secret {
		return corev1.SchemeGroupVersion.WithKind("Secret")
	}
	return corev1.SchemeGroupVersion.WithKind("ConfigMap")
}
