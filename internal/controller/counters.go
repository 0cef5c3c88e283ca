package controller

import (
	"context"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/internal/metrics"
)

// cacheCounter keeps ripple_cache_objects from the adds and deletes of
// each informer, on every replica: standbys hold their caches too.
type cacheCounter struct {
	cache   cache.Cache
	metrics *metrics.Metrics
	// kinds maps a metric label to an object of the informer's kind.
	kinds map[string]client.Object
}

func (c *cacheCounter) NeedLeaderElection() bool { return false }

func (c *cacheCounter) Start(ctx context.Context) error {
	for kind, obj := range c.kinds {
		if err := c.count(ctx, kind, obj); err != nil {
			return err
		}
	}
	return nil
}

// count starts counting the objects of one informer.
func (c *cacheCounter) count(ctx context.Context, kind string, obj client.Object) error {
	inf, err := c.cache.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
	if err != nil {
		return err
	}
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { c.metrics.CacheObjects(kind, 1) },
		DeleteFunc: func(any) { c.metrics.CacheObjects(kind, -1) },
	})
	return err
}
