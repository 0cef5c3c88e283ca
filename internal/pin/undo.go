package pin

import (
	"context"
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/internal/refs"
)

// Rollback is what undoing a config's latest change does to one pinned
// workload (`ripple undo`): it puts back the newest revision whose
// template pins other data of the config, as `kubectl rollout undo
// --to-revision` would.
type Rollback struct {
	// From is the config's pin on the template now, To on the revision
	// put back, numbered Revision.
	From, To Pin
	Revision int64
	patch    client.Patch
}

// Apply writes the rollback on w with c, locked on the resourceVersion
// it was planned from: a workload written since is refused, not undone
// blindly.
func (rb Rollback) Apply(ctx context.Context, c client.Writer, w client.Object, opts ...client.PatchOption) error {
	return c.Patch(ctx, w, rb.patch, opts...)
}

// Changed is the config whose latest change an undo undoes, and which of
// its copies hold its data now: each copy is read once, however many
// workloads pin it.
type Changed struct {
	Config client.Object
	Ref    refs.Ref
	// held is, by copy name, whether the copy holds Config's data.
	held map[string]bool
}

// NewChanged is the config cfg, which ref names, as an undo reads it.
func NewChanged(cfg client.Object, ref refs.Ref) *Changed {
	return &Changed{Config: cfg, Ref: ref, held: map[string]bool{}}
}

// PlanRollback is the rollback of w, whose pod template is tpl, that
// undoes the change of c: when tpl pins its config (under the record key)
// at its current data, the newest revision of w that pins other data of
// it. why says why there is none: w pins older data (it never ran the
// change), or no revision it keeps pins other data. Reads go through r,
// with the user's rights: w's revisions, and the copy tpl names (its
// data, to compare with the config's).
func PlanRollback(ctx context.Context, r client.Reader, w client.Object, tpl *corev1.PodTemplateSpec, key string, c *Changed) (rb Rollback, why string, err error) {
	ref := c.Ref
	from, ok := pinOf(tpl.Annotations[key], ref)
	if !ok {
		return rb, "its template does not pin " + ref.String(), nil
	}
	current, err := c.holds(ctx, r, from)
	if err != nil || !current {
		return rb, "it runs older data of " + ref.String() + " (" + from.Name() + "), not the latest change", err
	}
	revs, err := revisions(ctx, r, w, key)
	if err != nil {
		return rb, "", err
	}
	var back *revision
	for i := range revs {
		to, ok := pinOf(revs[i].record, ref)
		if ok && to.Digest != from.Digest && (back == nil || revs[i].number > back.number) {
			back, rb.To = &revs[i], to
		}
	}
	if back == nil {
		return rb, "no revision it keeps pins other data of " + ref.String(), nil
	}
	rb.From, rb.Revision = from, back.number
	rb.patch, err = restore(back.obj, w.GetResourceVersion())
	return rb, "", err
}

// pinOf is the pin of ref in record.
func pinOf(record string, ref refs.Ref) (Pin, bool) {
	pins, err := Parse(record)
	if err != nil {
		return Pin{}, false
	}
	for _, p := range pins {
		if p.Ref == ref {
			return p, true
		}
	}
	return Pin{}, false
}

// holds reports whether the copy of p holds the config's data now: the
// workload runs the config's latest change.
func (c *Changed) holds(ctx context.Context, r client.Reader, p Pin) (bool, error) {
	if held, ok := c.held[p.Name()]; ok {
		return held, nil
	}
	got, _ := c.Config.DeepCopyObject().(client.Object)
	err := r.Get(ctx, types.NamespacedName{Namespace: c.Config.GetNamespace(), Name: p.Name()}, got)
	if err != nil && !apierrors.IsNotFound(err) {
		return false, err
	}
	c.held[p.Name()] = err == nil && sameData(c.Config, got)
	return c.held[p.Name()], nil
}

// restore is the patch that puts rev's template back on its workload,
// whose resourceVersion is rv: a ReplicaSet's template (without the hash
// label its Deployment or Rollout controller adds), as kubectl's and
// Argo Rollouts' undo write it, or a ControllerRevision's own patch.
func restore(rev client.Object, rv string) (client.Patch, error) {
	switch o := rev.(type) {
	case *appsv1.ReplicaSet:
		tpl := o.Spec.Template.DeepCopy()
		hash := appsv1.DefaultDeploymentUniqueLabelKey
		if c := metav1.GetControllerOf(o); c != nil && c.Kind == rolloutKind.Kind {
			hash = rolloutHash
		}
		delete(tpl.Labels, hash)
		b, err := json.Marshal([]map[string]any{
			{"op": "test", "path": "/metadata/resourceVersion", "value": rv},
			{"op": "replace", "path": "/spec/template", "value": tpl},
		})
		return client.RawPatch(types.JSONPatchType, b), err
	case *appsv1.ControllerRevision:
		var p map[string]any
		if err := json.Unmarshal(o.Data.Raw, &p); err != nil {
			return nil, fmt.Errorf("ControllerRevision %s: %w", o.Name, err)
		}
		p["metadata"] = map[string]any{"resourceVersion": rv}
		b, err := json.Marshal(p)
		return client.RawPatch(types.StrategicMergePatchType, b), err
	}
	return nil, fmt.Errorf("%T is no revision", rev)
}
