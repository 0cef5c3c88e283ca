package source

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
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
}

// Priors keeps the Prior of every ConfigMap and Secret whose data changed
// since start. A workload's baseline (what it last applied) is written by
// its reconcile, and at start thousands of those wait at low priority
// behind the changes that arrive meanwhile: a workload that existed before
// a change but has no baseline yet compares with the Prior, so that change
// rolls it instead of becoming its baseline. One entry per changed source,
// dropped when the source is deleted.
type Priors struct {
	mu   sync.Mutex
	seen map[priorKey]Prior
}

type priorKey struct {
	kind refs.Kind
	name types.NamespacedName
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
	p.seen[k] = Prior{Digest: Digest(old), Keys: Keys(old), Seen: now}
}

// Forget drops what was kept of a deleted source.
func (p *Priors) Forget(kind refs.Kind, obj client.Object) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.seen, priorKey{kind, client.ObjectKeyFromObject(obj)})
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
