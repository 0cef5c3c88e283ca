package workload

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// LastWriter is the manager that wrote obj last, other than Ripple and
// the status writers: the one that undid Ripple's write, as a revert
// notice names it. It reads the managers' names and times the cache keeps
// (TrimManagedFields).
func LastWriter(obj client.Object) string {
	var last *metav1.ManagedFieldsEntry
	for i, e := range obj.GetManagedFields() {
		if e.Manager == FieldManager || e.Subresource != "" || e.Time == nil {
			continue
		}
		if last == nil || !e.Time.Before(last.Time) {
			last = &obj.GetManagedFields()[i]
		}
	}
	if last == nil {
		return "another manager"
	}
	return fmt.Sprintf("%q (%s)", last.Manager, strings.ToLower(string(last.Operation)))
}
