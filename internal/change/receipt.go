package change

import (
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"

	"github.com/ripple-dev/ripple/api/v1alpha1"
)

// A receipt ties a write of a config to the ConfigRollout that carries its
// data, for a client that waits for its own write (`ripple wait`): every
// change records the config's resourceVersion it was seen at
// (spec.config.resourceVersion) and the newest at which its data was still
// the config's (status.observedConfigVersion), the newest change of a
// config is labelled latest, and a superseded change names the one that
// superseded it.

// CompareVersions compares two resourceVersions of one object as the API
// server orders them (-1, 0, +1); false when either is not an etcd
// revision, which an API server need not use.
func CompareVersions(a, b string) (int, bool) {
	c, err := resourceversion.CompareResourceVersion(a, b)
	return c, err == nil
}

// Receipt says which change a waiter wants: that of config UID (empty:
// any UID, for a client that cannot read the config) as of its
// resourceVersion Version (the version the client read or its write
// returned; empty: the newest change); with After, the first change of
// the data after Version instead, for a write still to come (an
// ExternalSecret's refresh).
type Receipt struct {
	UID     types.UID
	Version string
	After   bool
}

// Find is the change r asks for among items, a config's ConfigRollouts
// newest first: the newest that carries the config's data at r.Version
// (or, with After, that was seen after it); false while Ripple has not
// seen that version yet.
func (r Receipt) Find(items []v1alpha1.ConfigRollout) (*v1alpha1.ConfigRollout, bool) {
	for i := range items {
		cr := &items[i]
		if r.UID != "" && cr.Spec.Config.UID != r.UID {
			continue
		}
		if r.covers(cr) {
			return cr, true
		}
	}
	return nil, false
}

func (r Receipt) covers(cr *v1alpha1.ConfigRollout) bool {
	switch {
	case r.Version == "":
		return true
	case r.After:
		c, ok := CompareVersions(cr.Spec.Config.ResourceVersion, r.Version)
		return ok && c > 0
	}
	at := cr.Status.ObservedConfigVersion
	if at == r.Version {
		return true
	}
	c, ok := CompareVersions(at, r.Version)
	return ok && c > 0
}

// Follow is the change that carries on from cr among items (a config's
// ConfigRollouts newest first): cr, or the change that superseded it,
// followed to the newest; when a link was collected (the config's
// history), the config's newest change.
func Follow(cr *v1alpha1.ConfigRollout, items []v1alpha1.ConfigRollout) *v1alpha1.ConfigRollout {
	for hops := 0; cr.Status.Phase == v1alpha1.PhaseSuperseded && hops <= len(items); hops++ {
		next := findName(items, cr.Status.SupersededBy)
		if next == nil {
			next = newestOf(items, cr.Spec.Config.UID)
		}
		if next == nil || next == cr {
			return cr
		}
		cr = next
	}
	return cr
}

func findName(items []v1alpha1.ConfigRollout, name string) *v1alpha1.ConfigRollout {
	for i := range items {
		if name != "" && items[i].Name == name {
			return &items[i]
		}
	}
	return nil
}

func newestOf(items []v1alpha1.ConfigRollout, uid types.UID) *v1alpha1.ConfigRollout {
	for i := range items {
		if items[i].Spec.Config.UID == uid {
			return &items[i]
		}
	}
	return nil
}
