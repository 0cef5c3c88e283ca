package explain

import (
	"context"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/internal/canary"
	"github.com/ripple-dev/ripple/internal/change"
	"github.com/ripple-dev/ripple/internal/digest"
	"github.com/ripple-dev/ripple/internal/gather"
	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/reason"
)

// canaries reads the canaried changes of configs from their
// ConfigRollouts with the user's rights in the config's namespace, as the
// controller's cache holds them (gather.CanaryReader). With ConfigRollouts
// off (the published --config-rollouts) or their CRD not served, no
// canary can be kept, as the controller finds (gather.Unkept). A change
// whose ConfigRollout is not there or may not be read has none: the plan
// then says the workload waits for its canaries to be chosen. Without the
// digest key, the config's newest change is taken as its data's.
type canaries struct {
	reader client.Reader
	ring   digest.Ring
	// off is set when the controller keeps no ConfigRollouts.
	off bool
}

func (c canaries) Canary(ctx context.Context, ns string, src plan.Source) (canary.State, bool, error) {
	if c.off {
		return canary.State{}, false, gather.UnkeptOff
	}
	items, err := change.List(ctx, c.reader, ns, src.Ref, false)
	switch {
	case apimeta.IsNoMatchError(err):
		return canary.State{}, false, gather.UnkeptNotServed
	case err != nil:
		return canary.State{}, false, nil // no right to list them: the rest still explains
	}
	var revs []string
	if len(c.ring.Current) > 0 {
		revs = change.Revisions(c.ring, ns, src.Ref, digest.RevisionSum(src.Digest, src.Others))
	}
	cr, ok := change.Latest(items, src.UID, revs)
	if !ok {
		return canary.State{}, false, nil
	}
	cn, ok := change.CanaryOf(cr.Status.Canary, ns, src.Ref, src.Digest)
	return cn, ok, nil
}

// The waits of a canaried change: for its canaries, halted by one, or
// held because no canary can be kept.
const (
	waitCanary = "canary"
	waitHalted = "halted"
	waitUnkept = "unkept"
)

// canaryWait is the wait the plan told of a canaried change: for its
// canaries (WaitingForCanary), halted by one (RolloutHalted), or held for
// want of a canary (CanaryUnkept), with the notice's own words.
func canaryWait(f Facts) (Wait, bool) {
	if n, ok := f.Plan.Notice(reason.RolloutHalted); ok {
		return Wait{For: waitHalted, Setting: f.Settings.Plan.Keys.Canary, Message: n.Message}, true
	}
	if n, ok := f.Plan.Notice(reason.CanaryUnkept); ok {
		return Wait{For: waitUnkept, Setting: f.Settings.Plan.Keys.Canary, Message: n.Message}, true
	}
	if n, ok := f.Plan.Notice(reason.WaitingForCanary); ok {
		return Wait{For: waitCanary, Setting: f.Settings.Plan.Keys.Canary, Message: n.Message}, true
	}
	return Wait{}, false
}
