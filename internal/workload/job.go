package workload

import (
	"context"
	"crypto/cipher"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// JobOptions configure the Job kind.
type JobOptions struct {
	// Reader reads around the cache, for the re-create records (ConfigMaps
	// outside the config cache's label selector and transform).
	Reader client.Reader
	// Namespace is Ripple's own namespace, where the re-create records are
	// kept: Ripple needs no write access to ConfigMaps anywhere else.
	Namespace string
	// RecordLabel marks the ConfigMaps that record a Job being re-created.
	RecordLabel string
	// ReplacesKey is the record annotation naming the UID of the Job that
	// is being replaced.
	ReplacesKey string
}

// recordSuffix ends a re-create record's name:
// "<namespace>.<job>.ripple-recreate".
const recordSuffix = ".ripple-recreate"

// recordKey is the record's binary data key holding the new Job as JSON,
// sealed (sealer).
const recordKey = "job.sealed"

// jobControllerLabels are set by the API server from the Job's UID: a
// re-created Job must not carry the old one's.
var jobControllerLabels = []string{"controller-uid", "batch.kubernetes.io/controller-uid", "job-name", "batch.kubernetes.io/job-name"}

// NewJob returns the batch/v1 Job kind. A Job's template cannot change,
// so a reload deletes it and creates it again under the same name, as
// Reloader does. Unlike Reloader, the new Job is first recorded in a
// ConfigMap in Ripple's own namespace, and created from there until it
// exists: an error or a restart between the delete and the create never
// loses the Job. The record is sealed with a key only Ripple holds, so a
// record anybody else writes creates nothing.
func NewJob(o JobOptions) Kind { return job{o: o, sealer: &sealer{}} }

type job struct {
	o      JobOptions
	sealer *sealer
}

func (job) Name() string                     { return "Job" }
func (job) New() client.Object               { return &batchv1.Job{} }
func (job) NewList() client.ObjectList       { return &batchv1.JobList{} }
func (job) KeepsTemplate(client.Object) bool { return false }

// PodTemplate returns nil for a Job a CronJob controls: the CronJob takes
// the reload.
func (job) PodTemplate(obj client.Object) (*corev1.PodTemplateSpec, error) {
	j, ok := obj.(*batchv1.Job)
	if !ok {
		return nil, fmt.Errorf("unexpected object type %T for a Job", obj)
	}
	if owner := metav1.GetControllerOf(j); owner != nil && owner.Kind == "CronJob" {
		return nil, nil
	}
	return &j.Spec.Template, nil
}

func (k job) Write(ctx context.Context, c client.Client, obj client.Object, u Update) (Result, error) {
	old, ok := obj.(*batchv1.Job)
	if !ok {
		return Result{}, fmt.Errorf("unexpected object type %T", obj)
	}
	if u.Template == nil {
		return Result{}, patch(ctx, c, obj, u, nil)
	}
	next, err := k.recreated(ctx, old, u)
	if err != nil {
		return Result{}, err
	}
	record, err := k.record(ctx, c, old, next)
	if err != nil {
		return Result{}, err
	}
	err = c.Create(ctx, record.DeepCopy(), client.FieldOwner(FieldManager))
	if apierrors.IsAlreadyExists(err) {
		// A leftover of an earlier attempt, of no use now: the Job it
		// replaces still runs, not being deleted (recreated read it as
		// stored, and a Job being deleted is not planned), so it was
		// never deleted for this record, or the record's Job was created
		// already. It is deleted and this one created, rather than
		// overwritten, so that Ripple's Role has no update on ConfigMaps:
		// between the two nothing is lost, as the Job was not deleted.
		err = client.IgnoreNotFound(c.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: record.Namespace, Name: record.Name}}))
		if err == nil {
			err = c.Create(ctx, record.DeepCopy(), client.FieldOwner(FieldManager))
		}
	}
	if err != nil {
		return Result{}, fmt.Errorf("recording the Job to re-create in ConfigMap %s/%s (Ripple's own namespace, $POD_NAMESPACE): %w",
			record.Namespace, record.Name, err)
	}
	uid, rv := old.UID, old.ResourceVersion
	err = c.Delete(ctx, old, client.PropagationPolicy(metav1.DeletePropagationBackground),
		client.Preconditions{UID: &uid, ResourceVersion: &rv})
	if err != nil && !apierrors.IsNotFound(err) {
		if k.terminating(ctx, old) {
			// An earlier attempt deleted it (obj is a stale copy): the
			// record stays, and the Job is created once the old one is gone.
			return Result{}, err
		}
		// Nothing happened: the reload is decided again on fresh data.
		return Result{}, errors.Join(err, client.IgnoreNotFound(c.Delete(ctx, record)))
	}
	return Result{}, k.create(ctx, c, record, next)
}

