package controller

import (
	"context"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/internal/podrestart"
)

// podTicks lists the pods of a namespace at most once per tick
// (podrestart.Poll) for every loop that reads the pods of a workload
// being restarted (the restart's steps, the rollout follower's status,
// the reload action's and the in-place method's): each reads a selector's
// pods from the tick's list. Ripple keeps no pod informer
// (docs/architecture.md, State); a namespace's list is kept for one tick
// only, and only while a restart in it reads it.
type podTicks struct {
	client.Reader
	Clock clock.PassiveClock

	flight singleflight.Group
	mu     sync.Mutex
	lists  map[string]podTick
}

type podTick struct {
	at   time.Time
	pods []corev1.Pod
}

// List lists pods as the API reader would, from the tick's list of their
// namespace; any other list goes to the reader.
func (t *podTicks) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	pl, ok := list.(*corev1.PodList)
	o := (&client.ListOptions{}).ApplyOptions(opts)
	if !ok || o.Namespace == "" || o.FieldSelector != nil || o.Limit > 0 || o.Continue != "" {
		return t.Reader.List(ctx, list, opts...)
	}
	pods, err := t.of(ctx, o.Namespace)
	if err != nil {
		return err
	}
	sel := o.LabelSelector
	if sel == nil {
		sel = labels.Everything()
	}
	pl.Items = pl.Items[:0]
	for i := range pods {
		if sel.Matches(labels.Set(pods[i].Labels)) {
			pl.Items = append(pl.Items, *pods[i].DeepCopy())
		}
	}
	return nil
}

// of is the pods of ns as of this tick: listed now when the last list is
// older than a tick (one list for callers that ask at once).
func (t *podTicks) of(ctx context.Context, ns string) ([]corev1.Pod, error) {
	now := t.Clock.Now()
	t.mu.Lock()
	if l, ok := t.lists[ns]; ok && now.Sub(l.at) < podrestart.Poll {
		t.mu.Unlock()
		return l.pods, nil
	}
	t.mu.Unlock()
	v, err, _ := t.flight.Do(ns, func() (any, error) {
		var pl corev1.PodList
		if err := t.Reader.List(ctx, &pl, client.InNamespace(ns)); err != nil {
			return nil, err
		}
		t.keep(ns, podTick{at: now, pods: pl.Items})
		return pl.Items, nil
	})
	if err != nil {
		return nil, err
	}
	pods, _ := v.([]corev1.Pod)
	return pods, nil
}

// forget drops ns's list: Ripple evicted, deleted or resized a pod of it,
// so the next step must not read the pods as they were before (a pod just
// evicted, still Ready there, would let the step take another one past
// max-unavailable).
func (t *podTicks) forget(ns string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.lists, ns)
}

// acted tells pods, the pod reader, that Ripple acted on pods of ns.
func acted(pods client.Reader, ns string) {
	if t, ok := pods.(*podTicks); ok {
		t.forget(ns)
	}
}

// keep keeps ns's list, and drops the lists of the ticks before: a
// namespace's pods are kept only while restarts in it read them.
func (t *podTicks) keep(ns string, l podTick) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.lists == nil {
		t.lists = map[string]podTick{}
	}
	for other, old := range t.lists {
		if l.at.Sub(old.at) >= podrestart.Poll {
			delete(t.lists, other)
		}
	}
	t.lists[ns] = l
}
