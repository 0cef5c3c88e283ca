package controller

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/ripple-dev/ripple/internal/change"
	"github.com/ripple-dev/ripple/internal/configpods"
	"github.com/ripple-dev/ripple/internal/dependents"
	"github.com/ripple-dev/ripple/internal/digest"
	"github.com/ripple-dev/ripple/internal/eventrec"
	"github.com/ripple-dev/ripple/internal/gather"
	"github.com/ripple-dev/ripple/internal/metrics"
	"github.com/ripple-dev/ripple/internal/optional"
	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/rollout"
	rsource "github.com/ripple-dev/ripple/internal/source"
	"github.com/ripple-dev/ripple/internal/workload"
)

// Optional is a workload kind used only once the API server serves it.
type Optional struct {
	Kind workload.Kind
	API  optional.API
}

// Options are what Setup wires.
type Options struct {
	// Deps are shared by every reconciler; Setup sets their Client,
	// Recorder, Rotations and Memory. Priors are kept by the caches
	// (the caller's): none, when not set.
	Deps
	Kinds    []workload.Kind
	Optional []Optional
	// CSI enables SecretProviderClasses once the driver's API is served.
	CSI bool
	// Namespaces are the watched namespaces, for recoveries; empty is all.
	Namespaces []string
	// Workers is how many workloads of one kind are reconciled at once.
	Workers int
	// Namespace is Ripple's own, where an earlier Ripple kept its canary
	// records (change.Records).
	Namespace string
	// Changes is the change controller's: on, it starts once the API
	// server serves ConfigRollouts.
	Changes change.Options
}

// Setup registers the indexes and the controller of every workload kind,
// the discovery of the optional kinds (and of the CSI driver's API), and
// the runnables that keep the metrics.
func Setup(ctx context.Context, mgr ctrl.Manager, o Options) error {
	m := o.Metrics
	watched := rsource.Watched(o.Settings.SourceKinds)
	d := o.Deps
	d.Client, d.Memory = mgr.GetClient(), &Store{Metrics: m}
	if d.Priors == nil {
		d.Priors = &rsource.Priors{}
	}
	d.Pods = &podTicks{Reader: mgr.GetAPIReader(), Clock: d.Clock}
	d.configsTold = &configsTold{}
	if d.Calls == nil {
		d.Calls = ActionClient()
	}
	fl := &fleet{Deps: &d}
	var err error
	if d.Recorder, err = eventrec.New(ctx, mgr.GetConfig(), mgr.GetScheme(), mgr.GetLogger().WithName("events"), m.EventDropped); err != nil {
		return err
	}
	if o.CSI {
		d.Rotations = &rsource.Rotations{}
	}
	d.changes = change.New(o.Changes, change.Env{Manager: mgr, Client: d.Client, Fleet: fl, InScope: d.Finder.InScope, Clock: d.Clock, Metrics: m,
		Settings: d.Settings, Ring: func() digest.Ring { return d.Priors.Digester.Ring }, Namespace: o.Namespace, Namespaces: o.Namespaces})
	if err := setupRestarts(mgr, o, &d, watched); err != nil {
		return err
	}
	s := &setup{mgr: mgr, o: o, deps: &d, fleet: fl, counter: m.NewCacheCounter(mgr.GetCache())}
	if err := s.sources(ctx, watched); err != nil {
		return err
	}
	for _, r := range []interface{ Start(context.Context) error }{m.NewEventCounter(mgr.GetCache(), watched), metrics.LeaderGauge{Metrics: m}, s.counter} {
		if err := mgr.Add(r); err != nil {
			return err
		}
	}
	for _, kind := range o.Kinds {
		if err := s.add(ctx, kind); err != nil {
			return err
		}
	}
	var apis []optional.API
	for _, opt := range o.Optional {
		apis = append(apis, optional.API{GVK: opt.API.GVK, Flag: opt.API.Flag, Enable: func(ctx context.Context) error { return s.add(ctx, opt.Kind) }})
	}
	if o.CSI {
		apis = append(apis, optional.API{GVK: rsource.SecretProviderClassPodStatusGVK, Flag: "--enable-csi-integration", Enable: s.enableCSI})
	}
	apis = append(apis, d.changes.API()...)
	if len(apis) == 0 {
		return nil
	}
	dc, err := discovery.NewDiscoveryClientForConfig(mgr.GetConfig())
	if err != nil {
		return err
	}
	return mgr.Add(optional.NewDiscoverer(dc, mgr.GetLogger().WithName("discovery"), apis...))
}