// Finish re-creates a Job that was deleted for a reload but not created
// again, from its record. It only looks when the Job is gone (obj nil).
func (k job) Finish(ctx context.Context, c client.Client, key types.NamespacedName, obj client.Object) (bool, error) {
	if obj != nil {
		return false, nil
	}
	record := &corev1.ConfigMap{}
	if err := k.o.Reader.Get(ctx, types.NamespacedName{Namespace: k.o.Namespace, Name: recordName(key)}, record); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	aead, err := k.sealer.aead(ctx, k.o.Reader, c, k.o.Namespace)
	if err != nil {
		return true, err
	}
	next, err := k.recordedJob(aead, record)
	if err != nil {
		return true, errors.Join(err, c.Delete(ctx, record))
	}
	if client.ObjectKeyFromObject(next) != key {
		return false, nil // a hashed name's record of another Job
	}
	return true, k.finish(ctx, c, record, next)
}

// finish creates the recorded Job next unless the Job it replaces is still
// there, and drops the record once it is of no use.
func (k job) finish(ctx context.Context, c client.Client, record *corev1.ConfigMap, next *unstructured.Unstructured) error {
	cur := &batchv1.Job{}
	err := k.o.Reader.Get(ctx, client.ObjectKeyFromObject(next), cur)
	switch {
	case err == nil && string(cur.UID) == record.Annotations[k.o.ReplacesKey] && cur.DeletionTimestamp != nil:
		// Deleted but not gone yet (finalizers): its delete event brings
		// the reconcile that creates the new one.
		return nil
	case err == nil && string(cur.UID) == record.Annotations[k.o.ReplacesKey]:
		// Stopped before the delete: the old Job still runs and the reload
		// is decided again.
		return client.IgnoreNotFound(c.Delete(ctx, record))
	case err == nil:
		return client.IgnoreNotFound(c.Delete(ctx, record)) // created already
	case !apierrors.IsNotFound(err):
		return err
	}
	return k.create(ctx, c, record, next)
}

