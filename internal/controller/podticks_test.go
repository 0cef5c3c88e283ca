package controller

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// The pods of a namespace are listed once per tick, whatever reads them
// (two workloads' restarts, a follower), each read seeing its selector's
// pods; a new tick, another namespace, or Ripple acting on a pod of the
// namespace lists again.
func TestPodTicksListOncePerTick(t *testing.T) {
	var lists atomic.Int32
	pod := func(ns, name, app string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": app}}}
	}
	c := fake.NewClientBuilder().WithObjects(pod("a", "web-1", "web"), pod("a", "web-2", "web"), pod("a", "api-1", "api"), pod("b", "web-1", "web")).
		WithInterceptorFuncs(interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, l client.ObjectList, opts ...client.ListOption) error {
			lists.Add(1)
			return c.List(ctx, l, opts...)
		}}).Build()
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	pt := &podTicks{Reader: c, Clock: clk}
	read := func(ns, app string) int {
		t.Helper()
		var l corev1.PodList
		sel := labels.SelectorFromSet(labels.Set{"app": app})
		if err := pt.List(t.Context(), &l, client.InNamespace(ns), client.MatchingLabelsSelector{Selector: sel}); err != nil {
			t.Fatal(err)
		}
		return len(l.Items)
	}
	for _, tc := range []struct {
		ns, app string
		pods    int
		lists   int32
	}{
		{"a", "web", 2, 1}, {"a", "api", 1, 1}, {"a", "web", 2, 1}, {"b", "web", 1, 2},
	} {
		if n := read(tc.ns, tc.app); n != tc.pods || lists.Load() != tc.lists {
			t.Errorf("%s/%s: %d pods after %d lists, want %d after %d", tc.ns, tc.app, n, lists.Load(), tc.pods, tc.lists)
		}
	}
	clk.Step(time.Second)
	if read("a", "web"); lists.Load() != 3 {
		t.Errorf("a new tick listed %d times in all, want 3", lists.Load())
	}
	acted(pt, "a")
	if read("a", "web"); lists.Load() != 4 {
		t.Errorf("after Ripple acted on a pod of a, %d lists in all, want 4", lists.Load())
	}
	if len(pt.lists) != 1 {
		t.Errorf("%d namespaces' lists kept, want only the current tick's", len(pt.lists))
	}
}
