package workload

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var restartOptions = RestartOptions{Method: RestartTemplate, MethodKey: "ripple.dev/restart-method",
	MaxUnavailableKey: "ripple.dev/max-unavailable", AtKey: "ripple.dev/restarted-at",
	Now: func() time.Time { return time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC) }}

func TestRestartSettings(t *testing.T) {
	at := "2026-01-01T09:00:00Z"
	for _, tc := range []struct {
		name          string
		meta, tpl     map[string]string
		method        string
		max           int
		keeps, at     bool
		problemsNamed []string
	}{
		{name: "default: the template", method: RestartTemplate, max: 1},
		{name: "on the workload", meta: map[string]string{"ripple.dev/restart-method": "evict", "ripple.dev/max-unavailable": "2"},
			method: RestartEvict, max: 2, keeps: true},
		{name: "on the pod template", tpl: map[string]string{"ripple.dev/restart-method": " Delete "}, method: RestartDelete, max: 1, keeps: true},
		{name: "the workload's beats its template's", meta: map[string]string{"ripple.dev/restart-method": "template"},
			tpl: map[string]string{"ripple.dev/restart-method": "evict"}, method: RestartTemplate, max: 1},
		{name: "invalid values fall back with a message naming the annotation",
			meta:   map[string]string{"ripple.dev/restart-method": "evicted", "ripple.dev/max-unavailable": "0"},
			method: RestartTemplate, max: 1, problemsNamed: []string{"ripple.dev/restart-method", "ripple.dev/max-unavailable"}},
		{name: "the restart time is read", meta: map[string]string{"ripple.dev/restart-method": "evict", "ripple.dev/restarted-at": at},
			method: RestartEvict, max: 1, keeps: true, at: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := WithRestarts(StatefulSet, restartOptions)
			s := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Annotations: tc.meta}}
			s.Spec.Template.Annotations = tc.tpl
			rs, ok := k.(Restarter)
			if !ok {
				t.Fatal("a StatefulSet with restarts is no Restarter")
			}
			r := rs.Restart(s)
			if r.Method != tc.method || r.MaxUnavailable != tc.max || k.KeepsTemplate(s) != tc.keeps || r.At.IsZero() == tc.at {
				t.Errorf("got %+v keeps %v, want %s, %d, keeps %v, at %v", r, k.KeepsTemplate(s), tc.method, tc.max, tc.keeps, tc.at)
			}
			problems := strings.Join(k.(Checker).Check(s), "\n")
			for _, key := range tc.problemsNamed {
				if !strings.Contains(problems, key) {
					t.Errorf("problems %q do not name %s", problems, key)
				}
			}
			if len(tc.problemsNamed) == 0 && problems != "" {
				t.Errorf("problems %q, want none", problems)
			}
		})
	}
}

// Only the built-in kinds with pods of their own take the restart
// methods; a Deployment stays a Pauser.
func TestWithRestartsKinds(t *testing.T) {
	for _, k := range []Kind{Deployment, StatefulSet, DaemonSet} {
		w := WithRestarts(k, restartOptions)
		if _, ok := w.(Restarter); !ok {
			t.Errorf("%s takes no restart method", k.Name())
		}
		// A template change by anyone still rolls it (plan's TemplateApplied).
		if tr, ok := w.(TemplateRoller); !ok || !tr.RollsWithTemplate() {
			t.Errorf("%s with restarts no longer rolls with its template", k.Name())
		}
	}
	if _, ok := WithRestarts(Deployment, restartOptions).(Pauser); !ok {
		t.Error("a Deployment with restarts is no longer a Pauser")
	}
	if _, ok := WithRestarts(StatefulSet, restartOptions).(Pauser); ok {
		t.Error("a StatefulSet with restarts became a Pauser")
	}
	cj := NewCronJob(CronJobOptions{})
	if _, ok := WithRestarts(cj, restartOptions).(Restarter); ok {
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
		scope, err := WithRestarts(tc.kind, restartOptions).(Restarter).Pods(tc.obj)
		if err != nil {
			t.Fatalf("%s: %v", tc.kind.Name(), err)
		}
		if scope.Want != tc.want || !scope.Owns(tc.own) || scope.Owns(tc.other) || scope.Selector.String() != "app=web" {
			t.Errorf("%s: want %d, owns %v/%v, selector %s", tc.kind.Name(), scope.Want, scope.Owns(tc.own), scope.Owns(tc.other), scope.Selector)
		}
	}
}

// A kind without restart methods names the annotation that asks for one.
func TestNoRestartMethod(t *testing.T) {
	key := restartOptions.MethodKey
	cj := NewCronJob(CronJobOptions{})
	for _, tc := range []struct {
		kind Kind
		ann  map[string]string
		want bool
	}{
		{cj, map[string]string{key: "evict"}, true},
		{cj, map[string]string{key: "template"}, false},
		{cj, nil, false},
		{WithRestarts(Deployment, restartOptions), map[string]string{key: "evict"}, false},
	} {
		obj := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Annotations: tc.ann}}
		if msg := NoRestartMethod(tc.kind, obj, nil, key); (msg != "") != tc.want || (tc.want && !strings.Contains(msg, key)) {
			t.Errorf("%s %v: %q", tc.kind.Name(), tc.ann, msg)
		}
	}
}
