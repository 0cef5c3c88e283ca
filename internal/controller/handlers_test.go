package controller

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ripple-dev/ripple/internal/reason"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ripple-dev/ripple/internal/metrics"
	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/workload"
)

// Source events: the initial list queues the workloads that use the
// source as they are; a change opens their settle window and queues them
// for when it closes; label-only updates pass only for label selectors.
func TestSourceHandler(t *testing.T) {
	w := newWorld(t, []workload.Kind{workload.Deployment})
	w.create(configMap(), deployment("web"), deployment("other"))
	other := &appsv1.Deployment{}
	if err := w.c.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "other"}, other); err != nil {
		t.Fatal(err)
	}
	other.Spec.Template.Spec.Containers[0].EnvFrom = nil
	if err := w.c.Update(t.Context(), other); err != nil {
		t.Fatal(err)
	}
	h := w.recs["Deployment"].sourceHandler(refs.ConfigMap)
	cm := configMap()
	h.Create(t.Context(), event.CreateEvent{Object: cm, IsInInitialList: true}, w.queue)
	key := workload.RefFor("Deployment", types.NamespacedName{Namespace: ns, Name: "web"})
	if len(w.queue.added) != 1 || w.queue.added[0].Name != "web" || w.queue.after[0] != 0 || !w.deps.Memory.Load(key).IsZero() {
		t.Fatalf("initial list: queued %v after %v, memory %+v; want web at once, nothing remembered", w.queue.added, w.queue.after, w.deps.Memory.Load(key))
	}
	h.Update(t.Context(), event.UpdateEvent{ObjectOld: cm, ObjectNew: cm}, w.queue)
	if len(w.queue.added) != 2 || w.queue.after[1] != time.Second || !w.deps.Memory.Load(key).Pending.First.Equal(w.clk.Now()) {
		t.Fatalf("a change: queued after %v, pending %+v; want after the window, opened now", w.queue.after, w.deps.Memory.Load(key).Pending)
	}
	h.Delete(t.Context(), event.DeleteEvent{Object: cm}, w.queue)
	if len(w.queue.added) != 3 {
		t.Fatalf("a delete queued %d, want web again", len(w.queue.added)-2)
	}
	if w.metric("reloader_workloads_scanned_total") != 3 {
		t.Errorf("scanned %v, want 3", w.metric("reloader_workloads_scanned_total"))
	}

	keys := w.deps.Settings.Keys
	p := sourceChanged(keys)
	labelled := cm.DeepCopy()
	labelled.Labels = map[string]string{"only": "labels"}
	ignored := cm.DeepCopy()
	ignored.Annotations = map[string]string{keys.Ignore: "true"}
	if !p.Update(event.UpdateEvent{ObjectOld: cm, ObjectNew: labelled}) || !p.Update(event.UpdateEvent{ObjectOld: cm, ObjectNew: ignored}) {
		t.Error("sourceChanged drops a label-only update (label selectors read it) or a change of the ignore annotation")
	}
	annotated := cm.DeepCopy()
	annotated.Annotations = map[string]string{"other": "x"}
	if p.Update(event.UpdateEvent{ObjectOld: cm, ObjectNew: annotated}) {
		t.Error("sourceChanged passes an update of another annotation")
	}
	h.Update(t.Context(), event.UpdateEvent{ObjectOld: cm, ObjectNew: labelled}, w.queue)
	if len(w.queue.added) != 3 {
		t.Errorf("a label-only update queued %v, want nothing: no workload selects by label", w.queue.added[3:])
	}
}

