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
	// HMACSHA256 is the HMAC-SHA256 hex under the install's key of the
	// config's namespace, kind and name and then of the same input as
	// Reloader's: nobody without the key can test a guess of the data
	// against it, and equal data in two configs gives two digests, so a
	// user who may write one config cannot test guesses of another's
	// through the digests Ripple writes.
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
// the other mode, under the previous key, before digests were bound to
// their config, or before keys existed), which are therefore no change.
//
// Others, when there is a key, are in this order: the unkeyed form, then
// for the current key and then the previous one, the form not bound to
// the config (the MAC of the data alone, as Ripple wrote it before) and
// the bound one.
type Digests struct {
	Form
	Others []Form
}

// ConfigMap returns the digests of a ConfigMap's data.
func (d Digester) ConfigMap(cm *corev1.ConfigMap) Digests {
	var ns, name string
	if cm != nil {
		ns, name = cm.Namespace, cm.Name
	}
	return d.digests(binding(ns, "ConfigMap", name), func(h hash.Hash) string { return configMapSum(cm, h) },
		func(m mac) KeyTable { return configMapKeys(cm, m) })
}

// Secret returns the digests of a Secret's data.
func (d Digester) Secret(s *corev1.Secret) Digests {
	var ns, name string
	if s != nil {
		ns, name = s.Namespace, s.Name
	}
	return d.digests(binding(ns, "Secret", name), func(h hash.Hash) string { return secretSum(s, h) },
		func(m mac) KeyTable { return secretKeys(s, m) })
}

// binding names the config a bound form is of: its namespace, kind and
// name, each ended by a NUL, which none of them may hold.
func binding(ns, kind, name string) string {
	return ns + "\x00" + kind + "\x00" + name + "\x00"
}

// digests makes the forms of one config's data: unkeyed, and under the
// current key and the previous one each unbound and bound to the config.
// The key table written is the current key's bound one whatever the mode:
// key tables are Ripple's own format, so keying them breaks no
// compatibility.
func (d Digester) digests(bound string, sum func(hash.Hash) string, table func(mac) KeyTable) Digests {
	form := func(m mac) Form { return Form{Digest: sum(m.digestHash()), Keys: table(m)} }
	unkeyed := form(mac{})
	if d.Ring.Current == nil {
		return Digests{Form: unkeyed}
	}
	out := Digests{Others: []Form{unkeyed}}
	for _, key := range [][]byte{d.Ring.Current, d.Ring.Previous} {
		if key != nil {
			out.Others = append(out.Others, form(mac{key: key}), form(mac{key: key, binding: bound}))
		}
	}
	current := out.Others[2] // the current key's, bound
	out.Form = Form{Digest: unkeyed.Digest, Keys: current.Keys}
	if d.Mode == HMACSHA256 {
		out.Digest = current.Digest
	}
	return out
}

// RevisionSum is the digest of a config's data that its ConfigRollouts'
// revisions are made of, from the digest written and the other forms
// (Digests.Others): the one the mode wrote before digests were bound to
// their config (Reloader's SHA1, or with --digest=hmac-sha256 the MAC of
// the data alone under the current key), so that binding them changed no
// revision: a change in flight keeps its ConfigRollout across the upgrade.
// A revision is itself a MAC bound to the config (change.Revisions).
func RevisionSum(written string, others []Form) string {
	if len(others) < 2 || written == others[0].Digest {
		return written
	}
	return others[1].Digest
}

// mac is how one form hashes: under key (nil: unkeyed) and, for a bound
// form, after binding, which names the config.
type mac struct {
	key     []byte
	binding string
}

// The domains that start a bound form's MAC input: a whole config's, and
// one value of its key table's.
const (
	boundDigestDomain = "ripple.dev/digest/v2\x00"
	boundKeyDomain    = "ripple.dev/key/v2\x00"
)

// digestHash is the hash of a Reloader-compatible digest: SHA1,
// Reloader's, without a key, else HMAC-SHA256.
func (m mac) digestHash() hash.Hash {
	if m.key == nil {
		return sha1.New() //nolint:gosec // Reloader compatibility.
	}
	h := hmac.New(sha256.New, m.key)
	if m.binding != "" {
		h.Write([]byte(boundDigestDomain + m.binding))
	}
	return h
}

// keyHash is the hash of the value of key name in a key table: SHA-256
// without a key (the form before keys existed), else HMAC-SHA256, which
// the bound form starts with the config and the key's name.
func (m mac) keyHash(name string) hash.Hash {
	if m.key == nil {
		return sha256.New()
	}
	h := hmac.New(sha256.New, m.key)
	if m.binding != "" {
		w := &writer{h: h}
		w.string(boundKeyDomain + m.binding)
		w.string(name)
		w.string("\x00")
	}
	return h
}
