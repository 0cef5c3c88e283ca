// Package configpods restarts the pods a config selects: a ConfigMap or
// Secret annotated restart-pods (a label selector of pods in its
// namespace) has the pods it selects evicted when its data changes,
// max-unavailable at a time, except those a workload of Ripple's owns,
// which that workload's reload restarts (docs/restart-methods.md, Pods a
// config selects). It is a controller of its own, keyed by config, with
// its own queue; it reads the pods through the pod restarter's reader
// (one list of a namespace per tick, never a pod informer) and decides
// each step with podrestart.Next, as the evict restart method does.
//
// What it remembers is the time of each config's change, in memory; the
// pods show the progress: those created after the change are done. After
// a Ripple restart the change is the config's last data write, as its
// managedFields say, so a restart interrupted goes on, and no pod is
// evicted twice for one change.
package configpods

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/refs"
	rsource "github.com/ripple-dev/ripple/internal/source"
)

// MaxPods is how many pods a config's selector may select: past it the
// config's restart is refused with a Warning, so that one annotation
// cannot make Ripple evict a whole namespace's pods.
const MaxPods = 500

// Key names a config: its kind, namespace and name.
type Key struct {
	Kind            refs.Kind
	Namespace, Name string
}

func (k Key) name() types.NamespacedName {
	return types.NamespacedName{Namespace: k.Namespace, Name: k.Name}
}

// Env is what the controller is given.
type Env struct {
	// Cache reads the configs (and the Deployments, for owners); Client
	// evicts pods.
	Cache  client.Reader
	Client client.Client
	// Pods reads the pods of a namespace, around the cache; Acted tells it
	// that Ripple evicted pods of a namespace (the next read must not see
	// them as they were).
	Pods  client.Reader
	Acted func(ns string)
	// Tell tells a notice on a config of kind: Ripple's emitter (log line,
	// Event, alert).
	Tell  func(ctx context.Context, kind string, obj client.Object, n plan.Notice)
	Clock clock.PassiveClock
	// Key is the restart-pods annotation, MaxUnavailable the
	// max-unavailable one, both read on the config.
	Key, MaxUnavailable string
	// Settle is the settle window (--settle-window): how long after a
	// change the first pod is evicted. Timeout is --rollout-timeout: a
	// restart that replaced no pod for that long is told stalled.
	Settle, Timeout time.Duration
	// Kinds are the names of the workload kinds Ripple has: a pod they
	// own is theirs to restart. Deployment, when set, is an empty object
	// of Ripple's Deployment kind, to find the Deployment of a ReplicaSet.
	Kinds      map[string]bool
	Deployment func() client.Object
	// SourceKinds are the config kinds watched.
	SourceKinds []refs.Kind
}

// Controller is the loop.
type Controller struct {
	env Env

	mu sync.Mutex
	// changes are each annotated config's change: its digest and when it
	// was seen.
	changes map[Key]seen
	// told are the Warnings and Events told once per config and change
	// (keys of tellOnce), at most maxTold, then it starts over.
	told map[string]bool
}

// seen is a config's data as last seen, and when it changed.
type seen struct {
	digest string
	at     time.Time
	// evicted is set once this change evicted a pod: its end is told.
	evicted bool
}

const maxTold = 10000

type queue = workqueue.TypedRateLimitingInterface[Key]

// Setup registers the controller with mgr, watching the configs of
// e.SourceKinds in the manager's cache.
func Setup(mgr manager.Manager, e Env, workers int) error {
	c := &Controller{env: e, changes: map[Key]seen{}, told: map[string]bool{}}
	ctl, err := controller.NewTyped("config-pods", mgr, controller.TypedOptions[Key]{Reconciler: c, MaxConcurrentReconciles: workers})
	if err != nil {
		return err
	}
	for _, k := range e.SourceKinds {
		if k != refs.ConfigMap && k != refs.Secret {
			continue
		}
		if err := ctl.Watch(source.TypedKind(mgr.GetCache(), rsource.Object(k), c.handler(k))); err != nil {
			return err
		}
	}
	return nil
}

// handler queues an annotated config on each event of it, and one whose
// annotation was removed (to forget it).
func (c *Controller) handler(kind refs.Kind) handler.TypedEventHandler[client.Object, Key] {
	key := func(o client.Object) Key { return Key{Kind: kind, Namespace: o.GetNamespace(), Name: o.GetName()} }
	annotated := func(o client.Object) bool { _, ok := o.GetAnnotations()[c.env.Key]; return ok }
	return handler.TypedFuncs[client.Object, Key]{
		CreateFunc: func(_ context.Context, e event.TypedCreateEvent[client.Object], q queue) {
			if annotated(e.Object) {
				q.Add(key(e.Object))
			}
		},
		UpdateFunc: func(_ context.Context, e event.TypedUpdateEvent[client.Object], q queue) {
			if annotated(e.ObjectNew) || annotated(e.ObjectOld) {
				q.Add(key(e.ObjectNew))
			}
		},
		DeleteFunc: func(_ context.Context, e event.TypedDeleteEvent[client.Object], q queue) {
			if annotated(e.Object) {
				q.Add(key(e.Object))
			}
		},
	}
}
