package workload

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The cache keeps Ripple's applied field set whole, and of every other
// entry (Ripple's updates and status writers too) no field set.
func TestTrimManagedFields(t *testing.T) {
	at := &metav1.Time{Time: time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)}
	raw := func(s string) *metav1.FieldsV1 { return &metav1.FieldsV1{Raw: []byte(s)} }
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{ManagedFields: []metav1.ManagedFieldsEntry{
		{Manager: "helm", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "apps/v1", Time: at, FieldsType: "FieldsV1", FieldsV1: raw(`{"f:spec":{}}`)},
		{Manager: FieldManager, Operation: metav1.ManagedFieldsOperationApply, APIVersion: "apps/v1", Time: at, FieldsType: "FieldsV1", FieldsV1: raw(`{"f:metadata":{}}`)},
		{Manager: FieldManager, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "apps/v1", Time: at, FieldsType: "FieldsV1", FieldsV1: raw(`{"f:spec":{}}`)},
		{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "apps/v1", Time: at, FieldsType: "FieldsV1", FieldsV1: raw(`{"f:status":{}}`), Subresource: "status"},
	}}}
	if _, err := TrimManagedFields(d); err != nil {
		t.Fatal(err)
	}
	want := []metav1.ManagedFieldsEntry{
		{Manager: "helm", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "apps/v1", Time: at},
		{Manager: FieldManager, Operation: metav1.ManagedFieldsOperationApply, APIVersion: "apps/v1", Time: at, FieldsType: "FieldsV1", FieldsV1: raw(`{"f:metadata":{}}`)},
		{Manager: FieldManager, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "apps/v1", Time: at},
		{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "apps/v1", Time: at, Subresource: "status"},
	}
	if diff := cmp.Diff(want, d.ManagedFields); diff != "" {
		t.Errorf("kept managedFields (-want +got):\n%s", diff)
	}
}
