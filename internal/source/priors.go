package source

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/internal/digest"
	"github.com/ripple-dev/ripple/internal/refs"
)

// Prior is what a ConfigMap's or Secret's data was before the latest
// change of it that this Ripple saw, and when it saw that change.
type Prior struct {
	Digest string
	Keys   digest.KeyTable
	Seen   time.Time
	// UID is the source's: a source deleted and created again is another.
	UID types.UID
}

// Priors keeps the Prior of every ConfigMap and Secret whose data changed
// since start. A workload's baseline (what it last applied) is written by
// its reconcile, and at start thousands of those wait at low priority
// behind the changes that arrive meanwhile: a workload that existed before
// a change but has no baseline yet compares with the Prior, so that change
// rolls it instead of becoming its baseline. One entry per changed source,
// dropped when the source is deleted.
//
// The cache transform records a Prior (Transform), before the informer's
// store holds the change: client-go updates the store first and tells the
// informer's handlers afterwards, asynchronously, so a Prior kept by a
// handler could come after a reconcile that read the change from the
// cache, and that change would become the workload's baseline.
type Priors struct {
	// Clock tells when a change is seen.
	Clock clock.PassiveClock
	// Digester digests the data; set before the caches start.
	Digester digest.Digester

	mu   sync.Mutex
	seen map[priorKey]Prior
	// stores are the informers' stores of each kind: one, or one per
	// namespace with --namespaces.
	stores map[refs.Kind][]Stored
}

// Stored is an informer's store, read by key ("namespace/name").
type Stored interface {
	GetByKey(key string) (item any, exists bool, err error)
}

type priorKey struct {
	kind refs.Kind
	name types.NamespacedName
}

// Track has the Transform of kind compare each new version with what
// store, an informer's store of kind, holds.
func (p *Priors) Track(kind refs.Kind, store Stored) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stores == nil {
		p.stores = map[refs.Kind][]Stored{}
	}
	p.stores[kind] = append(p.stores[kind], store)
}

// Transform is the cache transform of the sources of kind: Transform,
// and the Prior of a change, from the version the informer's store holds
// (the informer calls its transform before it stores the result).
func (p *Priors) Transform(kind refs.Kind) toolscache.TransformFunc {
	return func(obj any) (any, error) {
		out, err := Transform(p.Digester, obj)
		if err != nil {
			return out, err
		}
		if cur, ok := out.(client.Object); ok && KindOf(cur) == kind {
			if old := p.stored(kind, cur); old != nil {
				p.Observe(kind, old, cur, p.Clock.Now())
			}
		}
		return out, nil
	}
}

// stored is the version of cur that the stores of kind hold, if any and
// of the same source (UID).
func (p *Priors) stored(kind refs.Kind, cur client.Object) client.Object {
	p.mu.Lock()
	stores := p.stores[kind]
	p.mu.Unlock()
	key := cur.GetNamespace() + "/" + cur.GetName()
	for _, s := range stores {
		item, ok, err := s.GetByKey(key)
		if err != nil || !ok {
			continue
		}
		if old, ok := item.(client.Object); ok && old.GetUID() == cur.GetUID() {
			return old
		}
	}
	return nil
}

// KindOf is the source kind of a ConfigMap or Secret; empty for any other
// object.
func KindOf(obj any) refs.Kind {
	switch obj.(type) {
	case *corev1.ConfigMap:
		return refs.ConfigMap
	case *corev1.Secret:
		return refs.Secret
	}
	return ""
}

// Observe records the change from old to cur of a source of kind, seen at
// now; an update that leaves the data alone is no change.
func (p *Priors) Observe(kind refs.Kind, old, cur client.Object, now time.Time) {
	if Digest(old) == Digest(cur) {
		return
	}
	k := priorKey{kind, client.ObjectKeyFromObject(cur)}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.seen == nil {
		p.seen = map[priorKey]Prior{}
	}
	p.seen[k] = Prior{Digest: Digest(old), Keys: Keys(old), Seen: now, UID: cur.GetUID()}
}

// Forget drops what was kept of a deleted source, unless it is of a
// source of the same name created since.
func (p *Priors) Forget(kind refs.Kind, obj client.Object) {
	k := priorKey{kind, client.ObjectKeyFromObject(obj)}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.seen[k].UID == obj.GetUID() {
		delete(p.seen, k)
	}
}

// Of returns the Prior of source ref in ns, if its data changed since
// start. A nil Priors has none.
func (p *Priors) Of(ns string, ref refs.Ref) (Prior, bool) {
	if p == nil {
		return Prior{}, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	prior, ok := p.seen[priorKey{ref.Kind, types.NamespacedName{Namespace: ns, Name: ref.Name}}]
	return prior, ok
}
