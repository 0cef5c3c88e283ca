package controller

import (
	"context"
	"fmt"
	"slices"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/rollout"
	"github.com/ripple-dev/ripple/internal/strategy"
	"github.com/ripple-dev/ripple/internal/workload"
)

// fleet is the reconcilers of every kind set up, as the canaries see the
// workloads (canary.Fleet).
type fleet struct {
	*Deps
	mu     sync.Mutex
	byKind map[string]*Reconciler
}

func (f *fleet) add(r *Reconciler) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.byKind == nil {
		f.byKind = map[string]*Reconciler{}
	}
	f.byKind[r.Kind.Name()] = r
}

func (f *fleet) of(kind string) (*Reconciler, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.byKind[kind]
	return r, ok
}

// Candidates are the workloads in ns of every kind that a change of
// config would roll now: those the plan changes, not under the notify
// policy, which rolls nothing.
func (f *fleet) Candidates(ctx context.Context, ns string, config refs.Ref) ([]plan.CanaryCandidate, error) {
	f.mu.Lock()
	rs := make([]*Reconciler, 0, len(f.byKind))
	for _, r := range f.byKind {
		rs = append(rs, r)
	}
	f.mu.Unlock()
	var out []plan.CanaryCandidate
	for _, r := range rs {
		objs, err := r.Finder.Of(ctx, r.Kind, ns, config)
		if err != nil {
			return nil, err
		}
		for _, obj := range objs {
			tpl, err := workload.Template(ctx, r.Client, r.Kind, obj)
			if err != nil || tpl == nil {
				continue // gone, or no template yet: not a candidate
			}
			in, err := r.input(ctx, obj, tpl)
			if err != nil {
				continue
			}
			p := plan.For(in)
			if p.Policy != plan.Notify && slices.ContainsFunc(p.Changes, func(c strategy.Change) bool { return c.Ref == config }) {
				out = append(out, plan.CanaryCandidate{Ref: workload.RefTo(r.Kind, obj), First: plan.IsCanaryFirst(obj.GetAnnotations(), r.Settings.Keys)})
			}
		}
	}
	return out, nil
}

// Status is how the rollout of k stands (restartStatus).
func (f *fleet) Status(ctx context.Context, k workload.Ref) (rollout.Status, bool, error) {
	r, ok := f.of(k.Kind)
	if !ok {
		return rollout.Status{}, false, fmt.Errorf("no %s controller", k.Kind)
	}
	obj := r.Kind.New()
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: k.Namespace, Name: k.Name}, obj); err != nil {
		return rollout.Status{}, apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	}
	st, _ := r.restartStatus(ctx, r.Kind, obj)
	return st, false, nil
}

// Tell emits n about obj, a config of kind.
func (f *fleet) Tell(ctx context.Context, kind refs.Kind, obj client.Object, n plan.Notice) {
	f.emit(ctx, string(kind), obj, []plan.Notice{n})
}

// Enqueue queues k in its kind's controller.
func (f *fleet) Enqueue(k workload.Ref) {
	if r, ok := f.of(k.Kind); ok {
		r.enqueue(types.NamespacedName{Namespace: k.Namespace, Name: k.Name})
	}
}
