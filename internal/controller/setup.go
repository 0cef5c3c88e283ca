package controller

import (
	"context"
	"fmt"
	"strings"

	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/ripple-dev/ripple/internal/config"
	"github.com/ripple-dev/ripple/internal/metrics"
	"github.com/ripple-dev/ripple/internal/notify"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/workload"
)

// Setup registers the index and the controller of every workload kind,
// and the runnables that keep the metrics.
func Setup(ctx context.Context, mgr ctrl.Manager, cfg config.Config, kinds []workload.Kind, clk clock.PassiveClock, m *metrics.Metrics) error {
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
	if err := mgr.Add(&eventCounter{cache: mgr.GetCache(), kinds: cfg.Kinds, metrics: m}); err != nil {
		return err
	}
	if err := mgr.Add(leaderGauge{m}); err != nil {
		return err
	}
	for _, kind := range kinds {
		r := &Reconciler{
			Client:   mgr.GetClient(),
			Kind:     kind,
			Config:   cfg,
			Recorder: mgr.GetEventRecorder("ripple"),
			Metrics:  m,
			Alert:    alert,
			Clock:    clk,
			Started:  clk.Now(),
		}
		if err := mgr.GetFieldIndexer().IndexField(ctx, kind.New(), indexConfigs, r.indexValues); err != nil {
			return fmt.Errorf("indexing %s by config: %w", kind.Name(), err)
		}
		b := ctrl.NewControllerManagedBy(mgr).
			Named(kind.Name()).
			For(kind.New(), builder.WithPredicates(predicate.Or(
				predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
			WithOptions(controller.Options{MaxConcurrentReconciles: 4})
		for _, ck := range cfg.Kinds {
			b = b.Watches(configObject(ck), handler.EnqueueRequestsFromMapFunc(r.requestsForConfig(ck)),
				builder.WithPredicates(configChanged(cfg)))
		}
		if cfg.NamespaceSelector != nil {
			// A namespace that starts matching brings its workloads in.
			b = b.WatchesMetadata(namespaceObject(), handler.EnqueueRequestsFromMapFunc(r.requestsForNamespace))
		}
		if err := b.Complete(r); err != nil {
			return fmt.Errorf("setting up the %s controller: %w", kind.Name(), err)
		}
	}
	return nil
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
		inf, err := c.cache.GetInformer(ctx, configObject(kind))
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
