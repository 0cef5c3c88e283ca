package controller

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ripple-dev/ripple/internal/reason"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/ripple-dev/ripple/internal/config"
	"github.com/ripple-dev/ripple/internal/podrestart"
	"github.com/ripple-dev/ripple/internal/rollout"
	"github.com/ripple-dev/ripple/internal/workload"
)

// restartWorld is a world whose Deployments take the restart methods,
// with Deployment web (2 replicas, restart-method evict) and its two
// Ready pods, baselined; f intercepts its client.
//
// The fake client applies an apply configuration as a typed object, so
// the zero values of fields without omitempty (spec.selector) are applied
// too and the selector is lost, which a real API server never does (the
// restart e2e tests run there): the interceptor puts it back.
func restartWorld(t *testing.T, f interceptor.Funcs) *world {
	t.Helper()
	f = keepSelector(f)
	cfg, err := config.NewOptions().Config()
	if err != nil {
		t.Fatal(err)
	}
	var w *world
	kind := workload.WithRestarts(workload.Deployment)
	w = newWorld(t, []workload.Kind{kind}, noSettle, withInterceptor(f))
	w.deps.Pods = w.c
	d := deployment("web")
	d.Spec.Replicas = ptr.To[int32](2)
	d.Annotations[cfg.Keys.RestartMethod] = "evict"
	w.create(configMap(), d)
	w.pod("web-a", w.clk.Now().Add(-time.Hour))
	w.pod("web-b", w.clk.Now().Add(-time.Hour))
	w.baseline("web")
	return w
}

// keepSelector adds to f the interceptor that puts the selector of
// Deployment web back after an apply (restartWorld).
func keepSelector(f interceptor.Funcs) interceptor.Funcs {
	f.Patch = func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
		if p.Type() != types.ApplyPatchType {
			return c.Patch(ctx, obj, p, opts...)
		}
		d := &appsv1.Deployment{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "web"}, d); err != nil {
			return err
		}
		if err := c.Patch(ctx, obj, p, opts...); err != nil {
			return err
		}
		sel, err := json.Marshal(map[string]any{"spec": map[string]any{"selector": d.Spec.Selector}})
		if err != nil {
			return err
		}
		return c.Patch(ctx, d, client.RawPatch(types.MergePatchType, sel))
	}
	return f
}

// pod creates a Ready pod of web's ReplicaSet, created at created.
func (w *world) pod(name string, created time.Time) {
	w.t.Helper()
	w.create(&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: metav1.Time{Time: created},
			Labels:          map[string]string{"app": "web", appsv1.DefaultDeploymentUniqueLabelKey: "abc"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-abc", UID: "rs", Controller: ptr.To(true)}}},
		Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	})
}

// pods names web's pods.
func (w *world) pods() []string {
	w.t.Helper()
	list := &corev1.PodList{}
	if err := w.c.List(w.t.Context(), list, client.InNamespace(ns)); err != nil {
		w.t.Fatal(err)
	}
	var out []string
	for _, p := range list.Items {
		out = append(out, p.Name)
	}
	return out
}

func (w *world) webAnnotations() map[string]string {
	w.t.Helper()
	d := &appsv1.Deployment{}
	if err := w.c.Get(w.t.Context(), types.NamespacedName{Namespace: ns, Name: "web"}, d); err != nil {
		w.t.Fatal(err)
	}
	return d.Annotations
}

