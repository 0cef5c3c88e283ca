package digest

import (
	"crypto/hmac"
	"crypto/sha1" //nolint:gosec // Reloader compatibility, not security.
	"crypto/sha256"
	"hash"

	corev1 "k8s.io/api/core/v1"
)

// Mode is how the Reloader-compatible digest of a config (the value of a
// STAKATER_* env var or of the last-reloaded-from annotation) is made.
type Mode string

const (
	// SHA1 is Reloader's digest: the SHA1 hex of the data, unkeyed.
	SHA1 Mode = "sha1"
	// HMACSHA256 is the HMAC-SHA256 hex of the same input under the
	// install's key: nobody without the key can test a guess of the data
	// against it.
	HMACSHA256 Mode = "hmac-sha256"
)

// Modes are the accepted values of --digest.
var Modes = []Mode{SHA1, HMACSHA256}

// Ring is the install's digest key ring: the key digests are made with,
// and the one before it, whose digests are still recognised after a
// rotation. Either may be nil.
type Ring struct {
	Current, Previous []byte
}

// Digester makes the digests of configs' data under a mode and a key
// ring. The zero Digester makes Reloader's digests and unkeyed key tables,
// the form before keys existed.
type Digester struct {
	Mode Mode
	Ring Ring
}

// Form is one way of digesting a config's data: its Reloader-compatible
// digest and its key table.
type Form struct {
	Digest string
	Keys   KeyTable
}

// Digests is what Ripple keeps of a config's data: the form it writes,
// and the other forms a workload may show for the same data (written in
// the other mode, under the previous key, or before keys existed), which
// are therefore no change.
type Digests struct {
	Form
	Others []Form
}

// ConfigMap returns the digests of a ConfigMap's data.
func (d Digester) ConfigMap(cm *corev1.ConfigMap) Digests {
	return d.digests(func(h hash.Hash) string { return configMapSum(cm, h) },
		func(key []byte) KeyTable { return configMapKeys(cm, key) })
}

// Secret returns the digests of a Secret's data.
func (d Digester) Secret(s *corev1.Secret) Digests {
	return d.digests(func(h hash.Hash) string { return secretSum(s, h) },
		func(key []byte) KeyTable { return secretKeys(s, key) })
}

// digests makes the forms of one config's data: unkeyed, under the
// current key and under the previous one. The key table written is the
// current key's whatever the mode: key tables are Ripple's own format, so
// keying them breaks no compatibility.
func (d Digester) digests(sum func(hash.Hash) string, table func(key []byte) KeyTable) Digests {
	unkeyed := Form{Digest: sum(newHash(nil)), Keys: table(nil)}
	if d.Ring.Current == nil {
		return Digests{Form: unkeyed}
	}
	out := Digests{Form: unkeyed, Others: []Form{unkeyed}}
	for _, key := range [][]byte{d.Ring.Current, d.Ring.Previous} {
		if key == nil {
			continue
		}
		out.Others = append(out.Others, Form{Digest: sum(newHash(key)), Keys: table(key)})
	}
	keyed := out.Others[1]
	out.Keys = keyed.Keys
	if d.Mode == HMACSHA256 {
		out.Digest = keyed.Digest
	}
	return out
}

// newHash is SHA1, Reloader's, without a key, else HMAC-SHA256.
func newHash(key []byte) hash.Hash {
	if key == nil {
		return sha1.New() //nolint:gosec // Reloader compatibility.
	}
	return hmac.New(sha256.New, key)
}

// keyHash is the hash of one value of a key table: SHA-256 without a key
// (the form before keys existed), else HMAC-SHA256.
func keyHash(key []byte) hash.Hash {
	if key == nil {
		return sha256.New()
	}
	return hmac.New(sha256.New, key)
}
