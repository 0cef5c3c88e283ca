package manifest

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// Reader is a client.Reader over loaded objects, so that code written for
// the API server (the explainer, the gatherer) reads manifest files. An
// object is found by its exact group, version and kind, as the API server
// would serve it: a typed target by the kind of its type, an unstructured
// or metadata-only target by the kind it is set to. Each read returns a
// copy: callers may change what they read.
type Reader struct {
	objs map[schema.GroupVersionKind][]client.Object
}

// NewReader returns a Reader over objs.
func NewReader(objs []client.Object) *Reader {
	r := &Reader{objs: map[schema.GroupVersionKind][]client.Object{}}
	for _, obj := range objs {
		gvk := gvkOf(obj)
		r.objs[gvk] = append(r.objs[gvk], obj)
	}
	for _, list := range r.objs {
		// Sorted as the API server lists them.
		slices.SortFunc(list, func(a, b client.Object) int {
			return cmp.Or(strings.Compare(a.GetNamespace(), b.GetNamespace()), strings.Compare(a.GetName(), b.GetName()))
		})
	}
	return r
}

var _ client.Reader = (*Reader)(nil)

// gvkOf is obj's kind: its type's for a typed object, else the one it
// carries (unstructured and metadata-only objects).
func gvkOf(obj runtime.Object) schema.GroupVersionKind {
	if gvk, err := apiutil.GVKForObject(obj, clientgoscheme.Scheme); err == nil {
		return gvk
	}
	return obj.GetObjectKind().GroupVersionKind()
}

// Get copies the object named key, of obj's kind, into obj; a NotFound
// error when the files hold none.
func (r *Reader) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	gvk := gvkOf(obj)
	for _, o := range r.objs[gvk] {
		if o.GetNamespace() == key.Namespace && o.GetName() == key.Name {
			return copyInto(o, gvk, obj)
		}
	}
	return apierrors.NewNotFound(resource(gvk), key.Name)
}

// List copies into list the objects of its item kind that the options
// select: InNamespace and label selectors. Field selectors need the API
// server's field indexes: they are an error.
func (r *Reader) List(_ context.Context, list client.ObjectList, opts ...client.ListOption) error {
	lo := (&client.ListOptions{}).ApplyOptions(opts)
	if lo.FieldSelector != nil && !lo.FieldSelector.Empty() {
		return fmt.Errorf("listing from files: field selector %q is not supported", lo.FieldSelector)
	}
	listGVK := gvkOf(list)
	gvk := listGVK.GroupVersion().WithKind(strings.TrimSuffix(listGVK.Kind, "List"))
	items := []any{}
	for _, o := range r.objs[gvk] {
		if lo.Namespace != "" && o.GetNamespace() != lo.Namespace {
			continue
		}
		if lo.LabelSelector != nil && !lo.LabelSelector.Matches(labels.Set(o.GetLabels())) {
			continue
		}
		m, err := toMap(o, gvk)
		if err != nil {
			return err
		}
		items = append(items, m)
	}
	if u, ok := list.(*unstructured.UnstructuredList); ok {
		u.Items = make([]unstructured.Unstructured, len(items))
		for i, m := range items {
			u.Items[i].Object, _ = m.(map[string]any) // built by toMap
		}
		return nil
	}
	m := map[string]any{"apiVersion": listGVK.GroupVersion().String(), "kind": listGVK.Kind, "items": items}
	return runtime.DefaultUnstructuredConverter.FromUnstructured(m, list)
}

// copyInto copies o, of kind gvk, into obj.
func copyInto(o client.Object, gvk schema.GroupVersionKind, obj client.Object) error {
	m, err := toMap(o, gvk)
	if err != nil {
		return err
	}
	if u, ok := obj.(runtime.Unstructured); ok {
		u.SetUnstructuredContent(m)
		return nil
	}
	return runtime.DefaultUnstructuredConverter.FromUnstructured(m, obj)
}

// toMap is a deep copy of o as an unstructured map, with its kind set.
func toMap(o client.Object, gvk schema.GroupVersionKind) (map[string]any, error) {
	var m map[string]any
	if u, ok := o.(*unstructured.Unstructured); ok {
		m = runtime.DeepCopyJSON(u.Object)
	} else {
		var err error
		if m, err = runtime.DefaultUnstructuredConverter.ToUnstructured(o); err != nil {
			return nil, fmt.Errorf("%s %s: %w", gvk.Kind, o.GetName(), err)
		}
	}
	m["apiVersion"], m["kind"] = gvk.GroupVersion().String(), gvk.Kind
	return m, nil
}

// resource guesses the resource of gvk for a NotFound error, as the API
// server names it (deployments.apps); the files hold no discovery.
func resource(gvk schema.GroupVersionKind) schema.GroupResource {
	plural, _ := apimeta.UnsafeGuessKindToResource(gvk)
	return plural.GroupResource()
}