// A config event reaches the workloads whose label selector matches its
// labels, through the index: a change opens their settle window, a change
// of labels alone queues those it joins or leaves, at once; a workload
// selecting other labels, or with an invalid selector, is not queued.
func TestSourceHandlerSelector(t *testing.T) {
	w := newWorld(t, []workload.Kind{workload.Deployment})
	sel := w.deps.Settings.Keys.ConfigMapSelector
	selecting := func(name, selector string) *appsv1.Deployment {
		d := deployment(name)
		d.Annotations = map[string]string{sel: selector}
		d.Spec.Template.Spec.Containers[0].EnvFrom = nil
		return d
	}
	w.create(selecting("a", "team=a"), selecting("b", "team in (b)"), selecting("bad", "team in (a"), deployment("web"))
	h := w.recs["Deployment"].sourceHandler(refs.ConfigMap)
	cm := configMap()
	cm.Name, cm.Labels = "dash", map[string]string{"team": "a"}
	h.Create(t.Context(), event.CreateEvent{Object: cm}, w.queue)
	if got := queued(w.queue.added); got != "a" {
		t.Fatalf("a created ConfigMap labelled team=a queued %q, want a", got)
	}
	if m := w.deps.Memory.Load(workload.RefFor("Deployment", types.NamespacedName{Namespace: ns, Name: "a"})); !m.Pending.First.Equal(w.clk.Now()) {
		t.Errorf("a change did not open a's settle window: %+v", m.Pending)
	}
	relabelled := cm.DeepCopy()
	relabelled.Labels = map[string]string{"team": "b"}
	h.Update(t.Context(), event.UpdateEvent{ObjectOld: cm, ObjectNew: relabelled}, w.queue)
	if got := queued(w.queue.added[1:]); got != "a,b" || w.queue.after[1] != 0 || w.queue.after[2] != 0 {
		t.Errorf("a relabel from team=a to team=b queued %q after %v, want a,b at once", got, w.queue.after[1:])
	}
	h.Delete(t.Context(), event.DeleteEvent{Object: relabelled}, w.queue)
	if got := queued(w.queue.added[3:]); got != "b" {
		t.Errorf("a deleted ConfigMap labelled team=b queued %q, want b", got)
	}
}

// queued is the names of reqs, in order, comma-separated.
func queued(reqs []reconcile.Request) string {
	var names []string
	for _, r := range reqs {
		names = append(names, r.Name)
	}
	return strings.Join(names, ",")
}

// Only the workloads whose rollout is followed reach the follower.
func TestFollowerTakesFollowedOnly(t *testing.T) {
	w := newWorld(t, []workload.Kind{workload.Deployment}, noSettle)
	w.create(configMap(), deployment("web"), deployment("idle"))
	w.baseline("web", "idle")
	w.change("Deployment", "v2")
	w.reconcile("Deployment", "web")
	f := w.fols["Deployment"]
	p := f.followed()
	web, idle := deployment("web"), deployment("idle")
	if !p.Update(event.UpdateEvent{ObjectOld: web, ObjectNew: web}) || !p.Create(event.CreateEvent{Object: web}) {
		t.Error("the follower misses the updates of a followed rollout")
	}
	if p.Update(event.UpdateEvent{ObjectOld: idle, ObjectNew: idle}) || p.Delete(event.DeleteEvent{Object: web}) {
		t.Error("the follower takes a workload whose rollout is not followed, or a delete")
	}
	f.follow(types.NamespacedName{Namespace: ns, Name: "web"}) // not started: nothing to queue on
	q := &recordingQueue{}
	if err := f.start(t.Context(), q); err != nil {
		t.Fatal(err)
	}
	f.follow(types.NamespacedName{Namespace: ns, Name: "web"})
	if len(q.added) != 1 || q.added[0].Name != "web" {
		t.Errorf("follow queued %v, want web", q.added)
	}
	if res := w.follow("idle"); res.RequeueAfter != 0 || len(w.drain()) != 1 {
		t.Error("the follower acted on a workload whose rollout is not followed")
	}
}

