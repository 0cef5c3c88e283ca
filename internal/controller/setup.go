package controller

import (
	"context"
	"fmt"

	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/ripple-dev/ripple/internal/config"
	"github.com/ripple-dev/ripple/internal/workload"
)

// Setup registers the index and the controller of every workload kind.
func Setup(ctx context.Context, mgr ctrl.Manager, cfg config.Config, kinds []workload.Kind, clk clock.PassiveClock) error {
	for _, kind := range kinds {
		r := &Reconciler{
			Client:   mgr.GetClient(),
			Kind:     kind,
			Config:   cfg,
			Recorder: mgr.GetEventRecorder("ripple"),
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
