package podrestart

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ripple-dev/ripple/internal/rollout"
)

func resources(req, lim map[corev1.ResourceName]string) corev1.ResourceRequirements {
	rr := corev1.ResourceRequirements{}
	for r, v := range req {
		if rr.Requests == nil {
			rr.Requests = corev1.ResourceList{}
		}
		rr.Requests[r] = resource.MustParse(v)
	}
	for r, v := range lim {
		if rr.Limits == nil {
			rr.Limits = corev1.ResourceList{}
		}
		rr.Limits[r] = resource.MustParse(v)
	}
	return rr
}

// qos is the QoS class of one container's resources, as the API server
// computes a pod's (for cpu and memory).
func qos(rr corev1.ResourceRequirements) corev1.PodQOSClass {
	if len(rr.Requests) == 0 && len(rr.Limits) == 0 {
		return corev1.PodQOSBestEffort
	}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, okr := rr.Requests[r]
		lim, okl := rr.Limits[r]
		if !okr || !okl || req.Cmp(lim) != 0 {
			return corev1.PodQOSBurstable
		}
	}
	return corev1.PodQOSGuaranteed
}

// Nudge moves a request and its limit by one unit together: up from an
// even count of units, down from an odd one, so nudging twice comes back
// where it was; the QoS class and the request's order below the limit
// hold.
func TestNudge(t *testing.T) {
	cpu, mem := corev1.ResourceCPU, corev1.ResourceMemory
	for _, tc := range []struct {
		name             string
		req, lim         map[corev1.ResourceName]string
		r                corev1.ResourceName
		wantReq, wantLim string
		ok               bool
	}{
		{name: "cpu even goes up", req: map[corev1.ResourceName]string{cpu: "100m"}, r: cpu, wantReq: "101m", ok: true},
		{name: "cpu odd goes down", req: map[corev1.ResourceName]string{cpu: "101m"}, r: cpu, wantReq: "100m", ok: true},
		{name: "whole cpus", req: map[corev1.ResourceName]string{cpu: "2"}, lim: map[corev1.ResourceName]string{cpu: "4"}, r: cpu,
			wantReq: "2001m", wantLim: "4001m", ok: true},
		{name: "the limit moves with the request", req: map[corev1.ResourceName]string{cpu: "101m"}, lim: map[corev1.ResourceName]string{cpu: "102m"}, r: cpu,
			wantReq: "100m", wantLim: "101m", ok: true},
		{name: "a cpu request alone", req: map[corev1.ResourceName]string{cpu: "250m"}, r: cpu, wantReq: "251m", ok: true},
		{name: "Guaranteed stays equal", req: map[corev1.ResourceName]string{cpu: "500m", mem: "256Mi"}, lim: map[corev1.ResourceName]string{cpu: "500m", mem: "256Mi"},
			r: mem, wantReq: "257Mi", wantLim: "257Mi", ok: true},
		{name: "memory odd MiB goes down", req: map[corev1.ResourceName]string{mem: "129Mi"}, lim: map[corev1.ResourceName]string{mem: "1Gi"}, r: mem,
			wantReq: "128Mi", wantLim: "1023Mi", ok: true},
		{name: "memory not in whole MiB", req: map[corev1.ResourceName]string{mem: "100M"}, lim: map[corev1.ResourceName]string{mem: "100M"}, r: mem,
			wantReq: "98951424", wantLim: "98951424", ok: true},
		{name: "one unit goes up, never to zero", req: map[corev1.ResourceName]string{mem: "1Mi"}, lim: map[corev1.ResourceName]string{mem: "1Mi"}, r: mem,
			wantReq: "2Mi", wantLim: "2Mi", ok: true},
		{name: "less than a MiB goes up", req: map[corev1.ResourceName]string{mem: "512Ki"}, lim: map[corev1.ResourceName]string{mem: "512Ki"}, r: mem,
			wantReq: "1536Ki", wantLim: "1536Ki", ok: true},
		{name: "two millicores go up", req: map[corev1.ResourceName]string{cpu: "2m"}, r: cpu, wantReq: "3m", ok: true},
		{name: "a memory request without a limit", req: map[corev1.ResourceName]string{mem: "64Mi"}, r: mem},
		{name: "a cpu request under 2m", req: map[corev1.ResourceName]string{cpu: "1m"}, r: cpu},
		{name: "no request", lim: nil, req: map[corev1.ResourceName]string{mem: "1Gi"}, r: cpu},
		{name: "a zero request", req: map[corev1.ResourceName]string{cpu: "0"}, r: cpu},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := resources(tc.req, tc.lim)
			before := in.DeepCopy()
			got, ok := Nudge(in, tc.r)
			if ok != tc.ok {
				t.Fatalf("ok %v, want %v", ok, tc.ok)
			}
			if !ok {
				return
			}
			if q := got.Requests[tc.r]; q.Cmp(resource.MustParse(tc.wantReq)) != 0 {
				t.Errorf("request %s, want %s", q.String(), tc.wantReq)
			}
			if q, has := got.Limits[tc.r]; has != (tc.wantLim != "") || (has && q.Cmp(resource.MustParse(tc.wantLim)) != 0) {
				t.Errorf("limit %s (set %v), want %q", q.String(), has, tc.wantLim)
			}
			if qos(got) != qos(in) {
				t.Errorf("QoS %s, was %s", qos(got), qos(in))
			}
			if !in.Requests[tc.r].Equal(before.Requests[tc.r]) {
				t.Error("Nudge changed its input")
			}
			for other, q := range in.Requests {
				if other != tc.r && !got.Requests[other].Equal(q) {
					t.Errorf("%s changed", other)
				}
			}
			// Twice is back where it started, except from one unit.
			back, _ := Nudge(got, tc.r)
			if b, was := back.Requests[tc.r], in.Requests[tc.r]; tc.name != "one unit goes up, never to zero" && tc.name != "less than a MiB goes up" && b.Cmp(was) != 0 {
				t.Errorf("nudged twice: %s, want %s", b.String(), was.String())
			}
		})
	}
}