// With restart-method evict a change writes no template: the record and
// the restart time only. The pods are then evicted one at a time, each
// once its replacement is Ready, the follower sees the rollout complete
// only when every pod is newer than the change, and the restart time is
// removed at the end.
func TestRestartEvictsOneAtATime(t *testing.T) {
	w := restartWorld(t, interceptor.Funcs{})
	keys := w.deps.Settings.Keys
	w.change("Deployment", "v2")
	w.reconcile("Deployment", "web")
	if w.applied("web") != "" {
		t.Fatal("the template was written")
	}
	if at := w.webAnnotations()[keys.RestartedAt]; at != w.clk.Now().UTC().Format(time.RFC3339) {
		t.Fatalf("restarted-at %q, want the write's time", at)
	}
	if ev := w.wantEvent(w.drain(), string(reason.Reloaded)); !strings.Contains(ev, "restart method evict") {
		t.Errorf("Reloaded Event %q does not name the method", ev)
	}
	// Within the second of the write nothing is evicted.
	if res := w.reconcile("Deployment", "web"); res.RequeueAfter != time.Second || len(w.pods()) != 2 {
		t.Fatalf("requeue %s, pods %v; want 1s and both pods", res.RequeueAfter, w.pods())
	}
	w.clk.Step(time.Second)
	w.reconcile("Deployment", "web")
	if got := w.pods(); len(got) != 1 {
		t.Fatalf("pods %v after the first step, want one evicted", got)
	}
	// The evicted pod is not replaced yet: nothing more.
	if res := w.reconcile("Deployment", "web"); res.RequeueAfter != podrestart.Poll || len(w.pods()) != 1 {
		t.Fatalf("requeue %s, pods %v; want a poll and one pod", res.RequeueAfter, w.pods())
	}
	if res := w.follow("web"); res.RequeueAfter != podrestart.Poll {
		t.Errorf("follower requeue %s while pods are restarted, want %s", res.RequeueAfter, podrestart.Poll)
	}
	w.pod("web-c", w.clk.Now())
	w.clk.Step(time.Second)
	w.reconcile("Deployment", "web")
	if got := w.pods(); len(got) != 1 || got[0] != "web-c" {
		t.Fatalf("pods %v, want the replacement only", got)
	}
	w.pod("web-d", w.clk.Now())
	w.reconcile("Deployment", "web")
	if _, ok := w.webAnnotations()[keys.RestartedAt]; ok {
		t.Error("restarted-at kept after the restart completed")
	}
	if w.applied("web") != "" {
		t.Error("the template was written")
	}
}

// The follower takes a restart's status from the pods: in progress while
// a pod from before the change is left.
func TestRestartFollowedByPods(t *testing.T) {
	w := restartWorld(t, interceptor.Funcs{})
	w.change("Deployment", "v2")
	w.reconcile("Deployment", "web")
	obj := &appsv1.Deployment{}
	if err := w.c.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "web"}, obj); err != nil {
		t.Fatal(err)
	}
	if st, poll := w.deps.restartStatus(t.Context(), w.recs["Deployment"].Kind, obj); st.State != rollout.Progressing || poll == 0 {
		t.Errorf("status %+v, poll %s; want progressing with a poll", st, poll)
	}
}

// A PodDisruptionBudget that allows no disruption (429) is waiting: no
// error, no Event, looked at again a poll later. A missing permission is a
// RestartFailed Warning naming it and the chart value.
func TestRestartEvictionRefused(t *testing.T) {
	for _, tc := range []struct {
		name   string
		err    error
		result time.Duration
		event  string
	}{
		{"PodDisruptionBudget", apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0), podrestart.Poll, ""},
		{"forbidden", apierrors.NewForbidden(schema.GroupResource{Resource: "pods/eviction"}, "web-a", nil), forbiddenRetry, "create pods/eviction"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := restartWorld(t, interceptor.Funcs{
				SubResourceCreate: func(context.Context, client.Client, string, client.Object, client.Object, ...client.SubResourceCreateOption) error {
					return tc.err
				},
			})
			w.change("Deployment", "v2")
			w.reconcile("Deployment", "web")
			w.drain()
			w.clk.Step(time.Second)
			if res := w.reconcile("Deployment", "web"); res.RequeueAfter != tc.result || len(w.pods()) != 2 {
				t.Fatalf("requeue %s, pods %v; want %s and both pods", res.RequeueAfter, w.pods(), tc.result)
			}
			got := w.drain()
			if tc.event == "" {
				if len(got) != 0 {
					t.Errorf("Events %q, want none", got)
				}
				return
			}
			if ev := w.wantEvent(got, string(reason.RestartFailed)); !strings.Contains(ev, tc.event) || !strings.Contains(ev, "ripple.restartMethods.evict=true") {
				t.Errorf("RestartFailed %q does not name %q and the chart value", ev, tc.event)
			}
		})
	}
}

