package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/reason"
	"github.com/ripple-dev/ripple/internal/workload"
)

// The in-place restart method (docs/restart-methods.md) on the pod restart
// machinery of restart.go: the same restart time, the same pace
// (plan.NextRestart), but a pod is restarted by resizing its containers
// through pods/resize (plan.InPlaceOf decides how), and it is done once
// they restarted after the restart time. A pod that cannot be restarted in
// place gets a Warning and, if the workload allows it, is evicted instead.

// refusals are, per workload restarting in place, for the restart time
// then read, the pods whose resize the API server refused (which the pod
// does not show), so the resize is not sent again; when Ripple resized
// each pod, so a resize the kubelet made without restarting the container
// is found out rather than sent again and again; and the pods Ripple told
// cannot be restarted in place, so each is told once per restart. Only
// memory: after a Ripple restart a pod is told once more, and a refused
// resize is sent once more.
type refusals struct {
	mu  sync.Mutex
	all map[types.NamespacedName]*refused
	// calling counts the reload-action calls in flight, at most
	// maxCalls; calls waits for them to end (reloadaction.go).
	calling int
	calls   sync.WaitGroup
}

type refused struct {
	at time.Time
	// why is why the API server refused to resize each pod, by UID; told
	// are the pods told of.
	why  map[types.UID]string
	told map[types.UID]bool
	// sent is when Ripple resized each pod.
	sent map[types.UID]time.Time
	// calls are how each pod's reload endpoint answered, under the
	// reload-action method (reloadaction.go).
	calls map[types.UID]*call
}

// resizeGrace is how long after Ripple resized a pod it waits for the
// restart of its containers when the pod shows no resize in flight (a
// kubelet that reports no observed generation): then the resize is taken
// to have been made without a restart.
const resizeGrace = 30 * time.Second

// get returns what is kept of workload n for the restart at at, creating
// it; rs.mu is held.
func (rs *refusals) get(n types.NamespacedName, at time.Time) *refused {
	if rs.all == nil {
		rs.all = map[types.NamespacedName]*refused{}
	}
	r, ok := rs.all[n]
	if !ok || !r.at.Equal(at) {
		r = &refused{at: at, why: map[types.UID]string{}, told: map[types.UID]bool{}, sent: map[types.UID]time.Time{}, calls: map[types.UID]*call{}}
		rs.all[n] = r
	}
	return r
}

// of returns why the API server refused to resize the pod uid of workload
// n for the restart at at; empty when it did not.
func (rs *refusals) of(n types.NamespacedName, at time.Time, uid types.UID) string {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if r, ok := rs.all[n]; ok && r.at.Equal(at) {
		return r.why[uid]
	}
	return ""
}

// refuse records that the API server refused to resize the pod uid of
// workload n for the restart at at, for why.
func (rs *refusals) refuse(n types.NamespacedName, at time.Time, uid types.UID, why string) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.get(n, at).why[uid] = why
}

// sentAt returns when Ripple resized the pod uid of workload n for the
// restart at at; zero when it did not.
func (rs *refusals) sentAt(n types.NamespacedName, at time.Time, uid types.UID) time.Time {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if r, ok := rs.all[n]; ok && r.at.Equal(at) {
		return r.sent[uid]
	}
	return time.Time{}
}

// send records that Ripple resized the pod uid of workload n at t, for
// the restart at at.
func (rs *refusals) send(n types.NamespacedName, at time.Time, uid types.UID, t time.Time) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.get(n, at).sent[uid] = t
}

// tell reports whether the pod uid of workload n is yet to be told of for
// the restart at at, and records that it is.
func (rs *refusals) tell(n types.NamespacedName, at time.Time, uid types.UID) bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	r := rs.get(n, at)
	if r.told[uid] {
		return false
	}
	r.told[uid] = true
	return true
}

// forget drops what is kept of workload n, once its restart is over.
func (rs *refusals) forget(n types.NamespacedName) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	delete(rs.all, n)
}

// inPlacePod reads how pod p, of a workload restarting in place under r,
// stands into pp, and returns it.
func (d *Deps) inPlacePod(r workload.Restart, n types.NamespacedName, p *corev1.Pod, pp *plan.Pod) plan.InPlacePod {
	st := plan.InPlaceOf(p, r.Containers, r.At)
	if st.Refused == "" && st.Restarted.IsZero() && st.Busy == "" {
		sent := d.refusals.sentAt(n, r.At, p.UID)
		switch since := d.Clock.Since(sent); {
		case d.refusals.of(n, r.At, p.UID) != "":
			st.Refused, st.Resize = d.refusals.of(n, r.At, p.UID), nil
		case sent.IsZero():
		case since < resizeGrace:
			st.Busy = fmt.Sprintf("Ripple resized it %s ago", since.Round(time.Second))
		default:
			st.Refused, st.Resize = fmt.Sprintf("its containers did not restart within %s of its resize (the kubelet resized them without a restart)", resizeGrace), nil
		}
	}
	pp.Restarted, pp.Busy = st.Restarted, st.Busy != ""
	pp.Skipped = st.Refused != "" && r.Fallback != workload.FallbackEvict
	return st
}