var restartAt = time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)

// inPlacePod is a Ready pod created an hour before restartAt whose
// container app (100m cpu, 64Mi memory, cpu RestartContainer) has run
// since; opts change it.
func inPlacePod(opts ...func(*corev1.Pod)) *corev1.Pod {
	started := metav1.NewTime(restartAt.Add(-time.Hour))
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-a", CreationTimestamp: started, Generation: 1},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name:         "app",
			Resources:    resources(map[corev1.ResourceName]string{"cpu": "100m", "memory": "64Mi"}, map[corev1.ResourceName]string{"cpu": "200m"}),
			ResizePolicy: []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.RestartContainer}},
		}, {Name: "sidecar"}}},
		Status: corev1.PodStatus{ObservedGeneration: 1, ContainerStatuses: []corev1.ContainerStatus{
			{Name: "app", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}}},
			{Name: "sidecar", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}}},
		}},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func condition(t corev1.PodConditionType, why string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, Reason: why, Message: "node is full"})
	}
}

func startedAt(name string, at time.Time) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		for i := range p.Status.ContainerStatuses {
			if p.Status.ContainerStatuses[i].Name == name {
				p.Status.ContainerStatuses[i].State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(at)}}
			}
		}
	}
}

// InPlaceOf reads from the pod alone whether it was restarted, has a
// resize in flight, cannot be restarted in place (and why), or what to
// send: so a Ripple restarted mid-way decides the same.
func TestInPlaceOf(t *testing.T) {
	later := restartAt.Add(2 * time.Second)
	for _, tc := range []struct {
		name      string
		pod       *corev1.Pod
		names     []string
		restarted bool
		busy      string
		refused   string
		resize    []string // container name and its new cpu request
	}{
		{name: "resized by one millicore", pod: inPlacePod(), resize: []string{"app=101m"}},
		{name: "a container started after the restart time is restarted", pod: inPlacePod(startedAt("app", later)), restarted: true},
		{name: "started in the restart's second is not", pod: inPlacePod(startedAt("app", restartAt.Add(500*time.Millisecond))), resize: []string{"app=101m"}},
		{name: "a crash-looping container that started since is restarted", pod: inPlacePod(func(p *corev1.Pod) {
			p.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
			p.Status.ContainerStatuses[0].LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{StartedAt: metav1.NewTime(later)}}
		}), restarted: true},
		{name: "named containers", names: []string{"app"}, pod: inPlacePod(), resize: []string{"app=101m"}},
		{name: "a named container without a RestartContainer policy", names: []string{"sidecar"}, pod: inPlacePod(),
			refused: "container sidecar has no cpu request (of 2m or more), nor a memory limit, whose resizePolicy is RestartContainer"},
		{name: "a named container the pod lacks", names: []string{"app", "worker"}, pod: inPlacePod(), refused: "it has no container worker"},
		{name: "no RestartContainer policy", pod: inPlacePod(func(p *corev1.Pod) { p.Spec.Containers[0].ResizePolicy = nil }),
			refused: "no container has a resizePolicy of RestartContainer"},
		{name: "a RestartContainer policy on memory, without a memory request", pod: inPlacePod(func(p *corev1.Pod) {
			p.Spec.Containers[0].ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer}}
			delete(p.Spec.Containers[0].Resources.Requests, corev1.ResourceMemory)
		}), refused: "no cpu request (of 2m or more), nor a memory limit"},
		{name: "a RestartContainer policy on memory, with a memory limit", pod: inPlacePod(func(p *corev1.Pod) {
			p.Spec.Containers[0].ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer}}
			p.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory] = resource.MustParse("128Mi")
		}), resize: []string{"app=100m"}},
		{name: "BestEffort", pod: inPlacePod(func(p *corev1.Pod) { p.Spec.Containers[0].Resources = corev1.ResourceRequirements{} }),
			refused: "BestEffort"},
		{name: "an infeasible resize", pod: inPlacePod(condition(corev1.PodResizePending, corev1.PodReasonInfeasible)), refused: "infeasible on its node: node is full"},
		{name: "pod-level resources only", pod: inPlacePod(func(p *corev1.Pod) {
			p.Spec.Resources = p.Spec.Containers[0].Resources.DeepCopy()
			p.Spec.Containers[0].Resources = corev1.ResourceRequirements{}
		}), refused: "spec.resources"},
		{name: "a deferred resize is in flight", pod: inPlacePod(condition(corev1.PodResizePending, corev1.PodReasonDeferred)), busy: "pending (Deferred)"},
		{name: "a resize in progress", pod: inPlacePod(condition(corev1.PodResizeInProgress, "")), busy: "in progress"},
		{name: "a spec the kubelet has not seen", pod: inPlacePod(func(p *corev1.Pod) { p.Generation = 2 }), busy: "not seen its latest spec"},
		{name: "resources the container does not run with yet", pod: inPlacePod(func(p *corev1.Pod) {
			rr := resources(map[corev1.ResourceName]string{"cpu": "101m", "memory": "64Mi"}, map[corev1.ResourceName]string{"cpu": "201m"})
			p.Status.ContainerStatuses[0].Resources = &rr
		}), busy: "container app does not run with its resources yet"},
		{name: "requests the kubelet has not admitted", pod: inPlacePod(func(p *corev1.Pod) {
			p.Status.ContainerStatuses[0].AllocatedResources = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("101m"), corev1.ResourceMemory: resource.MustParse("64Mi")}
		}), busy: "container app does not run with its resources yet"},
		{name: "a cpu request read back through shares, a memory limit in whole pages", pod: inPlacePod(func(p *corev1.Pod) {
			p.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory] = resource.MustParse("100M")
			p.Status.ContainerStatuses[0].AllocatedResources = p.Spec.Containers[0].Resources.Requests.DeepCopy()
			p.Status.ContainerStatuses[0].Resources = &corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("99m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m"), corev1.ResourceMemory: *resource.NewQuantity(100000000/4096*4096, resource.BinarySI)},
			}
		}), resize: []string{"app=101m"}},
		{name: "resources the container runs with", pod: inPlacePod(func(p *corev1.Pod) {
			rr := p.Spec.Containers[0].Resources
			p.Status.ContainerStatuses[0].Resources = &rr
		}), resize: []string{"app=101m"}},
		{name: "a Vertical Pod Autoscaler resizes it in place", pod: inPlacePod(func(p *corev1.Pod) {
			p.Annotations = map[string]string{VPAInPlaceAnnotation: "true"}
		}), refused: "Vertical Pod Autoscaler"},
		{name: "a config mounted with subPath", pod: inPlacePod(func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "conf", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}}}
			p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "conf", MountPath: "/etc/app.conf", SubPath: "app.conf"}}
		}), refused: "mounts volume conf with subPath"},
		{name: "a whole config volume is fine", pod: inPlacePod(func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "conf", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}}}
			p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "conf", MountPath: "/etc/app"}}
		}), resize: []string{"app=101m"}},
		{name: "only the containers not restarted yet", names: []string{"app", "sidecar"}, pod: inPlacePod(startedAt("sidecar", later), func(p *corev1.Pod) {
			p.Spec.Containers[1].Resources = resources(map[corev1.ResourceName]string{"cpu": "51m"}, nil)
			p.Spec.Containers[1].ResizePolicy = p.Spec.Containers[0].ResizePolicy
		}), resize: []string{"app=101m"}},
		{name: "two containers in one resize", names: []string{"app", "sidecar"}, pod: inPlacePod(func(p *corev1.Pod) {
			p.Spec.Containers[1].Resources = resources(map[corev1.ResourceName]string{"cpu": "51m"}, nil)
			p.Spec.Containers[1].ResizePolicy = p.Spec.Containers[0].ResizePolicy
		}), resize: []string{"app=101m", "sidecar=50m"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := InPlaceOf(tc.pod, tc.names, restartAt)
			if !st.Restarted.IsZero() != tc.restarted {
				t.Errorf("restarted %s, want %v", st.Restarted, tc.restarted)
			}
			if (st.Busy == "") != (tc.busy == "") || !strings.Contains(st.Busy, tc.busy) {
				t.Errorf("busy %q, want %q", st.Busy, tc.busy)
			}
			if (st.Refused == "") != (tc.refused == "") || !strings.Contains(st.Refused, tc.refused) {
				t.Errorf("refused %q, want %q", st.Refused, tc.refused)
			}
			var got []string
			for _, rz := range st.Resize {
				q := rz.Resources.Requests[corev1.ResourceCPU]
				got = append(got, rz.Name+"="+q.String())
			}
			if strings.Join(got, " ") != strings.Join(tc.resize, " ") {
				t.Errorf("resize %v, want %v", got, tc.resize)
			}
		})
	}
}

