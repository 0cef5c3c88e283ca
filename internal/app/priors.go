package app

import (
	"context"
	"fmt"

	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/source"
)

// trackPriors keeps priors of the sources of kinds from their informers'
// own events, from the start: a controller's handler is added only when the
// controller starts, after the caches synced, and a change made in between
// would reach it as part of its initial list.
func trackPriors(ctx context.Context, c cache.Informers, priors *source.Priors, clk clock.PassiveClock, kinds []refs.Kind) error {
	for _, kind := range kinds {
		inf, err := c.GetInformer(ctx, source.Object(kind), cache.BlockUntilSynced(false))
		if err != nil {
			return fmt.Errorf("watching %ss: %w", kind, err)
		}
		_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			UpdateFunc: func(old, cur any) {
				o, ok1 := old.(client.Object)
				c, ok2 := cur.(client.Object)
				if ok1 && ok2 {
					priors.Observe(kind, o, c, clk.Now())
				}
			},
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