// Switching a workload from the template method to evict rolls nothing:
// the template shows what was applied, and the first reconcile under evict
// records it; the next change restarts the pods.
func TestRestartMethodSwitchRollsNothing(t *testing.T) {
	cfg, err := config.NewOptions().Config()
	if err != nil {
		t.Fatal(err)
	}
	var w *world
	kind := workload.WithRestarts(workload.Deployment)
	w = newWorld(t, []workload.Kind{kind}, noSettle)
	w.deps.Pods = w.c
	w.create(configMap(), deployment("web"))
	w.baseline("web")
	sum := w.change("Deployment", "v2")
	w.reconcile("Deployment", "web")
	if w.applied("web") != sum {
		t.Fatal("the template method did not roll")
	}
	w.drain()
	d := &appsv1.Deployment{}
	if err := w.c.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "web"}, d); err != nil {
		t.Fatal(err)
	}
	d.Annotations[cfg.Keys.RestartMethod] = "evict"
	if err := w.c.Update(t.Context(), d); err != nil {
		t.Fatal(err)
	}
	w.reconcile("Deployment", "web")
	if got := w.drain(); len(got) != 0 {
		t.Errorf("Events %q after switching to evict, want none", got)
	}
	if _, ok := w.webAnnotations()[cfg.Keys.RestartedAt]; ok {
		t.Fatal("switching to evict started a restart")
	}
	w.change("Deployment", "v3")
	w.reconcile("Deployment", "web")
	if _, ok := w.webAnnotations()[cfg.Keys.RestartedAt]; !ok || w.applied("web") != sum {
		t.Errorf("the next change: restarted-at %v, template %q; want a restart and the template as it was", ok, w.applied("web"))
	}
	// Back to the template method: the template shows older data than the
	// record, which is a rollback to Ripple (the pods read the current
	// data already): nothing rolls, and a RolledBack event tells so.
	w.drain()
	if err := w.c.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "web"}, d); err != nil {
		t.Fatal(err)
	}
	d.Annotations[cfg.Keys.RestartMethod] = "template"
	if err := w.c.Update(t.Context(), d); err != nil {
		t.Fatal(err)
	}
	w.reconcile("Deployment", "web")
	w.wantEvent(w.drain(), string(reason.RolledBack))
	if w.applied("web") != sum {
		t.Errorf("switching back to the template method rolled: template %q", w.applied("web"))
	}
}

// The workload reconcile lists no pods: it feeds the restart it wrote or
// finds to the pod restarter, whose steps list them and requeue it; a
// restart whose time is gone from the workload is forgotten.
func TestRestarterOwnsTheSteps(t *testing.T) {
	var lists atomic.Int32
	w := restartWorld(t, interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, l client.ObjectList, opts ...client.ListOption) error {
		if _, ok := l.(*corev1.PodList); ok {
			lists.Add(1)
		}
		return c.List(ctx, l, opts...)
	}})
	w.change("Deployment", "v2")
	req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: "web"}}
	k := workload.Ref{Kind: "Deployment", Namespace: ns, Name: "web"}
	for range 3 {
		if _, err := w.recs["Deployment"].Reconcile(t.Context(), req); err != nil {
			t.Fatal(err)
		}
		w.clk.Step(time.Second)
	}
	if n := lists.Load(); n != 0 {
		t.Fatalf("%d pod lists by the workload reconciles, want none", n)
	}
	if _, _, fed := w.deps.Memory.Restart(k); !fed {
		t.Fatal("the restart was not fed to the restarter")
	}
	res, err := w.deps.restarts.Reconcile(t.Context(), k)
	if err != nil || res.RequeueAfter != podrestart.Poll || len(w.pods()) != 1 || lists.Load() == 0 {
		t.Fatalf("restarter: %v, requeue %s, pods %v; want one evicted, requeued by the step", err, res.RequeueAfter, w.pods())
	}
	d := &appsv1.Deployment{}
	if err := w.c.Get(t.Context(), req.NamespacedName, d); err != nil {
		t.Fatal(err)
	}
	delete(d.Annotations, w.deps.Settings.Keys.RestartedAt)
	if err := w.c.Update(t.Context(), d); err != nil {
		t.Fatal(err)
	}
	if res, err := w.deps.restarts.Reconcile(t.Context(), k); err != nil || res.RequeueAfter != 0 {
		t.Fatalf("restarter after the time was removed: %v, requeue %s; want done", err, res.RequeueAfter)
	}
	if _, _, fed := w.deps.Memory.Restart(k); fed {
		t.Error("a restart whose time is gone is still kept")
	}
}

