package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/ripple-dev/ripple/api/v1alpha1"
	"github.com/ripple-dev/ripple/internal/canary"
	"github.com/ripple-dev/ripple/internal/change"
	"github.com/ripple-dev/ripple/internal/digest"
	"github.com/ripple-dev/ripple/internal/digestkey"
	"github.com/ripple-dev/ripple/internal/gather"
	"github.com/ripple-dev/ripple/internal/metricgate"
	"github.com/ripple-dev/ripple/internal/optional"
	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/rollout"
	rsource "github.com/ripple-dev/ripple/internal/source"
	"github.com/ripple-dev/ripple/internal/workload"
)

// ChangeOptions turn the change controller on, bound what it keeps and
// choose the gates of canaried changes beside the status (PodGate:
// --canary-gates=pods; Query: --canary-gates=query).
type ChangeOptions struct {
	On                    bool
	History, PerNamespace int
	PodGate               bool
	Query                 *QueryGate
}

// QueryGate is the query gate's settings: the API it asks, the cluster's
// condition (none: only Namespaces' own), how often it is evaluated and
// whether a query without a value passes.
type QueryGate struct {
	API          metricgate.Querier
	Cluster      []metricgate.Query
	Interval     time.Duration
	Inconclusive bool
}

// new is the change controller as the workload controllers reach it,
// reading ConfigRollouts from cache with the digest key ring; nil when it
// is off.
func (o ChangeOptions) new(cache client.Reader, ring func() digest.Ring) *changes {
	if !o.On {
		return nil
	}
	return &changes{cache: cache, ring: ring}
}

// changesAPI is the optional API that starts the change controller: the
// ConfigRollout CRD served.
func (s *setup) changesAPI() []optional.API {
	if s.deps.changes == nil {
		return nil
	}
	return []optional.API{{GVK: v1alpha1.GroupVersion.WithKind("ConfigRollout"), Flag: "--config-rollouts", Enable: s.enableChanges, Missing: s.deps.changes.missing}}
}

// changeWorkers is how many configs the change controller looks at at
// once: its work is reads from the cache and a few writes.
const changeWorkers = 4

type changeQueue = workqueue.TypedRateLimitingInterface[change.Key]

// changes is the change controller (change.Keeper) as the workload
// controllers reach it: its queue, once it started, and the canaries its
// ConfigRollouts keep (Canary). Its keeper and controller are set once
// (enableChanges), under setup.mu, before enabled.
type changes struct {
	// cache reads ConfigRollouts; ring is the install's digest key ring.
	cache client.Reader
	ring  func() digest.Ring

	keeper *change.Keeper
	ctrl   controller.TypedController[change.Key]
	turns  turns
	queue  atomic.Pointer[changeQueue]
	// early holds the configs looked at before the controller started
	// (the CRD is discovered after the workload controllers run): start
	// queues them, so that a change a workload saw first is not lost.
	earlyMu sync.Mutex
	early   map[change.Key]struct{}
	// base is the change controller's context, once it started: the pod
	// gate's watches end with it.
	base    atomic.Pointer[context.Context]
	enabled atomic.Bool
	// unkept says why ConfigRollouts cannot be used, once the API server
	// was asked; nil before (a canaried change then waits).
	unkept atomic.Pointer[gather.Unkept]
}

// missing notes that ConfigRollouts are not served, or may not be
// listed (err, forbidden): canaried changes are held (or, with
// --canary-unkept=roll, roll without a canary) until they are, and are
// told what is missing and what to do. Another failure to start watching
// them (a cache that did not sync in time) holds canaried changes until a
// retry succeeds, saying nothing: no canary is skipped for a slow start.
func (c *changes) missing(err error) {
	why := gather.UnkeptNotServed
	var status apierrors.APIStatus
	switch {
	case err == nil:
	case apierrors.IsForbidden(err) && errors.As(err, &status):
		why = gather.UnkeptForbidden(status.Status().Message)
	default:
		return
	}
	c.unkept.Store(&why)
}