// tellSkipped warns, once per restart, of each pod of obj that cannot be
// restarted in place (or reloaded by its action) and that no fallback
// restarts: it keeps its old configuration until it restarts for another
// reason.
func (r *Reconciler) tellSkipped(ctx context.Context, obj client.Object, rst workload.Restart, pr podRestart) {
	if rst.Fallback == workload.FallbackEvict {
		return
	}
	for name, why := range pr.refused {
		p := pr.pods[name]
		r.refuse(ctx, obj, rst, &p, why, fmt.Sprintf(
			"it keeps its old configuration until it restarts; annotation %s: %s evicts such pods instead", r.Settings.Keys.InPlaceFallback, workload.FallbackEvict))
	}
}

// refuse tells, once per restart, that pod p of obj cannot be restarted in
// place, or reloaded by its action (why), and what Ripple does instead.
func (r *Reconciler) refuse(ctx context.Context, obj client.Object, rst workload.Restart, p *corev1.Pod, why, instead string) {
	if !r.refusals.tell(client.ObjectKeyFromObject(obj), rst.At, p.UID) {
		return
	}
	n := plan.Notice{Reason: reason.RestartNotInPlace, Message: fmt.Sprintf(
		"Cannot restart pod %s in place (containers %s): %s; %s", p.Name, containersOf(p, rst.Containers), why, instead)}
	if rst.Method == workload.RestartReloadAction {
		n = actionNotice(p, rst, why, instead)
	}
	r.emit(ctx, r.Kind.Name(), obj, []plan.Notice{n}, "pod", p.Name)
}

// containersOf names the containers of p the in-place method restarts, for
// a message.
func containersOf(p *corev1.Pod, named []string) string {
	if len(named) > 0 {
		return strings.Join(named, ", ")
	}
	var out []string
	for _, c := range p.Spec.Containers {
		for _, rp := range c.ResizePolicy {
			if rp.RestartPolicy == corev1.RestartContainer {
				out = append(out, c.Name)
				break
			}
		}
	}
	if len(out) == 0 {
		return "none with a RestartContainer resizePolicy"
	}
	return strings.Join(out, ", ")
}

// restartInPlace restarts pod p of obj in place, as st says: one resize of
// its containers through pods/resize, on the resourceVersion read (a pod
// changed since is looked at again). A pod that cannot be restarted in
// place is evicted, as the workload's fallback allows (a pod without a
// fallback is never chosen: plan.Pod.Skipped). A resize the API server
// refuses as invalid is a refusal as well.
func (r *Reconciler) restartInPlace(ctx context.Context, obj client.Object, rst workload.Restart, p *corev1.Pod, st plan.InPlacePod) (evicted bool, err error) {
	if st.Refused != "" {
		r.refuse(ctx, obj, rst, p, st.Refused, "evicting it instead (annotation "+r.Settings.Keys.InPlaceFallback+")")
		return true, r.restartPod(ctx, workload.RestartEvict, p)
	}
	resized := p.DeepCopy()
	for _, rz := range st.Resize {
		for i := range resized.Spec.Containers {
			if resized.Spec.Containers[i].Name == rz.Name {
				resized.Spec.Containers[i].Resources = rz.Resources
			}
		}
	}
	err = r.Client.SubResource("resize").Patch(ctx, resized, client.StrategicMergeFrom(p, client.MergeFromWithOptimisticLock{}))
	switch {
	case apierrors.IsInvalid(err) || apierrors.IsBadRequest(err):
		why := "the API server refused its resize: " + clip(err.Error(), maxRefusal)
		r.refusals.refuse(client.ObjectKeyFromObject(obj), rst.At, p.UID, why)
		return false, errNotResized // the next step tells it (inPlacePod)
	case err == nil:
		r.refusals.send(client.ObjectKeyFromObject(obj), rst.At, p.UID, r.Clock.Now())
	}
	return false, err
}

// errNotResized is a resize the API server refused: the pod is then
// refused (refusals), and told of by the next step.
var errNotResized = errors.New("resize refused")

// maxRefusal bounds the API server's message in a refusal: an Event, not
// a dump of the pod.
const maxRefusal = 300

// clip cuts s to n bytes at most, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}

// resizeSummary says what a resize sent, for the log line of a restarted
// pod.
func resizeSummary(st plan.InPlacePod) string {
	var out []string
	for _, rz := range st.Resize {
		q := rz.Resources.Requests[rz.Resource]
		out = append(out, fmt.Sprintf("%s %s request %s", rz.Name, rz.Resource, q.String()))
	}
	return strings.Join(out, ", ")
}