// The restarter fed by the write that recorded a restart may read a
// cache that does not show the write yet: it keeps the restart and looks
// again rather than take the missing restart time for its end, so a
// reconcile that fed the same restart meanwhile is not undone; a cache
// that shows the time goes on.
func TestRestarterWaitsForItsWriteInTheCache(t *testing.T) {
	var stale atomic.Pointer[appsv1.Deployment]
	w := restartWorld(t, interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		if d, ok := obj.(*appsv1.Deployment); ok {
			if old := stale.Load(); old != nil {
				old.DeepCopyInto(d)
				return nil
			}
		}
		return c.Get(ctx, key, obj, opts...)
	}})
	before := &appsv1.Deployment{}
	if err := w.c.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "web"}, before); err != nil {
		t.Fatal(err)
	}
	w.change("Deployment", "v2")
	req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: "web"}}
	k := workload.Ref{Kind: "Deployment", Namespace: ns, Name: "web"}
	if _, err := w.recs["Deployment"].Reconcile(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	if _, _, fed := w.deps.Memory.Restart(k); !fed {
		t.Fatal("the write did not feed its restart to the restarter")
	}
	w.clk.Step(time.Second)
	stale.Store(before)
	res, err := w.deps.restarts.Reconcile(t.Context(), k)
	if err != nil || res.RequeueAfter != podrestart.Poll {
		t.Fatalf("restarter on a cache without the write: %v, requeue %s; want it looked at again in %s", err, res.RequeueAfter, podrestart.Poll)
	}
	if _, _, fed := w.deps.Memory.Restart(k); !fed {
		t.Fatal("the restart was forgotten on a cache that does not show its write")
	}
	// Once the cache shows the time, the restart goes on, even at the
	// version it was fed with (a write that changed nothing).
	stale.Store(nil)
	d := &appsv1.Deployment{}
	if err := w.c.Get(t.Context(), req.NamespacedName, d); err != nil {
		t.Fatal(err)
	}
	rst, _, _ := w.deps.Memory.Restart(k)
	w.deps.Memory.KeepRestart(k, rst, d.ResourceVersion)
	if _, err := w.deps.restarts.Reconcile(t.Context(), k); err != nil {
		t.Fatal(err)
	}
	if len(w.pods()) != 1 {
		t.Errorf("pods %v once the cache shows the write; want one evicted", w.pods())
	}
}

// A workload deleted in the middle of its pod restart leaves nothing in
// the Store: the restarter's next step forgets its restart and its pods'
// memory, and so does its own reconcile when it comes first.
func TestDeletedMidRestartIsForgotten(t *testing.T) {
	for _, first := range []string{"restarter", "workload reconcile"} {
		t.Run(first, func(t *testing.T) {
			w := restartWorld(t, interceptor.Funcs{})
			w.change("Deployment", "v2")
			req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: "web"}}
			k := workload.Ref{Kind: "Deployment", Namespace: ns, Name: "web"}
			if _, err := w.recs["Deployment"].Reconcile(t.Context(), req); err != nil {
				t.Fatal(err)
			}
			rst, _, fed := w.deps.Memory.Restart(k)
			if !fed {
				t.Fatal("the restart was not fed to the restarter")
			}
			w.deps.Memory.UpdatePod(k, rst.At, "uid-web-0", func(p podrestart.PodMemory) podrestart.PodMemory { return p.Refuse("a refusal") })
			if err := w.c.Delete(t.Context(), &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}); err != nil {
				t.Fatal(err)
			}
			var err error
			if first == "restarter" {
				_, err = w.deps.restarts.Reconcile(t.Context(), k)
			} else {
				_, err = w.recs["Deployment"].Reconcile(t.Context(), req)
			}
			if err != nil {
				t.Fatal(err)
			}
			w.deps.Memory.mu.Lock()
			_, kept := w.deps.Memory.pods[k]
			w.deps.Memory.mu.Unlock()
			if kept {
				t.Error("the deleted workload's pod memory is still kept")
			}
		})
	}
}
