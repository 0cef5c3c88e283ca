// Package source is what Ripple keeps of the sources that reload
// workloads: ConfigMaps, Secrets and Secrets Store CSI
// SecretProviderClasses. The caches hold their metadata and a digest of
// their data, never the data, so memory follows the number of sources and
// not their size.
package source

import (
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/internal/digest"
	"github.com/ripple-dev/ripple/internal/refs"
)

// digestAnnotation holds, on cached ConfigMaps, Secrets and CSI pod
// statuses only, the Reloader SHA1 of the data the transform dropped. It
// never reaches the API server: Ripple does not write sources.
const digestAnnotation = "internal.ripple.dev/sha1"

// keysAnnotation holds, on cached ConfigMaps and Secrets only, their
// digest.KeyTable: each key's name and a short digest of its value, for
// workloads that reload on the keys they use. Like digestAnnotation it
// never reaches the API server; it is left out when there are no keys.
const keysAnnotation = "internal.ripple.dev/keys"

// othersAnnotation holds, on cached ConfigMaps and Secrets only, the
// other forms of their digests (digest.Digests.Others): "digest|table"
// items joined by " ", which neither a digest nor a table holds; a table
// equal to keysAnnotation's is left empty, as only a config without keys
// has an empty one (and then every table is). Like
// digestAnnotation it never reaches the API server; it is left out when
// there are none.
const othersAnnotation = "internal.ripple.dev/others"

// writtenAnnotation holds, on cached ConfigMaps and Secrets only, when
// their data was last written: the latest time of a managedFields entry
// that owns data (RFC 3339, to the second). Like digestAnnotation it never
// reaches the API server.
const writtenAnnotation = "internal.ripple.dev/written"

// writerAnnotation holds, on cached ConfigMaps and Secrets only, the
// field manager of the managedFields entry that last wrote their data
// (at most maxWriter bytes). Like digestAnnotation it never reaches the
// API server.
const writerAnnotation = "internal.ripple.dev/writer"

// maxWriter bounds the writer kept: a manager's name is the client's to
// choose.
const maxWriter = 128

// transformedAnnotation marks, on cached sources only, an object this
// process transformed. Its value is transformMark, a nonce of the process
// that no object from the API server can carry: a digest annotation a
// user wrote on a config without data is recomputed, never taken as the
// transform's own.
const transformedAnnotation = "internal.ripple.dev/transformed"

var transformMark = string(uuid.NewUUID())

// transformed reports whether o is an object this process transformed.
func transformed(o metav1.Object) bool {
	return o.GetAnnotations()[transformedAnnotation] == transformMark
}

// Written returns when a cached ConfigMap's or Secret's data was last
// written, as its managedFields said; zero when unknown.
func Written(obj client.Object) time.Time {
	t, _ := time.Parse(time.RFC3339, obj.GetAnnotations()[writtenAnnotation])
	return t
}

// Writer returns the field manager that last wrote a cached ConfigMap's
// or Secret's data, as its managedFields said (a hint: a client may write
// them); empty when unknown.
func Writer(obj client.Object) string { return obj.GetAnnotations()[writerAnnotation] }

// LastWrite is when obj, read whole from the API server, was last
// written: its latest managedFields time, else its creation.
func LastWrite(obj client.Object) time.Time {
	t := obj.GetCreationTimestamp().Time
	for _, f := range obj.GetManagedFields() {
		if f.Time != nil && f.Time.After(t) {
			t = f.Time.Time
		}
	}
	return t
}

// dataWritten is the latest time of a managedFields entry of o that owns
// some of its data, and that entry's manager; zero when none says.
func dataWritten(o client.Object) (time.Time, string) {
	var latest time.Time
	var manager string
	for _, e := range o.GetManagedFields() {
		if e.Time == nil || e.FieldsV1 == nil || e.Subresource != "" {
			continue
		}
		raw := e.FieldsV1.GetRawString()
		if strings.Contains(raw, `"f:data"`) || strings.Contains(raw, `"f:binaryData"`) || strings.Contains(raw, `"f:stringData"`) {
			if e.Time.After(latest) {
				latest, manager = e.Time.Time, e.Manager
			}
		}
	}
	return latest, manager[:min(len(manager), maxWriter)]
}

// Digest returns the digest of a cached source.
func Digest(obj client.Object) string { return obj.GetAnnotations()[digestAnnotation] }

// Keys returns the per-key digests of a cached ConfigMap or Secret.
func Keys(obj client.Object) digest.KeyTable {
	return digest.KeyTable(obj.GetAnnotations()[keysAnnotation])
}

