package rollout

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

type tcase struct {
	name   string
	obj    client.Object
	want   State
	reason string // a part of the reason
}

func check(t *testing.T, cases []tcase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Of(tc.obj)
			if got.State != tc.want || !strings.Contains(got.Reason, tc.reason) {
				t.Errorf("Of = %s %q, want %s with %q", got.State, got.Reason, tc.want, tc.reason)
			}
		})
	}
}

func deploy(gen, observed int64, replicas int32, st appsv1.DeploymentStatus, mod ...func(*appsv1.Deployment)) *appsv1.Deployment {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Generation: gen}, Spec: appsv1.DeploymentSpec{Replicas: ptr.To(replicas)}, Status: st}
	d.Status.ObservedGeneration = observed
	for _, m := range mod {
		m(d)
	}
	return d
}

func TestDeployment(t *testing.T) {
	full := appsv1.DeploymentStatus{Replicas: 3, UpdatedReplicas: 3, AvailableReplicas: 3, ReadyReplicas: 3}
	deadline := full
	deadline.UnavailableReplicas = 1
	deadline.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Reason: "ProgressDeadlineExceeded", Message: `ReplicaSet "web-5d" has timed out progressing.`}}
	check(t, []tcase{
		{"complete", deploy(2, 2, 3, full), Complete, "complete"},
		{"not observed", deploy(3, 2, 3, full), Progressing, "observe generation 3"},
		{"updating", deploy(2, 2, 3, appsv1.DeploymentStatus{Replicas: 4, UpdatedReplicas: 1, AvailableReplicas: 3}), Progressing, "1 of 3 replicas updated"},
		{"old pods terminating", deploy(2, 2, 3, appsv1.DeploymentStatus{Replicas: 4, UpdatedReplicas: 3, AvailableReplicas: 3}), Progressing, "1 old replicas"},
		{"not available", deploy(2, 2, 3, appsv1.DeploymentStatus{Replicas: 3, UpdatedReplicas: 3, AvailableReplicas: 2, UnavailableReplicas: 1}), Progressing, "2 of 3 updated replicas available"},
		{"deadline exceeded", deploy(2, 2, 3, deadline), Stalled, "progress deadline exceeded, 1 replicas unavailable: ReplicaSet"},
		{"deadline not for an old generation", deploy(3, 2, 3, deadline), Progressing, "observe"},
		{"paused", deploy(2, 2, 3, appsv1.DeploymentStatus{Replicas: 3}, func(d *appsv1.Deployment) { d.Spec.Paused = true }), Progressing, "paused"},
		{"default one replica", deploy(1, 1, 0, appsv1.DeploymentStatus{Replicas: 1, UpdatedReplicas: 1, AvailableReplicas: 1}, func(d *appsv1.Deployment) { d.Spec.Replicas = nil }), Complete, ""},
		{"scaled to zero", deploy(1, 1, 0, appsv1.DeploymentStatus{}), Complete, ""},
	})
}

// sts is a StatefulSet at generation 2 whose controller observed generation observed.
func sts(observed int64, st appsv1.StatefulSetStatus, mod ...func(*appsv1.StatefulSet)) *appsv1.StatefulSet {
	s := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Generation: 2}, Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](3)}, Status: st}
	s.Status.ObservedGeneration = observed
	for _, m := range mod {
		m(s)
	}
	return s
}

