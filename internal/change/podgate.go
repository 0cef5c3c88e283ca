package change

import (
	"context"
	"fmt"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/internal/canary"
	"github.com/ripple-dev/ripple/internal/rollout"
	"github.com/ripple-dev/ripple/internal/workload"
)

// podGate is the canary's pod gate (Gate): while a change bakes, it
// watches its canaries' pods only (a watch per canary, by its selector in
// its namespace, ended with the bake, so memory does not grow with the
// fleet), and the first container restart, CrashLoopBackOff or pod turned
// unready fails it. The workload's status can miss those: a container
// that restarts and is Ready again between two status updates.
type podGate struct {
	pods kubernetes.Interface
	// object reads a canary from the cache, with its kind (nil: gone).
	object func(ctx context.Context, w workload.Ref) (client.Object, workload.Kind, error)
	// look queues a change whose canary's pod failed the gate; base is
	// the change controller's context, which every watch ends with (nil
	// before it started).
	look func(Key)
	base func() context.Context

	watches bakes[podWatch]
}

// podWatch is the watch of one baking change's canaries' pods, the first
// signal it saw, and why it cannot watch a canary's pods (blind): a gate
// that cannot see holds the change rather than pass it.
type podWatch struct {
	mu            sync.Mutex
	signal, blind string
	// synced are the watches' HasSynced: until each has listed its pods,
	// the gate has seen nothing and holds the change.
	synced []func() bool
}

func (w *podWatch) cannot(c workload.Ref, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.blind = fmt.Sprintf("cannot watch the pods of %s %q: %v", c.Kind, c.Name, err)
}

// Judge starts watching the pods of key's canaries, once, and returns the
// first signal since.
func (g *podGate) Judge(ctx context.Context, key Key, canaries []workload.Ref) canary.Verdict {
	base := g.base()
	if base == nil {
		return canary.Verdict{Gate: canary.GatePods, Hold: "the change controller has not started"}
	}
	w, wctx, busy := g.watches.start(base, key, len(canaries), "the pod gate watches the pods of")
	if busy != "" {
		return canary.Verdict{Gate: canary.GatePods, Hold: busy}
	}
	if wctx != nil { // a new watch: not watched since an earlier look
		for _, c := range canaries {
			if err := g.watch(wctx, key, w, c); err != nil {
				w.cannot(c, err)
			}
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	hold := w.blind
	if hold == "" && slices.ContainsFunc(w.synced, func(synced func() bool) bool { return !synced() }) {
		hold = "its watch of the canaries' pods has not listed them yet"
	}
	if w.blind != "" && w.signal == "" {
		ctrl.LoggerFrom(ctx).Info("the pod gate holds a change", "why", w.blind)
	}
	return canary.Verdict{Gate: canary.GatePods, Fail: w.signal, Hold: hold}
}

// Done ends the watch of key's change: its bake ended, or it is gone.
func (g *podGate) Done(key Key) { g.watches.done(key) }

// watch starts watching the pods of canary c of key's change, until ctx
// ends. A kind without a pod selector (a declared kind, an Argo Rollout)
// is not watched: its status alone judges it.
func (g *podGate) watch(ctx context.Context, key Key, w *podWatch, c workload.Ref) error {
	obj, kind, err := g.object(ctx, c)
	if err != nil || obj == nil {
		return err
	}
	rs, ok := kind.(workload.Restarter)
	if !ok {
		return nil
	}
	scope, err := rs.Pods(obj)
	if err != nil {
		return err
	}
	inf, err := g.informer(c, scope.Selector.String(), w)
	if err != nil {
		return err
	}
	owns := scope.Owns
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{UpdateFunc: func(oldObj, newObj any) {
		old, ok1 := oldObj.(*corev1.Pod)
		cur, ok2 := newObj.(*corev1.Pod)
		if !ok1 || !ok2 || !owns(cur) {
			return
		}
		if s := podSignal(old, cur); s != "" && w.saw(fmt.Sprintf("%s %q: pod %s %s", c.Kind, c.Name, cur.Name, s)) {
			g.look(key)
		}
	}})
	if err != nil {
		return err
	}
	w.mu.Lock()
	w.synced = append(w.synced, inf.HasSynced)
	w.mu.Unlock()
	go inf.RunWithContext(ctx)
	go func() {
		if toolscache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
			g.look(key) // the gate can tell now
		}
	}()
	return nil
}

