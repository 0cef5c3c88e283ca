package rollout

import (
	appsv1 "k8s.io/api/apps/v1"
)

// progressDeadlineExceeded is the reason of a Deployment's (and a
// DeploymentConfig's) Progressing condition once it gave up.
const progressDeadlineExceeded = "ProgressDeadlineExceeded"

// Deployment reads a Deployment's rollout as `kubectl rollout status` does.
func Deployment(d *appsv1.Deployment) Status {
	if s, ok := observed("Deployment", d.Generation, d.Status.ObservedGeneration); !ok {
		return s
	}
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentProgressing && c.Reason == progressDeadlineExceeded {
			return Status{State: Stalled, Reason: deadlineReason(c.Message, d.Status.UnavailableReplicas)}
		}
	}
	if d.Spec.Paused {
		return progressing("the Deployment is paused")
	}
	want := replicas(d.Spec.Replicas)
	st := d.Status
	switch {
	case st.UpdatedReplicas < want:
		return progressing("%d of %d replicas updated", st.UpdatedReplicas, want)
	case st.Replicas > st.UpdatedReplicas:
		return progressing("%d old replicas pending termination", st.Replicas-st.UpdatedReplicas)
	case st.AvailableReplicas < st.UpdatedReplicas || st.UnavailableReplicas > 0:
		return progressing("%d of %d updated replicas available", st.AvailableReplicas, st.UpdatedReplicas)
	}
	return done
}

func deadlineReason(message string, unavailable int32) string {
	r := "progress deadline exceeded"
	if unavailable > 0 {
		r += ", " + itoa(unavailable) + " replicas unavailable"
	}
	if message != "" {
		r += ": " + message
	}
	return r
}

// StatefulSet reads a StatefulSet's rollout as `kubectl rollout status`
// does. With the OnDelete strategy pods change only when deleted, so the
// rollout is complete once the controller observed the spec.
func StatefulSet(s *appsv1.StatefulSet) Status {
	if st, ok := observed("StatefulSet", s.Generation, s.Status.ObservedGeneration); !ok {
		return st
	}
	if s.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType {
		return done
	}
	want := replicas(s.Spec.Replicas)
	st := s.Status
	if st.ReadyReplicas < want {
		return progressing("%d of %d pods ready", st.ReadyReplicas, want)
	}
	if ru := s.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil && *ru.Partition > 0 {
		if part := want - *ru.Partition; st.UpdatedReplicas < part {
			return progressing("%d of %d pods above the partition updated", st.UpdatedReplicas, part)
		}
		return done
	}
	if st.UpdateRevision != st.CurrentRevision {
		return progressing("%d of %d pods updated", st.UpdatedReplicas, want)
	}
	return done
}

// DaemonSet reads a DaemonSet's rollout as `kubectl rollout status` does.
func DaemonSet(d *appsv1.DaemonSet) Status {
	if st, ok := observed("DaemonSet", d.Generation, d.Status.ObservedGeneration); !ok {
		return st
	}
	if d.Spec.UpdateStrategy.Type == appsv1.OnDeleteDaemonSetStrategyType {
		return done
	}
	st := d.Status
	switch {
	case st.UpdatedNumberScheduled < st.DesiredNumberScheduled:
		return progressing("%d of %d pods updated", st.UpdatedNumberScheduled, st.DesiredNumberScheduled)
	case st.NumberAvailable < st.DesiredNumberScheduled:
		return progressing("%d of %d updated pods available", st.NumberAvailable, st.DesiredNumberScheduled)
	}
	return done
}

// replicas is spec.replicas with the API's default of 1.
func replicas(r *int32) int32 {
	if r == nil {
		return 1
	}
	return *r
}
