package workload

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"

	jsonpatch "github.com/evanphx/json-patch/v5"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// A kind read as an unstructured object (a declared kind, an Argo
// Rollout, a DeploymentConfig) is planned on its pod template converted to
// corev1.PodTemplateSpec, which holds only the fields Ripple's copy of the
// Kubernetes types knows. A JSON merge patch replaces a list whole, so the
// diff of two such templates sends the containers list without the fields
// that copy does not know (a newer cluster's, a CRD's own) and removes
// them. The reload is written instead on the template as stored: its
// containers list as the object holds it, with only the env entries the
// strategy changed changed (an entry Ripple rewrites keeps its own unknown
// fields), and only the annotations it changed. The patch carries the
// resourceVersion read (patchAt), so the list it sends is the stored one
// or the write fails with a conflict.
//
// A JSON patch (RFC 6902) guarded by test operations would send less, but
// the API server answers a failed test with a bare 422, not a conflict: a
// write on a stale cache would read as a failed reload, not as one to
// retry. And a merge patch still sets fields whose parents may not exist
// (a declared paused field), which a JSON patch cannot without knowing.

// storedDiff is the JSON merge patch that writes the reload from old to
// next on raw, the JSON of the pod template as stored, of which old is
// the typed reading the plan was made on. Only env vars and annotations
// may differ (what the strategies write); anything else is refused, as no
// other change can be carried without the types' reading of the rest.
func storedDiff(raw []byte, old, next *corev1.PodTemplateSpec) (json.RawMessage, error) {
	b, err := storedEdit(raw, old, next)
	if err != nil {
		return nil, err
	}
	return jsonpatch.CreateMergePatch(raw, b)
}

// storedEdit is raw, the JSON of the pod template as stored, with the
// reload from old to next written on it (storedDiff).
func storedEdit(raw []byte, old, next *corev1.PodTemplateSpec) ([]byte, error) {
	if !envAndAnnotationsOnly(old, next) {
		return nil, errors.New("the reload changes more of the pod template than env vars and annotations")
	}
	var tpl map[string]any
	if err := decodeJSON(raw, &tpl); err != nil {
		return nil, err
	}
	if tpl == nil {
		tpl = map[string]any{}
	}
	editAnnotations(tpl, old.Annotations, next.Annotations)
	if err := editContainers(tpl, old, next); err != nil {
		return nil, err
	}
	b, err := json.Marshal(tpl)
	if err != nil {
		return nil, err
	}
	if err := readsAs(b, next); err != nil {
		return nil, err
	}
	return b, nil
}

// envAndAnnotationsOnly reports whether next differs from old in its
// containers' env vars and its annotations only.
func envAndAnnotationsOnly(old, next *corev1.PodTemplateSpec) bool {
	a, b := old.DeepCopy(), next.DeepCopy()
	a.Annotations, b.Annotations = nil, nil
	if len(a.Spec.Containers) != len(b.Spec.Containers) {
		return false
	}
	for i := range a.Spec.Containers {
		a.Spec.Containers[i].Env, b.Spec.Containers[i].Env = nil, nil
	}
	return equality.Semantic.DeepEqual(a, b)
}

// editAnnotations writes the annotation changes from old to next on the
// stored template tpl.
func editAnnotations(tpl map[string]any, old, next map[string]string) {
	if maps.Equal(old, next) {
		return
	}
	meta, ok := tpl["metadata"].(map[string]any)
	if !ok {
		meta = map[string]any{}
		tpl["metadata"] = meta
	}
	ann, ok := meta["annotations"].(map[string]any)
	if !ok {
		ann = map[string]any{}
	}
	for k := range old {
		if _, ok := next[k]; !ok {
			delete(ann, k)
		}
	}
	for k, v := range next {
		ann[k] = v
	}
	meta["annotations"] = ann
}

// editContainers writes the env changes from old to next on the stored
// template tpl's containers, which old reads one for one.
func editContainers(tpl map[string]any, old, next *corev1.PodTemplateSpec) error {
	spec, _ := tpl["spec"].(map[string]any)
	containers, _ := spec["containers"].([]any)
	if len(containers) != len(old.Spec.Containers) {
		return fmt.Errorf("%d containers stored, %d read", len(containers), len(old.Spec.Containers))
	}
	for i := range old.Spec.Containers {
		o, n := old.Spec.Containers[i].Env, next.Spec.Containers[i].Env
		if equality.Semantic.DeepEqual(o, n) {
			continue
		}
		c, ok := containers[i].(map[string]any)
		if !ok || c["name"] != old.Spec.Containers[i].Name {
			return fmt.Errorf("container %d is not %s as stored", i, old.Spec.Containers[i].Name)
		}
		if err := editEnv(c, o, n); err != nil {
			return fmt.Errorf("container %s: %w", old.Spec.Containers[i].Name, err)
		}
	}
	return nil
}