// saw keeps signal if it is the first: the one the gate fails with.
func (w *podWatch) saw(signal string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.signal != "" {
		return false
	}
	w.signal = signal
	return true
}

// informer is a watch of the pods sel selects in canary c's namespace,
// keeping their status only; a refused list or watch makes w blind.
func (g *podGate) informer(c workload.Ref, sel string, w *podWatch) (toolscache.SharedIndexInformer, error) {
	pods := g.pods.CoreV1().Pods(c.Namespace)
	inf := toolscache.NewSharedIndexInformerWithOptions(&toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = sel
			return pods.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = sel
			return pods.Watch(ctx, o)
		},
	}, &corev1.Pod{}, toolscache.SharedIndexInformerOptions{ObjectDescription: "the pods of canary " + c.Name})
	if err := inf.SetTransform(podStatusOnly); err != nil {
		return nil, err
	}
	// A list or watch refused (no rights on pods) is said, not only
	// logged: the gate holds the change while it cannot see. Other errors
	// (a watch cut, an API server restarting) are retried.
	if err := inf.SetWatchErrorHandlerWithContext(func(ctx context.Context, r *toolscache.Reflector, err error) {
		if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
			w.cannot(c, err)
		}
		toolscache.DefaultWatchErrorHandler(ctx, r, err)
	}); err != nil {
		return nil, err
	}
	return inf, nil
}

// podStatusOnly keeps what the pod gate reads of a pod: its name, owner,
// labels and status (no spec, no managedFields).
func podStatusOnly(o any) (any, error) {
	p, ok := o.(*corev1.Pod)
	if !ok {
		return o, nil
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID, ResourceVersion: p.ResourceVersion,
			Labels: p.Labels, OwnerReferences: p.OwnerReferences, DeletionTimestamp: p.DeletionTimestamp},
		Status: corev1.PodStatus{Conditions: p.Status.Conditions, ContainerStatuses: p.Status.ContainerStatuses},
	}, nil
}

// podSignal says what, from old to cur, fails the pod gate: a container
// that restarted (and how it ended), one in CrashLoopBackOff, or the pod
// turned unready; empty when nothing did. A pod being deleted says
// nothing: a rollout's old pods go that way.
func podSignal(old, cur *corev1.Pod) string {
	if cur.DeletionTimestamp != nil {
		return ""
	}
	before := map[string]corev1.ContainerStatus{}
	for _, s := range old.Status.ContainerStatuses {
		before[s.Name] = s
	}
	for _, s := range cur.Status.ContainerStatuses {
		b, seen := before[s.Name]
		switch {
		case seen && s.RestartCount > b.RestartCount:
			return fmt.Sprintf("container %s restarted%s", s.Name, ended(s.LastTerminationState.Terminated))
		case s.State.Waiting != nil && s.State.Waiting.Reason == "CrashLoopBackOff" && (b.State.Waiting == nil || b.State.Waiting.Reason != "CrashLoopBackOff"):
			return fmt.Sprintf("container %s is in CrashLoopBackOff%s", s.Name, ended(s.LastTerminationState.Terminated))
		}
	}
	if rollout.PodReady(old) && !rollout.PodReady(cur) {
		return "turned unready"
	}
	return ""
}

func ended(t *corev1.ContainerStateTerminated) string {
	if t == nil {
		return ""
	}
	return fmt.Sprintf(" (%s, exit code %d)", t.Reason, t.ExitCode)
}
