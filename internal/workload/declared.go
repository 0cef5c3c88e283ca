package workload

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/internal/declared"
	"github.com/ripple-dev/ripple/internal/refs"
	rstatus "github.com/ripple-dev/ripple/internal/rollout"
)

// NewDeclared returns the kind a kinds file or a preset declares
// (internal/declared), read as unstructured objects: a template kind
// writes its reload on the pod template at its field path, as the Argo
// Rollout kind does at spec.template; a restart kind sets its annotation.
func NewDeclared(k declared.Kind) Kind {
	base := declaredBase{unstructuredKind{k.GVK()}, k, k.Fields()}
	switch {
	case k.Restart != nil:
		return declaredRestart{base}
	case k.Paused != "":
		return declaredPausable{declaredTemplate{base, declared.Path(k.Template)}, declared.Path(k.Paused)}
	}
	return declaredTemplate{base, declared.Path(k.Template)}
}

// StatusReader is a kind that tells how its rollout stands by a rule of
// its own (a declared kind's ready), not by its type (rollout.Of).
type StatusReader interface {
	RolloutStatus(obj client.Object) rstatus.Status
}

// RolloutOf is how obj, of kind k, stands in its rollout by its own
// status: by k's rule when it has one (StatusReader), else by its type.
func RolloutOf(k Kind, obj client.Object) rstatus.Status {
	if sr, ok := k.(StatusReader); ok {
		return sr.RolloutStatus(obj)
	}
	return rstatus.Of(obj)
}

// DeclaredKind is a kind declared in a kinds file or a preset.
type DeclaredKind interface {
	Declared() declared.Kind
}

// FieldReferrer is a kind whose objects name configs in fields of their
// own, outside any pod template (a declared kind's refs).
type FieldReferrer interface {
	// FieldRefs are the configs obj's fields name; over is set when obj
	// has more values there than declared.MaxRefValues, of which only
	// the first are read.
	FieldRefs(obj client.Object) (refs []refs.FieldRef, over bool)
}

// declaredBase is what every declared kind has: its name, its objects,
// its rollout status and the configs its fields name.
type declaredBase struct {
	unstructuredKind
	spec   declared.Kind
	fields []refs.Field
}

// FieldRefs reads the kind's refs from obj, or as the cache keeps them
// (TrimDeclared).
func (k declaredBase) FieldRefs(obj client.Object) ([]refs.FieldRef, bool) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || len(k.fields) == 0 {
		return nil, false
	}
	if cached, ok := u.Object[cachedRefs].(string); ok {
		var c fieldRefs
		if err := json.Unmarshal([]byte(cached), &c); err == nil {
			return c.Refs, c.Over
		}
	}
	return refs.FieldRefs(u.Object, k.fields, declared.MaxRefValues)
}

// refsJSON is what the cache keeps of the refs content names at fields.
func refsJSON(content map[string]any, fields []refs.Field) string {
	var c fieldRefs
	c.Refs, c.Over = refs.FieldRefs(content, fields, declared.MaxRefValues)
	b, _ := json.Marshal(c) // strings and a bool always marshal
	return string(b)
}

// fieldRefs is what the cache keeps of an object's refs (cachedRefs).
type fieldRefs struct {
	Refs []refs.FieldRef `json:"refs,omitempty"`
	Over bool            `json:"over,omitempty"`
}

// Name is the declared kind's name: qualified by its group when its kind
// alone is another kind's.
func (k declaredBase) Name() string { return k.spec.Name() }

// Declared is the kind as declared.
func (k declaredBase) Declared() declared.Kind { return k.spec }

// RolloutStatus reads the kind's ready rule; without one a reload is
// complete once written.
func (k declaredBase) RolloutStatus(obj client.Object) rstatus.Status {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || k.spec.Ready == nil {
		return rstatus.Of(obj)
	}
	return rstatus.Declared(u, *k.spec.Ready)
}

// declaredTemplate is a kind with a pod template at path.
type declaredTemplate struct {
	declaredBase
	path []string
}

