package explain

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/reason"
	"github.com/ripple-dev/ripple/internal/refs"
)

// canaries reads the canaried changes asks names from the records Ripple
// keeps in its namespace, as the controller plans with them. A change
// without a record (no workload asked yet), or one the reader may not
// read, is left out: the plan then says the workload waits for its
// canaries to be chosen.
func (e Explainer) canaries(ctx context.Context, ns string, asks []plan.CanaryAsk) map[refs.Ref]plan.Canary {
	if e.Settings.Namespace == "" {
		return nil
	}
	out := map[refs.Ref]plan.Canary{}
	for _, a := range asks {
		var cm corev1.ConfigMap
		key := types.NamespacedName{Namespace: e.Settings.Namespace, Name: plan.CanaryRecordName(ns, a.Config)}
		if err := e.Reader.Get(ctx, key, &cm); err != nil {
			continue
		}
		if c, err := plan.ParseCanaryRecord(cm.Data[plan.CanaryRecordKey], ns, a.Config); err == nil && c.Digest == a.Digest {
			out[a.Config] = c
		}
	}
	return out
}

// The waits of a canaried change: for its canaries, or halted by one.
const (
	waitCanary = "canary"
	waitHalted = "halted"
)

// canaryWait is the wait the plan told of a canaried change: for its
// canaries (WaitingForCanary), or halted by one (RolloutHalted), with
// the notice's own words.
func canaryWait(f Facts) (Wait, bool) {
	if n, ok := f.Plan.Notice(reason.RolloutHalted); ok {
		return Wait{For: waitHalted, Setting: f.Settings.Plan.Keys.Canary, Message: n.Message}, true
	}
	if n, ok := f.Plan.Notice(reason.WaitingForCanary); ok {
		return Wait{For: waitCanary, Setting: f.Settings.Plan.Keys.Canary, Message: n.Message}, true
	}
	return Wait{}, false
}
