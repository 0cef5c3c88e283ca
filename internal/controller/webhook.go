package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/internal/annotation"
	"github.com/ripple-dev/ripple/internal/config"
	"github.com/ripple-dev/ripple/internal/decide"
	"github.com/ripple-dev/ripple/internal/notify"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/workload"
)

// Webhook is --webhook-url mode: instead of reloading, every data change of
// a config in scope (and its creation or deletion, with --reload-on-create
// or --reload-on-delete) is POSTed, as Reloader does. The body keeps
// Reloader's field and adds what changed and which workloads would have
// reloaded. Delivery is asynchronous (package notify), so a slow endpoint
// holds nothing up.
type Webhook struct {
	cache    ctrl.Manager
	cfg      config.Config
	queue    *notify.Queue
	resolver []*Reconciler // one per workload kind, for the index and the decision
	started  time.Time
}

// WebhookBody is the JSON posted for one change.
type WebhookBody struct {
	Webhook   string        `json:"webhook"` // Reloader's fixed "update successful"
	Event     string        `json:"event"`   // update, create or delete
	Kind      refs.Kind     `json:"kind"`
	Namespace string        `json:"namespace"`
	Name      string        `json:"name"`
	Workloads []WorkloadRef `json:"workloads"`
}

// WorkloadRef names a workload.
type WorkloadRef struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// SetupWebhook registers webhook mode: the workload indexes (to name the
// workloads that would reload) and the config watcher. No workload is
// ever written.
func SetupWebhook(ctx context.Context, mgr ctrl.Manager, cfg config.Config, kinds []workload.Kind, q *notify.Queue, started time.Time) error {
	w := &Webhook{cache: mgr, cfg: cfg, queue: q, started: started}
	for _, kind := range kinds {
		r := &Reconciler{Client: mgr.GetClient(), Kind: kind, Config: cfg}
		if err := mgr.GetFieldIndexer().IndexField(ctx, kind.New(), indexConfigs, r.indexValues); err != nil {
			return fmt.Errorf("indexing %s by config: %w", kind.Name(), err)
		}
		w.resolver = append(w.resolver, r)
	}
	if err := mgr.Add(q); err != nil {
		return err
	}
	return mgr.Add(w)
}

// NeedLeaderElection: only the leader posts.
func (w *Webhook) NeedLeaderElection() bool { return true }

// Start adds the event handlers and waits for ctx to end.
func (w *Webhook) Start(ctx context.Context) error {
	for _, kind := range InformerKinds(w.cfg.Kinds) {
		inf, err := w.cache.GetCache().GetInformer(ctx, ConfigObject(kind))
		if err != nil {
			return err
		}
		_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc: func(obj any) {
				if o, ok := obj.(client.Object); ok && w.cfg.ReloadOnCreate && !o.GetCreationTimestamp().Time.Before(w.started.Truncate(time.Second)) {
					w.post(ctx, "create", kind, o)
				}
			},
			UpdateFunc: func(oldObj, newObj any) {
				o, okOld := oldObj.(client.Object)
				n, okNew := newObj.(client.Object)
				if okOld && okNew && o.GetAnnotations()[digestAnnotation] != n.GetAnnotations()[digestAnnotation] {
					w.post(ctx, "update", kind, n)
				}
			},
			DeleteFunc: func(obj any) {
				if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
					obj = t.Obj // a delete seen only after a watch gap
				}
				if o, ok := obj.(client.Object); ok && w.cfg.ReloadOnDelete {
					w.post(ctx, "delete", kind, o)
				}
			},
		})
		if err != nil {
			return err
		}
	}
	<-ctx.Done()
	return nil
}

func (w *Webhook) post(ctx context.Context, event string, kind refs.Kind, cfg client.Object) {
	if cfg.GetName() == "" || cfg.GetNamespace() == "" {
		return
	}
	if in, err := w.resolver[0].inScope(ctx, cfg.GetNamespace()); err != nil || !in {
		return
	}
	body := WebhookBody{Webhook: "update successful", Event: event, Kind: kind, Namespace: cfg.GetNamespace(), Name: cfg.GetName(), Workloads: []WorkloadRef{}}
	for _, r := range w.resolver {
		for _, req := range r.requestsForConfig(kind)(ctx, cfg) {
			obj := r.Kind.New()
			if err := r.Client.Get(ctx, req.NamespacedName, obj); err != nil {
				if !apierrors.IsNotFound(err) {
					ctrl.LoggerFrom(ctx).Error(err, "reading a workload from the cache")
				}
				continue
			}
			if r.wouldReload(obj, kind, cfg) {
				body.Workloads = append(body.Workloads, WorkloadRef{Kind: r.Kind.Name(), Namespace: obj.GetNamespace(), Name: obj.GetName()})
			}
		}
	}
	b, err := json.Marshal(body)
	if err != nil {
		return
	}
	w.queue.Send(notify.Message{Body: b, ContentType: "application/json", What: fmt.Sprintf("%s %s %s/%s", event, kind, cfg.GetNamespace(), cfg.GetName())})
}

// wouldReload reports whether a change of cfg reloads obj under its
// annotations, ignoring what was applied before.
func (r *Reconciler) wouldReload(obj client.Object, kind refs.Kind, cfg client.Object) bool {
	tpl := r.Kind.PodTemplate(obj)
	if tpl == nil {
		return false
	}
	ref := refs.Ref{Kind: kind, Name: cfg.GetName()}
	container, isRef := refs.Target(&tpl.Spec, ref)
	d := decide.Decide(decide.Input{
		Keys:          r.Config.Keys,
		Policy:        annotation.Parse(r.Config.Keys, kind, obj.GetAnnotations(), tpl.Annotations),
		Config:        decide.Config{Ref: ref, Annotations: cfg.GetAnnotations()},
		Referenced:    isRef,
		AutoReloadAll: r.Config.AutoReloadAll,
	})
	return d.Reload && container != ""
}