// Canary is the canaried change of src's data in ns, as the newest
// ConfigRollout of that data records it in the cache
// (gather.CanaryReader).
func (c *changes) Canary(ctx context.Context, ns string, src plan.Source) (canary.State, bool, error) {
	switch {
	case c == nil:
		return canary.State{}, false, gather.UnkeptOff
	case !c.enabled.Load():
		if why := c.unkept.Load(); why != nil {
			return canary.State{}, false, *why
		}
		return canary.State{}, false, nil // not asked yet: the change waits
	}
	revs := change.Revisions(c.ring(), ns, src.Ref, digest.RevisionSum(src.Digest, src.Others))
	if len(revs) == 0 {
		return canary.State{}, false, gather.Unkept("a Secret's change has a ConfigRollout only with the digest key (Secret " + digestkey.Secret + " in Ripple's namespace), which Ripple could not read")
	}
	items, err := change.List(ctx, c.cache, ns, src.Ref, true)
	if err != nil {
		return canary.State{}, false, err
	}
	cr, ok := change.Latest(items, src.UID, revs)
	if !ok {
		return canary.State{}, false, nil
	}
	cn, ok := change.CanaryOf(cr.Status.Canary, ns, src.Ref, src.Digest)
	return cn, ok, nil
}

func (c *changes) start(ctx context.Context, q changeQueue) error {
	c.base.Store(&ctx)
	c.earlyMu.Lock()
	defer c.earlyMu.Unlock()
	c.queue.Store(&q)
	for key := range c.early {
		c.turns.add(q, key)
	}
	c.early = nil
	return nil
}

// maxEarly bounds the configs kept to be looked at once the change
// controller starts: with the CRD never served, they would otherwise
// grow with the cluster's pending changes. A config past it gets its
// ConfigRollout at its workloads' next reconcile, or its next change.
const maxEarly = 10000

// look queues key's config; before the controller started, at its start.
func (c *changes) look(key change.Key) {
	if c == nil {
		return
	}
	if q := c.queue.Load(); q != nil {
		c.turns.add(*q, key)
		return
	}
	c.earlyMu.Lock()
	defer c.earlyMu.Unlock()
	if q := c.queue.Load(); q != nil { // started meanwhile: early is drained
		c.turns.add(*q, key)
		return
	}
	if c.early == nil {
		c.early = map[change.Key]struct{}{}
	}
	if len(c.early) < maxEarly {
		c.early[key] = struct{}{}
	}
}

// touch queues the configs of ns whose change the plan p of a workload
// saw (to roll, or held: by an approval, a window, a breaker, a slot), or
// whose canary it asks for: a change seen by a workload's reconcile only
// (made while Ripple was down, or before the change controller started)
// gets its ConfigRollout and canary too, and an approver reads what waits
// from it.
func (c *changes) touch(ns string, p plan.Plan) {
	if c == nil {
		return
	}
	for _, a := range p.CanaryAsks {
		c.look(change.Key{Namespace: ns, Config: a.Config})
	}
	seen := p.Changes
	if p.Awaiting != nil {
		seen = append(slices.Clip(seen), p.Awaiting.Changes...)
	}
	for _, ch := range seen {
		if ch.Ref.Kind == refs.ConfigMap || ch.Ref.Kind == refs.Secret {
			c.look(change.Key{Namespace: ns, Config: ch.Ref})
		}
	}
}

