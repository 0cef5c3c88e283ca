package podrestart

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The in-place restart method restarts containers in their pods: the
// kubelet restarts a container whose resource is resized through
// pods/resize when that resource's resizePolicy is RestartContainer, with
// the environment its ConfigMaps and Secrets hold then. Ripple resizes by
// the smallest sensible unit, requests and limits together, alternating
// up and down by the parity of the current request, so that the spec never
// drifts more than one unit from what the template asked for and the QoS
// class holds. What a pod shows is the state: a container whose current
// run started after the restart time was restarted, a resize the kubelet
// has not finished is in flight. So a restart a Ripple restart interrupted
// continues without restarting a container twice.

// The units the in-place method resizes by. CPU moves by 1m, the API's
// resolution. Memory moves by 1 MiB rather than 1 byte: the kubelet sets
// memory limits in whole pages, so a change of a few bytes may leave the
// cgroup as it was, and 1 MiB is small beside any container's memory.
var (
	CPUUnit    = resource.MustParse("1m")
	MemoryUnit = resource.MustParse("1Mi")
)

// VPAInPlaceAnnotation is set on a pod by the Vertical Pod Autoscaler's
// updater once it resized the pod in place (update mode
// InPlaceOrRecreate): Ripple's resize would fight its recommendation, so
// such a pod is not restarted in place.
const VPAInPlaceAnnotation = "vpaInPlaceUpdated"

// resizable are the resources a resize may restart a container by, in the
// order Ripple prefers them: a CPU change is harmless, a memory decrease
// may not be.
var resizable = []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}

// ContainerResize is the resize of one container: its new resources.
type ContainerResize struct {
	Name      string
	Resource  corev1.ResourceName
	Resources corev1.ResourceRequirements
}

// InPlacePod is how a pod stands in an in-place restart.
type InPlacePod struct {
	// Restarted is when the last of its containers restarted after the
	// restart time (zero while one has not).
	Restarted time.Time
	// Busy says why a resize is in flight (Ripple's or anyone's): the pod
	// waits, and counts as unavailable.
	Busy string
	// Refused says why the pod cannot be restarted in place.
	Refused string
	// Resize is what to send to restart it, when neither of the above.
	Resize []ContainerResize
}

// InPlaceOf tells how pod p stands in an in-place restart at at of the
// containers named (none: those with a RestartContainer resize policy).
func InPlaceOf(p *corev1.Pod, names []string, at time.Time) InPlacePod {
	var s InPlacePod
	chosen, refused := chooseContainers(p, names)
	if refused != "" {
		s.Refused = refused
		return s
	}
	var left []*corev1.Container
	for _, c := range chosen {
		started := lastStart(p, c.Name)
		if !started.Truncate(time.Second).After(at.Truncate(time.Second)) {
			left = append(left, c)
		} else if started.After(s.Restarted) {
			s.Restarted = started
		}
	}
	if len(left) == 0 {
		return s
	}
	s.Restarted = time.Time{}
	if s.Refused = infeasible(p); s.Refused != "" {
		return s
	}
	if s.Busy = resizing(p); s.Busy != "" {
		return s
	}
	if s.Refused = podRefused(p); s.Refused != "" {
		return s
	}
	for _, c := range left {
		rz, why := nudgeContainer(p, c)
		if why != "" {
			s.Refused, s.Resize = why, nil
			return s
		}
		s.Resize = append(s.Resize, rz)
	}
	return s
}

// chooseContainers returns p's containers named, or, with none named,
// those with a RestartContainer resize policy; or why there are none.
func chooseContainers(p *corev1.Pod, names []string) ([]*corev1.Container, string) {
	var out []*corev1.Container
	for i := range p.Spec.Containers {
		c := &p.Spec.Containers[i]
		if (len(names) == 0 && restartPolicy(c) != "") || slices.Contains(names, c.Name) {
			out = append(out, c)
		}
	}
	switch {
	case len(names) == 0 && len(out) == 0:
		return nil, "no container has a resizePolicy of RestartContainer"
	case len(out) < len(names):
		var missing []string
		for _, n := range names {
			if !slices.ContainsFunc(out, func(c *corev1.Container) bool { return c.Name == n }) {
				missing = append(missing, n)
			}
		}
		return nil, fmt.Sprintf("it has no container %s (restart-containers)", strings.Join(missing, ", "))
	}
	return out, ""
}