// Under in-place a pod whose containers restarted is not left (and is
// progress), a pod with a resize in flight counts as unavailable and is not
// chosen again, and a skipped pod is not left: the restart completes
// without it.
func TestNextRestartInPlace(t *testing.T) {
	at := restartAt
	now := at.Add(10 * time.Second)
	old := at.Add(-time.Hour)
	pod := func(name string, f func(*Pod)) Pod {
		p := Pod{Name: name, Created: old, Ready: true}
		if f != nil {
			f(&p)
		}
		return p
	}
	restarted := func(p *Pod) { p.Restarted = at.Add(5 * time.Second) }
	busy := func(p *Pod) { p.Busy = true }
	skipped := func(p *Pod) { p.Skipped = true }
	for _, tc := range []struct {
		name    string
		pods    []Pod
		max     int
		restart []string
		left    int
		done    bool
	}{
		{name: "one at a time", pods: []Pod{pod("a", nil), pod("b", nil)}, max: 1, restart: []string{"a"}, left: 2},
		{name: "a resize in flight holds the budget", pods: []Pod{pod("a", busy), pod("b", nil)}, max: 1, left: 2},
		{name: "in flight is not chosen again", pods: []Pod{pod("a", busy), pod("b", nil)}, max: 2, restart: []string{"b"}, left: 2},
		{name: "restarted and Ready is done", pods: []Pod{pod("a", restarted), pod("b", nil)}, max: 1, restart: []string{"b"}, left: 1},
		{name: "restarted, not Ready yet, holds the budget", pods: []Pod{pod("a", func(p *Pod) { restarted(p); p.Ready = false }), pod("b", nil)}, max: 1, left: 1},
		{name: "skipped is not left", pods: []Pod{pod("a", restarted), pod("b", skipped)}, max: 1, done: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Next(Restart{At: at, Want: len(tc.pods), MaxUnavailable: tc.max, Pods: tc.pods}, now, time.Minute)
			if strings.Join(s.Restart, ",") != strings.Join(tc.restart, ",") || s.Left != tc.left {
				t.Errorf("restart %v, left %d; want %v, %d", s.Restart, s.Left, tc.restart, tc.left)
			}
			if (s.Status.State == rollout.Complete) != tc.done {
				t.Errorf("status %+v, done %v", s.Status, tc.done)
			}
		})
	}
	// A restart in place progresses with each container restarted: not
	// stalled while containers keep restarting.
	s := Next(Restart{At: at, Want: 2, MaxUnavailable: 1, Pods: []Pod{pod("a", restarted), pod("b", nil)}}, at.Add(64*time.Second), time.Minute)
	if s.Status.State == rollout.Stalled {
		t.Errorf("stalled %+v one minute after the restart, 59 s after a container restarted", s.Status)
	}
}
