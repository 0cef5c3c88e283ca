package pin

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/internal/digest"
	"github.com/ripple-dev/ripple/internal/refs"
)

// CopyLabel marks a copy as Ripple's: an object of a copy's name
// without it is not taken for one.
const CopyLabel = "ripple.dev/pinned-copy"

// CopyOf is the annotation on a copy naming the config it copies.
const CopyOf = "ripple.dev/copy-of"

// Copier makes the copies a reload's template names, before the template
// is written. Its reads go around the cache (API), which keeps no data;
// the data it copies is held only for the copy's create.
type Copier struct {
	Client client.Client
	API    client.Reader
	// Digester digests a config as the cache transform did, so that a
	// copy is made of the data the plan saw and nothing else.
	Digester func() digest.Digester
	// Verified remembers the copies checked; nil: every Ensure reads the
	// config and the copy again.
	Verified *Verified
}

// Ensure makes sure each copy of pins exists in the namespace of owner,
// the workload that reads them, and lists owner among its owners: the
// copy goes when the last workload pinning it does. A config whose data
// is no longer the pinned data fails: the plan is made again from the
// cache, which will show the change.
func (c Copier) Ensure(ctx context.Context, owner client.Object, pins []Pin) error {
	gvk, err := c.Client.GroupVersionKindFor(owner)
	if err != nil {
		return err
	}
	ref := metav1.OwnerReference{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Name: owner.GetName(), UID: owner.GetUID()}
	for _, p := range pins {
		if err := c.ensure(ctx, owner.GetNamespace(), p, ref); err != nil {
			return err
		}
	}
	return nil
}

// ensure makes sure the copy of p exists in ns, owned by owner. Workers
// pinning the same copy at once make it one at a time (Verified.lock):
// the first makes it, the others find it verified and are made owners
// together, so that a change of a config many workloads pin costs one
// read of it, one create, and a few patches.
func (c Copier) ensure(ctx context.Context, ns string, p Pin, owner metav1.OwnerReference) error {
	// Three rounds at most: made or owned by another worker meanwhile,
	// then gone or replaced since it was verified.
	for range 3 {
		done, err := c.ownVerified(ctx, ns, p, owner)
		if err != nil || done {
			return err
		}
		if done, err = c.makeCopy(ctx, ns, p, owner); err != nil || done {
			return err
		}
	}
	return fmt.Errorf("pinning %s: its copy %q keeps changing; planning again", p.Ref, p.Name())
}

// makeCopy makes the copy of p, owned by owner, unless another worker
// verified it meanwhile (done is then false: owner is not one of its
// owners yet).
func (c Copier) makeCopy(ctx context.Context, ns string, p Pin, owner metav1.OwnerReference) (done bool, err error) {
	key := types.NamespacedName{Namespace: ns, Name: p.Name()}
	defer c.Verified.lock(key)()
	if _, verified, _ := c.Verified.owns(key, owner.UID); verified {
		return false, nil
	}
	want, err := c.copyOf(ctx, ns, p)
	if err != nil {
		return false, err
	}
	want.SetOwnerReferences([]metav1.OwnerReference{owner})
	return true, c.create(ctx, want, p, owner)
}

// ownVerified makes owner an owner of the copy of p when that copy was
// verified before, by a patch that holds only while the copy is the
// object verified (its UID), with the workloads that ask at the same
// time: done is false when it was not verified, or is gone or replaced
// since, for ensure to check it afresh.
func (c Copier) ownVerified(ctx context.Context, ns string, p Pin, owner metav1.OwnerReference) (done bool, err error) {
	key := types.NamespacedName{Namespace: ns, Name: p.Name()}
	uid, verified, owns := c.Verified.owns(key, owner.UID)
	if !verified || owns {
		return owns, nil
	}
	err = c.Verified.addOwner(key, owner, func(refs []metav1.OwnerReference) error {
		if err := c.appendOwners(ctx, p, ns, uid, refs); err != nil {
			return err
		}
		uids := make([]types.UID, 0, len(refs))
		for _, r := range refs {
			uids = append(uids, r.UID)
		}
		c.Verified.remember(key, uid, uids...)
		return nil
	})
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsNotFound(err) || apierrors.IsInvalid(err):
		c.Verified.forget(key)
		return false, nil
	}
	return false, fmt.Errorf("pinning %s: %w", p.Ref, err)
}

// copyOf reads the config of p and builds its copy.
func (c Copier) copyOf(ctx context.Context, ns string, p Pin) (client.Object, error) {
	key := types.NamespacedName{Namespace: ns, Name: p.Ref.Name}
	meta := metav1.ObjectMeta{
		Name: p.Name(), Namespace: ns,
		Labels:      map[string]string{CopyLabel: "true"},
		Annotations: map[string]string{CopyOf: p.Ref.Name},
	}
	switch p.Ref.Kind {
	case refs.ConfigMap:
		var cm corev1.ConfigMap
		if err := c.API.Get(ctx, key, &cm); err != nil {
			return nil, fmt.Errorf("pinning %s: %w", p.Ref, err)
		}
		if err := c.check(p, c.Digester().ConfigMap(&cm)); err != nil {
			return nil, err
		}
		return &corev1.ConfigMap{ObjectMeta: meta, Immutable: ptr.To(true), Data: cm.Data, BinaryData: cm.BinaryData}, nil
	case refs.Secret:
		var s corev1.Secret
		if err := c.API.Get(ctx, key, &s); err != nil {
			return nil, fmt.Errorf("pinning %s: %w", p.Ref, err)
		}
		if s.Type == corev1.SecretTypeServiceAccountToken {
			return nil, fmt.Errorf("pinning %s: a ServiceAccount token Secret is never copied", p.Ref)
		}
		if err := c.check(p, c.Digester().Secret(&s)); err != nil {
			return nil, err
		}
		return &corev1.Secret{ObjectMeta: meta, Immutable: ptr.To(true), Type: s.Type, Data: s.Data}, nil
	}
	return nil, fmt.Errorf("pinning %s: only ConfigMaps and Secrets are pinned", p.Ref)
}

