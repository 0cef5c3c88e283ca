package controller

import (
	"context"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/internal/canary"
	"github.com/ripple-dev/ripple/internal/change"
	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/rollout"
	"github.com/ripple-dev/ripple/internal/standing"
	"github.com/ripple-dev/ripple/internal/strategy"
	"github.com/ripple-dev/ripple/internal/workload"
)

// fleet is the reconcilers of every kind set up, as the change controller
// sees the workloads (change.Workloads).
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

// Tell emits n about obj, a config of kind: its canaried change passed or
// halted.
func (f *fleet) Tell(ctx context.Context, kind refs.Kind, obj client.Object, n plan.Notice) {
	f.emit(ctx, string(kind), obj, []plan.Notice{n})
}

// Wake queues the workloads in ns of every kind that may use config: its
// change's canary moved on, which their plans read.
func (f *fleet) Wake(ctx context.Context, ns string, config refs.Ref) {
	for _, r := range f.all() {
		objs, err := r.Finder.Of(ctx, r.Kind, ns, config)
		if err != nil {
			continue // the cache is not synced yet: its initial list queues them all
		}
		for _, obj := range objs {
			r.enqueue(types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()})
		}
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
	c := change.Consumer{Ref: workload.RefTo(r.Kind, obj), Since: obj.GetCreationTimestamp().Time,
		First: canary.IsFirst(obj.GetAnnotations(), r.Settings.Keys), Idle: rollout.Idle(obj)}
	c.Facts, c.Found = standing.FactsOf(p, config, in.DryRun)
	c.Zero = rollout.ScaledToZero(obj)
	c.Candidate = p.Policy != plan.Notify && slices.ContainsFunc(p.Changes, func(c strategy.Change) bool { return c.Ref == config })
	if i := slices.IndexFunc(p.CanaryAsks, func(a canary.Ask) bool { return a.Config == config }); i >= 0 {
		c.Ask = &p.CanaryAsks[i]
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

// Object reads canary w from the cache of its kind's reconciler.
func (f *fleet) Object(ctx context.Context, w workload.Ref) (client.Object, workload.Kind, error) {
	f.mu.Lock()
	r := f.byKind[w.Kind]
	f.mu.Unlock()
	if r == nil {
		return nil, nil, nil
	}
	obj := r.Kind.New()
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: w.Namespace, Name: w.Name}, obj); err != nil {
		return nil, nil, client.IgnoreNotFound(err)
	}
	return obj, r.Kind, nil
}
