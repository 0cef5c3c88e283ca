package app

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/source"
)

// trackPriors drops the priors of the sources of kinds when they are
// deleted. The priors themselves are recorded by the caches' transform
// (source.Priors.Transform), before the informer stores a change.
func trackPriors(ctx context.Context, c cache.Informers, priors *source.Priors, kinds []refs.Kind) error {
	for _, kind := range kinds {
		inf, err := c.GetInformer(ctx, source.Object(kind), cache.BlockUntilSynced(false))
		if err != nil {
			return fmt.Errorf("watching %ss: %w", kind, err)
		}
		_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			DeleteFunc: func(obj any) {
				if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
					obj = t.Obj
				}
				if o, ok := obj.(client.Object); ok {
					priors.Forget(kind, o)
				}
			},
		})
		if err != nil {
			return fmt.Errorf("watching %ss: %w", kind, err)
		}
	}
	return nil
}

// newInformer is client-go's informer, whose lists and watches wait out
// an outage of the API server (nil: they do not), and whose store priors
// read when it holds ConfigMaps or Secrets.
func newInformer(priors *source.Priors, o *outage) func(toolscache.ListerWatcher, runtime.Object, time.Duration, toolscache.Indexers) toolscache.SharedIndexInformer {
	return func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, idx toolscache.Indexers) toolscache.SharedIndexInformer {
		inf := toolscache.NewSharedIndexInformer(o.wrap(lw), obj, resync, idx)
		if kind := source.KindOf(obj); kind != "" {
			priors.Track(kind, inf.GetStore())
		}
		return inf
	}
}
