// Package digest computes the SHA1 digests Stakater Reloader records for
// ConfigMaps, Secrets and SecretProviderClassPodStatuses.
//
// The input encoding is Reloader's, ambiguities included: one "key=value"
// entry per item, entries sorted as strings and joined with ";". Matching it
// byte for byte means digests Reloader already wrote on workloads stay valid,
// so switching to Ripple does not roll every workload out once more.
//
// Digests run on every cached object and Secret values can be 1 MiB, so the
// entries are sorted in place and streamed into the hash rather than joined
// into one string first.
package digest

import (
	"cmp"
	"crypto/sha1" //nolint:gosec // Reloader compatibility, not security.
	"encoding/base64"
	"encoding/hex"
	"hash"
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// DeleteMarker is the hash Reloader's annotations strategy writes when a
// source is deleted: the SHA1 of "__RELOADER_EMPTY_DELETE_MARKER__".
const DeleteMarker = "aae45badef99284e4dae01d6046154ea9d99532f"

// secretProviderClassNameKey is the key of the extra entry Reloader adds to
// a SecretProviderClassPodStatus digest.
const secretProviderClassNameKey = "SecretProviderClassName"

// ConfigMap returns Reloader's digest of a ConfigMap: "key=value" for data and
// "key=<standard base64>" for binaryData. A nil or empty ConfigMap hashes to
// SHA1 of the empty string.
func ConfigMap(cm *corev1.ConfigMap) string {
	return configMapSum(cm, sha1.New()) //nolint:gosec // Reloader compatibility.
}

// configMapSum is ConfigMap's digest under hash h.
func configMapSum(cm *corev1.ConfigMap, h hash.Hash) string {
	if cm == nil {
		return sum(nil, h)
	}
	entries := make([]entry, 0, len(cm.Data)+len(cm.BinaryData))
	for k, v := range cm.Data {
		entries = append(entries, entry{key: k, str: v})
	}
	for k, v := range cm.BinaryData {
		entries = append(entries, entry{key: k, raw: v, base64: true})
	}
	return sum(entries, h)
}

// Secret returns Reloader's digest of a Secret: "key=<raw bytes>" for data.
// Type, labels and annotations do not count, and stringData never reaches a
// stored Secret because the API server folds it into data.
func Secret(s *corev1.Secret) string {
	return secretSum(s, sha1.New()) //nolint:gosec // Reloader compatibility.
}

// secretSum is Secret's digest under hash h.
func secretSum(s *corev1.Secret, h hash.Hash) string {
	if s == nil {
		return sum(nil, h)
	}
	entries := make([]entry, 0, len(s.Data))
	for k, v := range s.Data {
		entries = append(entries, entry{key: k, raw: v})
	}
	return sum(entries, h)
}

// SecretProviderClassObject is one entry of a SecretProviderClassPodStatus
// status.objects.
type SecretProviderClassObject struct {
	ID      string
	Version string
}

// SecretProviderClassPodStatus returns Reloader's digest of a
// SecretProviderClassPodStatus: "id=version" per object plus
// "SecretProviderClassName=<spcName>". The pod is left out on purpose, so
// every pod of a workload yields the same digest.
func SecretProviderClassPodStatus(spcName string, objects []SecretProviderClassObject) string {
	entries := make([]entry, 0, len(objects)+1)
	for _, o := range objects {
		entries = append(entries, entry{key: o.ID, str: o.Version})
	}
	entries = append(entries, entry{key: secretProviderClassNameKey, str: spcName})
	return sum(entries, sha1.New()) //nolint:gosec // Reloader compatibility.
}

// entry is one "key=value" item. The value is str, or raw when raw is set;
// base64 means raw enters the digest base64-encoded. Keeping bytes as bytes
// avoids copying Secret values into strings.
type entry struct {
	key    string
	str    string
	raw    []byte
	base64 bool
}

func (e *entry) valueLen() int {
	switch {
	case e.base64:
		return base64.StdEncoding.EncodedLen(len(e.raw))
	case e.raw != nil:
		return len(e.raw)
	}
	return len(e.str)
}

// at returns byte i of the entry as Reloader would format it, "key=value".
func (e *entry) at(i int) (byte, bool) {
	if i < len(e.key) {
		return e.key[i], true
	}
	if i == len(e.key) {
		return '=', true
	}
	j := i - len(e.key) - 1
	if j >= e.valueLen() {
		return 0, false
	}
	switch {
	case e.base64:
		// Encode only the 3-byte group that holds character j.
		g := j / 4 * 3
		var quad [4]byte
		base64.StdEncoding.Encode(quad[:], e.raw[g:min(g+3, len(e.raw))])
		return quad[j%4], true
	case e.raw != nil:
		return e.raw[j], true
	}
	return e.str[j], true
}

// compareEntries orders entries as sort.Strings orders Reloader's
// "key=value" strings, without building them.
func compareEntries(a, b entry) int {
	// Keys decide unless one is a prefix of the other. With valid keys,
	// which cannot contain "=", the byte right after the shorter key then
	// decides, so the loop below is short except for malformed input.
	n := min(len(a.key), len(b.key))
	if c := cmp.Compare(a.key[:n], b.key[:n]); c != 0 {
		return c
	}
	for i := n; ; i++ {
		ca, okA := a.at(i)
		cb, okB := b.at(i)
		switch {
		case !okA && !okB:
			return 0
		case !okA:
			return -1
		case !okB:
			return 1
		case ca != cb:
			return cmp.Compare(ca, cb)
		}
	}
}

// sum sorts entries in place and returns the hex of their hash under h,
// joined by ";".
func sum(entries []entry, h hash.Hash) string {
	slices.SortFunc(entries, compareEntries)
	w := &writer{h: h}
	for i := range entries {
		e := &entries[i]
		if i > 0 {
			w.string(";")
		}
		w.string(e.key)
		w.string("=")
		switch {
		case e.base64:
			w.base64(e.raw)
		case e.raw != nil:
			w.h.Write(e.raw)
		default:
			w.string(e.str)
		}
	}
	return hex.EncodeToString(w.h.Sum(nil))
}

// writer feeds strings and base64 into a hash through one fixed buffer, as
// hash.Hash takes only []byte and converting would copy each value.
type writer struct {
	h   hash.Hash
	buf [bufSize]byte
}

// bufSize is a multiple of 4 so that base64 chunks fill it exactly.
const bufSize = 512

func (w *writer) string(s string) {
	for len(s) > 0 {
		n := copy(w.buf[:], s)
		w.h.Write(w.buf[:n])
		s = s[n:]
	}
}

// base64 writes the standard encoding of b. Chunks are a multiple of 3 bytes
// so that only the final chunk can carry padding, as in a one-shot encode.
func (w *writer) base64(b []byte) {
	const chunk = bufSize / 4 * 3
	for len(b) > 0 {
		n := min(chunk, len(b))
		m := base64.StdEncoding.EncodedLen(n)
		base64.StdEncoding.Encode(w.buf[:m], b[:n])
		w.h.Write(w.buf[:m])
		b = b[n:]
	}
}