func TestStatefulSet(t *testing.T) {
	onDelete := func(s *appsv1.StatefulSet) { s.Spec.UpdateStrategy.Type = appsv1.OnDeleteStatefulSetStrategyType }
	partition := func(s *appsv1.StatefulSet) {
		s.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](1)}
	}
	check(t, []tcase{
		{"complete", sts(2, appsv1.StatefulSetStatus{ReadyReplicas: 3, UpdatedReplicas: 3, CurrentRevision: "b", UpdateRevision: "b"}), Complete, ""},
		{"not observed", sts(1, appsv1.StatefulSetStatus{ReadyReplicas: 3}), Progressing, "observe generation 2"},
		{"not ready", sts(2, appsv1.StatefulSetStatus{ReadyReplicas: 2, CurrentRevision: "b", UpdateRevision: "b"}), Progressing, "2 of 3 pods ready"},
		{"revision behind", sts(2, appsv1.StatefulSetStatus{ReadyReplicas: 3, UpdatedReplicas: 1, CurrentRevision: "a", UpdateRevision: "b"}), Progressing, "1 of 3 pods updated"},
		{"on delete", sts(2, appsv1.StatefulSetStatus{ReadyReplicas: 3, CurrentRevision: "a", UpdateRevision: "b"}, onDelete), Complete, ""},
		{"partition done", sts(2, appsv1.StatefulSetStatus{ReadyReplicas: 3, UpdatedReplicas: 2, CurrentRevision: "a", UpdateRevision: "b"}, partition), Complete, ""},
		{"partition updating", sts(2, appsv1.StatefulSetStatus{ReadyReplicas: 3, UpdatedReplicas: 1, CurrentRevision: "a", UpdateRevision: "b"}, partition), Progressing, "1 of 2 pods above the partition"},
	})
}

// ds is a DaemonSet at generation 2 whose controller observed generation observed.
func ds(observed int64, st appsv1.DaemonSetStatus, mod ...func(*appsv1.DaemonSet)) *appsv1.DaemonSet {
	d := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Generation: 2}, Status: st}
	d.Status.ObservedGeneration = observed
	for _, m := range mod {
		m(d)
	}
	return d
}

func TestDaemonSet(t *testing.T) {
	onDelete := func(d *appsv1.DaemonSet) { d.Spec.UpdateStrategy.Type = appsv1.OnDeleteDaemonSetStrategyType }
	check(t, []tcase{
		{"complete", ds(2, appsv1.DaemonSetStatus{DesiredNumberScheduled: 4, UpdatedNumberScheduled: 4, NumberAvailable: 4}), Complete, ""},
		{"not observed", ds(1, appsv1.DaemonSetStatus{}), Progressing, "observe generation 2"},
		{"updating", ds(2, appsv1.DaemonSetStatus{DesiredNumberScheduled: 4, UpdatedNumberScheduled: 1, NumberAvailable: 4}), Progressing, "1 of 4 pods updated"},
		{"not available", ds(2, appsv1.DaemonSetStatus{DesiredNumberScheduled: 4, UpdatedNumberScheduled: 4, NumberAvailable: 3}), Progressing, "3 of 4 updated pods available"},
		{"on delete", ds(2, appsv1.DaemonSetStatus{DesiredNumberScheduled: 4}, onDelete), Complete, ""},
	})
}

func custom(kind string, gen int64, status map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"status": status}}
	u.SetKind(kind)
	u.SetGeneration(gen)
	return u
}

func TestArgoRollout(t *testing.T) {
	check(t, []tcase{
		{"healthy", custom("Rollout", 3, map[string]any{"observedGeneration": "3", "phase": "Healthy"}), Complete, ""},
		{"healthy but not observed", custom("Rollout", 4, map[string]any{"observedGeneration": "3", "phase": "Healthy"}), Progressing, "observe generation 4"},
		{"numeric generation", custom("Rollout", 4, map[string]any{"observedGeneration": int64(4), "phase": "Healthy"}), Complete, ""},
		{"hash generation ignored", custom("Rollout", 4, map[string]any{"observedGeneration": "7d9f8c", "phase": "Healthy"}), Complete, ""},
		{"progressing", custom("Rollout", 3, map[string]any{"observedGeneration": "3", "phase": "Progressing", "message": "more replicas need to be updated"}), Progressing, "the Rollout is Progressing: more replicas"},
		{"paused", custom("Rollout", 3, map[string]any{"observedGeneration": "3", "phase": "Paused"}), Progressing, "Paused"},
		{"degraded", custom("Rollout", 3, map[string]any{"observedGeneration": "3", "phase": "Degraded", "message": "ProgressDeadlineExceeded: ReplicaSet has timed out"}), Stalled, "degraded: ProgressDeadlineExceeded"},
		{"no phase", custom("Rollout", 3, map[string]any{}), Progressing, "no phase"},
	})
}

