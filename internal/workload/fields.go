package workload

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// TrimManagedFields is the cache transform of managedFields: Ripple's own
// applied fields are kept whole, because its next apply starts from them
// (apply.go), and of every other manager only its name, operation and time,
// which name the manager of a revert. Memory then does not follow the size
// of the objects' field sets.
func TrimManagedFields(obj any) (any, error) {
	o, ok := obj.(metav1.Object)
	if !ok {
		return cache.TransformStripManagedFields()(obj)
	}
	mf := o.GetManagedFields()
	if len(mf) == 0 {
		return obj, nil
	}
	kept := make([]metav1.ManagedFieldsEntry, 0, len(mf))
	for _, e := range mf {
		if e.Manager != FieldManager || e.Operation != metav1.ManagedFieldsOperationApply || e.Subresource != "" {
			e.FieldsV1, e.FieldsType = nil, ""
		}
		kept = append(kept, e)
	}
	o.SetManagedFields(kept)
	return obj, nil
}