// Recover finishes every recorded re-create of a Job in the namespaces
// (all when empty), for records a restart left behind. The records are
// listed in Ripple's namespace only.
func (k job) Recover(ctx context.Context, c client.Client, namespaces []string) error {
	list := &corev1.ConfigMapList{}
	if err := k.o.Reader.List(ctx, list, client.InNamespace(k.o.Namespace), client.HasLabels{k.o.RecordLabel}); err != nil {
		return fmt.Errorf("listing the Job re-create records in namespace %s: %w", k.o.Namespace, err)
	}
	if len(list.Items) == 0 {
		return nil // the key is not needed (nor created)
	}
	aead, err := k.sealer.aead(ctx, k.o.Reader, c, k.o.Namespace)
	if err != nil {
		return err
	}
	var errs []error
	for i := range list.Items {
		record := &list.Items[i]
		if !strings.HasSuffix(record.Name, recordSuffix) {
			continue
		}
		next, err := k.recordedJob(aead, record)
		if err != nil {
			errs = append(errs, errors.Join(err, client.IgnoreNotFound(c.Delete(ctx, record))))
			continue
		}
		if len(namespaces) > 0 && !slices.Contains(namespaces, next.GetNamespace()) {
			continue // another Ripple's scope
		}
		if err := k.finish(ctx, c, record, next); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// terminating reports whether the API server shows old (the same UID)
// being deleted.
func (k job) terminating(ctx context.Context, old *batchv1.Job) bool {
	cur := &batchv1.Job{}
	err := k.o.Reader.Get(ctx, client.ObjectKeyFromObject(old), cur)
	return err == nil && cur.UID == old.UID && cur.DeletionTimestamp != nil
}

// create creates next and then drops its record. AlreadyExists means the
// old Job is still terminating (or the Job was created already): the
// caller retries, and Finish tells the two apart.
func (k job) create(ctx context.Context, c client.Client, record *corev1.ConfigMap, next *unstructured.Unstructured) error {
	if err := c.Create(ctx, next.DeepCopy(), client.FieldOwner(FieldManager)); err != nil {
		return fmt.Errorf("re-creating Job %s/%s (it is recorded in ConfigMap %s and is created as soon as the API server accepts it): %w",
			next.GetNamespace(), next.GetName(), record.Name, err)
	}
	return client.IgnoreNotFound(c.Delete(ctx, record))
}

// record is the ConfigMap, in Ripple's namespace, that holds next, sealed,
// until it is created in place of old.
func (k job) record(ctx context.Context, c client.Client, old *batchv1.Job, next *unstructured.Unstructured) (*corev1.ConfigMap, error) {
	b, err := next.MarshalJSON()
	if err != nil {
		return nil, err
	}
	aead, err := k.sealer.aead(ctx, k.o.Reader, c, k.o.Namespace)
	if err != nil {
		return nil, err
	}
	name := recordName(client.ObjectKeyFromObject(old))
	sealed, err := seal(aead, name, string(old.UID), b)
	if err != nil {
		return nil, err
	}
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Namespace:   k.o.Namespace,
			Labels:      map[string]string{k.o.RecordLabel: "true"},
			Annotations: map[string]string{k.o.ReplacesKey: string(old.UID)},
		},
		BinaryData: map[string][]byte{recordKey: sealed},
	}, nil
}

// recordName names the record of Job key, unique across namespaces:
// "<namespace>.<job>.ripple-recreate" (namespaces hold no dots), or with a
// hash of both when that is longer than an object name may be.
func recordName(key types.NamespacedName) string {
	if name := key.Namespace + "." + key.Name + recordSuffix; len(name) <= validation.DNS1123SubdomainMaxLength {
		return name
	}
	sum := sha256.Sum256([]byte(key.String()))
	return key.Namespace + "." + hex.EncodeToString(sum[:16]) + recordSuffix
}

// recordedJob is the Job a record holds, as it was recorded (every field
// kept), once its seal verifies and the Job is the one the record is named
// after.
func (k job) recordedJob(aead cipher.AEAD, record *corev1.ConfigMap) (*unstructured.Unstructured, error) {
	next := &unstructured.Unstructured{}
	err := errUnsealed
	if sealed, ok := record.BinaryData[recordKey]; ok {
		var plain []byte
		if plain, err = open(aead, record.Name, record.Annotations[k.o.ReplacesKey], sealed); err == nil {
			err = next.UnmarshalJSON(plain)
		}
	}
	if err == nil && next.GroupVersionKind() != jobGVK {
		err = fmt.Errorf("it holds a %s, not a Job", next.GroupVersionKind())
	}
	if err == nil && (next.GetName() == "" || next.GetNamespace() == "" || recordName(client.ObjectKeyFromObject(next)) != record.Name) {
		err = errors.New("the Job it holds is not the one it is named after")
	}
	if err != nil {
		return nil, fmt.Errorf("dropping the Job re-create record ConfigMap %s/%s: %w", record.Namespace, record.Name, err)
	}
	return next, nil
}

// jobGVK is the kind of the Jobs Ripple re-creates and records.
var jobGVK = batchv1.SchemeGroupVersion.WithKind("Job")

