package change

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/workload"
)

func gatePod(ready bool, restarts int32, waiting string, last *corev1.ContainerStateTerminated) *corev1.Pod {
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	cs := corev1.ContainerStatus{Name: "app", RestartCount: restarts}
	if waiting != "" {
		cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: waiting}
	}
	cs.LastTerminationState.Terminated = last
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1"},
		Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: st}}, ContainerStatuses: []corev1.ContainerStatus{cs}}}
}

// What fails the pod gate: a restart (even one Ready again before the
// workload's status shows it), CrashLoopBackOff, a pod turned unready;
// not a pod being deleted (a rollout's old pods), not a pod that stays
// as it was.
func TestPodSignal(t *testing.T) {
	oom := &corev1.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 137}
	deleting := gatePod(false, 0, "", nil)
	deleting.DeletionTimestamp = &metav1.Time{}
	for _, tc := range []struct {
		name     string
		old, cur *corev1.Pod
		want     string
	}{
		{"unchanged", gatePod(true, 0, "", nil), gatePod(true, 0, "", nil), ""},
		{"restarted, Ready again", gatePod(true, 0, "", nil), gatePod(true, 1, "", oom), "container app restarted (OOMKilled, exit code 137)"},
		{"crash loop", gatePod(false, 2, "", nil), gatePod(false, 2, "CrashLoopBackOff", oom), "container app is in CrashLoopBackOff (OOMKilled, exit code 137)"},
		{"still in the crash loop", gatePod(false, 2, "CrashLoopBackOff", nil), gatePod(false, 2, "CrashLoopBackOff", nil), ""},
		{"unready", gatePod(true, 0, "", nil), gatePod(false, 0, "", nil), "turned unready"},
		{"ready", gatePod(false, 0, "", nil), gatePod(true, 0, "", nil), ""},
		{"deleted", gatePod(true, 0, "", nil), deleting, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := podSignal(tc.old, tc.cur); got != tc.want {
				t.Errorf("podSignal = %q, want %q", got, tc.want)
			}
		})
	}
	kept, err := podStatusOnly(gatePod(true, 1, "", oom))
	if p := kept.(*corev1.Pod); err != nil || p.Name != "web-1" || len(p.Status.ContainerStatuses) != 1 || !strings.Contains(p.Status.ContainerStatuses[0].LastTerminationState.Terminated.Reason, "OOM") {
		t.Errorf("podStatusOnly dropped what the gate reads: %+v, %v", kept, err)
	}
}

// The pod gate watches at most maxBaking canaries of a namespace at
// once: past it a change holds (its bake waits), other namespaces do not,
// and a bake that ends frees its watches.
func TestPodGateBoundPerNamespace(t *testing.T) {
	g := &podGate{pods: k8sfake.NewClientset(), look: func(Key) {}, base: t.Context,
		object: func(context.Context, workload.Ref) (client.Object, workload.Kind, error) { return nil, nil, nil }}
	canaries := func(ns string, n int) []workload.Ref {
		out := make([]workload.Ref, n)
		for i := range out {
			out[i] = workload.Ref{Kind: "Deployment", Namespace: ns, Name: fmt.Sprint("d", i)}
		}
		return out
	}
	key := func(ns, name string) Key {
		return Key{Namespace: ns, Config: refs.Ref{Kind: refs.ConfigMap, Name: name}}
	}
	if v := g.Judge(t.Context(), key("tenant", "a"), canaries("tenant", maxBaking)); v.Hold != "" {
		t.Fatalf("the first %d canaries: held %q", maxBaking, v.Hold)
	}
	if v := g.Judge(t.Context(), key("tenant", "b"), canaries("tenant", 1)); !strings.Contains(v.Hold, "at most 100 canaries of a namespace") {
		t.Errorf("one canary more in the namespace: hold %q, want the bound", v.Hold)
	}
	if v := g.Judge(t.Context(), key("shop", "a"), canaries("shop", 1)); v.Hold != "" {
		t.Errorf("another namespace held: %q", v.Hold)
	}
	g.Done(key("tenant", "a"))
	if v := g.Judge(t.Context(), key("tenant", "b"), canaries("tenant", 1)); v.Hold != "" {
		t.Errorf("after a bake ended: held %q", v.Hold)
	}
}
