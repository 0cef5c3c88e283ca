package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/ripple-dev/ripple/internal/annotation"
	"github.com/ripple-dev/ripple/internal/podrestart"
	"github.com/ripple-dev/ripple/internal/reason"
	"github.com/ripple-dev/ripple/internal/workload"
)

// resize is one pods/resize patch the fake API server received.
type resize struct {
	pod string
	// cpu are the container's new cpu request and limit, "app=101m/201m".
	cpu []string
}

// inPlaceWorld is a world whose Deployment web (n replicas, restart-method
// in-place, the annotations ann) has n Ready pods web-0... created an hour
// ago, whose container app (100m cpu limited to 200m, 64Mi memory) restarts
// on a cpu resize; baselined. Every pods/resize patch is recorded in
// resizes (and made, unless f's SubResourcePatch fails it); pods the
// client deletes or evicts are recorded in deleted, and creates fail the
// test.
type inPlaceWorld struct {
	*world
	resizes []resize
	// deleted are the pods deleted or evicted, in order; started is set
	// once the world is built: Ripple creates no pod.
	deleted []string
	started bool
}

func newInPlaceWorld(t *testing.T, n int32, ann map[string]string, f interceptor.Funcs) *inPlaceWorld {
	t.Helper()
	return newPodWorld(t, n, f, func(d *appsv1.Deployment, keys annotation.Keys) {
		d.Annotations[keys.RestartMethod] = workload.RestartInPlace
		for k, v := range ann {
			d.Annotations[k] = v
		}
	})
}

// newPodWorld is newInPlaceWorld with Deployment web as edit makes it, and
// each pod as the opts make it.
func newPodWorld(t *testing.T, n int32, f interceptor.Funcs, edit func(*appsv1.Deployment, annotation.Keys), opts ...func(*corev1.Pod)) *inPlaceWorld {
	t.Helper()
	iw := &inPlaceWorld{}
	failWith := f.SubResourcePatch
	f.SubResourcePatch = func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
		if sub == "resize" {
			iw.resizes = append(iw.resizes, resizeOf(t, obj.GetName(), p, obj))
		}
		if failWith != nil {
			if err := failWith(ctx, c, sub, obj, p, opts...); err != nil {
				return err
			}
		}
		return c.SubResource(sub).Patch(ctx, obj, p, opts...)
	}
	f.Delete = func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
		iw.deleted = append(iw.deleted, obj.GetName())
		return c.Delete(ctx, obj, opts...)
	}
	f.SubResourceCreate = func(ctx context.Context, c client.Client, sub string, obj, sr client.Object, opts ...client.SubResourceCreateOption) error {
		if sub == "eviction" {
			iw.deleted = append(iw.deleted, obj.GetName())
		}
		return c.SubResource(sub).Create(ctx, obj, sr, opts...)
	}
	f.Create = func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
		if _, ok := obj.(*corev1.Pod); ok && iw.started {
			t.Errorf("Ripple created pod %s", obj.GetName())
		}
		return c.Create(ctx, obj, opts...)
	}
	iw.world = newWorld(t, []workload.Kind{workload.WithRestarts(workload.Deployment)}, noSettle, withInterceptor(keepSelector(f)))
	w := iw.world
	w.deps.Pods = w.c
	d := deployment("web")
	d.Spec.Replicas = ptr.To(n)
	edit(d, w.deps.Settings.Keys)
	w.create(configMap(), d)
	for i := range n {
		iw.inPlacePod(fmt.Sprintf("web-%d", i), opts...)
	}
	w.baseline("web")
	iw.started = true
	return iw
}

