package workload

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The restart methods (--restart-method and its annotation): how a reload
// restarts a workload's pods.
const (
	// RestartTemplate writes the reload on the pod template, and the
	// workload's own controller rolls it out (Reloader's way).
	RestartTemplate = "template"
	// RestartEvict leaves the template alone and evicts the pods through
	// the Eviction API, so PodDisruptionBudgets hold.
	RestartEvict = "evict"
	// RestartDelete leaves the template alone and deletes the pods (for
	// OnDelete StatefulSets and DaemonSets without a PodDisruptionBudget).
	RestartDelete = "delete"
	// RestartInPlace leaves the template and the pods alone and restarts
	// containers in their pods: the kubelet restarts a container whose
	// resource is resized through pods/resize when that resource's
	// resizePolicy is RestartContainer (docs/restart-methods.md).
	RestartInPlace = "in-place"
	// RestartReloadAction leaves the template and the pods alone and calls
	// each pod's reload endpoint (the reload-action annotation): the app
	// reads its mounted files again. It is never a --restart-method value:
	// the endpoint is the workload's own.
	RestartReloadAction = "reload-action"
)

// The in-place fallbacks (the in-place-fallback annotation): what Ripple
// does with a pod it cannot restart in place.
const (
	// FallbackNone leaves the pod as it is, with a Warning: it reads the
	// new data once it restarts for another reason.
	FallbackNone = "none"
	// FallbackEvict evicts it, as the evict method does.
	FallbackEvict = "evict"
)

// Restart is how a workload takes a reload, as the planner resolved it
// (plan.RestartOf), and in an Update the restart a reload carries out.
type Restart struct {
	// Method is RestartTemplate, RestartEvict, RestartDelete, RestartInPlace
	// or RestartReloadAction.
	Method string
	// At is the restart time: recorded by the last reload that restarted
	// pods (zero when there is none), or in an Update the time this
	// reload records.
	At time.Time
	// MaxUnavailable is how many pods may be restarted at once (>= 1).
	MaxUnavailable int
	// Containers are the containers the in-place method restarts (the
	// restart-containers annotation); empty: each container with a
	// RestartContainer resize policy.
	Containers []string
	// Fallback is what the in-place and reload-action methods do with a
	// pod they cannot restart in place or reload: FallbackNone or
	// FallbackEvict.
	Fallback string
	// Action is the reload-action method's call; Delay is how long after
	// the restart time it is made, so the kubelet has written the changed
	// files into the pods' volumes first.
	Action *Action
	Delay  time.Duration
	// Instead is the method of a reload-action workload when its action
	// cannot deliver a change (plan.ActionBlocked): its restart method.
	Instead string
}

// Action is an HTTP call that makes a pod's app read its configuration
// again, as Prometheus' /-/reload or Spring's /actuator/refresh: Method
// to Port (a number or a container port's name) and Path (with its query)
// of the pod's IP.
type Action struct {
	Method string
	Port   intstr.IntOrString
	Path   string
}

// String is the action as annotated: "POST :9090/-/reload".
func (a Action) String() string {
	return a.Method + " :" + a.Port.String() + a.Path
}

// IsZero reports whether r is the zero Restart (a template write).
func (r Restart) IsZero() bool {
	return r.Method == "" && r.At.IsZero() && r.MaxUnavailable == 0 && len(r.Containers) == 0 && r.Fallback == "" && r.Action == nil && r.Delay == 0 && r.Instead == ""
}

// Pods reports whether the reload restarts pods rather than writing the
// template.
func (r Restart) Pods() bool {
	return r.Method == RestartEvict || r.Method == RestartDelete || r.Method == RestartInPlace || r.Method == RestartReloadAction
}

// PodScope is which pods are a workload's: those its selector matches
// that it owns, and how many it wants.
type PodScope struct {
	Selector labels.Selector
	Owns     func(*corev1.Pod) bool
	Want     int
}

// Restarter is a kind that can take a reload by restarting its pods: Pods
// names them. Which method applies is the planner's (plan.RestartOf).
type Restarter interface {
	Pods(obj client.Object) (PodScope, error)
}

// WithRestarts adds the restart methods to a Deployment, StatefulSet or
// DaemonSet kind; any other kind is returned as it is (its reload is
// always a template write, or its own restart). An Update with a Restart
// is then written as the metadata it carries, and the pods are restarted
// by the controller.
func WithRestarts(k Kind) Kind {
	switch k.Name() {
	case "Deployment", "StatefulSet", "DaemonSet":
	default:
		return k
	}
	r := restarting{Kind: k}
	if pz, ok := k.(Pauser); ok {
		return restartingPausable{r, pz}
	}
	return r
}

type restarting struct {
	Kind
}

// restartingPausable keeps a Deployment a Pauser: a pause of Ripple's must
// still be resumed after the method changed.
type restartingPausable struct {
	restarting
	pz Pauser
}

func (k restartingPausable) Paused(obj client.Object) bool { return k.pz.Paused(obj) }

// RollsWithTemplate is the wrapped kind's: whatever Ripple's own method,
// its controller starts new pods when anyone changes the pod template.
func (k restarting) RollsWithTemplate() bool {
	tr, ok := k.Kind.(TemplateRoller)
	return ok && tr.RollsWithTemplate()
}

// Pods returns the pod scope of a Deployment (the pods of its
// ReplicaSets), a StatefulSet or a DaemonSet.
func (k restarting) Pods(obj client.Object) (PodScope, error) {
	var sel *metav1.LabelSelector
	var s PodScope
	switch o := obj.(type) {
	case *appsv1.Deployment:
		sel, s.Want = o.Spec.Selector, int(replicas(o.Spec.Replicas))
		// The Deployment controller names a ReplicaSet after the
		// Deployment and the template hash its pods carry, so the owner
		// is known without reading ReplicaSets.
		s.Owns = func(p *corev1.Pod) bool {
			ref := metav1.GetControllerOf(p)
			return ref != nil && ref.Kind == "ReplicaSet" && ref.Name == o.Name+"-"+p.Labels[appsv1.DefaultDeploymentUniqueLabelKey]
		}
	case *appsv1.StatefulSet:
		sel, s.Want, s.Owns = o.Spec.Selector, int(replicas(o.Spec.Replicas)), ownedBy(o)
	case *appsv1.DaemonSet:
		sel, s.Want, s.Owns = o.Spec.Selector, int(o.Status.DesiredNumberScheduled), ownedBy(o)
	default:
		return s, fmt.Errorf("%s: no pods to restart on a %T", k.Name(), obj)
	}
	var err error
	if s.Selector, err = metav1.LabelSelectorAsSelector(sel); err != nil {
		return s, fmt.Errorf("%s %s/%s: spec.selector: %w", k.Name(), obj.GetNamespace(), obj.GetName(), err)
	}
	return s, nil
}

// ownedBy tells the pods whose controller is obj.
func ownedBy(obj client.Object) func(*corev1.Pod) bool {
	return func(p *corev1.Pod) bool {
		ref := metav1.GetControllerOf(p)
		return ref != nil && ref.UID == obj.GetUID()
	}
}

func replicas(n *int32) int32 {
	if n == nil {
		return 1
	}
	return *n
}
