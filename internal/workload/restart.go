package workload

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
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
)

// RestartOptions configure the restart methods of a kind.
type RestartOptions struct {
	// Method is the default method (--restart-method).
	Method string
	// MethodKey and MaxUnavailableKey are the annotations that override
	// the method and set how many pods may be down at once, read on the
	// workload, else on its pod template.
	MethodKey, MaxUnavailableKey string
	// AtKey is the annotation the reload's write records its time in.
	AtKey string
	// Now is the time a reload is written.
	Now func() time.Time
}

// Restart is how a workload takes a reload, as its annotations say.
type Restart struct {
	// Method is RestartTemplate, RestartEvict or RestartDelete.
	Method string
	// At is the restart time recorded by the last reload that restarted
	// pods; zero when there is none.
	At time.Time
	// MaxUnavailable is how many pods may be restarted at once (>= 1).
	MaxUnavailable int
}

// Pods reports whether the reload restarts pods rather than writing the
// template.
func (r Restart) Pods() bool { return r.Method == RestartEvict || r.Method == RestartDelete }

// PodScope is which pods are a workload's: those its selector matches
// that it owns, and how many it wants.
type PodScope struct {
	Selector labels.Selector
	Owns     func(*corev1.Pod) bool
	Want     int
}

// Restarter is a kind that can take a reload by restarting its pods.
type Restarter interface {
	Restart(obj client.Object) Restart
	Pods(obj client.Object) (PodScope, error)
}

// WithRestarts adds the restart methods to a Deployment, StatefulSet or
// DaemonSet kind; any other kind is returned as it is (its reload is
// always a template write, or its own restart).
func WithRestarts(k Kind, o RestartOptions) Kind {
	switch k.Name() {
	case "Deployment", "StatefulSet", "DaemonSet":
	default:
		return k
	}
	r := restarting{Kind: k, o: o}
	if pz, ok := k.(Pauser); ok {
		return restartingPausable{r, pz}
	}
	return r
}

type restarting struct {
	Kind
	o RestartOptions
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

// lookup reads key on the workload, else on its pod template.
func (k restarting) lookup(obj client.Object, key string) (string, bool) {
	if v, ok := obj.GetAnnotations()[key]; ok {
		return v, true
	}
	if tpl, err := k.PodTemplate(obj); err == nil && tpl != nil {
		v, ok := tpl.Annotations[key]
		return v, ok
	}
	return "", false
}

// settings reads the method and max-unavailable of obj, with a message per
// invalid value.
func (k restarting) settings(obj client.Object) (Restart, []string) {
	r := Restart{Method: k.o.Method, MaxUnavailable: 1}
	var problems []string
	if v, ok := k.lookup(obj, k.o.MethodKey); ok {
		switch m := strings.ToLower(strings.TrimSpace(v)); m {
		case RestartTemplate, RestartEvict, RestartDelete:
			r.Method = m
		default:
			problems = append(problems, fmt.Sprintf("annotation %q: %q is not %q, %q or %q; using %q (--restart-method)",
				k.o.MethodKey, v, RestartTemplate, RestartEvict, RestartDelete, k.o.Method))
		}
	}
	if v, ok := k.lookup(obj, k.o.MaxUnavailableKey); ok {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 1 {
			problems = append(problems, fmt.Sprintf("annotation %q: %q is not a whole number of pods of at least 1; using 1", k.o.MaxUnavailableKey, v))
		} else {
			r.MaxUnavailable = n
		}
	}
	if t, err := time.Parse(time.RFC3339, obj.GetAnnotations()[k.o.AtKey]); err == nil {
		r.At = t
	}
	return r, problems
}

// Restart returns how obj takes a reload; an invalid annotation means the
// default.
func (k restarting) Restart(obj client.Object) Restart {
	r, _ := k.settings(obj)
	return r
}

// Check names the invalid restart annotations of obj.
func (k restarting) Check(obj client.Object) []string {
	_, problems := k.settings(obj)
	return problems
}

// KeepsTemplate is true under the evict and delete methods: what was
// applied is then known from the applied record only.
func (k restarting) KeepsTemplate(obj client.Object) bool {
	return k.Restart(obj).Pods() || k.Kind.KeepsTemplate(obj)
}

// Write under the evict and delete methods writes no template: only the
// applied record and the restart time, in one patch locked on the
// resourceVersion read. The pods are restarted from that record.
func (k restarting) Write(ctx context.Context, c client.Client, obj client.Object, u Update) (Result, error) {
	if u.Template != nil && k.Restart(obj).Pods() {
		at := k.o.Now().UTC().Format(time.RFC3339)
		u.Template = nil
		u.Annotations = maps.Clone(u.Annotations)
		if u.Annotations == nil {
			u.Annotations = map[string]*string{}
		}
		u.Annotations[k.o.AtKey] = &at
	}
	return k.Kind.Write(ctx, c, obj, u)
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

// NoRestartMethod returns the message for a workload of a kind that takes
// no restart method (a CronJob, Job, Argo Rollout or DeploymentConfig)
// whose key annotation (on it, else on tpl) asks for evict or delete; ""
// otherwise. Its reload is then the kind's own.
func NoRestartMethod(kind Kind, obj client.Object, tpl *corev1.PodTemplateSpec, key string) string {
	if _, ok := kind.(Restarter); ok {
		return ""
	}
	v, ok := obj.GetAnnotations()[key]
	if !ok && tpl != nil {
		v, ok = tpl.Annotations[key]
	}
	if !ok || strings.EqualFold(strings.TrimSpace(v), RestartTemplate) {
		return ""
	}
	return fmt.Sprintf("annotation %q: a %s takes no restart method (only Deployments, StatefulSets and DaemonSets do); it reloads as it always does", key, kind.Name())
}