// restartPolicy returns the first resource of resizable whose resize
// restarts c; empty when none does.
func restartPolicy(c *corev1.Container) corev1.ResourceName {
	for _, r := range resizable {
		for _, rp := range c.ResizePolicy {
			if rp.ResourceName == r && rp.RestartPolicy == corev1.RestartContainer {
				return r
			}
		}
	}
	return ""
}

// lastStart is when container name of p last started, as its status
// shows (running, exited, or exited before its current wait); zero when
// it never did.
func lastStart(p *corev1.Pod, name string) time.Time {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name != name {
			continue
		}
		var t time.Time
		for _, s := range []corev1.ContainerState{cs.State, cs.LastTerminationState} {
			switch {
			case s.Running != nil && s.Running.StartedAt.After(t):
				t = s.Running.StartedAt.Time
			case s.Terminated != nil && s.Terminated.StartedAt.After(t):
				t = s.Terminated.StartedAt.Time
			}
		}
		return t
	}
	return time.Time{}
}

// infeasible says why p's pending resize can never be made; empty when it
// has none such.
func infeasible(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodResizePending && c.Status == corev1.ConditionTrue && c.Reason == corev1.PodReasonInfeasible {
			return "its resize is infeasible on its node: " + c.Message
		}
	}
	return ""
}

// resizing says which resize of p is in flight: one the kubelet deferred,
// is making, or has not seen yet (a spec the kubelet did not observe,
// requests it has not admitted, limits its containers do not run with);
// empty when none is.
func resizing(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case corev1.PodResizePending:
			return "a resize is pending (" + c.Reason + ")"
		case corev1.PodResizeInProgress:
			return "a resize is in progress"
		}
	}
	if o := p.Status.ObservedGeneration; o > 0 && p.Generation > o {
		return "the kubelet has not seen its latest spec"
	}
	for _, c := range p.Spec.Containers {
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Name == c.Name && !running(c.Resources, cs) {
				return "container " + c.Name + " does not run with its resources yet"
			}
		}
	}
	return ""
}

// running reports whether a container whose status is cs runs with the
// resources rr, as far as its status tells: its requests as the kubelet
// admitted them (exact copies), its limits as the runtime reports them
// (within less than a unit: a memory limit reads back in whole pages).
// Requests as the runtime reports them are not compared: a CPU request
// reads back through cgroup shares, a millicore off.
func running(rr corev1.ResourceRequirements, cs corev1.ContainerStatus) bool {
	for _, r := range resizable {
		if cs.AllocatedResources != nil && !near(rr.Requests, cs.AllocatedResources, r, 0) {
			return false
		}
		if cs.Resources != nil && !near(rr.Limits, cs.Resources.Limits, r, 1) {
			return false
		}
	}
	return true
}

// near reports whether a and b both lack resource r, or both have it
// within less than slack units (0: equal).
func near(a, b corev1.ResourceList, r corev1.ResourceName, slack int64) bool {
	qa, oka := a[r]
	qb, okb := b[r]
	if oka != okb || !oka {
		return oka == okb
	}
	value, _ := unitsOf(r)
	d := value(qa) - value(qb)
	return d == 0 || (d < 0 && -d < slack*value(unitOf(r))) || (d > 0 && d < slack*value(unitOf(r)))
}

// podRefused says why no container of p can be restarted in place,
// whichever it is; empty when it can.
func podRefused(p *corev1.Pod) string {
	if _, ok := p.Annotations[VPAInPlaceAnnotation]; ok {
		return "a Vertical Pod Autoscaler resizes it in place (annotation " + VPAInPlaceAnnotation + ")"
	}
	for _, c := range p.Spec.Containers {
		if len(c.Resources.Requests) > 0 || len(c.Resources.Limits) > 0 {
			return ""
		}
	}
	if r := p.Spec.Resources; r != nil && (len(r.Requests) > 0 || len(r.Limits) > 0) {
		// Pod-level resources (Kubernetes 1.34+): a container's
		// resizePolicy governs the resize of its own resources only.
		return "its resources are set on the pod (spec.resources), not on its containers, and a container is restarted in place only by a resize of its own"
	}
	return "it is BestEffort (no container has resource requests): a resize would change its QoS class"
}

