package change

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/ripple-dev/ripple/api/v1alpha1"
	"github.com/ripple-dev/ripple/internal/gather"
	"github.com/ripple-dev/ripple/internal/metricgate"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/rollout"
	rsource "github.com/ripple-dev/ripple/internal/source"
	"github.com/ripple-dev/ripple/internal/workload"
)

// enable starts the change controller, once the API server serves
// ConfigRollouts: its index, its watches of the configs, of its own
// objects and of every workload kind set up.
func (c *Controller) enable(ctx context.Context) error {
	if err := c.canList(ctx); err != nil {
		return err
	}
	mgr, k := c.env.Manager, c.newKeeper()
	err := mgr.GetFieldIndexer().IndexField(ctx, &v1alpha1.ConfigRollout{}, ConfigIndex, func(o client.Object) []string {
		if cr, ok := o.(*v1alpha1.ConfigRollout); ok {
			return []string{IndexValue(cr)}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("indexing ConfigRollouts: %w", err)
	}
	c.keeper = k // before the controller: its handlers read it
	ctl, err := controller.NewTyped("configrollout", mgr, controller.TypedOptions[Key]{
		Reconciler: c.turns.reconciler(k), MaxConcurrentReconciles: workers, NewQueue: c.newQueue,
	})
	if err != nil {
		return fmt.Errorf("setting up the change controller: %w", err)
	}
	ca := mgr.GetCache()
	watches := []source.TypedSource[Key]{
		source.TypedFunc[Key](c.start),
		source.TypedKind(ca, client.Object(&v1alpha1.ConfigRollout{}), c.ownHandler()),
	}
	for _, sk := range rsource.Watched(c.env.Settings.SourceKinds) {
		watches = append(watches, source.TypedKind(ca, rsource.Object(sk), c.configHandler(sk, c.env.Settings.Keys.CanaryResume)))
	}
	for _, w := range watches {
		if err := ctl.Watch(w); err != nil {
			return err
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ctrl = ctl
	for _, kind := range c.kinds {
		if err := c.watchKind(kind); err != nil {
			return err
		}
	}
	c.enabled.Store(true)
	return nil
}

// newKeeper is the Keeper of env's changes, with the gates chosen.
func (c *Controller) newKeeper() *Keeper {
	e, api := c.env, c.env.Manager.GetAPIReader()
	return &Keeper{
		Client: e.Client, Reader: api, Fleet: e.Fleet, Tell: e.Fleet.Tell, Wake: e.Fleet.Wake, InScope: e.InScope, Clock: e.Clock, Metrics: e.Metrics,
		Records:   &Records{Reader: api, Client: e.Client, Namespace: e.Namespace},
		ResumeKey: e.Settings.Keys.CanaryResume, Timeout: e.Settings.Rollouts.Timeout, Gates: c.gates(),
		Ring:    e.Ring,
		Kinds:   rsource.Watched(e.Settings.SourceKinds),
		History: c.o.History, PerNamespace: c.o.PerNamespace, Tracer: c.o.Tracer,
	}
}

// newQueue is the change controller's priority queue.
func (c *Controller) newQueue(name string, rl workqueue.TypedRateLimiter[Key]) queue {
	return priorityqueue.New(name, func(o *priorityqueue.Opts[Key]) {
		o.RateLimiter = rl
		o.Log = c.env.Manager.GetLogger().WithValues("controller", name)
	})
}

// gates are the change controller's gates beside the canaries' status.
func (c *Controller) gates() []Gate {
	var gates []Gate
	if c.o.PodGate {
		gates = append(gates, &podGate{pods: kubernetes.NewForConfigOrDie(c.env.Manager.GetConfig()), object: c.env.Fleet.Object, look: c.look, base: c.context})
	}
	if q := c.o.Query; q != nil {
		gates = append(gates, &queryGate{api: q.API, queries: c.queries(q.Cluster), interval: q.Interval, pass: q.Inconclusive, look: c.look, base: c.context})
	}
	return gates
}

// queries are the query gate's conditions for a change in ns: the
// cluster's, and with --namespace-defaults the Namespace's own beside
// them (it can add a condition, never lift the cluster's). No config or
// workload annotation names one: a query runs with Ripple's credentials.
func (c *Controller) queries(cluster []metricgate.Query) func(ctx context.Context, ns string) ([]metricgate.Query, string) {
	settings := c.env.Settings
	g := gather.Gatherer{Reader: c.env.Manager.GetClient(), Settings: settings}
	return func(ctx context.Context, ns string) ([]metricgate.Query, string) {
		if !settings.NamespaceDefaults {
			return cluster, ""
		}
		ann, err := g.NamespaceAnnotations(ctx, ns)
		if err != nil {
			return nil, err.Error()
		}
		text, ok := ann[settings.Keys.CanaryQuery]
		if !ok {
			return cluster, ""
		}
		q, err := metricgate.Parse(text)
		if err != nil {
			return nil, fmt.Sprintf("Namespace %s's %s is invalid: %v", ns, settings.Keys.CanaryQuery, err)
		}
		return append(slices.Clip(cluster), q), ""
	}
}

// canList asks the API server for a ConfigRollout, as the cache will:
// without the right, the discoverer says so and tries again later, rather
// than a cache that never syncs stopping Ripple.
func (c *Controller) canList(ctx context.Context) error {
	var opts []client.ListOption
	if len(c.env.Namespaces) > 0 {
		opts = append(opts, client.InNamespace(c.env.Namespaces[0]))
	}
	err := c.env.Manager.GetAPIReader().List(ctx, &v1alpha1.ConfigRolloutList{}, append(opts, client.Limit(1))...)
	if err != nil {
		return fmt.Errorf("listing ConfigRollouts (grant get, list and watch on configrollouts.ripple.dev, or turn them off with --config-rollouts=false, which holds canaried changes): %w", err)
	}
	return nil
}

// WatchKind watches the workloads of kind, a kind set up, once the change
// controller started (at once, if it did).
func (c *Controller) WatchKind(kind workload.Kind) error {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.kinds = append(c.kinds, kind)
	if c.ctrl == nil {
		return nil
	}
	return c.watchKind(kind)
}

// watchKind watches the workloads of kind: a rollout of a consumer of a
// change in flight moves the change on, and the completion of its last
// one is looked at at once (Keeper.Completed), the others' once their
// burst is over (Keeper.Rolled). Other workloads' updates
// cost a look at their pod template's references.
func (c *Controller) watchKind(kind workload.Kind) error {
	status := rollout.Of
	if sr, ok := kind.(workload.StatusReader); ok {
		status = sr.RolloutStatus
	}
	ca := c.env.Manager.GetCache()
	return c.ctrl.Watch(source.TypedKind(ca, kind.New(), handler.TypedFuncs[client.Object, Key]{
		UpdateFunc: func(ctx context.Context, e event.TypedUpdateEvent[client.Object], q queue) {
			tpl, err := workload.Template(ctx, ca, kind, e.ObjectNew)
			if err != nil || tpl == nil {
				return
			}
			w := workload.RefTo(kind, e.ObjectNew)
			complete := status(e.ObjectNew).State == rollout.Complete
			configs := refs.All(&tpl.Spec)
			if fr, ok := kind.(workload.FieldReferrer); ok {
				fields, _ := fr.FieldRefs(e.ObjectNew)
				for _, f := range fields {
					configs = append(configs, f.Ref)
				}
			}
			for _, ref := range configs {
				key := Key{Namespace: e.ObjectNew.GetNamespace(), Config: ref}
				if c.keeper.Active(key) {
					if !complete || !c.keeper.Completed(key, w) {
						c.keeper.Rolled(key)
					}
					c.turns.add(q, key)
				}
			}
		},
	}))
}

// configHandler queues the config of an event: a data change is noticed
// (its ConfigRollout is made), a new config, a deleted one and a new
// canary resume (resumeKey) looked at, and any other write of a config
// that has a change too, so that its newest change records the version
// (a waiter's receipt). The initial list is no change.
func (c *Controller) configHandler(kind refs.Kind, resumeKey string) handler.TypedEventHandler[client.Object, Key] {
	key := func(o client.Object) Key {
		return Key{Namespace: o.GetNamespace(), Config: refs.Ref{Kind: kind, Name: o.GetName()}}
	}
	return handler.TypedFuncs[client.Object, Key]{
		CreateFunc: func(_ context.Context, e event.TypedCreateEvent[client.Object], q queue) {
			if !e.IsInInitialList {
				c.turns.add(q, key(e.Object))
			}
		},
		UpdateFunc: func(ctx context.Context, e event.TypedUpdateEvent[client.Object], q queue) {
			switch {
			case rsource.Digest(e.ObjectOld) != rsource.Digest(e.ObjectNew):
				c.keeper.Notice(key(e.ObjectNew))
				c.turns.add(q, key(e.ObjectNew))
			case e.ObjectOld.GetAnnotations()[resumeKey] != e.ObjectNew.GetAnnotations()[resumeKey]:
				c.turns.add(q, key(e.ObjectNew))
			case e.ObjectOld.GetResourceVersion() != e.ObjectNew.GetResourceVersion() && c.hasChange(ctx, key(e.ObjectNew)):
				c.turns.add(q, key(e.ObjectNew))
			}
		},
		DeleteFunc: func(_ context.Context, e event.TypedDeleteEvent[client.Object], q queue) {
			c.turns.add(q, key(e.Object))
		},
	}
}

// hasChange reports whether key's config has a ConfigRollout in the cache.
func (c *Controller) hasChange(ctx context.Context, key Key) bool {
	var l v1alpha1.ConfigRolloutList
	err := c.env.Client.List(ctx, &l, client.InNamespace(key.Namespace), client.MatchingFields{ConfigIndex: string(key.Config.Kind) + "/" + key.Config.Name})
	return err == nil && len(l.Items) > 0
}

// ownHandler queues the config of a ConfigRollout in flight when it is
// first seen: after a restart, the changes in flight go on. A change whose
// canary moved on (chosen, passed, halted, resumed) wakes the workloads
// of its config (Workloads.Wake), whose plans read it: the event comes
// once the cache they read holds it.
func (c *Controller) ownHandler() handler.TypedEventHandler[client.Object, Key] {
	return handler.TypedFuncs[client.Object, Key]{
		CreateFunc: func(_ context.Context, e event.TypedCreateEvent[client.Object], q queue) {
			cr, ok := e.Object.(*v1alpha1.ConfigRollout)
			if ok && !Done(cr.Status) {
				c.turns.add(q, configOf(cr))
			}
		},
		UpdateFunc: func(ctx context.Context, e event.TypedUpdateEvent[client.Object], _ queue) {
			old, ok1 := e.ObjectOld.(*v1alpha1.ConfigRollout)
			cr, ok2 := e.ObjectNew.(*v1alpha1.ConfigRollout)
			if ok1 && ok2 && CanaryMoved(old.Status.Canary, cr.Status.Canary) {
				c.env.Fleet.Wake(ctx, cr.Namespace, configOf(cr).Config)
			}
		},
	}
}

func configOf(cr *v1alpha1.ConfigRollout) Key {
	return Key{Namespace: cr.Namespace, Config: refs.Ref{Kind: refs.Kind(cr.Spec.Config.Kind), Name: cr.Spec.Config.Name}}
}

// CanaryMoved reports whether a change's canary was chosen or changed
// phase: what the plans of the workloads that wait for it read.
func CanaryMoved(old, cur *v1alpha1.CanaryStatus) bool {
	switch {
	case cur == nil:
		return false
	case old == nil:
		return true
	}
	return old.Phase != cur.Phase || old.Since != cur.Since
}
