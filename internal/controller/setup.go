package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/ripple-dev/ripple/internal/config"
	"github.com/ripple-dev/ripple/internal/metrics"
	"github.com/ripple-dev/ripple/internal/notify"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/workload"
)

// Optional is a workload kind used only once the API server serves it.
type Optional struct {
	Kind workload.Kind
	GVK  schema.GroupVersionKind
	// Flag is the flag that enabled it, for the log.
	Flag string
}

// Setup registers the index and the controller of every workload kind,
// the discovery of the optional kinds (and of the CSI driver's API with
// --enable-csi-integration), and the runnables that keep the metrics.
func Setup(ctx context.Context, mgr ctrl.Manager, cfg config.Config, kinds []workload.Kind, optional []Optional, clk clock.PassiveClock, m *metrics.Metrics) error {
	var alert func(notify.Reload)
	if cfg.Alert.URL != "" {
		q, err := notify.NewQueue(cfg.Alert.URL, notify.Options{Proxy: cfg.Alert.Proxy, OnDrop: m.NotificationDropped}, mgr.GetLogger().WithName("alerts"))
		if err != nil {
			return fmt.Errorf("ALERT_WEBHOOK_URL: %w", err)
		}
		if err := mgr.Add(q); err != nil {
			return err
		}
		alert = func(r notify.Reload) { q.Send(notify.AlertMessage(cfg.Alert.Sink, r, cfg.Alert.AdditionalInfo)) }
	}
	if err := mgr.Add(&eventCounter{cache: mgr.GetCache(), kinds: InformerKinds(cfg.Kinds), metrics: m}); err != nil {
		return err
	}
	if err := mgr.Add(leaderGauge{m}); err != nil {
		return err
	}
	s := &setup{mgr: mgr, cfg: cfg, clock: clk, metrics: m, alert: alert, started: clk.Now(),
		counter: &cacheCounter{cache: mgr.GetCache(), metrics: m}}
	if cfg.CSI {
		s.csi = &csiState{}
	}
	for _, k := range InformerKinds(cfg.Kinds) {
		if err := s.counter.add(string(k), ConfigObject(k)); err != nil {
			return err
		}
	}
	if err := mgr.Add(s.counter); err != nil {
		return err
	}

	for _, kind := range kinds {
		if err := s.add(ctx, kind); err != nil {
			return err
		}
	}
	d := &discoverer{setup: s, log: mgr.GetLogger().WithName("discovery")}
	for _, o := range optional {
		d.items = append(d.items, discoverable{gvk: o.GVK, flag: o.Flag, enable: func(ctx context.Context) error { return s.add(ctx, o.Kind) }})
	}
	if cfg.CSI {
		d.items = append(d.items, discoverable{gvk: SecretProviderClassPodStatusGVK, flag: "--enable-csi-integration", enable: s.enableCSI})
	}
	if len(d.items) == 0 {
		return nil
	}
	dc, err := discovery.NewDiscoveryClientForConfig(mgr.GetConfig())
	if err != nil {
		return err
	}
	d.client = dc
	return mgr.Add(d)
}

// setup adds workload controllers to a manager, also after it started.
type setup struct {
	mgr     ctrl.Manager
	cfg     config.Config
	clock   clock.PassiveClock
	metrics *metrics.Metrics
	alert   func(notify.Reload)
	started time.Time
	csi     *csiState
	counter *cacheCounter

	mu          sync.Mutex
	reconcilers []*Reconciler
	controllers []controller.Controller
}

