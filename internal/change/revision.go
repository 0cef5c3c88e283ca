package change

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	"github.com/ripple-dev/ripple/internal/digest"
	"github.com/ripple-dev/ripple/internal/refs"
)

// revisionLen is how many hex digits of the MAC name a revision: 64 bits,
// enough to tell one config's data versions apart.
const revisionLen = 16

// Revisions are the revisions that name a config's data under each key
// of the ring, the current key's first: a MAC bound to the namespace, the
// config's kind and name, so equal data in two configs has two
// revisions, and nobody without the key can test a guess of the data
// against one. Without a key, a ConfigMap's data is named by an unkeyed
// SHA-256 (its data is no secret; Reloader's digest of it is on its
// workloads already) and a Secret's by nothing: no ConfigRollout is made
// for it.
func Revisions(ring digest.Ring, ns string, ref refs.Ref, sum string) []string {
	var out []string
	for _, key := range [][]byte{ring.Current, ring.Previous} {
		if len(key) > 0 {
			out = append(out, revision(hmac.New(sha256.New, key), ns, ref, sum))
		}
	}
	if len(out) == 0 && ref.Kind == refs.ConfigMap {
		out = append(out, revision(sha256.New(), ns, ref, sum))
	}
	return out
}

func revision(h hash.Hash, ns string, ref refs.Ref, sum string) string {
	for _, part := range []string{"ripple.dev/configrollout", ns, string(ref.Kind), ref.Name, sum} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:revisionLen]
}

// maxNameStem is how much of a config's name starts the name of its
// ConfigRollouts; the rest is the suffix (a name is at most 253).
const maxNameStem = 200

// Name is the name of the ConfigRollout of the change of config ref (uid)
// to revision, first made at the config's resourceVersion: the same
// change seen again (a reconcile after a failed write, a restart) makes
// the same name, and data that comes back later (A, B, then A) a new one.
func Name(ref refs.Ref, uid types.UID, revision, resourceVersion string) string {
	h := sha256.New()
	for _, part := range []string{string(ref.Kind), string(uid), revision, resourceVersion} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	stem := strings.TrimRight(ref.Name[:min(len(ref.Name), maxNameStem)], ".-")
	return stem + "-" + hex.EncodeToString(h.Sum(nil))[:10]
}