// sources counts the cached configs of the watched kinds and indexes
// Helm's release records: every reconcile of a release's workload reads
// them (gather.PendingRelease), by index rather than by a namespace scan.
func (s *setup) sources(ctx context.Context, watched []refs.Kind) error {
	for _, k := range watched {
		if err := s.counter.Add(string(k), rsource.Object(k)); err != nil {
			return err
		}
	}
	if !slices.Contains(watched, refs.Secret) {
		return nil
	}
	if err := s.mgr.GetFieldIndexer().IndexField(ctx, rsource.Object(refs.Secret), gather.ReleaseIndex, gather.ReleaseIndexValue); err != nil {
		return fmt.Errorf("indexing Helm's release records: %w", err)
	}
	return nil
}

// setup adds workload controllers to a manager, also after it started.
type setup struct {
	mgr     ctrl.Manager
	o       Options
	deps    *Deps
	fleet   *fleet
	counter *metrics.CacheCounter

	mu          sync.Mutex
	reconcilers []*Reconciler
	controllers []controller.Controller
}

// add indexes kind and starts its controller and rollout follower.
func (s *setup) add(ctx context.Context, kind workload.Kind) error {
	r := &Reconciler{Deps: s.deps, Kind: kind}
	if err := s.deps.Finder.Register(ctx, s.mgr.GetFieldIndexer(), kind); err != nil {
		return err
	}
	b := ctrl.NewControllerManagedBy(s.mgr).
		Named(kind.Name()).
		For(kind.New(), builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		WatchesRawSource(source.Func(r.start)).
		WithOptions(controller.Options{MaxConcurrentReconciles: s.o.Workers, NewQueue: s.newQueue})
	for _, sk := range rsource.Watched(s.deps.Settings.SourceKinds) {
		b = b.Watches(rsource.Object(sk), r.sourceHandler(sk),
			builder.WithPredicates(sourceChanged(s.deps.Settings.Keys)))
	}
	if s.deps.Finder.Selective {
		// A namespace that starts matching brings its workloads in.
		b = b.WatchesMetadata(dependents.NamespaceObject(), handler.EnqueueRequestsFromMapFunc(r.requestsForNamespace))
	}
	if rec, ok := kind.(workload.Recoverer); ok {
		if err := s.mgr.Add(&workload.Recovery{Kind: rec, Client: s.mgr.GetClient(), Namespaces: s.o.Namespaces, Log: s.mgr.GetLogger()}); err != nil {
			return err
		}
	}
	if _, ok := kind.(workload.TemplateSource); ok {
		// A workload seen before its Deployment has no template to decide
		// on: the Deployment's arrival (or template change) brings it back.
		b = b.Watches(workload.Deployment.New(), handler.EnqueueRequestsFromMapFunc(r.requestsForTemplateRef),
			builder.WithPredicates(predicate.GenerationChangedPredicate{}))
	}
	if err := s.counter.Add(kind.Name(), kind.New()); err != nil {
		return err
	}
	if err := s.addFollower(r); err != nil {
		return err
	}
	c, err := b.Build(r)
	if err != nil {
		return fmt.Errorf("setting up the %s controller: %w", kind.Name(), err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reconcilers = append(s.reconcilers, r)
	s.deps.restarts.add(r)
	s.fleet.add(r)
	s.controllers = append(s.controllers, c)
	if err := s.deps.changes.WatchKind(kind); err != nil {
		return err
	}
	if s.deps.Rotations.Served() {
		return s.watchCSI(r, c)
	}
	return nil
}

// addFollower starts the rollout follower of r's kind, unless its
// rollouts are the write itself (CronJobs, Jobs): there is nothing to
// follow.
func (s *setup) addFollower(r *Reconciler) error {
	if rollout.Instant(r.Kind.New()) {
		return nil
	}
	f := &follower{Deps: s.deps, Kind: r.Kind}
	err := ctrl.NewControllerManagedBy(s.mgr).
		Named(r.Kind.Name()+"-rollout").
		For(r.Kind.New(), builder.WithPredicates(f.followed())).
		WatchesRawSource(source.Func(f.start)).
		WithOptions(controller.Options{MaxConcurrentReconciles: s.o.Workers, NewQueue: s.newQueue}).
		Complete(f)
	if err != nil {
		return fmt.Errorf("setting up the %s rollout follower: %w", r.Kind.Name(), err)
	}
	r.follow = f.follow
	return nil
}

// newQueue is controller-runtime's default queue (a priority queue) with
// Ripple's queue metrics: Reloader's reloader_workqueue_* and the depth per
// controller.
func (s *setup) newQueue(name string, rl workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
	return priorityqueue.New(name, func(o *priorityqueue.Opts[reconcile.Request]) {
		o.RateLimiter = rl
		o.MetricProvider = s.deps.Metrics.QueueMetrics()
		o.Log = s.mgr.GetLogger().WithValues("controller", name)
	})
}

// enableCSI watches the CSI driver's objects from every controller, once
// its API is served.
func (s *setup) enableCSI(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	// Served first: the watches deliver the pod statuses that exist at once
	// (only once), and a reconcile that ran before this would skip them.
	s.deps.Rotations.Serve()
	for i, r := range s.reconcilers {
		if err := s.watchCSI(r, s.controllers[i]); err != nil {
			return err
		}
	}
	return nil
}

func (s *setup) watchCSI(r *Reconciler, c controller.Controller) error {
	cache := s.mgr.GetCache()
	if err := c.Watch(source.Kind(cache, client.Object(rsource.PodStatusObject()), r.podStatusHandler())); err != nil {
		return err
	}
	return c.Watch(source.Kind(cache, rsource.Object(refs.SecretProviderClass),
		r.sourceHandler(refs.SecretProviderClass), sourceChanged(s.deps.Settings.Keys)))
}

func requests(names []types.NamespacedName) []reconcile.Request {
	reqs := make([]reconcile.Request, len(names))
	for i, n := range names {
		reqs[i] = reconcile.Request{NamespacedName: n}
	}
	return reqs
}

// setupRestarts wires the loops that restart pods: the pod restarter of
// the workloads and the controller of the pods configs select.
func setupRestarts(mgr ctrl.Manager, o Options, d *Deps, watched []refs.Kind) error {
	var err error
	if d.restarts, err = newRestarter(mgr, d, o.Workers); err != nil {
		return fmt.Errorf("setting up the pod restarter: %w", err)
	}
	if err := setupConfigPods(mgr, o, d, watched); err != nil {
		return fmt.Errorf("setting up the pods configs select: %w", err)
	}
	return nil
}

// setupConfigPods wires the controller of the pods configs select
// (package configpods), with the pod restarter's pod reader; not under
// --dry-run, which evicts nothing.
func setupConfigPods(mgr ctrl.Manager, o Options, d *Deps, watched []refs.Kind) error {
	if d.Settings.DryRun {
		return nil
	}
	e := configpods.Env{Cache: mgr.GetClient(), Client: mgr.GetClient(), Pods: d.Pods, Acted: func(ns string) { acted(d.Pods, ns) },
		Tell: func(ctx context.Context, kind string, obj client.Object, n plan.Notice) {
			d.emit(ctx, kind, obj, []plan.Notice{n})
		}, Clock: d.Clock, Key: d.Settings.Keys.RestartPods, MaxUnavailable: d.Settings.Keys.MaxUnavailable,
		Settle: d.Settings.SettleWindow, Timeout: d.Settings.Rollouts.Timeout, Kinds: map[string]bool{}, SourceKinds: watched}
	for _, k := range o.Kinds {
		e.Kinds[k.Name()] = true
		if k.Name() == "Deployment" {
			e.Deployment = k.New
		}
	}
	for _, opt := range o.Optional {
		e.Kinds[opt.Kind.Name()] = true
	}
	return configpods.Setup(mgr, e, max(o.Workers, 1))
}
