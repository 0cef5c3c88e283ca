package workload

import (
	"bytes"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// annotationsPath is where an object's annotations are in a field set.
var annotationsPath = fieldpath.MakePathOrDie("metadata", "annotations")

// TrimManagedFields is the cache transform of managedFields: Ripple's own
// applied fields are kept whole, because its next apply starts from them
// (apply.go); of its updates (patches, creates) only the annotations,
// which tell whether Ripple wrote its records' current values
// (OwnsAnnotation); of every other manager only its name, operation and
// time, which name the manager of a revert. Memory then does not follow
// the size of the objects' field sets.
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
		switch {
		case e.Manager != FieldManager || e.Subresource != "":
			e.FieldsV1, e.FieldsType = nil, ""
		case e.Operation != metav1.ManagedFieldsOperationApply:
			e.FieldsV1 = annotationsOnly(e.FieldsV1)
			if e.FieldsV1 == nil {
				e.FieldsType = ""
			}
		}
		kept = append(kept, e)
	}
	o.SetManagedFields(kept)
	return obj, nil
}

// annotationsOnly is the part of a field set under metadata.annotations;
// nil when there is none (or the set cannot be read).
func annotationsOnly(fields *metav1.FieldsV1) *metav1.FieldsV1 {
	set := ownedSet(fields)
	if set == nil {
		return nil
	}
	out := &fieldpath.Set{}
	set.WithPrefix(annotationsPath[0]).WithPrefix(annotationsPath[1]).Iterate(func(p fieldpath.Path) {
		out.Insert(append(annotationsPath.Copy(), p...))
	})
	if out.Empty() {
		return nil
	}
	raw, err := out.ToJSON()
	if err != nil {
		return nil
	}
	return metav1.NewFieldsV1(string(raw))
}

// ownedSet reads a managedFields entry's field set; nil when there is none
// or it cannot be read.
func ownedSet(fields *metav1.FieldsV1) *fieldpath.Set {
	if fields == nil {
		return nil
	}
	set := &fieldpath.Set{}
	if err := set.FromJSON(bytes.NewReader(fields.GetRawBytes())); err != nil {
		return nil
	}
	return set
}

// OwnsAnnotation reports whether Ripple wrote the current value of obj's
// annotation key: its field manager owns it, by apply or by update. A
// manager that changed the value since took it over, `kubectl rollout
// undo` restoring a Deployment's annotations among them; one that wrote
// the same value shares it.
func OwnsAnnotation(obj client.Object, key string) bool {
	path := append(annotationsPath.Copy(), fieldpath.PathElement{FieldName: &key})
	for _, e := range obj.GetManagedFields() {
		if e.Manager != FieldManager || e.Subresource != "" {
			continue
		}
		if set := ownedSet(e.FieldsV1); set != nil && set.Has(path) {
			return true
		}
	}
	return false
}

// ForeignAnnotation reports whether obj's annotation key holds a value that
// another manager than Ripple wrote, by its managedFields. An object
// without managedFields (a manifest file, or fields reset) tells nothing:
// false.
func ForeignAnnotation(obj client.Object, key string) bool {
	_, set := obj.GetAnnotations()[key]
	return set && len(obj.GetManagedFields()) > 0 && !OwnsAnnotation(obj, key)
}

// LastForeignWrite is the latest time another manager than Ripple wrote
// obj (not a subresource such as status or scale): no later than that,
// the value of an annotation ForeignAnnotation reports was written. Zero
// when its managedFields do not say.
func LastForeignWrite(obj client.Object) time.Time {
	var latest time.Time
	for _, e := range obj.GetManagedFields() {
		if e.Manager != FieldManager && e.Subresource == "" && e.Time != nil && e.Time.After(latest) {
			latest = e.Time.Time
		}
	}
	return latest
}