// A write that fails is a Warning ReloadFailed, an error and a failed
// reload count; the workload's memory keeps its change.
func TestReloadFailed(t *testing.T) {
	fail := false
	w := newWorld(t, []workload.Kind{workload.Deployment}, noSettle, withInterceptor(interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			if fail {
				return errors.New("admission webhook denied the request")
			}
			return c.Patch(ctx, obj, p, opts...)
		},
	}))
	w.create(configMap(), deployment("web"))
	w.baseline("web")
	w.change("Deployment", "v2")
	fail = true
	if err := w.reconcileErr("Deployment", "web"); err == nil || !strings.Contains(err.Error(), "denied") {
		t.Fatalf("reconcile error %v, want the write's", err)
	}
	if ev := w.wantEvent(w.drain(), string(reason.ReloadFail)); !strings.Contains(ev, "denied") {
		t.Errorf("ReloadFailed %q does not say why", ev)
	}
	if w.metric("reloader_reload_executed_total", "success=false") != 1 || w.metric("reloader_reconcile_total", "result=error") != 1 {
		t.Errorf("failed reloads %v, error reconciles %v; want 1, 1",
			w.metric("reloader_reload_executed_total", "success=false"), w.metric("reloader_reconcile_total", "result=error"))
	}
	if w.deps.Memory.Following(workload.RefFor("Deployment", types.NamespacedName{Namespace: ns, Name: "web"})) {
		t.Error("a failed write is followed as a rollout")
	}
}

// An invalid annotation is a Warning naming it, and blocks nothing.
func TestInvalidAnnotationWarns(t *testing.T) {
	w := newWorld(t, []workload.Kind{workload.Deployment}, noSettle)
	d := deployment("web")
	d.Annotations[w.deps.Settings.Keys.SettleWindow] = "soon"
	w.create(configMap(), d)
	w.reconcile("Deployment", "web")
	if ev := w.wantEvent(w.drain(), string(reason.InvalidAnnotation)); !strings.Contains(ev, `"soon" is not a duration`) {
		t.Errorf("InvalidAnnotation %q does not name the value", ev)
	}
}

// A workload whose namespace left the --namespace-selector scope during a
// pause of Ripple's is resumed when the period ends, and nothing else is
// planned for it: its settle window closes.
func TestPauseEndsOutOfScope(t *testing.T) {
	w := newWorld(t, []workload.Kind{workload.Deployment})
	w.deps.Finder.Selective = true // the namespace is not in the cache: out of scope
	keys := w.deps.Settings.Keys
	d := deployment("web")
	d.Spec.Paused = true
	d.Annotations[keys.PausePeriod] = "5m"
	d.Annotations[keys.PausedAt] = w.clk.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	w.create(configMap(), d)
	key := workload.RefFor("Deployment", types.NamespacedName{Namespace: ns, Name: "web"})
	w.deps.Memory.Update(key, func(m plan.Memory) plan.Memory { return m.Notice(w.clk.Now()) })
	if res := w.reconcile("Deployment", "web"); res.RequeueAfter != 4*time.Minute {
		t.Fatalf("inside the pause period: requeue %s, want the 4m left", res.RequeueAfter)
	}
	if !w.deps.Memory.Load(key).IsZero() {
		t.Errorf("memory out of scope: %+v, want the settle window closed", w.deps.Memory.Load(key))
	}
	w.clk.Step(4 * time.Minute)
	w.reconcile("Deployment", "web")
	got := &appsv1.Deployment{}
	if err := w.c.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "web"}, got); err != nil {
		t.Fatal(err)
	}
	if got.Spec.Paused || got.Annotations[keys.PausedAt] != "" {
		t.Errorf("after the period: paused %v, paused-at %q; want resumed", got.Spec.Paused, got.Annotations[keys.PausedAt])
	}
	if w.metric("reloader_skipped_total", "reason="+metrics.SkipIgnoredNotSelected) != 1 {
		t.Errorf("skipped (ignored_or_not_selected) = %v, want 1: the reconcile inside the period", w.metric("reloader_skipped_total", "reason="+metrics.SkipIgnoredNotSelected))
	}
}

