package pin

import (
	"hash/fnv"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// maxVerified bounds the copies Verified remembers: past it, it forgets
// them all and learns again, one full check per copy.
const maxVerified = 10000

// Verified remembers the copies a Copier checked (Ripple's copy of the
// data their name says: copies are immutable, so that stays true while
// the object, by its UID, exists) and the workloads it made owners of
// them, and gathers the workloads that become owners of one copy at once
// into one write. Many workloads pinning one config then cost a few
// patches, not two reads, a refused create and a patch each. Safe for
// concurrent use; a nil Verified remembers nothing.
type Verified struct {
	mu      sync.Mutex
	copies  map[types.NamespacedName]*verifiedCopy
	pending map[types.NamespacedName]*ownerBatch
	// stripes serialize the writes of one copy (lock): its creation and
	// the patches that add owners. Copies sharing a stripe wait for each
	// other, which costs little at 64.
	stripes [64]sync.Mutex
}

type verifiedCopy struct {
	uid    types.UID
	owners map[types.UID]bool
}

// ownerBatch are the workloads waiting to become owners of a copy, written
// together by the first of them.
type ownerBatch struct {
	refs []metav1.OwnerReference
	done chan struct{}
	err  error
}

// owns reports the UID of the copy key when it is verified, and whether
// owner is among the owners this process gave it.
func (v *Verified) owns(key types.NamespacedName, owner types.UID) (uid types.UID, verified, owns bool) {
	if v == nil {
		return "", false, false
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	c, ok := v.copies[key]
	if !ok {
		return "", false, false
	}
	return c.uid, true, c.owners[owner]
}

// remember records the copy key, of uid, as verified, owned by owners.
func (v *Verified) remember(key types.NamespacedName, uid types.UID, owners ...types.UID) {
	if v == nil {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	c, ok := v.copies[key]
	if !ok || c.uid != uid {
		if v.copies == nil || len(v.copies) >= maxVerified {
			v.copies = map[types.NamespacedName]*verifiedCopy{}
		}
		c = &verifiedCopy{uid: uid, owners: map[types.UID]bool{}}
		v.copies[key] = c
	}
	for _, o := range owners {
		c.owners[o] = true
	}
}

// forget drops the copy key, or, with owners, only those owners of it.
func (v *Verified) forget(key types.NamespacedName, owners ...types.UID) {
	if v == nil {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	c, ok := v.copies[key]
	switch {
	case !ok:
	case len(owners) == 0:
		delete(v.copies, key)
	default:
		for _, o := range owners {
			delete(c.owners, o)
		}
	}
}

// lock holds the stripe of the copy key until the function it returns is
// called.
func (v *Verified) lock(key types.NamespacedName) func() {
	if v == nil {
		return func() {}
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(key.String()))
	m := &v.stripes[h.Sum32()%uint32(len(v.stripes))]
	m.Lock()
	return m.Unlock
}

// addOwner makes owner an owner of the copy key by write, which adds
// every owner given to it: the first caller for a copy waits for the
// copy's stripe, then writes for itself and for every caller that came
// meanwhile, and each gets the write's error. Without a Verified, each
// caller writes for itself.
func (v *Verified) addOwner(key types.NamespacedName, owner metav1.OwnerReference, write func([]metav1.OwnerReference) error) error {
	if v == nil {
		return write([]metav1.OwnerReference{owner})
	}
	v.mu.Lock()
	b, joined := v.pending[key]
	if !joined {
		b = &ownerBatch{done: make(chan struct{})}
		if v.pending == nil {
			v.pending = map[types.NamespacedName]*ownerBatch{}
		}
		v.pending[key] = b
	}
	b.refs = append(b.refs, owner)
	v.mu.Unlock()
	if joined {
		<-b.done
		return b.err
	}
	unlock := v.lock(key)
	v.mu.Lock()
	delete(v.pending, key) // later callers gather for the next write
	v.mu.Unlock()
	b.err = write(b.refs)
	unlock()
	close(b.done)
	return b.err
}