// recreated is the Job old as stored, read around the cache, with u
// applied (recreatedFrom). old, from the cache, holds only the fields
// Ripple's copy of the Kubernetes types knows; a Job built from it would
// lose a newer cluster's fields. A Job changed since old was read is left
// for the reload to be decided again on the cache's next copy.
func (k job) recreated(ctx context.Context, old *batchv1.Job, u Update) (*unstructured.Unstructured, error) {
	stored := &unstructured.Unstructured{}
	stored.SetGroupVersionKind(jobGVK)
	err := k.o.Reader.Get(ctx, client.ObjectKeyFromObject(old), stored)
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("reading Job %s/%s as stored: %w", old.Namespace, old.Name, err)
	}
	if err != nil || stored.GetUID() != old.UID || stored.GetResourceVersion() != old.ResourceVersion {
		return nil, apierrors.NewConflict(batchv1.Resource("jobs"), old.Name,
			errors.New("the Job changed since it was read: the reload is decided again"))
	}
	next, err := recreatedFrom(stored, &old.Spec.Template, u)
	if err != nil {
		return nil, fmt.Errorf("re-creating Job %s/%s: %w", old.Namespace, old.Name, err)
	}
	return next, nil
}

// recreatedFrom is stored, the Job as the API server holds it, as a new
// object with u applied, as Reloader re-creates it: no identity or status,
// no labels the API server derives from the old UID, and no generated
// selector. Every other field is kept as stored, those Ripple's types do
// not know included; the template is the stored one with the reload from
// old (the typed reading of it the plan was made on) written on it, and a
// change other than env vars and annotations is refused (storedEdit).
func recreatedFrom(stored *unstructured.Unstructured, old *corev1.PodTemplateSpec, u Update) (*unstructured.Unstructured, error) {
	raw, err := templateJSON(stored, []string{"spec", "template"})
	if err != nil {
		return nil, fmt.Errorf("spec.template: %w", err)
	}
	if raw == nil {
		return nil, errors.New("no pod template at spec.template")
	}
	b, err := storedEdit(raw, old, u.Template)
	if err != nil {
		return nil, fmt.Errorf("spec.template: %w", err)
	}
	var tpl any
	if err := decodeJSON(b, &tpl); err != nil {
		return nil, err
	}
	spec, ok := stored.Object["spec"].(map[string]any)
	if !ok {
		return nil, errors.New("spec is not an object")
	}
	spec = maps.Clone(spec)
	spec["template"] = tpl
	meta, _ := stored.Object["metadata"].(map[string]any)
	kept := map[string]any{}
	for _, f := range []string{"name", "namespace", "labels", "annotations", "ownerReferences"} {
		if v, ok := meta[f]; ok {
			kept[f] = v
		}
	}
	b, err = json.Marshal(map[string]any{"apiVersion": jobGVK.GroupVersion().String(), "kind": jobGVK.Kind, "metadata": kept, "spec": spec})
	if err != nil {
		return nil, err
	}
	next := &unstructured.Unstructured{}
	if err := next.UnmarshalJSON(b); err != nil {
		return nil, err
	}
	setAnnotations(next, u.Annotations)
	if manual, _, _ := unstructured.NestedBool(next.Object, "spec", "manualSelector"); !manual {
		unstructured.RemoveNestedField(next.Object, "spec", "selector")
		next.SetLabels(withoutKeys(next.GetLabels(), jobControllerLabels))
		labels, _, err := unstructured.NestedStringMap(next.Object, "spec", "template", "metadata", "labels")
		if err != nil {
			return nil, fmt.Errorf("spec.template.metadata.labels: %w", err)
		}
		if labels = withoutKeys(labels, jobControllerLabels); len(labels) > 0 {
			err = unstructured.SetNestedStringMap(next.Object, labels, "spec", "template", "metadata", "labels")
		} else {
			unstructured.RemoveNestedField(next.Object, "spec", "template", "metadata", "labels")
		}
		if err != nil {
			return nil, err
		}
	}
	return next, nil
}

func withoutKeys(m map[string]string, keys []string) map[string]string {
	out := maps.Clone(m)
	for _, k := range keys {
		delete(out, k)
	}
	return out
}
