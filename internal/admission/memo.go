package admission

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"hash"
	"io"
	"sync"
	"time"

	"k8s.io/utils/lru"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// MemoSize is how many verdicts the memo keeps, and MemoTTL how long
// one holds. A verdict reads which workloads read the config (and their
// annotations, Namespaces and rollouts), none of which its key holds:
// a workload added or removed as a reader, or one whose policy or window
// changed, is seen only once the entry expires. A few seconds of a stale
// warning is the price of answering a flood of identical (or forged)
// reviews for nothing; a verdict is a warning, and the guard's count is
// at most MemoTTL old.
const (
	MemoSize = 256
	MemoTTL  = 3 * time.Second
)

// memo keeps the latest verdicts by write: the config's namespace, kind
// and name, and the objects before and after it, as one HMAC-SHA256 under
// a key made at random for the process. Neither the data nor a digest
// that another process could compute is kept: only that MAC, the
// warning line (key and workload names) and the counts the guard reads.
type memo struct {
	once  sync.Once
	key   []byte
	cache *lru.Cache // memoKey → memoEntry; it locks itself
}

// memoKey is a write's MAC.
type memoKey [sha256.Size]byte

// memoEntry is a remembered verdict, until it expires.
type memoEntry struct {
	verdict remembered
	expires time.Time
}

// remembered is what Handle needs of a verdict: ok false when there is
// nothing to say; the warning line, the count and the names the guard
// reads. A verdict of 5,000 workloads is not kept whole.
type remembered struct {
	ok              bool
	line            string
	rolls           int
	namespace, kind string
}

func (m *memo) init() {
	m.once.Do(func() {
		m.key = make([]byte, 32)
		_, _ = rand.Read(m.key) // it never fails: it crashes the process instead
		m.cache = lru.New(MemoSize)
	})
}

// keyOf is the MAC of the write of cur over old (either may be nil), of
// kind: their metadata but resourceVersion and managedFields, and their
// data, which the MAC never lets out.
func (m *memo) keyOf(kind string, old, cur client.Object) memoKey {
	m.init()
	mac := hmac.New(sha256.New, m.key)
	_, _ = io.WriteString(mac, kind)
	for _, obj := range []client.Object{old, cur} {
		writeObject(mac, obj)
	}
	var k memoKey
	mac.Sum(k[:0])
	return k
}

// writeObject writes obj to mac, framed, without the fields every write
// changes whatever it does.
func writeObject(mac hash.Hash, obj client.Object) {
	if obj == nil {
		_, _ = mac.Write([]byte{0})
		return
	}
	_, _ = mac.Write([]byte{1})
	c, _ := obj.DeepCopyObject().(client.Object)
	c.SetResourceVersion("")
	c.SetManagedFields(nil)
	b, err := json.Marshal(c) // maps in key order: the same object, the same bytes
	if err != nil {
		b = []byte(err.Error()) // a ConfigMap or Secret: it cannot fail
	}
	var n [8]byte
	for i, l := 0, len(b); i < 8; i, l = i+1, l>>8 {
		n[i] = byte(l)
	}
	_, _ = mac.Write(n[:])
	_, _ = mac.Write(b)
}

// get is the verdict remembered for k at now, if one has not expired.
func (m *memo) get(k memoKey, now time.Time) (remembered, bool) {
	m.init()
	v, ok := m.cache.Get(k)
	if !ok {
		return remembered{}, false
	}
	e, _ := v.(memoEntry)
	if !now.Before(e.expires) {
		m.cache.Remove(k)
		return remembered{}, false
	}
	return e.verdict, true
}

// put remembers r for k from now for MemoTTL.
func (m *memo) put(k memoKey, r remembered, now time.Time) {
	m.init()
	m.cache.Add(k, memoEntry{verdict: r, expires: now.Add(MemoTTL)})
}

// len is how many verdicts are kept, expired or not.
func (m *memo) len() int {
	m.init()
	return m.cache.Len()
}
