package controller

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/internal/change"
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
	var out []plan.CanaryCandidate
	err := f.each(ctx, ns, config, func(r *Reconciler, obj client.Object, _ *corev1.PodTemplateSpec, in plan.Input) {
		p := plan.For(in)
		if p.Policy != plan.Notify && slices.ContainsFunc(p.Changes, func(c strategy.Change) bool { return c.Ref == config }) {
			out = append(out, plan.CanaryCandidate{Ref: workload.RefTo(r.Kind, obj), First: plan.IsCanaryFirst(obj.GetAnnotations(), r.Settings.Keys)})
		}
	})
	return out, err
}

// each calls visit with every workload in ns of every kind that may use
// config, gathered as its reconcile gathers it; a workload gone, being
// deleted or without a template yet is left out, and one whose input
// cannot be gathered too.
func (f *fleet) each(ctx context.Context, ns string, config refs.Ref, visit func(*Reconciler, client.Object, *corev1.PodTemplateSpec, plan.Input)) error {
	for _, r := range f.all() {
		objs, err := r.Finder.Of(ctx, r.Kind, ns, config)
		if err != nil {
			return err
		}
		for _, obj := range objs {
			tpl, err := workload.Template(ctx, r.Client, r.Kind, obj)
			if err != nil || tpl == nil || obj.GetDeletionTimestamp() != nil {
				continue
			}
			if in, err := r.input(ctx, obj, tpl); err == nil {
				visit(r, obj, tpl, in)
			}
		}
	}
	return nil
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

// Tell emits n about obj, a config of kind: its canaried change passed or
// halted, which its ConfigRollout shows at once.
func (f *fleet) Tell(ctx context.Context, kind refs.Kind, obj client.Object, n plan.Notice) {
	f.emit(ctx, string(kind), obj, []plan.Notice{n})
	f.changes.look(change.Key{Namespace: obj.GetNamespace(), Config: refs.Ref{Kind: kind, Name: obj.GetName()}})
}

// Enqueue queues k in its kind's controller.
func (f *fleet) Enqueue(k workload.Ref) {
	if r, ok := f.of(k.Kind); ok {
		r.enqueue(types.NamespacedName{Namespace: k.Namespace, Name: k.Name})
	}
}

// Consumers are the workloads in ns of every kind that may read config,
// each as its plan sees the config now (change.Fleet).
func (f *fleet) Consumers(ctx context.Context, ns string, config refs.Ref) ([]change.Consumer, error) {
	var out []change.Consumer
	err := f.each(ctx, ns, config, func(r *Reconciler, obj client.Object, tpl *corev1.PodTemplateSpec, in plan.Input) {
		out = append(out, r.consumer(ctx, obj, tpl, in, config))
	})
	return out, err
}

// consumer is obj as a consumer of config: its plan's view of it, and its
// rollout.
func (r *Reconciler) consumer(ctx context.Context, obj client.Object, tpl *corev1.PodTemplateSpec, in plan.Input, config refs.Ref) change.Consumer {
	p := plan.For(in)
	c := change.Consumer{Ref: workload.RefTo(r.Kind, obj), RollsNothing: in.DryRun || p.Policy == plan.Notify, Since: obj.GetCreationTimestamp().Time}
	if i := slices.IndexFunc(p.Sources, func(s plan.SourcePlan) bool { return s.Ref == config }); i >= 0 {
		c.Source, c.Found = p.Sources[i], true
	}
	if n, ok := p.Verdict(); ok {
		c.Verdict = n.Reason
	}
	if t, err := time.Parse(time.RFC3339, tpl.Annotations[restartedAt]); err == nil && t.After(c.Since) {
		c.Since = t // kubectl rollout restart: its pods read the data then
	}
	c.Rollout, _ = r.restartStatus(ctx, r.Kind, obj)
	return c
}

// restartedAt is the pod template annotation `kubectl rollout restart`
// sets.
const restartedAt = "kubectl.kubernetes.io/restartedAt"

// all is the reconcilers of every kind set up.
func (f *fleet) all() []*Reconciler {
	f.mu.Lock()
	defer f.mu.Unlock()
	rs := make([]*Reconciler, 0, len(f.byKind))
	for _, r := range f.byKind {
		rs = append(rs, r)
	}
	return rs
}
