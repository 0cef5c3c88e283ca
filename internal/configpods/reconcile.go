package configpods

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/podrestart"
	"github.com/ripple-dev/ripple/internal/rollout"
	rsource "github.com/ripple-dev/ripple/internal/source"
)

// forbiddenRetry is how soon a restart that lacked a permission is tried
// again: granting it takes a chart upgrade.
const forbiddenRetry = time.Minute

// Reconcile takes the next step of the restart of the pods config k
// selects: nothing until its data changes, then, after the settle window,
// the next pods to evict, until every selected pod was created after the
// change.
func (c *Controller) Reconcile(ctx context.Context, k Key) (reconcile.Result, error) {
	obj := rsource.Object(k.Kind)
	err := c.env.Cache.Get(ctx, k.name(), obj)
	if apierrors.IsNotFound(err) {
		c.forget(k)
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	value, ok := obj.GetAnnotations()[c.env.Key]
	if !ok || obj.GetDeletionTimestamp() != nil {
		c.forget(k)
		return reconcile.Result{}, nil
	}
	ch := c.change(k, obj)
	if ch.at.IsZero() {
		return reconcile.Result{}, nil // no change of its data yet
	}
	sel, err := labels.Parse(value)
	if err == nil && sel.Empty() {
		err = fmt.Errorf("it selects every pod of the namespace")
	}
	if err != nil {
		c.warnOnce(ctx, obj, k, ch, "selector", reasonInvalid, "Annotation %s: %q is not a label selector of pods: %v; no pod is restarted", c.env.Key, value, err)
		return reconcile.Result{}, nil
	}
	ps, res, err := c.read(ctx, obj, k, ch, sel)
	if err != nil || res != nil {
		return ptrOr(res), err
	}
	step := podrestart.Next(podrestart.Selected(ch.at, c.env.Settle, c.maxUnavailable(ctx, obj, k, ch), ps.pods), c.env.Clock.Now(), c.env.Timeout)
	log := ctrl.LoggerFrom(ctx).WithValues("config", klog.KObj(obj), "kind", k.Kind)
	if step.Status.State == rollout.Complete {
		if c.done(k, ch) {
			log.Info("selected pods restarted")
			c.tell(ctx, obj, k, reasonRestarted, "Every pod selected by %s was restarted after the change of %s", c.env.Key, ch.at.UTC().Format(time.RFC3339))
		}
		return reconcile.Result{}, nil
	}
	return c.evict(ctx, obj, k, ch, step, ps)
}

func ptrOr(r *reconcile.Result) reconcile.Result {
	if r == nil {
		return reconcile.Result{}
	}
	return *r
}

// selected are the pods a config selects that are its to restart, as
// read, and the pods by name.
type selected struct {
	pods   []podrestart.Pod
	byName map[string]corev1.Pod
}

// read lists the pods sel selects in obj's namespace and keeps those no
// workload of Ripple's owns; a result instead when the restart cannot go
// on (told).
func (c *Controller) read(ctx context.Context, obj client.Object, k Key, ch seen, sel labels.Selector) (selected, *reconcile.Result, error) {
	list := &corev1.PodList{}
	err := c.env.Pods.List(ctx, list, client.InNamespace(k.Namespace), client.MatchingLabelsSelector{Selector: sel})
	if apierrors.IsForbidden(err) {
		c.warnOnce(ctx, obj, k, ch, "forbidden", reasonFailed, "Cannot restart the pods selected by %s: Ripple may not list pods; grant it with the Helm chart value ripple.restartMethods.evict=true", c.env.Key)
		return selected{}, &reconcile.Result{RequeueAfter: forbiddenRetry}, nil
	}
	if err != nil {
		return selected{}, nil, fmt.Errorf("listing the pods: %w", err)
	}
	if n := len(list.Items); n > MaxPods {
		c.warnOnce(ctx, obj, k, ch, "many", reasonInvalid, "Annotation %s: %q selects %d pods, more than %d; no pod is restarted", c.env.Key, obj.GetAnnotations()[c.env.Key], n, MaxPods)
		return selected{}, &reconcile.Result{}, nil
	}
	s := selected{byName: map[string]corev1.Pod{}}
	for i := range list.Items {
		p := &list.Items[i]
		if c.owned(ctx, p) {
			continue // its workload's reload restarts it
		}
		s.byName[p.Name] = *p
		s.pods = append(s.pods, podrestart.Pod{Name: p.Name, Created: p.CreationTimestamp.Time,
			Ready: rollout.PodReady(p), Terminating: p.DeletionTimestamp != nil})
	}
	return s, nil, nil
}

// maxUnavailable is the config's max-unavailable, 1 when not set or
// invalid (told).
func (c *Controller) maxUnavailable(ctx context.Context, obj client.Object, k Key, ch seen) int {
	v, ok := obj.GetAnnotations()[c.env.MaxUnavailable]
	if !ok {
		return 1
	}
	n, err := plan.ParseMaxUnavailable(v)
	if err != nil {
		c.warnOnce(ctx, obj, k, ch, "max-unavailable", reasonInvalid, "Annotation %s: %v; using 1", c.env.MaxUnavailable, err)
		return 1
	}
	return n
}

// evict evicts the pods step names; a PodDisruptionBudget's refusal is
// waited for (told once per change), a missing permission told.
func (c *Controller) evict(ctx context.Context, obj client.Object, k Key, ch seen, step podrestart.Step, ps selected) (reconcile.Result, error) {
	if len(step.Restart) == 0 {
		return reconcile.Result{RequeueAfter: step.Requeue}, nil
	}
	defer c.env.Acted(k.Namespace)
	var evicted []string
	defer func() {
		if len(evicted) > 0 {
			c.tell(ctx, obj, k, reasonEvicted, "Evicted %s (selected by %s; %d left to restart)", strings.Join(evicted, ", "), c.env.Key, step.Left-len(evicted))
		}
	}()
	for _, name := range step.Restart {
		p := ps.byName[name]
		err := evictPod(ctx, c.env.Client, &p)
		switch {
		case apierrors.IsTooManyRequests(err):
			c.warnOnce(ctx, obj, k, ch, "pdb", reasonBlocked, "A PodDisruptionBudget allows no eviction of pod %s now (selected by %s); Ripple tries again", name, c.env.Key)
			return reconcile.Result{RequeueAfter: step.Requeue}, nil
		case apierrors.IsForbidden(err):
			c.warnOnce(ctx, obj, k, ch, "forbidden-evict", reasonFailed, "Cannot restart the pods selected by %s: Ripple may not create pods/eviction; grant it with the Helm chart value ripple.restartMethods.evict=true", c.env.Key)
			return reconcile.Result{RequeueAfter: forbiddenRetry}, nil
		case apierrors.IsNotFound(err), apierrors.IsConflict(err):
			// gone or replaced since it was read: the next step sees it
		case err != nil:
			return reconcile.Result{}, fmt.Errorf("evicting pod %s: %w", name, err)
		default:
			c.evicted(k, ch)
			evicted = append(evicted, name)
			ctrl.LoggerFrom(ctx).Info("evicted pod", "config", klog.KObj(obj), "pod", name, "uid", p.UID)
		}
	}
	return reconcile.Result{RequeueAfter: step.Requeue}, nil
}
