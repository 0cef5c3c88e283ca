// Package workload adapts each workload kind Ripple can roll to one small
// interface: where its pod template is, and how a reload is written.
package workload

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// FieldManager is the field manager of every write Ripple makes.
const FieldManager = "ripple"

// Update is what a reconcile wants written on a workload.
type Update struct {
	// Template is the new pod template; nil leaves it alone.
	Template *corev1.PodTemplateSpec
	// Annotations are workload metadata annotations to set; a nil value
	// removes the key.
	Annotations map[string]*string
}

// Kind is one workload kind.
type Kind interface {
	// Name is the Kubernetes kind, e.g. "Deployment".
	Name() string
	// New returns an empty object of the kind.
	New() client.Object
	// NewList returns an empty list of the kind.
	NewList() client.ObjectList
	// PodTemplate returns the pod template of obj, or nil when obj is not of
	// this kind. It may point into obj: callers copy before changing it.
	PodTemplate(obj client.Object) *corev1.PodTemplateSpec
	// Write applies u to obj in the cluster.
	Write(ctx context.Context, c client.Client, obj client.Object, u Update) error
}

// patch writes u as one strategic-merge patch. The patch carries obj's
// resourceVersion, so a decision made on a stale cached copy fails with a
// conflict and is retried on fresh data instead of being applied twice.
func patch(ctx context.Context, c client.Client, obj client.Object, u Update, setTemplate func(client.Object, *corev1.PodTemplateSpec) bool) error {
	modified, ok := obj.DeepCopyObject().(client.Object)
	if !ok {
		return fmt.Errorf("copying %T", obj)
	}
	if u.Template != nil && !setTemplate(modified, u.Template) {
		return fmt.Errorf("unexpected object type %T", obj)
	}
	if len(u.Annotations) > 0 {
		ann := modified.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		for k, v := range u.Annotations {
			if v == nil {
				delete(ann, k)
			} else {
				ann[k] = *v
			}
		}
		modified.SetAnnotations(ann)
	}
	return c.Patch(ctx, modified, client.StrategicMergeFrom(obj, client.MergeFromWithOptimisticLock{}), client.FieldOwner(FieldManager))
}
