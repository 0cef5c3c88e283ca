package main

import (
	"cmp"
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/api/v1alpha1"
	"github.com/ripple-dev/ripple/internal/change"
	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/reason"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/strategy"
	"github.com/ripple-dev/ripple/internal/workload"
)

// waitingOf is what of p, planned for the workload read as w (ref),
// waits for an approval: as planned or, when its digests are keyed with
// a key the user cannot read, as Ripple publishes it; with the
// ConfigRollouts' revisions then.
func waitingOf(ctx context.Context, r client.Reader, what string, p plan.Plan, w workloadRead) (plan.Awaiting, []string, error) {
	key, searched := w.settings.Plan.Keys.ReloadPolicy, unpublished(w)
	all := plan.Awaiting{}
	for _, sp := range p.Sources {
		all.Changes = append(all.Changes, strategy.Change{Ref: sp.Ref})
	}
	keyErr := keyedUnread(what, p, all, w.settings)
	if keyErr == nil {
		a, err := approvable(what, p, key, searched)
		return a, nil, err
	}
	if err := manualOnly(what, p, key, searched); err != nil {
		return plan.Awaiting{}, nil, err
	}
	a, revisions, err := published(ctx, r, workload.RefTo(w.kind.Kind, w.obj), p.Sources)
	if err != nil {
		return plan.Awaiting{}, nil, fmt.Errorf("%w; and %w", keyErr, err)
	}
	return a, revisions, nil
}

// published is what waits for an approval of workload w as Ripple
// publishes it, for an approver who cannot read Ripple's digest key and
// so cannot make its digests: each config of sources whose newest
// ConfigRollout lists w as a consumer waiting for approval
// (ReloadPending), approved at the config's resourceVersion, which binds
// the approval to the data without a digest (plan.Approved.Version). The
// revisions are the ConfigRollouts', for the approver to see what it
// approves; a config written since its ConfigRollout saw it is refused,
// since its resourceVersion would approve data no revision names.
func published(ctx context.Context, r client.Reader, w workload.Ref, sources []plan.SourcePlan) (plan.Awaiting, []string, error) {
	out := plan.Awaiting{Versions: map[refs.Ref]string{}}
	var revisions []string
	for _, sp := range sources {
		if sp.Ref.Kind != refs.ConfigMap && sp.Ref.Kind != refs.Secret {
			continue
		}
		meta := &metav1.PartialObjectMetadata{}
		meta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind(string(sp.Ref.Kind)))
		if err := r.Get(ctx, types.NamespacedName{Namespace: w.Namespace, Name: sp.Ref.Name}, meta); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return plan.Awaiting{}, nil, fmt.Errorf("reading %s %q: %w", sp.Ref.Kind, sp.Ref.Name, err)
		}
		items, err := change.List(ctx, r, w.Namespace, sp.Ref, false)
		if err != nil {
			return plan.Awaiting{}, nil, err
		}
		cr, ok := change.Latest(items, meta.UID, nil)
		if !ok || !awaitsApproval(cr.Status.Consumers, w) {
			continue
		}
		// The approval binds the config's resourceVersion, not its data:
		// it may name only the version at which Ripple saw the data of the
		// change approve prints. A later write may be other data, which
		// nobody was shown.
		if seen := cmp.Or(cr.Status.ObservedConfigVersion, cr.Spec.Config.ResourceVersion); seen != meta.ResourceVersion {
			return plan.Awaiting{}, nil, fmt.Errorf("%s %q was written (resourceVersion %s) after the change approve would approve (revision %s, seen at resourceVersion %s): its data now may not be that change's, so nothing is approved; approve again once Ripple has seen the write (its ConfigRollout then says what waits)",
				sp.Ref.Kind, sp.Ref.Name, meta.ResourceVersion, cr.Spec.Revision, cmp.Or(seen, "unknown"))
		}
		out.Changes = append(out.Changes, strategy.Change{Ref: sp.Ref})
		out.Versions[sp.Ref] = meta.ResourceVersion
		revisions = append(revisions, cr.Spec.Revision)
	}
	if len(out.Changes) == 0 {
		return plan.Awaiting{}, nil, fmt.Errorf("%s %s/%s: no ConfigRollout of its configs says it waits for an approval (%s)", w.Kind, w.Namespace, w.Name, reason.ReloadPending)
	}
	return out, revisions, nil
}

// awaitsApproval reports whether consumers list w as waiting for an
// approval.
func awaitsApproval(consumers []v1alpha1.Consumer, w workload.Ref) bool {
	for _, c := range consumers {
		if c.Kind == w.Kind && c.Name == w.Name && c.Reason == string(reason.ReloadPending) {
			return true
		}
	}
	return false
}
