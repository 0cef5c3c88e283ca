package change

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/ripple-dev/ripple/api/v1alpha1"
	"github.com/ripple-dev/ripple/internal/canary"
	"github.com/ripple-dev/ripple/internal/digest"
	"github.com/ripple-dev/ripple/internal/digestkey"
	"github.com/ripple-dev/ripple/internal/gather"
	"github.com/ripple-dev/ripple/internal/metricgate"
	"github.com/ripple-dev/ripple/internal/metrics"
	"github.com/ripple-dev/ripple/internal/optional"
	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/workload"
)

// Options turn the change controller on, bound what it keeps and choose
// the gates of canaried changes beside the status (PodGate:
// --canary-gates=pods; Query: --canary-gates=query).
type Options struct {
	On                    bool
	History, PerNamespace int
	PodGate               bool
	Query                 *QueryGate
	// Tracer exports a trace per change (docs/tracing.md); nil: off.
	Tracer trace.Tracer
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

// Workloads are the workloads of every kind as the change controller
// reaches them: the Keeper's Fleet, and what its watches and gates ask of
// the workloads' side.
type Workloads interface {
	Fleet
	// Tell tells notice n about cfg, a config of kind: its canaried change
	// passed or halted (an Event, an alert).
	Tell(ctx context.Context, kind refs.Kind, cfg client.Object, n plan.Notice)
	// Wake queues the workloads in ns that may use config: its change's
	// canary moved on, which their plans read.
	Wake(ctx context.Context, ns string, config refs.Ref)
	// Object reads workload w (a canary) from the cache, with its kind
	// (nil: gone).
	Object(ctx context.Context, w workload.Ref) (client.Object, workload.Kind, error)
}

// Env is what the change controller runs with, as the workload
// controllers' setup hands it over: their manager, their fleet and the
// settings they share.
type Env struct {
	Manager manager.Manager
	// Client writes ConfigRollouts and reads them, and the configs, from
	// the cache.
	Client client.Client
	Fleet  Workloads
	// InScope tells whether a namespace is this Ripple's.
	InScope  func(ctx context.Context, ns string) (bool, error)
	Clock    clock.PassiveClock
	Metrics  *metrics.Metrics
	Settings plan.Settings
	// Ring is the install's digest key ring, set before the caches start.
	Ring func() digest.Ring
	// Namespace is Ripple's own, where an earlier Ripple kept its canary
	// records; Namespaces are the watched ones (empty: all).
	Namespace  string
	Namespaces []string
}

// workers is how many configs the change controller looks at at once:
// its work is reads from the cache and a few writes.
const workers = 4

type queue = workqueue.TypedRateLimitingInterface[Key]

// Controller is the change controller's loop around the Keeper, as the
// workload controllers reach it: its queue, once it started, and the
// canaries its ConfigRollouts keep (Canary). It starts once the API
// server serves ConfigRollouts (API); its keeper and controller are set
// once, under mu, before enabled.
type Controller struct {
	o   Options
	env Env

	mu     sync.Mutex
	keeper *Keeper
	ctrl   controller.TypedController[Key]
	// kinds are the workload kinds set up, watched once ctrl is.
	kinds []workload.Kind

	turns turns
	queue atomic.Pointer[queue]
	// early holds the configs looked at before the controller started
	// (the CRD is discovered after the workload controllers run): start
	// queues them, so that a change a workload saw first is not lost.
	earlyMu sync.Mutex
	early   map[Key]struct{}
	// base is the change controller's context, once it started: the pod
	// gate's watches end with it.
	base    atomic.Pointer[context.Context]
	enabled atomic.Bool
	// unkept says why ConfigRollouts cannot be used, once the API server
	// was asked; nil before (a canaried change then waits).
	unkept atomic.Pointer[gather.Unkept]
}

// New is the change controller of env's workloads; nil when it is off.
func New(o Options, env Env) *Controller {
	if !o.On {
		return nil
	}
	return &Controller{o: o, env: env}
}

// Kept is a change controller, as the workloads reach it, that reads the
// ConfigRollouts in cache as if it had started, with no loop: for the
// tests of the workloads' reconciles, which make the Keeper's looks
// themselves.
func Kept(cache client.Client, ring func() digest.Ring) *Controller {
	c := &Controller{o: Options{On: true}, env: Env{Client: cache, Ring: ring}, keeper: &Keeper{}}
	c.enabled.Store(true)
	return c
}

// API is the optional API that starts the change controller: the
// ConfigRollout CRD served; none when it is off.
func (c *Controller) API() []optional.API {
	if c == nil {
		return nil
	}
	return []optional.API{{GVK: v1alpha1.GroupVersion.WithKind("ConfigRollout"), Flag: "--config-rollouts", Enable: c.enable, Missing: c.missing}}
}

// missing notes that ConfigRollouts are not served, or may not be
// listed (err, forbidden): canaried changes are held (or, with
// --canary-unkept=roll, roll without a canary) until they are, and are
// told what is missing and what to do. Another failure to start watching
// them (a cache that did not sync in time) holds canaried changes until a
// retry succeeds, saying nothing: no canary is skipped for a slow start.
func (c *Controller) missing(err error) {
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
func (c *Controller) Canary(ctx context.Context, ns string, src plan.Source) (canary.State, bool, error) {
	switch {
	case c == nil:
		return canary.State{}, false, gather.UnkeptOff
	case !c.enabled.Load():
		if why := c.unkept.Load(); why != nil {
			return canary.State{}, false, *why
		}
		return canary.State{}, false, nil // not asked yet: the change waits
	}
	revs := Revisions(c.env.Ring(), ns, src.Ref, digest.RevisionSum(src.Digest, src.Others))
	if len(revs) == 0 {
		return canary.State{}, false, gather.Unkept("a Secret's change has a ConfigRollout only with the digest key (Secret " + digestkey.Secret + " in Ripple's namespace), which Ripple could not read")
	}
	items, err := List(ctx, c.env.Client, ns, src.Ref, true)
	if err != nil {
		return canary.State{}, false, err
	}
	cr, ok := Latest(items, src.UID, revs)
	if !ok {
		if why, refused := c.keeper.Refused(ns); refused {
			return canary.State{}, false, gather.UnkeptRefused(ns, why) // it will not be made
		}
		return canary.State{}, false, nil
	}
	cn, ok := CanaryOf(cr.Status.Canary, ns, src.Ref, src.Digest)
	return cn, ok, nil
}

func (c *Controller) start(ctx context.Context, q queue) error {
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
func (c *Controller) look(key Key) {
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
		c.early = map[Key]struct{}{}
	}
	if len(c.early) < maxEarly {
		c.early[key] = struct{}{}
	}
}

// Touch queues the configs of ns whose change the plan p of a workload
// saw (to roll, or held: by an approval, a window, a breaker, a slot), or
// whose canary it asks for: a change seen by a workload's reconcile only
// (made while Ripple was down, or before the change controller started)
// gets its ConfigRollout and canary too, and an approver reads what waits
// from it.
func (c *Controller) Touch(ns string, p plan.Plan) {
	if c == nil {
		return
	}
	for _, a := range p.CanaryAsks {
		c.look(Key{Namespace: ns, Config: a.Config})
	}
	seen := p.Changes
	if p.Awaiting != nil {
		seen = append(slices.Clip(seen), p.Awaiting.Changes...)
	}
	for _, ch := range seen {
		if ch.Ref.Kind == refs.ConfigMap || ch.Ref.Kind == refs.Secret {
			c.look(Key{Namespace: ns, Config: ch.Ref})
		}
	}
}

// context is the change controller's context; nil before it started.
func (c *Controller) context() context.Context {
	if ctx := c.base.Load(); ctx != nil {
		return *ctx
	}
	return nil
}
