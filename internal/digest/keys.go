package digest

import (
	"crypto/sha1" //nolint:gosec // the same hex form as Reloader's digests; not for security.
	"encoding/base64"
	"encoding/hex"
	"iter"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// KeyTable is a compact table of per-key digests of a ConfigMap or a
// Secret: "key=digest" entries sorted as strings and joined by ",", where the
// digest is the first 9 bytes of the value's HMAC-SHA256 under the
// install's key (Digester), or of its SHA-256 in tables made before keys
// existed, in unpadded base64url (12 characters). Keys cannot hold "=" or ",", and the digest alphabet
// neither, so the table parses back unambiguously.
//
// It holds no data and its size follows the number of keys, never the size
// of the values: a workload that opts in to per-key reloads compares the
// keys it uses through it, after the cache has dropped the data. 72 bits
// make an accidental collision between two values of one key negligible.
type KeyTable string

// keyDigestBytes is how much of a value's hash a table keeps.
const keyDigestBytes = 9

// keysDomain starts the input of a per-key digest, so that it can never be
// taken for Reloader's digest of some data.
const keysDomain = "ripple-keys/v1;"

// ConfigMapKeys returns the unkeyed key table of a ConfigMap, the form
// before keys existed; Digester.ConfigMap makes the keyed one.
func ConfigMapKeys(cm *corev1.ConfigMap) KeyTable { return configMapKeys(cm, mac{}) }

// SecretKeys returns the unkeyed key table of a Secret's data, the form
// before keys existed; Digester.Secret makes the keyed one.
func SecretKeys(s *corev1.Secret) KeyTable { return secretKeys(s, mac{}) }

// configMapKeys is the key table of a ConfigMap in form m.
// A key of binaryData digests its bytes, so moving a value between data
// and binaryData is no change: the pod sees the same bytes.
func configMapKeys(cm *corev1.ConfigMap, m mac) KeyTable {
	if cm == nil {
		return ""
	}
	entries := make([]string, 0, len(cm.Data)+len(cm.BinaryData))
	for k, v := range cm.Data {
		h := m.keyHash(k)
		(&writer{h: h}).string(v)
		entries = append(entries, k+"="+short(h.Sum(nil)))
	}
	for k, v := range cm.BinaryData {
		h := m.keyHash(k)
		h.Write(v)
		entries = append(entries, k+"="+short(h.Sum(nil)))
	}
	return join(entries)
}

// secretKeys is the key table of a Secret's data in form m.
func secretKeys(s *corev1.Secret, m mac) KeyTable {
	if s == nil {
		return ""
	}
	entries := make([]string, 0, len(s.Data))
	for k, v := range s.Data {
		h := m.keyHash(k)
		h.Write(v)
		entries = append(entries, k+"="+short(h.Sum(nil)))
	}
	return join(entries)
}

func short(sum []byte) string {
	return base64.RawURLEncoding.EncodeToString(sum[:keyDigestBytes])
}

// join sorts the entries, so that one set of keys and values always gives
// one table, and joins them into one string, the only allocation kept.
func join(entries []string) KeyTable {
	slices.Sort(entries)
	return KeyTable(strings.Join(entries, ","))
}

// All yields each key of the table with its digest, in table order.
func (t KeyTable) All() iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		if t == "" {
			return
		}
		for e := range strings.SplitSeq(string(t), ",") {
			k, d, _ := strings.Cut(e, "=")
			if !yield(k, d) {
				return
			}
		}
	}
}

// Of returns the digest of the keys of the table that count: the SHA1
// hex, the form of Reloader's digests, of the counted "key=digest" entries
// in table order. A counted key that is added or removed changes it; a key
// that does not count never does.
func (t KeyTable) Of(counts func(key string) bool) string {
	h := sha1.New() //nolint:gosec // see the import
	w := &writer{h: h}
	w.string(keysDomain)
	for k, d := range t.All() {
		if counts(k) {
			w.string(k)
			w.string("=")
			w.string(d)
			w.string(";")
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}
