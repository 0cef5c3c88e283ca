package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/podrestart"
	"github.com/ripple-dev/ripple/internal/reason"
	"github.com/ripple-dev/ripple/internal/workload"
)

// The in-place restart method (docs/restart-methods.md) on the pod restart
// machinery of restart.go: the same restart time, the same pace
// (podrestart.Next), but a pod is restarted by resizing its containers
// through pods/resize (podrestart.InPlaceOf decides how), and it is done once
// they restarted after the restart time. A pod that cannot be restarted in
// place gets a Warning and, if the workload allows it, is evicted instead.

// inPlacePod reads how pod p, of workload k restarting in place under r,
// stands (as it shows, and as Ripple remembers it) into pp, and returns it.
func (d *Deps) inPlacePod(r workload.Restart, k workload.Ref, p *corev1.Pod, pp *podrestart.Pod) podrestart.InPlacePod {
	st := d.Memory.Pod(k, r.At, p.UID).InPlace(podrestart.InPlaceOf(p, r.Containers, r.At), d.Clock.Now())
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
	var first bool
	r.Memory.UpdatePod(workload.RefTo(r.Kind, obj), rst.At, p.UID, func(m podrestart.PodMemory) podrestart.PodMemory {
		m, first = m.Tell()
		return m
	})
	if !first {
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
// fallback is never chosen: podrestart.Pod.Skipped). A resize the API server
// refuses as invalid is a refusal as well.
func (r *Reconciler) restartInPlace(ctx context.Context, obj client.Object, rst workload.Restart, p *corev1.Pod, st podrestart.InPlacePod) (evicted bool, err error) {
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
	var why string
	switch {
	case apierrors.IsInvalid(err) || apierrors.IsBadRequest(err):
		why = "the API server refused its resize: " + clip(err.Error(), maxRefusal)
	case unserved(err):
		why = "the API server does not serve pods/resize (in-place pod resize needs Kubernetes 1.35 or later)"
	}
	switch {
	case why != "":
		r.Memory.UpdatePod(workload.RefTo(r.Kind, obj), rst.At, p.UID, func(m podrestart.PodMemory) podrestart.PodMemory { return m.Refuse(why) })
		return false, errNotResized // the next step tells it (inPlacePod)
	case err == nil:
		now := r.Clock.Now()
		r.Memory.UpdatePod(workload.RefTo(r.Kind, obj), rst.At, p.UID, func(m podrestart.PodMemory) podrestart.PodMemory { return m.Send(now) })
	}
	return false, err
}

// unserved reports a 404 that names no object: the API server has no
// pods/resize (before Kubernetes 1.33, or with in-place resize turned off),
// which is not a pod gone (its 404 names the pod).
func unserved(err error) bool {
	var st apierrors.APIStatus
	if !apierrors.IsNotFound(err) || !errors.As(err, &st) {
		return false
	}
	d := st.Status().Details
	return d == nil || d.Name == ""
}

// errNotResized is a resize the API server refused: the pod is then
// refused (Store.UpdatePod), and told of by the next step.
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
func resizeSummary(st podrestart.InPlacePod) string {
	var out []string
	for _, rz := range st.Resize {
		q := rz.Resources.Requests[rz.Resource]
		out = append(out, fmt.Sprintf("%s %s request %s", rz.Name, rz.Resource, q.String()))
	}
	return strings.Join(out, ", ")
}