// nudgeContainer returns the resize that restarts c, or why there is
// none: a config file it mounts with subPath (the kubelet keeps the bind
// mount through a restart, so the file would stay old), or no resource
// whose resize restarts it with a request to move.
func nudgeContainer(p *corev1.Pod, c *corev1.Container) (ContainerResize, string) {
	if v := subPathConfig(p, c); v != "" {
		return ContainerResize{}, fmt.Sprintf("container %s mounts volume %s with subPath, which a restart in place may leave with the old file (the kubelet rewrites it only at its next volume sync)", c.Name, v)
	}
	for _, r := range resizable {
		if !slices.Contains(c.ResizePolicy, corev1.ContainerResizePolicy{ResourceName: r, RestartPolicy: corev1.RestartContainer}) {
			continue
		}
		if rr, ok := Nudge(c.Resources, r); ok {
			return ContainerResize{Name: c.Name, Resource: r, Resources: rr}, ""
		}
	}
	return ContainerResize{}, fmt.Sprintf("container %s has no cpu request (of 2m or more), nor a memory limit, whose resizePolicy is RestartContainer", c.Name)
}

// subPathConfig names a volume of ConfigMap or Secret data that c mounts
// with subPath; empty when there is none.
func subPathConfig(p *corev1.Pod, c *corev1.Container) string {
	for _, m := range c.VolumeMounts {
		if m.SubPath == "" && m.SubPathExpr == "" {
			continue
		}
		for _, v := range p.Spec.Volumes {
			if v.Name == m.Name && (v.ConfigMap != nil || v.Secret != nil || v.Projected != nil) {
				return v.Name
			}
		}
	}
	return ""
}

// Nudge returns rr with resource r moved by one unit (CPUUnit or
// MemoryUnit), its request and its limit alike: up when the request
// counts an even number of units, down when odd, so a second nudge takes
// it back; up from one unit, never to zero. Moving both by the same amount
// keeps a request equal to its limit (Guaranteed) or below it (Burstable).
// False when the move would not restart the container: no request (adding
// one would change its QoS class), a memory request without a limit (the
// kubelet restarts a container for its memory limit only), a CPU request
// under 2m (the kubelet's floor of 2 CPU shares makes 1m and 2m the same).
func Nudge(rr corev1.ResourceRequirements, r corev1.ResourceName) (corev1.ResourceRequirements, bool) {
	req, ok := rr.Requests[r]
	_, limited := rr.Limits[r]
	switch {
	case !ok || req.Sign() <= 0:
		return rr, false
	case r == corev1.ResourceMemory && !limited:
		return rr, false
	case r == corev1.ResourceCPU && req.MilliValue() < 2:
		return rr, false
	}
	value, quantity := unitsOf(r)
	step := value(unitOf(r))
	if n := value(req) / step; n%2 == 1 && n > 1 {
		step = -step
	}
	out := *rr.DeepCopy()
	out.Requests[r] = quantity(value(req) + step)
	if lim, ok := rr.Limits[r]; ok {
		out.Limits[r] = quantity(value(lim) + step)
	}
	return out, true
}

// unitOf is the unit resource r is nudged by.
func unitOf(r corev1.ResourceName) resource.Quantity {
	if r == corev1.ResourceMemory {
		return MemoryUnit
	}
	return CPUUnit
}

// unitsOf returns how a quantity of resource r is counted (CPU in
// millicores, memory in bytes) and written back.
func unitsOf(r corev1.ResourceName) (func(resource.Quantity) int64, func(int64) resource.Quantity) {
	if r == corev1.ResourceMemory {
		return func(q resource.Quantity) int64 { return q.Value() }, func(v int64) resource.Quantity { return *resource.NewQuantity(v, resource.BinarySI) }
	}
	return func(q resource.Quantity) int64 { return q.MilliValue() }, func(v int64) resource.Quantity { return *resource.NewMilliQuantity(v, resource.DecimalSI) }
}