func (k declaredTemplate) KeepsTemplate(client.Object) bool { return false }

// RollsWithTemplate: a kind declared by its pod template is one whose
// controller rolls out a new template.
func (k declaredTemplate) RollsWithTemplate() bool { return true }

// PodTemplate converts the template at the kind's path, or as the cache
// keeps it (TrimDeclared); the result does not point into obj.
func (k declaredTemplate) PodTemplate(obj client.Object) (*corev1.PodTemplateSpec, error) {
	u, err := k.object(obj)
	if err != nil {
		return nil, err
	}
	cached, ok := u.Object[cachedTemplate].(string)
	if !ok {
		return k.podTemplateAt(obj, k.path, k.spec.Template)
	}
	tpl := &corev1.PodTemplateSpec{}
	if err := json.Unmarshal([]byte(cached), tpl); err != nil {
		return nil, fmt.Errorf("%s %s/%s: %s is not a pod template: %w", k.gvk.Kind, u.GetNamespace(), u.GetName(), k.spec.Template, err)
	}
	return tpl, nil
}

func (k declaredTemplate) Write(ctx context.Context, c client.Client, obj client.Object, u Update) (Result, error) {
	body, err := k.body(obj, u)
	if err != nil {
		return Result{}, err
	}
	return Result{}, patchAt(ctx, c, obj, body, u.Annotations)
}

// body is the merge patch of u's template, from the object's root.
func (k declaredTemplate) body(obj client.Object, u Update) (map[string]any, error) {
	body := map[string]any{}
	if u.Template == nil {
		return body, nil
	}
	uo, err := k.object(obj)
	if err != nil {
		return nil, err
	}
	old, err := k.PodTemplate(obj)
	if err != nil {
		return nil, err
	}
	var raw []byte
	if cached, ok := uo.Object[cachedTemplate].(string); ok {
		raw = []byte(cached)
	} else if raw, err = templateJSON(uo, k.path); err != nil {
		return nil, err
	}
	// Written on the template as stored (stored.go), so that no field
	// Ripple's types do not know is lost.
	diff, err := k.reloadPatch(obj, k.spec.Template, raw, old, u.Template)
	if err != nil {
		return nil, err
	}
	setAt(body, k.path, diff)
	return body, nil
}

// declaredPausable is a template kind with a paused field.
type declaredPausable struct {
	declaredTemplate
	paused []string
}

func (k declaredPausable) Paused(obj client.Object) bool {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return false
	}
	p, _, _ := unstructured.NestedBool(u.Object, k.paused...)
	return p
}

func (k declaredPausable) Write(ctx context.Context, c client.Client, obj client.Object, u Update) (Result, error) {
	body, err := k.body(obj, u)
	if err != nil {
		return Result{}, err
	}
	if u.Paused != nil {
		setAt(body, k.paused, *u.Paused)
	}
	return Result{}, patchAt(ctx, c, obj, body, u.Annotations)
}

// declaredRestart is a kind without a pod template, reloaded by setting
// an annotation on the object (an ExternalSecret's force-sync).
type declaredRestart struct{ declaredBase }

// restartContainer names the one container of the pod template a restart
// kind shows the planner: the strategies write a reload on a container,
// and the annotation's value is derived from what they wrote.
const restartContainer = "restart"

// KeepsTemplate: the template is never written, so what was applied is
// read from the applied record.
func (declaredRestart) KeepsTemplate(client.Object) bool { return true }

// PodTemplate is a template of one empty container: the object has no
// template, and its configs are those its named-reload annotations name.
func (k declaredRestart) PodTemplate(obj client.Object) (*corev1.PodTemplateSpec, error) {
	if _, err := k.object(obj); err != nil {
		return nil, err
	}
	return &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: restartContainer}}}}, nil
}

