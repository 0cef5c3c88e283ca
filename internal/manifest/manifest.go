// Package manifest loads Kubernetes objects from YAML and JSON files, as
// Helm, kustomize or kubectl print them, for Ripple's offline commands.
//
// The kinds Ripple reads are decoded to the types the controller sees from
// the API server: workloads and ConfigMaps/Secrets as client-go types, Argo
// Rollouts, OpenShift DeploymentConfigs and SecretProviderClasses as
// unstructured objects. Every other object is kept unstructured, as written.
package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	sigsjson "sigs.k8s.io/json"
)

// Stdin is the path that means standard input.
const Stdin = "-"

// stdinName names standard input in errors.
const stdinName = "<stdin>"

// The bounds of what one Load reads (each of plan's --old and --new,
// explain's -f). Decoding costs many times its input in memory (YAML to
// JSON to objects: a 64 MiB value took 1.9 GiB), and the input may be a
// pull request's; a Kubernetes object is at most 1.5 MiB (etcd's default
// bound), so real manifests, a whole cluster's rendered charts included,
// stay far below.
const (
	// maxFile bounds one file, or stdin.
	maxFile = 32 << 20
	// maxTotal bounds all the files of one Load.
	maxTotal = 32 << 20
)

// extensions are the files a directory walk loads; a file named on its own
// loads whatever its name.
var extensions = []string{".yaml", ".yml", ".json"}

// Load reads every object in paths, in order: a path is a file, a
// directory (walked recursively in lexical order, loading its .yaml, .yml
// and .json files) or Stdin, read from stdin. Multi-document YAML, JSON and
// List objects are split into their objects; empty documents are skipped.
//
// Objects of the kinds Ripple reads that have no namespace get namespace
// ("default" when empty), as kubectl apply -n would. Other objects are left
// as written: without an API server there is no knowing whether their kind
// is namespaced at all.
//
// A file over maxFile, or files over maxTotal in all, are refused. A
// directory's walk reads regular files only: a symbolic link in it is
// refused, wherever it points. A path named in paths is read wherever it
// points, as the user named it.
//
// Errors name the file and the 1-based document at fault.
func Load(paths []string, stdin io.Reader, namespace string) ([]client.Object, error) {
	if namespace == "" {
		namespace = metav1.NamespaceDefault
	}
	b := &budget{left: maxTotal}
	var out []client.Object
	for _, p := range paths {
		objs, err := loadPath(p, stdin, namespace, b)
		if err != nil {
			return nil, err
		}
		out = append(out, objs...)
	}
	return out, nil
}

// loadPath loads one argument of Load.
func loadPath(path string, stdin io.Reader, namespace string, b *budget) ([]client.Object, error) {
	if path == Stdin {
		if stdin == nil {
			return nil, errors.New("reading stdin: no input")
		}
		return b.decode(stdinName, stdin, namespace)
	}
	info, err := os.Stat(path)
	if err != nil {
		return nil, err // names the path already
	}
	if !info.IsDir() {
		return loadFile(path, namespace, b)
	}
	var out []client.Object
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !hasExtension(p) {
			return err
		}
		objs, err := loadWalked(p, d, namespace, b)
		out = append(out, objs...)
		return err
	})
	return out, err
}

// hasExtension reports whether a directory walk loads the file at p.
func hasExtension(p string) bool {
	return slices.Contains(extensions, strings.ToLower(filepath.Ext(p)))
}

// loadFile loads the objects of one file.
func loadFile(path, namespace string, b *budget) ([]client.Object, error) {
	f, err := os.Open(filepath.Clean(path))
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read only: a close error loses nothing
	return b.decode(path, f, namespace)
}

// loadWalked loads the file at p that a directory's walk met as d. Only a
// regular file: the tree may be a pull request's, whose author chooses
// where a link points (a file outside the tree, /dev/zero), and whether
// it points inside the tree cannot be checked without a race with the
// open. Helm and kustomize write no links; a linked file can be named on
// its own.
func loadWalked(p string, d fs.DirEntry, namespace string, b *budget) ([]client.Object, error) {
	info, err := d.Info() // of the entry itself, not followed
	switch {
	case err != nil:
		return nil, err
	case info.Mode()&fs.ModeSymlink != 0:
		return nil, fmt.Errorf("%s is a symbolic link: a directory's links are not followed; name the file it points to on its own to load it", p)
	case !info.Mode().IsRegular():
		return nil, fmt.Errorf("%s is not a regular file: a directory's walk reads regular files only", p)
	}
	f, err := os.Open(filepath.Clean(p))
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read only: a close error loses nothing
	// The file opened must be the one checked: not one put there since.
	if opened, err := f.Stat(); err != nil || !os.SameFile(info, opened) {
		return nil, fmt.Errorf("%s was replaced while it was read", p)
	}
	return b.decode(p, f, namespace)
}