// check reports whether the data read is the data p was pinned at, in
// any form the plan may have digested it in.
func (c Copier) check(p Pin, d digest.Digests) error {
	for _, f := range append([]digest.Form{d.Form}, d.Others...) {
		if len(f.Digest) >= DigestLen && f.Digest[:DigestLen] == p.Digest {
			return nil
		}
	}
	return fmt.Errorf("pinning %s: its data changed since the plan saw %s; planning again", p.Ref, p.Digest)
}

// create creates want, or, when a copy of that name exists, checks it is
// Ripple's copy of the same data and adds owner to its owners.
func (c Copier) create(ctx context.Context, want client.Object, p Pin, owner metav1.OwnerReference) error {
	key := client.ObjectKeyFromObject(want)
	err := c.Client.Create(ctx, want)
	if err == nil {
		c.Verified.remember(key, want.GetUID(), owner.UID)
	}
	if err == nil || !apierrors.IsAlreadyExists(err) {
		return err
	}
	got, _ := want.DeepCopyObject().(client.Object)
	if err := c.API.Get(ctx, client.ObjectKeyFromObject(want), got); err != nil {
		return fmt.Errorf("pinning %s: %w", p.Ref, err)
	}
	if got.GetLabels()[CopyLabel] != "true" || !sameData(want, got) {
		return fmt.Errorf("pinning %s: %s %q exists and is not Ripple's copy of this data", p.Ref, p.Ref.Kind, p.Name())
	}
	owners := make([]types.UID, 0, len(got.GetOwnerReferences())+1)
	for _, o := range got.GetOwnerReferences() {
		owners = append(owners, o.UID)
	}
	if slices.Contains(owners, owner.UID) {
		c.Verified.remember(key, got.GetUID(), owners...)
		return nil
	}
	if err := c.addOwner(ctx, p, got, owner); err != nil {
		return fmt.Errorf("pinning %s: %w", p.Ref, err)
	}
	c.Verified.remember(key, got.GetUID(), append(owners, owner.UID)...)
	return nil
}

// addOwner adds owner to the owners of got, the copy of p as read.
func (c Copier) addOwner(ctx context.Context, p Pin, got client.Object, owner metav1.OwnerReference) error {
	if len(got.GetOwnerReferences()) > 0 {
		return c.appendOwners(ctx, p, got.GetNamespace(), got.GetUID(), []metav1.OwnerReference{owner})
	}
	// Orphaned (its owner was deleted with --cascade=orphan): there is no
	// list to append to, so it is written whole, locked on the version
	// read.
	return c.patchCopy(ctx, p, got.GetNamespace(), []map[string]any{
		{"op": "test", "path": "/metadata/resourceVersion", "value": got.GetResourceVersion()},
		{"op": "add", "path": "/metadata/ownerReferences", "value": []metav1.OwnerReference{owner}},
	})
}

// appendOwners adds owners to the owners of the copy of p in ns while it
// is the object uid names. Appended, not merged: owners added at once do
// not drop each other. A failed test (another object now), or a copy
// without owners, is Invalid.
func (c Copier) appendOwners(ctx context.Context, p Pin, ns string, uid types.UID, owners []metav1.OwnerReference) error {
	ops := []map[string]any{{"op": "test", "path": "/metadata/uid", "value": uid}}
	for _, o := range owners {
		ops = append(ops, map[string]any{"op": "add", "path": "/metadata/ownerReferences/-", "value": o})
	}
	return c.patchCopy(ctx, p, ns, ops)
}

// patchCopy applies the JSON patch ops to the copy of p in ns, as
// metadata: no Secret data is read back.
func (c Copier) patchCopy(ctx context.Context, p Pin, ns string, ops []map[string]any) error {
	b, err := json.Marshal(ops)
	if err != nil {
		return err
	}
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(objectKind(p.Ref.Kind))
	m.SetNamespace(ns)
	m.SetName(p.Name())
	return c.Client.Patch(ctx, m, client.RawPatch(types.JSONPatchType, b))
}

// sameData reports whether two copies hold the same data.
func sameData(a, b client.Object) bool {
	if a, ok := a.(*corev1.ConfigMap); ok {
		b, ok := b.(*corev1.ConfigMap)
		return ok && maps.Equal(a.Data, b.Data) && maps.EqualFunc(a.BinaryData, b.BinaryData, bytesEqual)
	}
	if a, ok := a.(*corev1.Secret); ok {
		b, ok := b.(*corev1.Secret)
		return ok && a.Type == b.Type && maps.EqualFunc(a.Data, b.Data, bytesEqual)
	}
	return false
}

func bytesEqual(a, b []byte) bool { return string(a) == string(b) }
