package workload

import (
	"bytes"
	"fmt"
	"maps"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	smdtyped "sigs.k8s.io/structured-merge-diff/v6/typed"
)

// ownedSchema is the part of a Deployment, StatefulSet or DaemonSet that
// Ripple's apply configurations can hold (apply.go): its annotations,
// spec.paused, the pod template's annotations and its containers' env
// values, with the list keys the API server uses. client-go's
// Extract<Kind> does the same with the schema of every built-in type,
// which costs 19 MiB of allocations to parse on first use and a tenth of
// a millisecond per call; Ripple's fields need only this.
const ownedSchema = `types:
- name: workload
  map:
    fields:
    - name: metadata
      type: {namedType: metadata}
    - name: spec
      type: {namedType: spec}
- name: metadata
  map:
    fields:
    - name: annotations
      type: {map: {elementType: {scalar: string}}}
- name: spec
  map:
    fields:
    - name: paused
      type: {scalar: boolean}
    - name: template
      type: {namedType: template}
- name: template
  map:
    fields:
    - name: metadata
      type: {namedType: metadata}
    - name: spec
      type: {namedType: podSpec}
- name: podSpec
  map:
    fields:
    - name: containers
      type: {list: {elementType: {namedType: container}, elementRelationship: associative, keys: [name]}}
- name: container
  map:
    fields:
    - name: name
      type: {scalar: string}
    - name: env
      type: {list: {elementType: {namedType: envVar}, elementRelationship: associative, keys: [name]}}
- name: envVar
  map:
    fields:
    - name: name
      type: {scalar: string}
    - name: value
      type: {scalar: string}
`

// ownedType is ownedSchema's workload, parsed once.
var ownedType = sync.OnceValues(func() (smdtyped.ParseableType, error) {
	p, err := smdtyped.NewParser(ownedSchema)
	if err != nil {
		return smdtyped.ParseableType{}, err
	}
	return p.Type("workload"), nil
})

// ownedFields is the apply configuration of the fields manager owns by
// apply on obj, at their current values, as an unstructured object with
// obj's apiVersion, kind, name and namespace: what an apply by manager
// must hold again not to drop them. spec.paused is read through paused
// (nil for kinds without it).
func ownedFields(obj client.Object, apiVersion, kind string, tpl *corev1.PodTemplateSpec, paused *bool, manager string) (map[string]any, error) {
	cfg := map[string]any{
		"apiVersion": apiVersion,
		"kind":       kind,
	}
	var entry *metav1.ManagedFieldsEntry
	for i, e := range obj.GetManagedFields() {
		if e.Manager == manager && e.Operation == metav1.ManagedFieldsOperationApply && e.Subresource == "" && e.FieldsV1 != nil {
			entry = &obj.GetManagedFields()[i]
			break
		}
	}
	if entry != nil {
		t, err := ownedType()
		if err != nil {
			return nil, fmt.Errorf("parsing the schema of Ripple's fields: %w", err)
		}
		tv, err := t.FromUnstructured(ownedView(obj, tpl, paused), smdtyped.AllowDuplicates)
		if err != nil {
			return nil, err
		}
		set := &fieldpath.Set{}
		if err := set.FromJSON(bytes.NewReader(entry.FieldsV1.GetRawBytes())); err != nil {
			return nil, fmt.Errorf("reading the managed fields of %q: %w", manager, err)
		}
		if m, ok := tv.ExtractItems(set.Leaves()).AsValue().Unstructured().(map[string]any); ok {
			maps.Copy(cfg, dropNulls(m))
		}
	}
	u := unstructured.Unstructured{Object: cfg}
	u.SetName(obj.GetName())
	u.SetNamespace(obj.GetNamespace())
	return cfg, nil
}

// ownedView is obj reduced to ownedSchema.
func ownedView(obj client.Object, tpl *corev1.PodTemplateSpec, paused *bool) map[string]any {
	containers := make([]any, 0, len(tpl.Spec.Containers))
	for _, c := range tpl.Spec.Containers {
		env := make([]any, 0, len(c.Env))
		for _, e := range c.Env {
			ev := map[string]any{"name": e.Name}
			if e.Value != "" {
				ev["value"] = e.Value
			}
			env = append(env, ev)
		}
		containers = append(containers, map[string]any{"name": c.Name, "env": env})
	}
	spec := map[string]any{
		"template": map[string]any{
			"metadata": map[string]any{"annotations": stringMap(tpl.Annotations)},
			"spec":     map[string]any{"containers": containers},
		},
	}
	if paused != nil {
		spec["paused"] = *paused
	}
	return map[string]any{
		"metadata": map[string]any{"annotations": stringMap(obj.GetAnnotations())},
		"spec":     spec,
	}
}

// dropNulls removes the null values an extraction leaves where a list
// Ripple owned items of has none left (another manager took them), as an
// apply configuration's JSON omits them.
func dropNulls(m map[string]any) map[string]any {
	for k, v := range m {
		switch v := v.(type) {
		case nil:
			delete(m, k)
		case map[string]any:
			dropNulls(v)
		case []any:
			for _, item := range v {
				if im, ok := item.(map[string]any); ok {
					dropNulls(im)
				}
			}
		}
	}
	return m
}

func stringMap(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