// Write sets the annotation, with the records, to a digest of the template
// the strategy wrote: it holds the digests of the change set's configs, so
// each change set gives a new value and the same one the same value.
func (k declaredRestart) Write(ctx context.Context, c client.Client, obj client.Object, u Update) (Result, error) {
	ann := make(map[string]*string, len(u.Annotations)+1)
	for key, v := range u.Annotations {
		ann[key] = v
	}
	if u.Template != nil {
		b, err := json.Marshal(u.Template)
		if err != nil {
			return Result{}, err
		}
		sum := sha256.Sum256(b)
		v := hex.EncodeToString(sum[:8])
		ann[k.spec.Restart.Annotation] = &v
	}
	return Result{}, patchAt(ctx, c, obj, nil, ann)
}

// setAt sets v at path in the nested map m.
func setAt(m map[string]any, path []string, v any) {
	for _, f := range path[:len(path)-1] {
		next, ok := m[f].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[f] = next
		}
		m = next
	}
	m[path[len(path)-1]] = v
}

// patchAt writes body (fields from the object's root) and annotations as
// one JSON merge patch, locked on obj's resourceVersion.
func patchAt(ctx context.Context, c client.Client, obj client.Object, body map[string]any, annotations map[string]*string) error {
	meta := map[string]any{"resourceVersion": obj.GetResourceVersion()}
	if len(annotations) > 0 {
		meta["annotations"] = annotations
	}
	if body == nil {
		body = map[string]any{}
	}
	body["metadata"] = meta
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	return c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, b), client.FieldOwner(FieldManager))
}

// cachedTemplate is where the cache keeps a declared kind's pod
// template: its JSON, one string, rather than the nested maps of an
// unstructured object, which cost the cache several times as much
// (docs/performance.md, "Declared kinds"). No object has a field of that
// name, and a cached object is never sent back: declared kinds are
// written by merge patches of their own (patchAt).
const cachedTemplate = "ripple.dev/podTemplate"

// cachedRefs is where the cache keeps the configs a declared kind's
// object names in its refs, read once when the object is cached (JSON of
// fieldRefs): the cache keeps none of the fields they are read from.
const cachedRefs = "ripple.dev/fieldRefs"

// TrimDeclared returns a cache transform that keeps of a declared kind's
// object only what Ripple reads (its metadata and declared.Kind.Reads),
// its pod template as JSON (cachedTemplate), so that the cache holds
// about what it holds of a Deployment; objects of other kinds pass
// unchanged.
func TrimDeclared(kinds []declared.Kind) func(any) (any, error) {
	// The paths are worked out once per kind, not per event.
	type trim struct {
		name     string   // the template's field path, for errors
		template []string // nil when the kind has no pod template
		reads    [][]string
		fields   []refs.Field
	}
	keep := map[schema.GroupVersionKind]trim{}
	for _, k := range kinds {
		keep[k.GVK()] = trim{name: k.Template, template: declared.Path(k.Template), reads: k.Reads(), fields: k.Fields()}
	}
	return func(obj any) (any, error) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return obj, nil
		}
		k, ok := keep[u.GroupVersionKind()]
		if !ok {
			return obj, nil
		}
		out := map[string]any{"apiVersion": u.Object["apiVersion"], "kind": u.Object["kind"], "metadata": u.Object["metadata"]}
		for _, c := range []string{cachedTemplate, cachedRefs} {
			if v, ok := u.Object[c]; ok {
				out[c] = v // trimmed before: client-go may transform an object twice
			}
		}
		if _, ok := out[cachedRefs]; !ok && len(k.fields) > 0 {
			out[cachedRefs] = refsJSON(u.Object, k.fields)
		}
		for _, p := range k.reads {
			v, found, _ := unstructured.NestedFieldNoCopy(u.Object, p...)
			switch {
			case !found:
			case k.template != nil && slices.Equal(p, k.template):
				b, err := json.Marshal(v)
				if err != nil {
					return nil, fmt.Errorf("%s %s/%s: %s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), k.name, err)
				}
				out[cachedTemplate] = string(b)
			default:
				setAt(out, p, v)
			}
		}
		u.Object = out
		return u, nil
	}
}
