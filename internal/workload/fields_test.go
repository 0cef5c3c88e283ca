package workload

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The cache keeps Ripple's applied field set whole, of its updates only
// the annotations, and of every other entry (status writers too) no field
// set.
func TestTrimManagedFields(t *testing.T) {
	at := &metav1.Time{Time: time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)}
	raw := func(s string) *metav1.FieldsV1 { return metav1.NewFieldsV1(s) }
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{ManagedFields: []metav1.ManagedFieldsEntry{
		{Manager: "helm", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "apps/v1", Time: at, FieldsType: "FieldsV1", FieldsV1: raw(`{"f:spec":{}}`)},
		{Manager: FieldManager, Operation: metav1.ManagedFieldsOperationApply, APIVersion: "apps/v1", Time: at, FieldsType: "FieldsV1", FieldsV1: raw(`{"f:metadata":{}}`)},
		{Manager: FieldManager, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "apps/v1", Time: at, FieldsType: "FieldsV1", FieldsV1: raw(`{"f:spec":{}}`)},
		{Manager: FieldManager, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "batch/v1", Time: at, FieldsType: "FieldsV1",
			FieldsV1: raw(`{"f:metadata":{"f:annotations":{".":{},"f:ripple.dev/applied":{}},"f:labels":{"f:app":{}}},"f:spec":{"f:template":{}}}`)},
		{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "apps/v1", Time: at, FieldsType: "FieldsV1", FieldsV1: raw(`{"f:status":{}}`), Subresource: "status"},
	}}}
	if _, err := TrimManagedFields(d); err != nil {
		t.Fatal(err)
	}
	want := []metav1.ManagedFieldsEntry{
		{Manager: "helm", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "apps/v1", Time: at},
		{Manager: FieldManager, Operation: metav1.ManagedFieldsOperationApply, APIVersion: "apps/v1", Time: at, FieldsType: "FieldsV1", FieldsV1: raw(`{"f:metadata":{}}`)},
		{Manager: FieldManager, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "apps/v1", Time: at},
		{Manager: FieldManager, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "batch/v1", Time: at, FieldsType: "FieldsV1",
			FieldsV1: raw(`{"f:metadata":{"f:annotations":{"f:ripple.dev/applied":{}}}}`)},
		{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "apps/v1", Time: at, Subresource: "status"},
	}
	if diff := cmp.Diff(want, d.ManagedFields); diff != "" {
		t.Errorf("kept managedFields (-want +got):\n%s", diff)
	}
}

// Whether Ripple wrote an annotation's current value, by the field sets
// the cache keeps: after `kubectl rollout undo` restored a Deployment's
// annotations, the manager kubectl-rollout owns the record it changed.
func TestForeignAnnotation(t *testing.T) {
	const key = "ripple.dev/applied"
	record := `{"f:metadata":{"f:annotations":{"f:ripple.dev/applied":{}}}}`
	entry := func(manager string, op metav1.ManagedFieldsOperationType, fields string) metav1.ManagedFieldsEntry {
		e := metav1.ManagedFieldsEntry{Manager: manager, Operation: op, APIVersion: "apps/v1", FieldsType: "FieldsV1"}
		if fields != "" {
			e.FieldsV1 = metav1.NewFieldsV1(fields)
		}
		return e
	}
	for _, tc := range []struct {
		name        string
		annotated   bool
		fields      []metav1.ManagedFieldsEntry
		owns, other bool
	}{
		{"Ripple applied it", true, []metav1.ManagedFieldsEntry{
			entry("kubectl-client-side-apply", metav1.ManagedFieldsOperationUpdate, ""),
			entry(FieldManager, metav1.ManagedFieldsOperationApply, record)}, true, false},
		{"Ripple patched it (an update)", true, []metav1.ManagedFieldsEntry{
			entry(FieldManager, metav1.ManagedFieldsOperationApply, `{"f:spec":{"f:paused":{}}}`),
			entry(FieldManager, metav1.ManagedFieldsOperationUpdate, record)}, true, false},
		{"kubectl rollout undo changed it since: Ripple's apply kept its other fields", true, []metav1.ManagedFieldsEntry{
			entry(FieldManager, metav1.ManagedFieldsOperationApply, `{"f:metadata":{"f:annotations":{"f:ripple.dev/applied-alias":{}}}}`),
			entry("kubectl-rollout", metav1.ManagedFieldsOperationUpdate, "")}, false, true},
		{"kubectl rollout undo took every field Ripple had", true, []metav1.ManagedFieldsEntry{
			entry("kubectl-rollout", metav1.ManagedFieldsOperationUpdate, "")}, false, true},
		{"a status writer's entry is not Ripple's", true, []metav1.ManagedFieldsEntry{
			{Manager: FieldManager, Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", FieldsV1: metav1.NewFieldsV1(record)}}, false, true},
		{"no record", false, []metav1.ManagedFieldsEntry{
			entry("kubectl-rollout", metav1.ManagedFieldsOperationUpdate, "")}, false, false},
		{"no managedFields (a manifest file, or reset): tells nothing", true, nil, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{ManagedFields: tc.fields}}
			if tc.annotated {
				d.Annotations = map[string]string{key: `{"ConfigMap/app":"d1"}`}
			}
			if _, err := TrimManagedFields(d); err != nil {
				t.Fatal(err)
			}
			if got := OwnsAnnotation(d, key); got != tc.owns {
				t.Errorf("OwnsAnnotation %v, want %v", got, tc.owns)
			}
			if got := ForeignAnnotation(d, key); got != tc.other {
				t.Errorf("ForeignAnnotation %v, want %v", got, tc.other)
			}
		})
	}
}

// LastForeignWrite is the latest write by another manager than Ripple,
// leaving out Ripple's own and subresources (status, scale).
func TestLastForeignWrite(t *testing.T) {
	at := func(h int) *metav1.Time { return &metav1.Time{Time: time.Date(2026, 11, 27, h, 0, 0, 0, time.UTC)} }
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{ManagedFields: []metav1.ManagedFieldsEntry{
		{Manager: "kubectl-rollout", Operation: metav1.ManagedFieldsOperationUpdate, Time: at(7)},
		{Manager: FieldManager, Operation: metav1.ManagedFieldsOperationApply, Time: at(9)},
		{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", Time: at(10)},
		{Manager: "helm", Operation: metav1.ManagedFieldsOperationUpdate, Time: at(8)},
	}}}
	if got := LastForeignWrite(d); !got.Equal(at(8).Time) {
		t.Errorf("LastForeignWrite = %v, want helm's 08:00", got)
	}
	if got := LastForeignWrite(&appsv1.Deployment{}); !got.IsZero() {
		t.Errorf("without managedFields: %v, want zero", got)
	}
}