// resizeOf reads a resize patch of pod name sent for obj.
func resizeOf(t *testing.T, name string, p client.Patch, obj client.Object) resize {
	t.Helper()
	data, err := p.Data(obj)
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		Spec struct {
			Containers []corev1.Container `json:"containers"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(data, &body); err != nil {
		t.Fatal(err)
	}
	r := resize{pod: name}
	for _, c := range body.Spec.Containers {
		req, lim := c.Resources.Requests[corev1.ResourceCPU], c.Resources.Limits[corev1.ResourceCPU]
		r.cpu = append(r.cpu, fmt.Sprintf("%s=%s/%s", c.Name, req.String(), lim.String()))
	}
	return r
}

// inPlacePod creates a Ready pod of web's ReplicaSet, created an hour ago,
// running container app since then with the resources of its spec.
func (iw *inPlaceWorld) inPlacePod(name string, opts ...func(*corev1.Pod)) {
	iw.t.Helper()
	started := iw.started
	iw.started = false // the test creates it
	defer func() { iw.started = started }()
	created := metav1.NewTime(iw.clk.Now().Add(-time.Hour))
	rr := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m")},
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: created, UID: types.UID(name + "-uid"),
			Labels:          map[string]string{"app": "web", appsv1.DefaultDeploymentUniqueLabelKey: "abc"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-abc", UID: "rs", Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app", Resources: rr,
			ResizePolicy: []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.RestartContainer}}}}},
		Status: corev1.PodStatus{
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Ready: true, Resources: rr.DeepCopy(), AllocatedResources: rr.Requests.DeepCopy(),
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: created}}}},
		},
	}
	for _, o := range opts {
		o(p)
	}
	iw.create(p)
}

// getPod reads pod name.
func (iw *inPlaceWorld) getPod(name string) *corev1.Pod {
	iw.t.Helper()
	p := &corev1.Pod{}
	if err := iw.c.Get(iw.t.Context(), types.NamespacedName{Namespace: ns, Name: name}, p); err != nil {
		iw.t.Fatal(err)
	}
	return p
}

// kubelet does what the kubelet does with pod name's resize: it restarts
// its container app now with the resources of its spec (not Ready yet),
// then, with ready, marks it Ready.
func (iw *inPlaceWorld) kubelet(name string, ready bool) {
	iw.t.Helper()
	p := iw.getPod(name)
	cs := &p.Status.ContainerStatuses[0]
	cs.Resources = p.Spec.Containers[0].Resources.DeepCopy()
	cs.AllocatedResources = p.Spec.Containers[0].Resources.Requests.DeepCopy()
	cs.RestartCount++
	cs.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(iw.clk.Now())}}
	cs.Ready = ready
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
	if ready {
		p.Status.Conditions[0].Status = corev1.ConditionTrue
	}
	if err := iw.c.Status().Update(iw.t.Context(), p); err != nil {
		iw.t.Fatal(err)
	}
}

// ready marks pod name Ready again.
func (iw *inPlaceWorld) ready(name string) {
	iw.t.Helper()
	p := iw.getPod(name)
	p.Status.ContainerStatuses[0].Ready = true
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	if err := iw.c.Status().Update(iw.t.Context(), p); err != nil {
		iw.t.Fatal(err)
	}
}

// step moves the clock a second on and reconciles web.
func (iw *inPlaceWorld) step() {
	iw.t.Helper()
	iw.clk.Step(time.Second)
	iw.reconcile("Deployment", "web")
}

// resized lists the pods resized so far, in order.
func (iw *inPlaceWorld) resized() []string {
	var out []string
	for _, r := range iw.resizes {
		out = append(out, r.pod)
	}
	return out
}

// uids are the UIDs of web's pods, by name.
func (iw *inPlaceWorld) uids() map[string]types.UID {
	iw.t.Helper()
	list := &corev1.PodList{}
	if err := iw.c.List(iw.t.Context(), list, client.InNamespace(ns)); err != nil {
		iw.t.Fatal(err)
	}
	out := map[string]types.UID{}
	for _, p := range list.Items {
		out[p.Name] = p.UID
	}
	return out
}

// With restart-method in-place a change writes no template: the record
// and the restart time only. Each pod then gets one resize of its
// container app (cpu and its limit one millicore up), one pod at a time:
// the next only once the last one's container restarted after the change
// and is Ready. No pod is deleted or created; the restart time is removed
// at the end.
func TestInPlaceRestartsEachPodOnce(t *testing.T) {
	iw := newInPlaceWorld(t, 3, nil, interceptor.Funcs{})
	keys := iw.deps.Settings.Keys
	before := iw.uids()
	iw.change("Deployment", "v2")
	iw.reconcile("Deployment", "web")
	if iw.applied("web") != "" {
		t.Fatal("the template was written")
	}
	if _, ok := iw.webAnnotations()[keys.RestartedAt]; !ok {
		t.Fatal("no restarted-at on the Deployment")
	}
	if ev := iw.wantEvent(iw.drain(), string(reason.Reloaded)); !strings.Contains(ev, "restart method in-place") {
		t.Errorf("Reloaded Event %q does not name the method", ev)
	}
	iw.reconcile("Deployment", "web")
	if len(iw.resizes) != 0 {
		t.Fatalf("resized %v within the second of the change", iw.resized())
	}
	for i, name := range []string{"web-0", "web-1", "web-2"} {
		iw.step()
		if got := iw.resized(); len(got) != i+1 || got[i] != name {
			t.Fatalf("resized %v, want %s next", got, name)
		}
		if r := iw.resizes[i]; strings.Join(r.cpu, " ") != "app=101m/201m" {
			t.Errorf("resize of %s: %v, want app=101m/201m", name, r.cpu)
		}
		// The kubelet has not acted: the resize is in flight, and
		// nothing more is sent.
		iw.step()
		iw.kubelet(name, false)
		iw.step()
		if len(iw.resizes) != i+1 {
			t.Fatalf("resized %v while %s was restarting", iw.resized(), name)
		}
		iw.ready(name)
	}
	iw.step()
	if _, ok := iw.webAnnotations()[keys.RestartedAt]; ok {
		t.Error("restarted-at kept after every pod restarted")
	}
	if after := iw.uids(); fmt.Sprint(after) != fmt.Sprint(before) || len(iw.deleted) != 0 {
		t.Errorf("pods %v (deleted %v), want the same pods %v", after, iw.deleted, before)
	}
	if iw.applied("web") != "" {
		t.Error("the template was written")
	}
	for _, e := range iw.drain() {
		if strings.HasPrefix(e, "Warning") {
			t.Errorf("Warning %q", e)
		}
	}
}

// max-unavailable 2 resizes two pods at once, and a third only once one of
// them restarted and is Ready.
func TestInPlaceMaxUnavailable(t *testing.T) {
	iw := newInPlaceWorld(t, 3, map[string]string{"ripple.dev/max-unavailable": "2"}, interceptor.Funcs{})
	iw.change("Deployment", "v2")
	iw.reconcile("Deployment", "web")
	iw.step()
	if got := iw.resized(); strings.Join(got, ",") != "web-0,web-1" {
		t.Fatalf("resized %v, want web-0 and web-1", got)
	}
	iw.kubelet("web-0", false)
	iw.step()
	if len(iw.resizes) != 2 {
		t.Fatalf("resized %v with two pods unavailable", iw.resized())
	}
	iw.ready("web-0")
	iw.step()
	if got := iw.resized(); strings.Join(got, ",") != "web-0,web-1,web-2" {
		t.Fatalf("resized %v, want web-2 next", got)
	}
}

// A Ripple killed mid-restart (nothing in memory) continues from what the
// pods show: a pod whose resize is in flight, or whose container restarted
// after the change, is never resized again.
func TestInPlaceContinuesAfterACrash(t *testing.T) {
	iw := newInPlaceWorld(t, 3, nil, interceptor.Funcs{})
	iw.change("Deployment", "v2")
	iw.reconcile("Deployment", "web")
	iw.step()
	crash := func() {
		iw.deps.Memory = &Store{Metrics: iw.deps.Metrics}
		iw.drain()
	}
	crash() // web-0's resize sent, the kubelet not yet done
	iw.step()
	iw.step()
	if got := iw.resized(); strings.Join(got, ",") != "web-0" {
		t.Fatalf("resized %v after a crash while web-0's resize was in flight", got)
	}
	iw.kubelet("web-0", true)
	crash()
	iw.step()
	iw.kubelet("web-1", true)
	crash()
	iw.step()
	iw.kubelet("web-2", true)
	crash()
	iw.step()
	iw.step()
	if got := iw.resized(); strings.Join(got, ",") != "web-0,web-1,web-2" {
		t.Fatalf("resized %v, want each pod once", got)
	}
	if _, ok := iw.webAnnotations()[iw.deps.Settings.Keys.RestartedAt]; ok {
		t.Error("restarted-at kept after every pod restarted")
	}
}

// A pod that cannot be restarted in place gets a RestartNotInPlace Warning
// naming it, its container and why, once; without a fallback it is left
// alone (the restart completes without it), with in-place-fallback: evict
// it is evicted. The other pods restart in place either way.
func TestInPlaceNotEligible(t *testing.T) {
	for _, tc := range []struct {
		name string
		pod  func(*corev1.Pod)
		why  string
	}{
		{"no RestartContainer policy", func(p *corev1.Pod) { p.Spec.Containers[0].ResizePolicy = nil }, "no container has a resizePolicy of RestartContainer"},
		{"BestEffort", func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources = corev1.ResourceRequirements{}
			p.Status.ContainerStatuses[0].Resources = nil
			p.Status.ContainerStatuses[0].AllocatedResources = nil
		}, "BestEffort"},
		{"infeasible", func(p *corev1.Pod) {
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodResizePending, Status: corev1.ConditionTrue,
				Reason: corev1.PodReasonInfeasible, Message: "Node didn't have enough capacity"})
		}, "infeasible"},
		{"vertical autoscaler", func(p *corev1.Pod) { p.Annotations = map[string]string{podrestart.VPAInPlaceAnnotation: "true"} }, "Vertical Pod Autoscaler"},
		{"subPath", func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "conf", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}}}
			p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "conf", MountPath: "/etc/app.conf", SubPath: "k"}}
		}, "subPath"},
	} {
		for _, fallback := range []string{"", workload.FallbackEvict} {
			t.Run(tc.name+"/fallback "+fallback, func(t *testing.T) {
				ann := map[string]string{}
				if fallback != "" {
					ann["ripple.dev/in-place-fallback"] = fallback
				}
				iw := newInPlaceWorld(t, 1, ann, interceptor.Funcs{})
				iw.inPlacePod("web-x", tc.pod, func(p *corev1.Pod) { // the odd one, oldest: first
					p.CreationTimestamp = metav1.NewTime(p.CreationTimestamp.Add(-time.Hour))
				})
				iw.change("Deployment", "v2")
				iw.reconcile("Deployment", "web") // fed the restart, which tells of web-x at once
				told := iw.drain()
				iw.step()
				iw.step()
				ev := iw.wantEvent(append(told, iw.drain()...), string(reason.RestartNotInPlace))
				if !strings.Contains(ev, "web-x") || !strings.Contains(ev, tc.why) || !strings.HasPrefix(ev, "Warning") {
					t.Errorf("Warning %q does not name web-x and %q", ev, tc.why)
				}
				wantInstead := "keeps its old configuration"
				if fallback != "" {
					wantInstead = "evicting it instead"
				}
				if !strings.Contains(ev, wantInstead) {
					t.Errorf("Warning %q does not say %q", ev, wantInstead)
				}
				for _, r := range iw.resizes {
					if r.pod == "web-x" {
						t.Errorf("web-x resized: %v", r)
					}
				}
				if got := strings.Join(iw.deleted, ","); (fallback == "") != (got == "") || (got != "" && got != "web-x") {
					t.Errorf("evicted %q, want web-x only with the fallback", got)
				}
				// web-0 restarts in place; without the fallback the
				// restart then completes, and web-x is told of once.
				iw.kubelet("web-0", true)
				iw.step()
				iw.step()
				if fallback == "" {
					if _, ok := iw.webAnnotations()[iw.deps.Settings.Keys.RestartedAt]; ok {
						t.Error("the restart did not complete without web-x")
					}
				}
				if got := iw.resized(); strings.Join(got, ",") != "web-0" {
					t.Errorf("resized %v, want web-0 once", got)
				}
				for _, e := range iw.drain() {
					if strings.Contains(e, string(reason.RestartNotInPlace)) {
						t.Errorf("told again: %q", e)
					}
				}
			})
		}
	}
}

// A resize the API server refuses as invalid (a node OS without in-place
// resize, a rule of the API), or cannot take because it serves no
// pods/resize (Kubernetes 1.30 to 1.32), is a refusal like the others:
// told once, naming why, and the resize is not sent again for the same
// change. A 404 naming the pod (it is gone) is not such a refusal.
func TestInPlaceResizeRefused(t *testing.T) {
	unservedErr := &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusNotFound, Reason: metav1.StatusReasonNotFound,
		Message: "the server could not find the requested resource", Details: &metav1.StatusDetails{},
	}}
	if !unserved(unservedErr) || unserved(apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "web-0")) || unserved(errors.New("eof")) {
		t.Fatal("unserved does not tell a missing subresource from a missing pod")
	}
	for _, tc := range []struct {
		name string
		err  error
		says []string
	}{
		{"invalid", apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "web-0", nil), []string{"refused its resize"}},
		{"not served", unservedErr, []string{"does not serve pods/resize", "Kubernetes 1.35"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			iw := newInPlaceWorld(t, 1, nil, interceptor.Funcs{
				SubResourcePatch: func(context.Context, client.Client, string, client.Object, client.Patch, ...client.SubResourcePatchOption) error {
					return tc.err
				},
			})
			iw.change("Deployment", "v2")
			iw.reconcile("Deployment", "web")
			iw.drain()
			iw.step()
			iw.step()
			iw.step()
			if got := iw.resized(); len(got) != 1 {
				t.Errorf("resizes %v, want one", got)
			}
			ev := iw.wantEvent(iw.drain(), string(reason.RestartNotInPlace))
			for _, want := range tc.says {
				if !strings.Contains(ev, want) {
					t.Errorf("Warning %q does not say %q", ev, want)
				}
			}
			if _, ok := iw.webAnnotations()[iw.deps.Settings.Keys.RestartedAt]; ok {
				t.Error("the restart did not complete")
			}
		})
	}
}

// Without the pods/resize permission the restart is a RestartFailed
// Warning naming the permission and the chart value, tried again after
// forbiddenRetry; nothing else happens to the pods.
func TestInPlaceForbidden(t *testing.T) {
	iw := newInPlaceWorld(t, 2, nil, interceptor.Funcs{
		SubResourcePatch: func(context.Context, client.Client, string, client.Object, client.Patch, ...client.SubResourcePatchOption) error {
			return apierrors.NewForbidden(schema.GroupResource{Resource: "pods/resize"}, "web-0", nil)
		},
	})
	iw.change("Deployment", "v2")
	iw.reconcile("Deployment", "web")
	iw.drain()
	iw.clk.Step(time.Second)
	if res := iw.reconcile("Deployment", "web"); res.RequeueAfter != forbiddenRetry {
		t.Errorf("requeue %s, want %s", res.RequeueAfter, forbiddenRetry)
	}
	ev := iw.wantEvent(iw.drain(), string(reason.RestartFailed))
	if !strings.Contains(ev, "patch pods/resize") || !strings.Contains(ev, "ripple.restartMethods.inPlace=true") {
		t.Errorf("RestartFailed %q does not name the permission and the chart value", ev)
	}
	if len(iw.deleted) != 0 {
		t.Errorf("deleted %v", iw.deleted)
	}
}

// The next change nudges the other way: the pod's spec comes back to the
// template's resources, never more than one millicore away. The follower
// follows the restart by the pods meanwhile.
func TestInPlaceSecondChangeGoesBack(t *testing.T) {
	iw := newInPlaceWorld(t, 1, nil, interceptor.Funcs{})
	for i, v := range []string{"v2", "v3"} {
		iw.change("Deployment", v)
		iw.reconcile("Deployment", "web")
		iw.step()
		if res := iw.follow("web"); res.RequeueAfter != podrestart.Poll {
			t.Errorf("follower requeue %s during the restart, want %s", res.RequeueAfter, podrestart.Poll)
		}
		iw.kubelet("web-0", true)
		iw.step()
		if _, ok := iw.webAnnotations()[iw.deps.Settings.Keys.RestartedAt]; ok || len(iw.resizes) != i+1 {
			t.Fatalf("change %s: resizes %v, restart not complete", v, iw.resizes)
		}
	}
	if got := fmt.Sprint(iw.resizes[0].cpu, iw.resizes[1].cpu); got != "[app=101m/201m] [app=100m/200m]" {
		t.Errorf("resizes %s, want up one millicore and back", got)
	}
}

// A resize the kubelet makes without restarting the container (the pod
// shows it done, its container never restarted) is not sent again and
// again: Ripple waits podrestart.ResizeGrace, then tells the pod is not restarted in
// place, once, and the restart completes without it.
func TestInPlaceResizeWithoutRestart(t *testing.T) {
	iw := newInPlaceWorld(t, 1, nil, interceptor.Funcs{})
	iw.change("Deployment", "v2")
	iw.reconcile("Deployment", "web")
	iw.drain()
	iw.step()
	// The kubelet resizes without a restart.
	p := iw.getPod("web-0")
	p.Status.ContainerStatuses[0].Resources = p.Spec.Containers[0].Resources.DeepCopy()
	p.Status.ContainerStatuses[0].AllocatedResources = p.Spec.Containers[0].Resources.Requests.DeepCopy()
	if err := iw.c.Status().Update(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	for range podrestart.ResizeGrace / time.Second {
		iw.step()
	}
	iw.step()
	if got := iw.resized(); len(got) != 1 {
		t.Fatalf("resized %v, want once", got)
	}
	ev := iw.wantEvent(iw.drain(), string(reason.RestartNotInPlace))
	if !strings.Contains(ev, "did not restart within 30s of its resize") {
		t.Errorf("Warning %q does not say the resize restarted nothing", ev)
	}
	if _, ok := iw.webAnnotations()[iw.deps.Settings.Keys.RestartedAt]; ok {
		t.Error("the restart did not complete")
	}
}
