package metrics

import (
	"context"
	"sync"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CacheCounter keeps ripple_cache_objects from the adds and deletes of
// each informer, on every replica: standbys hold their caches too.
type CacheCounter struct {
	cache   cache.Cache
	metrics *Metrics

	mu sync.Mutex
	// ctx is set once started; until then kinds are kept for Start.
	ctx   context.Context
	kinds map[string]client.Object
}

// NewCacheCounter returns a CacheCounter of c's informers.
func (m *Metrics) NewCacheCounter(c cache.Cache) *CacheCounter {
	return &CacheCounter{cache: c, metrics: m}
}

// NeedLeaderElection is false: every replica counts its own caches.
func (c *CacheCounter) NeedLeaderElection() bool { return false }

// Start counts the kinds added so far, and those added later at once.
func (c *CacheCounter) Start(ctx context.Context) error {
	c.mu.Lock()
	c.ctx = ctx
	kinds := c.kinds
	c.mu.Unlock()
	for kind, obj := range kinds {
		if err := c.count(ctx, kind, obj); err != nil {
			return err
		}
	}
	return nil
}

// Add counts the objects of kind (a metric label), at once when started
// (an optional kind found later), else from Start.
func (c *CacheCounter) Add(kind string, obj client.Object) error {
	c.mu.Lock()
	ctx := c.ctx
	if ctx == nil {
		if c.kinds == nil {
			c.kinds = map[string]client.Object{}
		}
		c.kinds[kind] = obj
	}
	c.mu.Unlock()
	if ctx == nil {
		return nil
	}
	return c.count(ctx, kind, obj)
}

func (c *CacheCounter) count(ctx context.Context, kind string, obj client.Object) error {
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
