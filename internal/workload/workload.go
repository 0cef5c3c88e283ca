// Package workload adapts each workload kind Ripple can roll to one small
// interface: where its pod template is, and how a reload is written.
package workload

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// FieldManager is the field manager of every write Ripple makes.
const FieldManager = "ripple"

// Update is what a reconcile wants written on a workload.
type Update struct {
	// Template is the pod template with the reload applied; nil means no
	// reload, only metadata.
	Template *corev1.PodTemplateSpec
	// Annotations are workload metadata annotations to set; a nil value
	// removes the key.
	Annotations map[string]*string
	// Paused, when set, sets a Deployment's spec.paused.
	Paused *bool
	// Restart, when set, is a reload that restarts the pods (the evict or
	// delete method) instead of writing Template, which is then nil: the
	// write is the metadata only (the record and the restart time, in
	// Annotations), and the controller restarts the pods (Restarter).
	Restart *Restart
}

// Reloads reports whether u rolls the workload: by its template, or by
// restarting its pods.
func (u Update) Reloads() bool { return u.Template != nil || u.Restart != nil }

// Result is what a write did, when not simply what was asked.
type Result struct {
	// Skipped says why the reload was not carried out although the
	// metadata was written, e.g. "the CronJob is suspended".
	Skipped string
}

// Ref names one workload of a kind. It is the one workload reference of
// Ripple's: the webhook body, the explain report and the rollout tracker's
// keys, so its JSON field names are part of the webhook and explain
// schemas.
type Ref struct {
	Kind      string `json:"kind"` // e.g. "Deployment"
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// RefTo is the Ref of obj, a workload of kind.
func RefTo(kind Kind, obj client.Object) Ref {
	return Ref{Kind: kind.Name(), Namespace: obj.GetNamespace(), Name: obj.GetName()}
}

// RefFor is the Ref of the workload of kind named n.
func RefFor(kind string, n types.NamespacedName) Ref {
	return Ref{Kind: kind, Namespace: n.Namespace, Name: n.Name}
}

// Key is the workload's namespace and name.
func (r Ref) Key() types.NamespacedName {
	return types.NamespacedName{Namespace: r.Namespace, Name: r.Name}
}

// Kind is one workload kind.
type Kind interface {
	// Name is the Kubernetes kind, e.g. "Deployment".
	Name() string
	// New returns an empty object of the kind.
	New() client.Object
	// NewList returns an empty list of the kind.
	NewList() client.ObjectList
	// PodTemplate returns the pod template of obj, or nil when obj has none
	// of its own: it is left to another controller (a Job a CronJob owns)
	// or takes its template from another object (TemplateSource). It may
	// point into obj: callers copy before changing it. It reads nothing but
	// obj, and fails when obj is not of this kind or its template does not
	// convert.
	PodTemplate(obj client.Object) (*corev1.PodTemplateSpec, error)
	// KeepsTemplate reports whether a reload leaves obj's own pod template
	// as it is (a CronJob starts a Job; an Argo Rollout is restarted). What
	// was applied is then known from the workload's applied record only.
	KeepsTemplate(obj client.Object) bool
	// Write applies u to obj in the cluster. A stale obj fails with a
	// conflict rather than applying twice.
	Write(ctx context.Context, c client.Client, obj client.Object, u Update) (Result, error)
}

// Finisher is a kind whose reload takes more than one write. Finish
// completes a reload that an error or a restart interrupted; obj is nil
// when the workload does not exist. It reports whether it did anything.
type Finisher interface {
	Finish(ctx context.Context, c client.Client, key types.NamespacedName, obj client.Object) (bool, error)
}

// Checker is a kind with annotations of its own to validate; Check returns
// one message per invalid value, for a Warning event.
type Checker interface {
	Check(obj client.Object) []string
}

// TemplateSource is a kind whose objects may take their pod template from
// a Deployment of the same namespace (an Argo Rollout's workloadRef).
type TemplateSource interface {
	TemplateRef(obj client.Object) (deployment string, ok bool)
}

// Template returns the pod template a reload of obj is written on: its
// own, or for a TemplateSource the referenced Deployment's, read through r
// (the cache). It is nil when there is none (yet): a Job left to its
// CronJob, or a workloadRef Deployment that does not exist.
func Template(ctx context.Context, r client.Reader, kind Kind, obj client.Object) (*corev1.PodTemplateSpec, error) {
	if ts, ok := kind.(TemplateSource); ok {
		if name, ok := ts.TemplateRef(obj); ok {
			d := &appsv1.Deployment{}
			err := r.Get(ctx, types.NamespacedName{Namespace: obj.GetNamespace(), Name: name}, d)
			if apierrors.IsNotFound(err) {
				return nil, nil // its arrival brings the workload back
			}
			if err != nil {
				return nil, fmt.Errorf("reading the workloadRef Deployment %s: %w", name, err)
			}
			return &d.Spec.Template, nil
		}
	}
	return kind.PodTemplate(obj)
}

// TemplateRoller is a kind whose controller starts new pods whenever
// anyone changes its pod template (not a CronJob, whose template starts
// no pods, nor a Job, whose template is fixed). A change of the template
// made after a config's change then applies the config (plan's
// TemplateApplied).
type TemplateRoller interface {
	RollsWithTemplate() bool
}

// Pauser is a kind that can be paused while a reload is written, so that
// several reloads become one rollout (Deployment pause-period).
type Pauser interface {
	Paused(obj client.Object) bool
}

// patch writes u as one strategic-merge patch. The patch carries obj's
// resourceVersion, so a decision made on a stale cached copy fails with a
// conflict and is retried on fresh data instead of being applied twice.
// set writes the template and spec changes of u on the copy.
func patch(ctx context.Context, c client.Client, obj client.Object, u Update, set func(client.Object) bool) error {
	modified, ok := obj.DeepCopyObject().(client.Object)
	if !ok {
		return fmt.Errorf("copying %T", obj)
	}
	if (u.Template != nil || u.Paused != nil) && !set(modified) {
		return fmt.Errorf("unexpected object type %T", obj)
	}
	setAnnotations(modified, u.Annotations)
	return c.Patch(ctx, modified, client.StrategicMergeFrom(obj, client.MergeFromWithOptimisticLock{}), client.FieldOwner(FieldManager))
}

// setAnnotations sets (or, for nil values, removes) annotations on obj.
func setAnnotations(obj client.Object, set map[string]*string) {
	if len(set) == 0 {
		return
	}
	ann := obj.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	for k, v := range set {
		if v == nil {
			delete(ann, k)
		} else {
			ann[k] = *v
		}
	}
	obj.SetAnnotations(ann)
}
