// Package rollout reads, from a workload's own status, how the rollout of
// its current spec is going: complete, in progress or stalled, with a
// short reason for events and logs. It is pure: it reads nothing but the
// object it is given. The rules follow `kubectl rollout status` for the
// built-in kinds, the phase for Argo Rollouts and the Progressing
// condition for OpenShift DeploymentConfigs.
package rollout

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// State is where a rollout stands.
type State int

// The states of a rollout.
const (
	// Progressing: the rollout has not finished and has not failed.
	Progressing State = iota
	// Complete: every replica runs the current template and is available.
	Complete
	// Stalled: the kind's controller gave up (a progress deadline was
	// exceeded, the rollout is degraded or cancelled).
	Stalled
)

func (s State) String() string {
	switch s {
	case Complete:
		return "complete"
	case Stalled:
		return "stalled"
	}
	return "progressing"
}

// Status is a State with a short reason, e.g. "2 of 3 updated replicas
// are available".
type Status struct {
	State  State
	Reason string
}

func progressing(format string, args ...any) Status {
	return Status{State: Progressing, Reason: fmt.Sprintf(format, args...)}
}

// done is the Status of a finished rollout.
var done = Status{State: Complete, Reason: "complete"}

// Of returns the status of obj's rollout. CronJobs and Jobs are complete
// at once: their rollout is the Job Ripple created (or re-created), and
// what that Job then does is its own run, not a rollout. Unknown kinds are
// complete too, so that they never hold a rollout slot.
func Of(obj client.Object) Status {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		return Deployment(o)
	case *appsv1.StatefulSet:
		return StatefulSet(o)
	case *appsv1.DaemonSet:
		return DaemonSet(o)
	case *batchv1.CronJob, *batchv1.Job:
		return Status{State: Complete, Reason: "the Job was created"}
	case *unstructured.Unstructured:
		switch o.GetKind() {
		case "Rollout":
			return ArgoRollout(o)
		case "DeploymentConfig":
			return DeploymentConfig(o)
		}
	}
	return done
}

// Idle says why obj runs no pods whose health a canary could be judged
// on: a Deployment, StatefulSet or Argo Rollout scaled to zero, a
// DaemonSet that schedules no pod, a CronJob or Job (their rollout is the
// write). Empty when it runs pods, or when its kind does not say.
func Idle(obj client.Object) string {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		return zero(o.Spec.Replicas)
	case *appsv1.StatefulSet:
		return zero(o.Spec.Replicas)
	case *appsv1.DaemonSet:
		if o.Status.ObservedGeneration > 0 && o.Status.DesiredNumberScheduled == 0 {
			return "it schedules no pod"
		}
	case *batchv1.CronJob, *batchv1.Job:
		return "its pods are its Jobs' runs"
	case *unstructured.Unstructured:
		if n, ok, _ := unstructured.NestedInt64(o.Object, "spec", "replicas"); ok && n == 0 {
			return "it is scaled to zero"
		}
	}
	return ""
}

// ScaledToZero reports whether obj wants no pods and runs none: a
// Deployment, StatefulSet, Argo Rollout (or another kind with
// spec.replicas) whose spec.replicas is 0 and whose status counts no
// replica left (a replica still running reads the data it started with).
// A pod it starts later reads its configs' data as they are then.
func ScaledToZero(obj client.Object) bool {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		return zero(o.Spec.Replicas) != "" && o.Status.Replicas == 0
	case *appsv1.StatefulSet:
		return zero(o.Spec.Replicas) != "" && o.Status.Replicas == 0
	case *unstructured.Unstructured:
		n, ok, _ := unstructured.NestedInt64(o.Object, "spec", "replicas")
		left, _, _ := unstructured.NestedInt64(o.Object, "status", "replicas")
		return ok && n == 0 && left == 0
	}
	return false
}

func zero(replicas *int32) string {
	if replicas != nil && *replicas == 0 {
		return "it is scaled to zero"
	}
	return ""
}

// Instant reports whether obj's rollout is the write itself (a CronJob's
// or a Job's: the Job was created), so there is nothing to follow.
func Instant(obj client.Object) bool {
	switch obj.(type) {
	case *batchv1.CronJob, *batchv1.Job:
		return true
	}
	return false
}

// observed is the in-progress Status while a controller has not seen the
// latest spec yet.
func observed(kind string, generation, observed int64) (Status, bool) {
	if observed < generation {
		return progressing("waiting for the %s controller to observe generation %d", kind, generation), false
	}
	return Status{}, true
}
