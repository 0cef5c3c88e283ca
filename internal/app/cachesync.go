package app

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/ripple-dev/ripple/internal/digest"
	"github.com/ripple-dev/ripple/internal/digestkey"
	"github.com/ripple-dev/ripple/internal/source"
	"github.com/ripple-dev/ripple/internal/tracing"
	"github.com/ripple-dev/ripple/internal/workload"
)

// syncBound is the manager's cache, with a bound on the wait for it to
// sync at start. controller-runtime's manager waits for its caches without
// a limit, and for a cache that never syncs (RBAC that forbids a list) it
// waits for ever, even after SIGTERM. With syncBound, the cache fails after
// the bound, naming the resources that did not sync, and the manager stops
// with that error; on SIGTERM it stops at once.
type syncBound struct {
	cache.Cache
	timeout time.Duration
	scheme  *runtime.Scheme
	mapper  apimeta.RESTMapper
	// watched are the kinds whose informers Ripple starts with the cache.
	watched []client.Object
	// over is closed to end the wait: the bound passed, or the manager
	// stops.
	over chan struct{}
	once sync.Once
}

// newSyncBound returns the manager's NewCache: controller-runtime's cache,
// bounded.
func newSyncBound(timeout time.Duration, watched []client.Object, bound **syncBound) cache.NewCacheFunc {
	return func(rc *rest.Config, o cache.Options) (cache.Cache, error) {
		c, err := cache.New(rc, o)
		if err != nil {
			return nil, err
		}
		b := &syncBound{Cache: c, timeout: timeout, scheme: o.Scheme, mapper: o.Mapper, watched: watched, over: make(chan struct{})}
		*bound = b
		return b, nil
	}
}

// Start runs the cache. It fails, naming the resources that have not
// synced, when the cache has not synced within the bound.
func (c *syncBound) Start(ctx context.Context) error {
	errc := make(chan error, 1)
	go func() { errc <- c.Cache.Start(ctx) }()
	syncCtx, cancel := c.until(ctx)
	defer cancel()
	syncCtx, cancelTimeout := context.WithTimeout(syncCtx, c.timeout)
	defer cancelTimeout()
	if c.Cache.WaitForCacheSync(syncCtx) || ctx.Err() != nil || c.gaveUp() {
		return <-errc
	}
	err := c.unsynced(ctx)
	c.giveUp()
	return err
}

// WaitForCacheSync waits until the cache has synced, or until Ripple gave
// up waiting: it then reports true, so that the manager (which waits for
// the cache before anything else) goes on, to stop.
func (c *syncBound) WaitForCacheSync(ctx context.Context) bool {
	ctx, cancel := c.until(ctx)
	defer cancel()
	return c.Cache.WaitForCacheSync(ctx) || c.gaveUp()
}

// until returns ctx, ended too when Ripple gives up waiting.
func (c *syncBound) until(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-c.over:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// giveUp ends the wait for the cache.
func (c *syncBound) giveUp() { c.once.Do(func() { close(c.over) }) }

func (c *syncBound) gaveUp() bool {
	select {
	case <-c.over:
		return true
	default:
		return false
	}
}

// unsynced is the error naming the watched resources that have not synced.
func (c *syncBound) unsynced(ctx context.Context) error {
	var names []string
	for _, obj := range c.watched {
		inf, err := c.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
		if err != nil || !inf.HasSynced() {
			names = append(names, c.resource(obj))
		}
	}
	if len(names) == 0 {
		names = []string{"(an informer started later)"}
	}
	return fmt.Errorf("the caches did not sync within %s (--cache-sync-timeout): cannot list and watch %s; check Ripple's RBAC",
		c.timeout, strings.Join(names, ", "))
}

// resource names obj's resource as RBAC does: "secrets", "deployments.apps".
func (c *syncBound) resource(obj client.Object) string {
	gvk, err := apiutil.GVKForObject(obj, c.scheme)
	if err != nil {
		return fmt.Sprintf("%T", obj)
	}
	m, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return gvk.Kind
	}
	return m.Resource.GroupResource().String()
}

// rippleManager is Ripple's manager: it gives up the wait for the caches when
// it stops, and holds the priors its caches keep (source.Priors).
type rippleManager struct {
	ctrl.Manager
	bound  *syncBound // nil with a test's own cache
	priors *source.Priors
	// digestKey, when set, is where the caches' digest key is read (or
	// created) before they start.
	digestKey *digestKeyLoad
	// traces is the trace exporter when tracing is on (Run starts and
	// flushes it; the change controller's tracer is its).
	traces *tracing.Provider
}

// digestKeyLoad is the digest key ring's Secret and the --digest mode.
type digestKeyLoad struct {
	namespace string
	mode      digest.Mode
}

// Start runs the manager until ctx ends. controller-runtime's manager
// does not stop while it waits for its caches: ending the wait lets it.
// The digest key is loaded first, before the caches start and so before
// any reconcile writes: every digest they keep is made with it. Every
// replica loads it, leader or not, so that all use the one key.
func (m *rippleManager) Start(ctx context.Context) error {
	if m.bound != nil {
		defer context.AfterFunc(ctx, m.bound.giveUp)()
	}
	if k := m.digestKey; k != nil {
		ring, err := digestkey.Load(ctx, m.GetAPIReader(), m.GetClient(), k.namespace, workload.FieldManager)
		switch {
		case err != nil && k.mode != digest.HMACSHA256 && apierrors.IsForbidden(err):
			// RBAC made for Reloader, or a plain install's own, may not let
			// Ripple read or create the key: with Reloader's digests it still
			// starts, its per-key digests unkeyed, as before keys existed.
			m.GetLogger().Error(err, "per-key digests are not keyed: grant get and create on this Secret (the Helm chart does) to key them")
		case err != nil:
			return err
		}
		m.priors.Digester = digest.Digester{Mode: k.mode, Ring: ring}
	}
	return m.Manager.Start(ctx)
}
