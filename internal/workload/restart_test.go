package workload

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Only the built-in kinds with pods of their own take the restart
// methods; a Deployment stays a Pauser.
func TestWithRestartsKinds(t *testing.T) {
	for _, k := range []Kind{Deployment, StatefulSet, DaemonSet} {
		w := WithRestarts(k)
		if _, ok := w.(Restarter); !ok {
			t.Errorf("%s takes no restart method", k.Name())
		}
		// A template change by anyone still rolls it (plan's TemplateApplied).
		if tr, ok := w.(TemplateRoller); !ok || !tr.RollsWithTemplate() {
			t.Errorf("%s with restarts no longer rolls with its template", k.Name())
		}
	}
	if _, ok := WithRestarts(Deployment).(Pauser); !ok {
		t.Error("a Deployment with restarts is no longer a Pauser")
	}
	if _, ok := WithRestarts(StatefulSet).(Pauser); ok {
		t.Error("a StatefulSet with restarts became a Pauser")
	}
	cj := NewCronJob(CronJobOptions{})
	if _, ok := WithRestarts(cj).(Restarter); ok {
		t.Error("a CronJob takes a restart method")
	}
}

// The pods of a Deployment are those of its ReplicaSets (named after it
// and the template hash), of a StatefulSet or DaemonSet those it controls.
func TestRestartPods(t *testing.T) {
	owned := func(kind, name string, uid string, hash string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{appsv1.DefaultDeploymentUniqueLabelKey: hash},
			OwnerReferences: []metav1.OwnerReference{{Kind: kind, Name: name, UID: types.UID("u-" + uid), Controller: ptr.To(true)}}}}
	}
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](3), Selector: sel}}
	s := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db", UID: "u-db"}, Spec: appsv1.StatefulSetSpec{Selector: sel}}
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "agent", UID: "u-agent"}, Spec: appsv1.DaemonSetSpec{Selector: sel},
		Status: appsv1.DaemonSetStatus{DesiredNumberScheduled: 5}}
	for _, tc := range []struct {
		kind       Kind
		obj        client.Object
		want       int
		own, other *corev1.Pod
	}{
		{Deployment, d, 3, owned("ReplicaSet", "web-abc", "rs", "abc"), owned("ReplicaSet", "webapp-abc", "rs2", "abc")},
		{StatefulSet, s, 1, owned("StatefulSet", "db", "db", ""), owned("StatefulSet", "db", "other", "")},
		{DaemonSet, ds, 5, owned("DaemonSet", "agent", "agent", ""), owned("ReplicaSet", "agent", "x", "")},
	} {
		scope, err := WithRestarts(tc.kind).(Restarter).Pods(tc.obj)
		if err != nil {
			t.Fatalf("%s: %v", tc.kind.Name(), err)
		}
		if scope.Want != tc.want || !scope.Owns(tc.own) || scope.Owns(tc.other) || scope.Selector.String() != "app=web" {
			t.Errorf("%s: want %d, owns %v/%v, selector %s", tc.kind.Name(), scope.Want, scope.Owns(tc.own), scope.Owns(tc.other), scope.Selector)
		}
	}
}