// A workload deleted while its rollout is followed is forgotten: it leaves
// nothing in the memory and frees its slot.
func TestGoneForgetsMemory(t *testing.T) {
	w := newWorld(t, []workload.Kind{workload.Deployment}, noSettle)
	w.create(configMap(), deployment("web"))
	w.baseline("web")
	w.change("Deployment", "v2")
	w.reconcile("Deployment", "web")
	if w.metric("ripple_rollouts_in_progress") != 1 {
		t.Fatal("the rollout is not followed")
	}
	gone := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}
	if err := w.c.Delete(t.Context(), gone, &client.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	w.reconcile("Deployment", "web")
	if w.metric("ripple_rollouts_in_progress") != 0 || !w.deps.Memory.Load(workload.RefFor("Deployment", types.NamespacedName{Namespace: ns, Name: "web"})).IsZero() {
		t.Error("a deleted workload is still remembered")
	}
	if res := w.follow("web"); res.RequeueAfter != 0 {
		t.Error("the follower follows a deleted workload")
	}
}

// A namespace that comes into scope brings all its workloads of the kind.
func TestRequestsForNamespace(t *testing.T) {
	w := newWorld(t, []workload.Kind{workload.Deployment})
	w.create(deployment("a"), deployment("b"))
	got := w.recs["Deployment"].requestsForNamespace(t.Context(), &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	names := map[string]bool{}
	for _, r := range got {
		names[r.Namespace+"/"+r.Name] = true
	}
	if len(got) != 2 || !names[ns+"/a"] || !names[ns+"/b"] {
		t.Errorf("requests %v, want %s/a and %s/b", got, ns, ns)
	}
}

// A config's event reaches the workloads of other namespaces that name it
// by a cross-namespace reference only in the namespaces its grant lists,
// before or after the event (a grant removed reaches those that lose it);
// a config that grants nothing queues none. A change of the grant alone
// passes the filter.
func TestSourceHandlerShared(t *testing.T) {
	w := newWorld(t, []workload.Kind{workload.Deployment})
	keys := w.deps.Settings.Keys
	tenant := deployment("tenant")
	tenant.Namespace = "payments"
	tenant.Annotations = map[string]string{keys.ConfigMapReload: ns + "/" + configMap().Name}
	tenant.Spec.Template.Spec.Containers[0].EnvFrom = nil
	w.create(tenant)
	h := w.recs["Deployment"].sourceHandler(refs.ConfigMap)
	plain, granted := configMap(), configMap()
	granted.Annotations = map[string]string{keys.SharedWith: "payments"}
	queued := func() []string {
		var out []string
		for _, r := range w.queue.added {
			out = append(out, r.Namespace+"/"+r.Name)
		}
		w.queue.added = nil
		return out
	}
	h.Update(t.Context(), event.UpdateEvent{ObjectOld: plain, ObjectNew: plain}, w.queue)
	if got := queued(); len(got) != 0 {
		t.Errorf("a config granting nothing queued %v", got)
	}
	h.Update(t.Context(), event.UpdateEvent{ObjectOld: plain, ObjectNew: granted}, w.queue)
	if got := queued(); len(got) != 1 || got[0] != "payments/tenant" {
		t.Errorf("the grant added queued %v, want payments/tenant", got)
	}
	h.Update(t.Context(), event.UpdateEvent{ObjectOld: granted, ObjectNew: plain}, w.queue)
	if got := queued(); len(got) != 1 || got[0] != "payments/tenant" {
		t.Errorf("the grant removed queued %v, want payments/tenant", got)
	}
	other := configMap()
	other.Annotations = map[string]string{keys.SharedWith: "billing"}
	h.Update(t.Context(), event.UpdateEvent{ObjectOld: other, ObjectNew: other}, w.queue)
	if got := queued(); len(got) != 0 {
		t.Errorf("a grant to another namespace queued %v", got)
	}
	if !sourceChanged(keys).Update(event.UpdateEvent{ObjectOld: plain, ObjectNew: granted}) {
		t.Error("sourceChanged drops a change of the grant")
	}
}