// budget is what one Load may still read, of maxTotal.
type budget struct{ left int }

// decode reads all of r, named name, within maxFile and what is left of
// maxTotal, and decodes it: nothing of an input over its bound is decoded.
func (b *budget) decode(name string, r io.Reader, namespace string) ([]client.Object, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxFile+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	switch {
	case len(data) > maxFile:
		return nil, fmt.Errorf("%s: larger than %d MiB, the most read of one file", name, maxFile>>20)
	case len(data) > b.left:
		return nil, fmt.Errorf("%s: over %d MiB with the files before it, the most read in all", name, maxTotal>>20)
	}
	b.left -= len(data)
	return decode(name, bytes.NewReader(data), namespace)
}

// decode splits r into documents and each document into objects. name is
// the file, for errors.
func decode(name string, r io.Reader, namespace string) ([]client.Object, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(r, 4096)
	var out []client.Object
	for doc := 1; ; doc++ {
		var raw json.RawMessage
		if err := dec.Decode(&raw); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", name, doc, err)
		}
		objs, err := decodeDocument(raw, namespace)
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", name, doc, err)
		}
		out = append(out, objs...)
	}
}

// decodeDocument turns one document into its objects: none for an empty
// document, the items of a List, or the object itself.
func decodeDocument(raw json.RawMessage, namespace string) ([]client.Object, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil // an empty document, or one of comments only
	}
	var m map[string]any
	// utiljson keeps whole numbers as int64, as the API machinery expects.
	if err := utiljson.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("not a Kubernetes object: %w", err)
	}
	u := &unstructured.Unstructured{Object: m}
	if err := checkTypeMeta(u); err != nil {
		return nil, err
	}
	if !isList(u) {
		obj, err := typed(u, namespace)
		if err != nil {
			return nil, err
		}
		return []client.Object{obj}, nil
	}
	return listItems(u, namespace)
}

// checkTypeMeta fails for a document that is not a Kubernetes object. The
// error never quotes the document: it may be a Secret.
func checkTypeMeta(u *unstructured.Unstructured) error {
	switch {
	case u.GetAPIVersion() == "" && u.GetKind() == "":
		return errors.New("not a Kubernetes object: no apiVersion and kind")
	case u.GetAPIVersion() == "":
		return fmt.Errorf("%s has no apiVersion", u.GetKind())
	case u.GetKind() == "":
		return fmt.Errorf("object of %s has no kind", u.GetAPIVersion())
	}
	return nil
}

// isList reports whether u is a List (kind List or any *List kind, such as
// ConfigMapList) with items.
func isList(u *unstructured.Unstructured) bool {
	_, ok := u.Object["items"].([]any)
	return ok && strings.HasSuffix(u.GetKind(), "List")
}

// listItems returns the objects of a List. Items of a typed list (a
// ConfigMapList from the API) may omit their kind: it is the list's.
func listItems(list *unstructured.Unstructured, namespace string) ([]client.Object, error) {
	items, _ := list.Object["items"].([]any) // checked by isList
	itemKind := strings.TrimSuffix(list.GetKind(), "List")
	var out []client.Object
	for i, item := range items {
		m, ok := item.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s item %d is not an object", list.GetKind(), i+1)
		}
		u := &unstructured.Unstructured{Object: m}
		if u.GetKind() == "" && itemKind != "" {
			u.SetKind(itemKind)
			if u.GetAPIVersion() == "" {
				u.SetAPIVersion(list.GetAPIVersion())
			}
		}
		if err := checkTypeMeta(u); err != nil {
			return nil, fmt.Errorf("%s item %d: %w", list.GetKind(), i+1, err)
		}
		obj, err := typed(u, namespace)
		if err != nil {
			return nil, fmt.Errorf("%s item %d: %w", list.GetKind(), i+1, err)
		}
		out = append(out, obj)
	}
	return out, nil
}

// typed returns u as the object the controller would see: a client-go type
// for the kinds in typedKinds, u itself otherwise. The kinds Ripple reads
// get namespace when they have none.
func typed(u *unstructured.Unstructured, namespace string) (client.Object, error) {
	gvk := u.GroupVersionKind()
	newObj, ok := typedKinds[gvk]
	if !ok {
		if unstructuredKinds[gvk.GroupKind()] && u.GetNamespace() == "" {
			u.SetNamespace(namespace)
		}
		return u, nil
	}
	// Through JSON, as the API machinery decodes, rather than the
	// unstructured converter: its errors name the field at fault.
	raw, err := json.Marshal(u.Object)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", gvk.Kind, u.GetName(), err)
	}
	obj := newObj()
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(raw, obj); err != nil {
		return nil, fmt.Errorf("%s %s is not a valid %s: %w", gvk.Kind, u.GetName(), gvk.Kind, err)
	}
	mergeStringData(obj)
	if obj.GetNamespace() == "" {
		obj.SetNamespace(namespace)
	}
	return obj, nil
}