// enableChanges starts the change controller, once the API server serves
// ConfigRollouts: its index, its watches of the configs, of its own
// objects and of every workload kind set up.
func (s *setup) enableChanges(ctx context.Context) error {
	d := s.deps
	if err := s.canListChanges(ctx); err != nil {
		return err
	}
	k := &change.Keeper{
		Client: d.Client, Reader: s.mgr.GetAPIReader(), Fleet: s.fleet, Tell: s.fleet.Tell, InScope: d.Finder.InScope, Clock: d.Clock, Metrics: d.Metrics,
		Records:   &change.Records{Reader: s.mgr.GetAPIReader(), Client: d.Client, Namespace: s.o.Namespace},
		ResumeKey: d.Settings.Keys.CanaryResume, Timeout: d.Settings.Rollouts.Timeout, Gates: s.gates(),
		Ring:    d.changes.ring,
		Kinds:   rsource.Watched(d.Settings.SourceKinds),
		History: s.o.Changes.History, PerNamespace: s.o.Changes.PerNamespace,
	}
	err := s.mgr.GetFieldIndexer().IndexField(ctx, &v1alpha1.ConfigRollout{}, change.ConfigIndex, func(o client.Object) []string {
		if cr, ok := o.(*v1alpha1.ConfigRollout); ok {
			return []string{change.IndexValue(cr)}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("indexing ConfigRollouts: %w", err)
	}
	ch := d.changes
	ch.keeper = k
	c, err := controller.NewTyped("configrollout", s.mgr, controller.TypedOptions[change.Key]{
		Reconciler: ch.turns.reconciler(k), MaxConcurrentReconciles: changeWorkers,
		NewQueue: func(name string, rl workqueue.TypedRateLimiter[change.Key]) changeQueue {
			return newShutdownSafe(priorityqueue.New(name, func(o *priorityqueue.Opts[change.Key]) {
				o.RateLimiter = rl
				o.Log = s.mgr.GetLogger().WithValues("controller", name)
			}), wakeChange)
		},
	})
	if err != nil {
		return fmt.Errorf("setting up the change controller: %w", err)
	}
	ch.ctrl = c
	cache := s.mgr.GetCache()
	watches := []source.TypedSource[change.Key]{
		source.TypedFunc[change.Key](ch.start),
		source.TypedKind(cache, client.Object(&v1alpha1.ConfigRollout{}), ch.ownHandler(s.fleet)),
	}
	for _, sk := range rsource.Watched(d.Settings.SourceKinds) {
		watches = append(watches, source.TypedKind(cache, rsource.Object(sk), ch.configHandler(sk, d.Settings.Keys.CanaryResume)))
	}
	for _, w := range watches {
		if err := c.Watch(w); err != nil {
			return err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.reconcilers {
		if err := ch.watchKind(cache, r.Kind); err != nil {
			return err
		}
	}
	ch.enabled.Store(true)
	return nil
}

// gates are the change controller's gates beside the canaries' status.
func (s *setup) gates() []change.Gate {
	ch := s.deps.changes
	var gates []change.Gate
	if s.o.Changes.PodGate {
		gates = append(gates, &podGate{pods: kubernetes.NewForConfigOrDie(s.mgr.GetConfig()), object: s.fleet.canaryObject, look: ch.look, base: ch.context})
	}
	if q := s.o.Changes.Query; q != nil {
		gates = append(gates, &queryGate{api: q.API, queries: s.queries(q.Cluster), interval: q.Interval, pass: q.Inconclusive, look: ch.look, base: ch.context})
	}
	return gates
}

// queries are the query gate's conditions for a change in ns: the
// cluster's, and with --namespace-defaults the Namespace's own beside
// them (it can add a condition, never lift the cluster's). No config or
// workload annotation names one: a query runs with Ripple's credentials.
func (s *setup) queries(cluster []metricgate.Query) func(ctx context.Context, ns string) ([]metricgate.Query, string) {
	settings := s.deps.Settings
	g := gather.Gatherer{Reader: s.mgr.GetClient(), Settings: settings}
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

// context is the change controller's context; nil before it started.
func (c *changes) context() context.Context {
	if ctx := c.base.Load(); ctx != nil {
		return *ctx
	}
	return nil
}

// canListChanges asks the API server for a ConfigRollout, as the cache
// will: without the right, the discoverer says so and tries again later,
// rather than a cache that never syncs stopping Ripple.
func (s *setup) canListChanges(ctx context.Context) error {
	var opts []client.ListOption
	if len(s.o.Namespaces) > 0 {
		opts = append(opts, client.InNamespace(s.o.Namespaces[0]))
	}
	err := s.mgr.GetAPIReader().List(ctx, &v1alpha1.ConfigRolloutList{}, append(opts, client.Limit(1))...)
	if err != nil {
		return fmt.Errorf("listing ConfigRollouts (grant get, list and watch on configrollouts.ripple.dev, or turn them off with --config-rollouts=false, which holds canaried changes): %w", err)
	}
	return nil
}

// watchKind watches the workloads of kind: a rollout of a consumer of a
// change in flight moves the change on, and the completion of its last
// one is looked at at once (change.Keeper.Completed). Other workloads'
// updates cost a look at their pod template's references.
func (c *changes) watchKind(ca cache.Cache, kind workload.Kind) error {
	status := rollout.Of
	if sr, ok := kind.(workload.StatusReader); ok {
		status = sr.RolloutStatus
	}
	return c.ctrl.Watch(source.TypedKind(ca, kind.New(), handler.TypedFuncs[client.Object, change.Key]{
		UpdateFunc: func(ctx context.Context, e event.TypedUpdateEvent[client.Object], q changeQueue) {
			tpl, err := workload.Template(ctx, ca, kind, e.ObjectNew)
			if err != nil || tpl == nil {
				return
			}
			w := workload.RefTo(kind, e.ObjectNew)
			complete := status(e.ObjectNew).State == rollout.Complete
			for _, ref := range refs.All(&tpl.Spec) {
				key := change.Key{Namespace: e.ObjectNew.GetNamespace(), Config: ref}
				if c.keeper.Active(key) {
					if complete {
						c.keeper.Completed(key, w)
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
func (c *changes) configHandler(kind refs.Kind, resumeKey string) handler.TypedEventHandler[client.Object, change.Key] {
	key := func(o client.Object) change.Key {
		return change.Key{Namespace: o.GetNamespace(), Config: refs.Ref{Kind: kind, Name: o.GetName()}}
	}
	return handler.TypedFuncs[client.Object, change.Key]{
		CreateFunc: func(_ context.Context, e event.TypedCreateEvent[client.Object], q changeQueue) {
			if !e.IsInInitialList {
				c.turns.add(q, key(e.Object))
			}
		},
		UpdateFunc: func(ctx context.Context, e event.TypedUpdateEvent[client.Object], q changeQueue) {
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
		DeleteFunc: func(_ context.Context, e event.TypedDeleteEvent[client.Object], q changeQueue) {
			c.turns.add(q, key(e.Object))
		},
	}
}

// hasChange reports whether key's config has a ConfigRollout in the cache.
func (c *changes) hasChange(ctx context.Context, key change.Key) bool {
	var l v1alpha1.ConfigRolloutList
	err := c.cache.List(ctx, &l, client.InNamespace(key.Namespace), client.MatchingFields{change.ConfigIndex: string(key.Config.Kind) + "/" + key.Config.Name})
	return err == nil && len(l.Items) > 0
}

// ownHandler queues the config of a ConfigRollout in flight when it is
// first seen: after a restart, the changes in flight go on. A change whose
// canary moved on (chosen, passed, halted, resumed) wakes the workloads
// of its config (f.wake), whose plans read it: the event comes once the
// cache they read holds it.
func (c *changes) ownHandler(f *fleet) handler.TypedEventHandler[client.Object, change.Key] {
	return handler.TypedFuncs[client.Object, change.Key]{
		CreateFunc: func(_ context.Context, e event.TypedCreateEvent[client.Object], q changeQueue) {
			cr, ok := e.Object.(*v1alpha1.ConfigRollout)
			if ok && !change.Done(cr.Status) {
				c.turns.add(q, configOf(cr))
			}
		},
		UpdateFunc: func(ctx context.Context, e event.TypedUpdateEvent[client.Object], _ changeQueue) {
			old, ok1 := e.ObjectOld.(*v1alpha1.ConfigRollout)
			cr, ok2 := e.ObjectNew.(*v1alpha1.ConfigRollout)
			if ok1 && ok2 && canaryMoved(old.Status.Canary, cr.Status.Canary) {
				f.wake(ctx, cr.Namespace, configOf(cr).Config)
			}
		},
	}
}

func configOf(cr *v1alpha1.ConfigRollout) change.Key {
	return change.Key{Namespace: cr.Namespace, Config: refs.Ref{Kind: refs.Kind(cr.Spec.Config.Kind), Name: cr.Spec.Config.Name}}
}

// canaryMoved reports whether a change's canary was chosen or changed
// phase: what the plans of the workloads that wait for it read.
func canaryMoved(old, cur *v1alpha1.CanaryStatus) bool {
	switch {
	case cur == nil:
		return false
	case old == nil:
		return true
	}
	return old.Phase != cur.Phase || old.Since != cur.Since
}