func dcCond(reason, msg string) map[string]any {
	return map[string]any{"observedGeneration": int64(2), "conditions": []any{
		map[string]any{"type": "Available", "status": "True"},
		map[string]any{"type": "Progressing", "status": "True", "reason": reason, "message": msg},
	}}
}

func TestDeploymentConfig(t *testing.T) {
	check(t, []tcase{
		{"available", custom("DeploymentConfig", 2, dcCond("NewReplicationControllerAvailable", "replication controller web-3 successfully rolled out")), Complete, ""},
		{"not observed", custom("DeploymentConfig", 3, dcCond("NewReplicationControllerAvailable", "")), Progressing, "observe generation 3"},
		{"updating", custom("DeploymentConfig", 2, dcCond("ReplicationControllerUpdated", "replication controller web-3 is progressing")), Progressing, "web-3 is progressing"},
		{"deadline", custom("DeploymentConfig", 2, dcCond("ProgressDeadlineExceeded", "web-3 has timed out progressing")), Stalled, "progress deadline exceeded: web-3"},
		{"cancelled", custom("DeploymentConfig", 2, dcCond("RolloutCancelled", "")), Stalled, "cancelled"},
		{"no condition", custom("DeploymentConfig", 2, map[string]any{}), Progressing, "no Progressing condition"},
	})
}

func TestBatchAndUnknown(t *testing.T) {
	check(t, []tcase{
		{"CronJob", &batchv1.CronJob{}, Complete, "Job was created"},
		{"Job", &batchv1.Job{}, Complete, "Job was created"},
		{"unknown", custom("Other", 1, map[string]any{}), Complete, ""},
	})
}

// Idle names the workloads that run no pods a canary could be judged on.
func TestIdle(t *testing.T) {
	argo := func(replicas any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{}}}
		u.SetKind("Rollout")
		if replicas != nil {
			u.Object["spec"].(map[string]any)["replicas"] = replicas
		}
		return u
	}
	for _, tc := range []struct {
		obj  client.Object
		idle bool
	}{
		{&appsv1.Deployment{Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](0)}}, true},
		{&appsv1.Deployment{}, false}, // replicas unset: 1
		{&appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](3)}}, false},
		{&appsv1.DaemonSet{Status: appsv1.DaemonSetStatus{ObservedGeneration: 1}}, true},
		{&appsv1.DaemonSet{}, false}, // not observed yet
		{&batchv1.CronJob{}, true},
		{&batchv1.Job{}, true},
		{argo(int64(0)), true},
		{argo(int64(2)), false},
		{argo(nil), false},
	} {
		if got := Idle(tc.obj); (got != "") != tc.idle {
			t.Errorf("Idle(%T %v) = %q, want idle %v", tc.obj, tc.obj, got, tc.idle)
		}
	}
}

// ScaledToZero names the workloads that want no pods and run none.
func TestScaledToZero(t *testing.T) {
	argo := func(spec, status any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{}, "status": map[string]any{}}}
		u.SetKind("Rollout")
		if spec != nil {
			u.Object["spec"].(map[string]any)["replicas"] = spec
		}
		if status != nil {
			u.Object["status"].(map[string]any)["replicas"] = status
		}
		return u
	}
	for _, tc := range []struct {
		obj  client.Object
		zero bool
	}{
		{&appsv1.Deployment{Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](0)}}, true},
		{&appsv1.Deployment{Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](0)}, Status: appsv1.DeploymentStatus{Replicas: 1}}, false}, // a pod left
		{&appsv1.Deployment{}, false}, // replicas unset: 1
		{&appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](0)}}, true},
		{&appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](3)}}, false},
		{&appsv1.DaemonSet{Status: appsv1.DaemonSetStatus{ObservedGeneration: 1}}, false}, // idle, but not scaled
		{&batchv1.CronJob{}, false},
		{argo(int64(0), nil), true},
		{argo(int64(0), int64(2)), false},
		{argo(int64(2), nil), false},
		{argo(nil, nil), false},
	} {
		if got := ScaledToZero(tc.obj); got != tc.zero {
			t.Errorf("ScaledToZero(%T %v) = %v, want %v", tc.obj, tc.obj, got, tc.zero)
		}
	}
}
