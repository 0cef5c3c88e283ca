// Package announce is --webhook-url mode: instead of reloading, every data
// change of a source in scope (and its creation or deletion, with
// --reload-on-create or --reload-on-delete) is POSTed, as Reloader does.
// The body keeps Reloader's field and adds what changed and which workloads
// would have reloaded. Delivery is asynchronous (package notify), so a slow
// endpoint holds nothing up.
package announce

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/internal/dependents"
	"github.com/ripple-dev/ripple/internal/notify"
	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/source"
	"github.com/ripple-dev/ripple/internal/workload"
)

// Body is the JSON posted for one change.
type Body struct {
	Webhook   string         `json:"webhook"` // Reloader's fixed "update successful"
	Event     string         `json:"event"`   // update, create or delete
	Kind      refs.Kind      `json:"kind"`
	Namespace string         `json:"namespace"`
	Name      string         `json:"name"`
	Workloads []workload.Ref `json:"workloads"`
}

// Notifier posts source changes. It runs on the leader only.
type Notifier struct {
	Cache    cache.Cache
	Finder   *dependents.Finder
	Kinds    []workload.Kind
	Settings plan.Settings
	Queue    *notify.Queue
	// ScopeBackoff paces the retries of a scope check that fails (the
	// namespace cache not answering); the zero value means scopeBackoff.
	ScopeBackoff wait.Backoff
}

// scopeBackoff tries a scope check 5 times over about 1.5 s: long
// enough for a cache that is (re)syncing, short enough not to hold up the
// informer's other events for long.
var scopeBackoff = wait.Backoff{Duration: 100 * time.Millisecond, Factor: 2, Steps: 5}

// Setup registers webhook mode on mgr: the workload indexes (to name the
// workloads that would reload), the delivery queue and the notifier. No
// workload is ever written.
func Setup(ctx context.Context, mgr ctrl.Manager, n *Notifier) error {
	for _, kind := range n.Kinds {
		if err := n.Finder.Register(ctx, mgr.GetFieldIndexer(), kind); err != nil {
			return err
		}
	}
	if err := mgr.Add(n.Queue); err != nil {
		return err
	}
	return mgr.Add(n)
}

// NeedLeaderElection is true: only the leader posts.
func (n *Notifier) NeedLeaderElection() bool { return true }

// Start adds the event handlers and waits for ctx to end.
func (n *Notifier) Start(ctx context.Context) error {
	for _, kind := range source.Watched(n.Settings.SourceKinds) {
		inf, err := n.Cache.GetInformer(ctx, source.Object(kind))
		if err != nil {
			return err
		}
		if _, err := inf.AddEventHandler(n.handler(ctx, kind)); err != nil {
			return err
		}
	}
	<-ctx.Done()
	return nil
}

func (n *Notifier) handler(ctx context.Context, kind refs.Kind) toolscache.ResourceEventHandler {
	started := n.Settings.Started.Truncate(time.Second)
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if o, ok := obj.(client.Object); ok && n.Settings.ReloadOnCreate && !o.GetCreationTimestamp().Time.Before(started) {
				n.post(ctx, "create", kind, o)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			o, okOld := oldObj.(client.Object)
			cur, okNew := newObj.(client.Object)
			if okOld && okNew && source.Digest(o) != source.Digest(cur) {
				n.post(ctx, "update", kind, cur)
			}
		},
		DeleteFunc: func(obj any) {
			if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = t.Obj // a delete seen only after a watch gap
			}
			if o, ok := obj.(client.Object); ok && n.Settings.ReloadOnDelete {
				n.post(ctx, "delete", kind, o)
			}
		},
	}
}

func (n *Notifier) post(ctx context.Context, event string, kind refs.Kind, src client.Object) {
	if src.GetName() == "" || src.GetNamespace() == "" {
		return
	}
	if !n.inScope(ctx, event, kind, src) {
		return
	}
	body := Body{Webhook: "update successful", Event: event, Kind: kind, Namespace: src.GetNamespace(), Name: src.GetName(), Workloads: []workload.Ref{}}
	changed := plan.Source{Ref: refs.Ref{Kind: kind, Name: src.GetName()}, Found: true, Annotations: src.GetAnnotations()}
	for _, k := range n.Kinds {
		objs, err := n.Finder.Of(ctx, k, src.GetNamespace(), changed.Ref)
		if err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "finding the workloads of a source")
		}
		for _, obj := range objs {
			if n.wouldReload(ctx, k, obj, changed) {
				body.Workloads = append(body.Workloads, workload.RefTo(k, obj))
			}
		}
	}
	b, err := json.Marshal(body)
	if err != nil {
		return
	}
	n.Queue.Send(notify.Message{Body: b, ContentType: "application/json", Namespace: src.GetNamespace(),
		What: fmt.Sprintf("%s %s %s/%s", event, kind, src.GetNamespace(), src.GetName())})
}

// inScope reports whether the namespace of src is in scope. A check that
// fails is retried; when it still fails the change is not posted (posting
// another shard's or an unselected namespace's changes would be wrong), and
// that is logged as an error naming the change, never dropped silently.
func (n *Notifier) inScope(ctx context.Context, event string, kind refs.Kind, src client.Object) bool {
	backoff := n.ScopeBackoff
	if backoff.Steps == 0 {
		backoff = scopeBackoff
	}
	var in bool
	var last error
	err := wait.ExponentialBackoffWithContext(ctx, backoff, func(ctx context.Context) (bool, error) {
		in, last = n.Finder.InScope(ctx, src.GetNamespace())
		return last == nil, nil
	})
	if err == nil {
		return in
	}
	if last == nil {
		last = err // ctx ended before a check
	}
	ctrl.LoggerFrom(ctx).Error(last, "not posting a change: cannot tell whether its namespace is in scope",
		"event", event, "kind", kind, "namespace", src.GetNamespace(), "name", src.GetName(), "attempts", backoff.Steps)
	return false
}

// wouldReload reports whether a change of src reloads obj under its
// annotations, whatever was applied before.
func (n *Notifier) wouldReload(ctx context.Context, kind workload.Kind, obj client.Object, src plan.Source) bool {
	tpl, err := workload.Template(ctx, n.Cache, kind, obj)
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "reading the pod template of a workload")
	}
	if tpl == nil {
		return false
	}
	return plan.Reloads(n.Settings, plan.Workload{Annotations: obj.GetAnnotations(), Template: tpl}, src)
}
