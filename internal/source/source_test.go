package source

import (
	"bytes"
	"maps"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/internal/digest"
)

func secret(values map[string][]byte) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Annotations: map[string]string{"team": "a"}}, Data: values}
}

// The transform keeps the digest and the per-key table, and no data.
func TestTransformKeepsKeysNotData(t *testing.T) {
	s := secret(map[string][]byte{"tls.crt": []byte("certificate-bytes"), "tls.key": {0xff, 0x00, 0x10}})
	want, wantKeys := digest.Secret(s), digest.SecretKeys(s)
	if _, err := Transform(digest.Digester{}, s); err != nil {
		t.Fatal(err)
	}
	if s.Data != nil || Digest(s) != want || Keys(s) != wantKeys || s.Annotations["team"] != "a" {
		t.Fatalf("data %v, digest %q, keys %q, annotations %v", s.Data, Digest(s), Keys(s), s.Annotations)
	}
	for k, v := range s.Annotations {
		if strings.Contains(v, "certificate-bytes") {
			t.Errorf("annotation %s holds data", k)
		}
	}
	// Once transformed, again is a no-op.
	if _, _ = Transform(digest.Digester{}, s); Keys(s) != wantKeys {
		t.Fatalf("keys %q after a second transform", Keys(s))
	}
}

func TestTransformConfigMapBinaryData(t *testing.T) {
	cm := &corev1.ConfigMap{Data: map[string]string{"a": "1"}, BinaryData: map[string][]byte{"b": {0, 1, 2}}}
	wantKeys := digest.ConfigMapKeys(cm)
	if _, err := Transform(digest.Digester{}, cm); err != nil {
		t.Fatal(err)
	}
	if cm.Data != nil || cm.BinaryData != nil || Keys(cm) != wantKeys || !strings.Contains(string(wantKeys), "b=") {
		t.Fatalf("data %v %v, keys %q", cm.Data, cm.BinaryData, Keys(cm))
	}
}

// A keys annotation set by a user is replaced; no keys, no annotation.
func TestTransformOwnsTheKeysAnnotation(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{keysAnnotation: "a=forged"}}, Data: map[string]string{}}
	if _, err := Transform(digest.Digester{}, cm); err != nil {
		t.Fatal(err)
	}
	if _, ok := cm.Annotations[keysAnnotation]; ok {
		t.Fatalf("keys %q on a ConfigMap without keys", Keys(cm))
	}
}

// A digest a user wrote on a config without data is not taken as the
// transform's own: the config's digest is that of no data, and a second
// transform of the cached object changes nothing.
func TestTransformRecomputesAForgedDigest(t *testing.T) {
	forged := map[string]string{digestAnnotation: "1111111111111111111111111111111111111111", writtenAnnotation: "2000-01-01T00:00:00Z", transformedAnnotation: "guess"}
	for name, obj := range map[string]interface {
		metav1.Object
		runtime.Object
	}{
		"ConfigMap": &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Annotations: maps.Clone(forged)}},
		"Secret":    &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Annotations: maps.Clone(forged)}},
	} {
		t.Run(name, func(t *testing.T) {
			var want string
			switch c := obj.(type) {
			case *corev1.ConfigMap:
				want = digest.ConfigMap(c)
			case *corev1.Secret:
				want = digest.Secret(c)
			}
			if _, err := Transform(digest.Digester{}, obj); err != nil {
				t.Fatal(err)
			}
			cached := obj.(client.Object)
			if Digest(cached) != want || !Written(cached).IsZero() {
				t.Fatalf("digest %q written %v, want %q (no data) and no write time", Digest(cached), Written(cached), want)
			}
			if _, _ = Transform(digest.Digester{}, obj); Digest(cached) != want {
				t.Fatalf("digest %q after a second transform, want %q", Digest(cached), want)
			}
		})
	}
}

// What the cache keeps per object does not follow the size of the values.
func TestTransformSizeIgnoresValueSize(t *testing.T) {
	kept := func(size int) int {
		data := map[string][]byte{}
		for _, k := range []string{"a", "b", "c", "d"} {
			data[k] = bytes.Repeat([]byte{'x'}, size)
		}
		s := secret(data)
		if _, err := Transform(digest.Digester{}, s); err != nil {
			t.Fatal(err)
		}
		n := 0
		for k, v := range s.Annotations {
			n += len(k) + len(v)
		}
		return n
	}
	if small, large := kept(1), kept(1<<20); small != large {
		t.Fatalf("%d annotation bytes for 1-byte values, %d for 1 MiB ones", small, large)
	}
}

// The transform keeps when the data was last written: the latest
// managedFields entry that owns data, not one that owns only metadata.
func TestTransformKeepsDataWritten(t *testing.T) {
	at := func(s string) *metav1.Time {
		v, _ := time.Parse(time.RFC3339, s)
		return &metav1.Time{Time: v}
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "app", ManagedFields: []metav1.ManagedFieldsEntry{
			{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate, Time: at("2026-11-27T07:00:00Z"),
				FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:data":{"f:k":{}}}`)},
			{Manager: "labeller", Operation: metav1.ManagedFieldsOperationUpdate, Time: at("2026-11-27T08:00:00Z"),
				FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:labels":{"f:x":{}}}}`)},
		}},
		Data: map[string]string{"k": "v"},
	}
	out, err := Transform(digest.Digester{}, cm)
	if err != nil {
		t.Fatal(err)
	}
	if got := Written(out.(*corev1.ConfigMap)); !got.Equal(at("2026-11-27T07:00:00Z").Time) {
		t.Errorf("Written = %v, want the data manager's 07:00", got)
	}
	if got := Written(&corev1.ConfigMap{}); !got.IsZero() {
		t.Errorf("Written of an object without the annotation = %v, want zero", got)
	}
}

// The cache keeps every form of a config's digests under a key ring, and
// reads them back as the Digester made them; a config without keys too.
func TestTransformKeepsTheOtherForms(t *testing.T) {
	d := digest.Digester{Mode: digest.HMACSHA256, Ring: digest.Ring{Current: []byte("current key"), Previous: []byte("previous key")}}
	for _, data := range []map[string][]byte{{"pin": []byte("123456"), "user": []byte("bob")}, nil} {
		s := secret(data)
		want := d.Secret(s)
		if _, err := Transform(d, s); err != nil {
			t.Fatal(err)
		}
		got := Others(s)
		if Digest(s) != want.Digest || Keys(s) != want.Keys || len(got) != len(want.Others) {
			t.Fatalf("digest %q, keys %q, others %+v; want %+v", Digest(s), Keys(s), got, want)
		}
		for i := range got {
			if got[i] != want.Others[i] {
				t.Errorf("form %d: %+v, want %+v", i, got[i], want.Others[i])
			}
		}
		if strings.Contains(s.Annotations[othersAnnotation], string(want.Keys)+" ") && want.Keys != "" {
			t.Errorf("the keyed table is kept twice: %q", s.Annotations[othersAnnotation])
		}
	}
}