// editEnv writes the change from old to next on the stored container c's
// env entries, which old reads one for one. The strategy changes an entry
// in place, removes entries and appends new ones, so the two lists are
// walked together by name; readsAs checks the result.
func editEnv(c map[string]any, old, next []corev1.EnvVar) error {
	stored, _ := c["env"].([]any)
	if len(stored) != len(old) {
		return fmt.Errorf("%d env vars stored, %d read", len(stored), len(old))
	}
	env := make([]any, 0, len(next))
	k := 0
	for j := range old {
		if k >= len(next) || next[k].Name != old[j].Name {
			continue // removed
		}
		e := stored[j]
		if !equality.Semantic.DeepEqual(old[j], next[k]) {
			var err error
			if e, err = mergeEntry(stored[j], old[j], next[k]); err != nil {
				return err
			}
		}
		env = append(env, e)
		k++
	}
	for ; k < len(next); k++ {
		b, err := json.Marshal(next[k])
		if err != nil {
			return err
		}
		var e any
		if err := decodeJSON(b, &e); err != nil {
			return err
		}
		env = append(env, e)
	}
	if len(env) == 0 {
		delete(c, "env")
	} else {
		c["env"] = env
	}
	return nil
}

// mergeEntry is the stored env entry with the change from old to next
// (its typed readings before and after) applied, so that the fields the
// types do not know stay.
func mergeEntry(stored any, old, next corev1.EnvVar) (any, error) {
	a, err := json.Marshal(old)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(next)
	if err != nil {
		return nil, err
	}
	change, err := jsonpatch.CreateMergePatch(a, b)
	if err != nil {
		return nil, err
	}
	s, err := json.Marshal(stored)
	if err != nil {
		return nil, err
	}
	merged, err := jsonpatch.MergePatch(s, change)
	if err != nil {
		return nil, err
	}
	var e any
	return e, decodeJSON(merged, &e)
}

// readsAs checks that the edited template b reads as next where the
// reload changed it: each container's env vars and the annotations.
func readsAs(b []byte, next *corev1.PodTemplateSpec) error {
	got := &corev1.PodTemplateSpec{}
	if err := json.Unmarshal(b, got); err != nil {
		return err
	}
	if len(got.Spec.Containers) != len(next.Spec.Containers) || !equality.Semantic.DeepEqual(got.Annotations, next.Annotations) {
		return errors.New("the stored template, changed, does not read as the reload")
	}
	for i := range got.Spec.Containers {
		if !equality.Semantic.DeepEqual(got.Spec.Containers[i].Env, next.Spec.Containers[i].Env) {
			return fmt.Errorf("the env vars of container %s, changed as stored, do not read as the reload", next.Spec.Containers[i].Name)
		}
	}
	return nil
}

// decodeJSON decodes b into v keeping numbers as written (json.Number),
// so that a value sent back is the value stored.
func decodeJSON(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	return d.Decode(v)
}

// templateJSON is the JSON of obj's pod template at path as stored; nil
// when there is none.
func templateJSON(obj *unstructured.Unstructured, path []string) ([]byte, error) {
	v, found, err := unstructured.NestedFieldNoCopy(obj.Object, path...)
	if err != nil || !found {
		return nil, err
	}
	return json.Marshal(v)
}

// reloadPatch is the merge patch of the template at field, raw as stored,
// that writes next on obj of kind k; old is what the plan read of raw.
func (k unstructuredKind) reloadPatch(obj client.Object, field string, raw []byte, old, next *corev1.PodTemplateSpec) (json.RawMessage, error) {
	if raw == nil || old == nil {
		return nil, fmt.Errorf("%s %s/%s has no pod template at %s", k.gvk.Kind, obj.GetNamespace(), obj.GetName(), field)
	}
	diff, err := storedDiff(raw, old, next)
	if err != nil {
		return nil, fmt.Errorf("%s %s/%s: %s: %w", k.gvk.Kind, obj.GetNamespace(), obj.GetName(), field, err)
	}
	return diff, nil
}