// add indexes kind and starts its controller.
func (s *setup) add(ctx context.Context, kind workload.Kind) error {
	r := &Reconciler{
		Client:   s.mgr.GetClient(),
		Kind:     kind,
		Config:   s.cfg,
		Recorder: s.mgr.GetEventRecorder("ripple"),
		Metrics:  s.metrics,
		Alert:    s.alert,
		Clock:    s.clock,
		Started:  s.started,
		csi:      s.csi,
	}
	if err := s.mgr.GetFieldIndexer().IndexField(ctx, kind.New(), indexConfigs, r.indexValues); err != nil {
		return fmt.Errorf("indexing %s by config: %w", kind.Name(), err)
	}
	b := ctrl.NewControllerManagedBy(s.mgr).
		Named(kind.Name()).
		For(kind.New(), builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		WithOptions(controller.Options{MaxConcurrentReconciles: 4, NewQueue: s.newQueue})
	for _, ck := range InformerKinds(s.cfg.Kinds) {
		b = b.Watches(ConfigObject(ck), handler.EnqueueRequestsFromMapFunc(r.requestsForConfig(ck)),
			builder.WithPredicates(configChanged(s.cfg)))
	}
	if s.cfg.NamespaceSelector != nil {
		// A namespace that starts matching brings its workloads in.
		b = b.WatchesMetadata(namespaceObject(), handler.EnqueueRequestsFromMapFunc(r.requestsForNamespace))
	}
	if rec, ok := kind.(recoverer); ok {
		if err := s.mgr.Add(&recovery{kind: rec, client: s.mgr.GetClient(), namespaces: s.cfg.Namespaces}); err != nil {
			return err
		}
	}
	if ts, ok := kind.(workload.TemplateSource); ok {
		refOf := func(obj client.Object) []string {
			if name, ok := ts.TemplateRef(obj); ok {
				return []string{name}
			}
			return nil
		}
		if err := s.mgr.GetFieldIndexer().IndexField(ctx, kind.New(), indexWorkloadRef, refOf); err != nil {
			return fmt.Errorf("indexing %s by workloadRef: %w", kind.Name(), err)
		}
		// A workload seen before its Deployment has no template to decide
		// on: the Deployment's arrival (or template change) brings it back.
		b = b.Watches(workload.Deployment.New(), handler.EnqueueRequestsFromMapFunc(r.requestsForTemplateRef),
			builder.WithPredicates(predicate.GenerationChangedPredicate{}))
	}
	if err := s.counter.add(kind.Name(), kind.New()); err != nil {
		return err
	}
	c, err := b.Build(r)
	if err != nil {
		return fmt.Errorf("setting up the %s controller: %w", kind.Name(), err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reconcilers = append(s.reconcilers, r)
	s.controllers = append(s.controllers, c)
	if s.csi != nil && s.csi.served.Load() {
		return s.watchCSI(r, c)
	}
	return nil
}

// newQueue is controller-runtime's default queue (a priority queue) with
// Ripple's queue metrics: Reloader's reloader_workqueue_* and the depth per
// controller.
func (s *setup) newQueue(name string, rl workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
	return priorityqueue.New(name, func(o *priorityqueue.Opts[reconcile.Request]) {
		o.RateLimiter = rl
		o.MetricProvider = s.metrics.QueueMetrics()
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
	s.csi.served.Store(true)
	for i, r := range s.reconcilers {
		if err := s.watchCSI(r, s.controllers[i]); err != nil {
			return err
		}
	}
	return nil
}

func (s *setup) watchCSI(r *Reconciler, c controller.Controller) error {
	cache := s.mgr.GetCache()
	if err := c.Watch(source.Kind(cache, client.Object(spcpsObject()), r.spcpsHandler())); err != nil {
		return err
	}
	return c.Watch(source.Kind(cache, ConfigObject(refs.SecretProviderClass),
		handler.EnqueueRequestsFromMapFunc(r.requestsForConfig(refs.SecretProviderClass)), configChanged(s.cfg)))
}

// InformerKinds are the config kinds watched directly: ConfigMaps and
// Secrets. SecretProviderClasses are watched through their pod statuses,
// once the CSI driver's API is served.
func InformerKinds(kinds []refs.Kind) []refs.Kind {
	return slices.DeleteFunc(slices.Clone(kinds), func(k refs.Kind) bool { return k == refs.SecretProviderClass })
}

// configChanged passes config events that can change a reload decision:
// creates, deletes, data changes, and changes of the ignore and match
// annotations. Label- and other metadata-only updates and relists pass
// nothing, so they cost no reconcile.
func configChanged(cfg config.Config) predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, n := e.ObjectOld.GetAnnotations(), e.ObjectNew.GetAnnotations()
			return o[digestAnnotation] != n[digestAnnotation] ||
				o[cfg.Keys.Ignore] != n[cfg.Keys.Ignore] ||
				o[cfg.Keys.Match] != n[cfg.Keys.Match]
		},
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// eventCounter counts config events once each, for
// reloader_events_received_total: the workload controllers' predicates see
// every event once per workload kind.
type eventCounter struct {
	cache   cache.Cache
	kinds   []refs.Kind
	metrics *metrics.Metrics
}

func (c *eventCounter) Start(ctx context.Context) error {
	for _, kind := range c.kinds {
		inf, err := c.cache.GetInformer(ctx, ConfigObject(kind))
		if err != nil {
			return err
		}
		resource := strings.ToLower(string(kind)) + "s"
		_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc: func(any) { c.metrics.EventReceived("add", resource, true) },
			UpdateFunc: func(o, n any) {
				oo, _ := o.(client.Object)
				no, _ := n.(client.Object)
				c.metrics.EventReceived("update", resource, oo == nil || no == nil ||
					oo.GetAnnotations()[digestAnnotation] != no.GetAnnotations()[digestAnnotation])
			},
			DeleteFunc: func(any) { c.metrics.EventReceived("delete", resource, true) },
		})
		if err != nil {
			return err
		}
	}
	<-ctx.Done()
	return nil
}

// leaderGauge sets ripple_leader: runnables that need leader election start
// only on the leader (or at once without leader election). Losing the lead
// ends the process, so the gauge never needs to go back to 0.
type leaderGauge struct{ metrics *metrics.Metrics }

func (l leaderGauge) Start(ctx context.Context) error {
	l.metrics.SetLeader(true)
	<-ctx.Done()
	return nil
}

func (leaderGauge) NeedLeaderElection() bool { return true }