// Others returns the other forms of the digests of a cached ConfigMap or
// Secret: those a workload may show for the same data.
func Others(obj client.Object) []digest.Form {
	v := obj.GetAnnotations()[othersAnnotation]
	if v == "" {
		return nil
	}
	var out []digest.Form
	for item := range strings.SplitSeq(v, " ") {
		d, t, _ := strings.Cut(item, "|")
		f := digest.Form{Digest: d, Keys: digest.KeyTable(t)}
		if t == "" {
			f.Keys = Keys(obj)
		}
		out = append(out, f)
	}
	return out
}

// Transform is the cache transform for ConfigMaps and Secrets: it records
// the digests of the data under d, and drops the data.
func Transform(d digest.Digester, obj any) (any, error) {
	o, ok := obj.(client.Object)
	if !ok { // e.g. a tombstone: nothing to strip
		return obj, nil
	}
	if transformed(o) {
		return obj, nil
	}
	var sums digest.Digests
	written, writer := dataWritten(o)
	switch c := obj.(type) {
	case *corev1.ConfigMap:
		sums = d.ConfigMap(c)
		c.Data, c.BinaryData = nil, nil
	case *corev1.Secret:
		sums = d.Secret(c)
		c.Data, c.StringData = nil, nil
	default:
		return obj, nil
	}
	ann := make(map[string]string, len(o.GetAnnotations())+3)
	for k, v := range o.GetAnnotations() {
		// The last-applied annotation of kubectl holds a full copy of the
		// data; it is not needed and would undo the point of the transform.
		// Our annotations set by a user are not ours: they are recomputed.
		if k != corev1.LastAppliedConfigAnnotation && k != keysAnnotation && k != writtenAnnotation && k != writerAnnotation && k != othersAnnotation {
			ann[k] = v
		}
	}
	ann[digestAnnotation], ann[transformedAnnotation] = sums.Digest, transformMark
	if !written.IsZero() {
		ann[writtenAnnotation] = written.UTC().Format(time.RFC3339)
		ann[writerAnnotation] = writer
	}
	if sums.Keys != "" {
		ann[keysAnnotation] = string(sums.Keys)
	}
	if len(sums.Others) > 0 {
		ann[othersAnnotation] = others(sums)
	}
	o.SetAnnotations(ann)
	o.SetManagedFields(nil)
	return obj, nil
}

// TransformBlind is Transform under key alone, with none of the other
// forms: digests that no workload shows, as key is kept nowhere else, so
// that nothing compared with them tells what a workload runs. Two
// versions of a config transformed under one key still compare, key by
// key.
func TransformBlind(key []byte, obj client.Object) {
	_, _ = Transform(digest.Digester{Mode: digest.HMACSHA256, Ring: digest.Ring{Current: key}}, obj)
	ann := obj.GetAnnotations()
	delete(ann, othersAnnotation)
	obj.SetAnnotations(ann)
}

// others is the value of othersAnnotation for sums.
func others(sums digest.Digests) string {
	items := make([]string, len(sums.Others))
	for i, f := range sums.Others {
		if f.Keys == sums.Keys {
			f.Keys = "" // the most common table once, in keysAnnotation
		}
		items[i] = f.Digest + "|" + string(f.Keys)
	}
	return strings.Join(items, " ")
}

// Object returns an empty object of a source kind. A SecretProviderClass
// is cached as metadata: only its annotations count.
func Object(kind refs.Kind) client.Object {
	obj, _ := empty(kind)
	return obj
}

// List returns an empty list of a source kind.
func List(kind refs.Kind) client.ObjectList {
	_, list := empty(kind)
	return list
}

func empty(kind refs.Kind) (client.Object, client.ObjectList) {
	switch kind {
	case refs.Secret:
		return &corev1.Secret{}, &corev1.SecretList{}
	case refs.SecretProviderClass:
		spc := &metav1.PartialObjectMetadata{}
		spc.SetGroupVersionKind(SecretProviderClassGVK)
		l := &metav1.PartialObjectMetadataList{}
		l.SetGroupVersionKind(csiGroupVersion.WithKind("SecretProviderClassList"))
		return spc, l
	}
	return &corev1.ConfigMap{}, &corev1.ConfigMapList{}
}

// Names returns the names of the items of a list.
func Names(list client.ObjectList) []string {
	var names []string
	_ = apimeta.EachListItem(list, func(o runtime.Object) error {
		if m, err := apimeta.Accessor(o); err == nil {
			names = append(names, m.GetName())
		}
		return nil
	})
	return names
}

// Watched are the source kinds watched directly: ConfigMaps and Secrets.
// SecretProviderClasses are watched through their pod statuses, once the
// CSI driver's API is served.
func Watched(kinds []refs.Kind) []refs.Kind {
	var out []refs.Kind
	for _, k := range kinds {
		if k != refs.SecretProviderClass {
			out = append(out, k)
		}
	}
	return out
}
