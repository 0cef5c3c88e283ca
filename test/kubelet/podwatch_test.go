package kubelet

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/ripple-dev/ripple/hack/kit"
)

// podWatch follows the pods of a namespace through one watch, from a list
// made before the change under test to the test's end: every pod created
// or deleted in between is seen, and the pods not Ready (or disrupted) are
// counted at each event, so a moment with too many down cannot fall into
// the gap between two polls.
type podWatch struct {
	t  *testing.T
	cs kubernetes.Interface
	ns string

	mu      sync.Mutex
	pods    map[types.UID]*corev1.Pod // the pods there now
	start   map[types.UID]bool        // the pods of the list the watch started from
	added   []string                  // pods created after the start, "name (uid)"
	deleted []string                  // pods deleted, or marked for deletion, after the start
	// maxNotReady is the most pods of the start not Ready at once.
	maxNotReady int
	// maxDisrupted is the most pods of the start disrupted at once:
	// resized (their container's cpu is not the one it started with) and
	// not yet restarted and Ready again, whether or not the kubelet has
	// stopped the old container yet.
	maxDisrupted int
	startCPU     map[types.UID]string
	// doneAt is, per pod of the start, when it was first seen restarted
	// and Ready.
	doneAt map[types.UID]time.Time
	marker int
	err    error
	moved  chan struct{} // closed, and replaced, at each event
}

// watchPods lists the pods of ns, all of which must be Ready, and follows
// them until the test ends.
func watchPods(t *testing.T, cs kubernetes.Interface, ns string) *podWatch {
	t.Helper()
	list, err := cs.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w := &podWatch{t: t, cs: cs, ns: ns, pods: map[types.UID]*corev1.Pod{}, start: map[types.UID]bool{},
		startCPU: map[types.UID]string{}, doneAt: map[types.UID]time.Time{}, moved: make(chan struct{})}
	for i := range list.Items {
		p := &list.Items[i]
		if !kit.PodReady(p) {
			t.Fatalf("pod %s is not Ready when the watch starts", p.Name)
		}
		w.pods[p.UID], w.start[p.UID], w.startCPU[p.UID] = p, true, cpuOf(p)
	}
	// The API server ends a watch after its timeout at the latest; the
	// longest test ends well within 15 minutes.
	wi, err := cs.CoreV1().Pods(ns).Watch(t.Context(), metav1.ListOptions{
		ResourceVersion: list.ResourceVersion, TimeoutSeconds: ptr.To[int64](900)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(wi.Stop)
	go w.follow(wi)
	return w
}

func (w *podWatch) follow(wi watch.Interface) {
	for ev := range wi.ResultChan() {
		w.mu.Lock()
		w.event(ev)
		close(w.moved)
		w.moved = make(chan struct{})
		w.mu.Unlock()
	}
	w.mu.Lock()
	if w.err == nil && w.t.Context().Err() == nil {
		w.err = fmt.Errorf("the pod watch ended before the test")
	}
	close(w.moved)
	w.moved = make(chan struct{})
	w.mu.Unlock()
}

// event takes one event in; w.mu is held.
func (w *podWatch) event(ev watch.Event) {
	p, ok := ev.Object.(*corev1.Pod)
	switch {
	case ev.Type == watch.Error || !ok:
		w.err = fmt.Errorf("the pod watch failed: %v", ev.Object)
		return
	case ev.Type == watch.Added && w.pods[p.UID] == nil:
		w.added = append(w.added, fmt.Sprintf("%s (%s)", p.Name, p.UID))
		w.pods[p.UID] = p
	case ev.Type == watch.Deleted:
		if old := w.pods[p.UID]; old == nil || old.DeletionTimestamp == nil {
			w.deleted = append(w.deleted, fmt.Sprintf("%s (%s)", p.Name, p.UID))
		}
		delete(w.pods, p.UID)
	default:
		if old := w.pods[p.UID]; p.DeletionTimestamp != nil && (old == nil || old.DeletionTimestamp == nil) {
			w.deleted = append(w.deleted, fmt.Sprintf("%s (%s)", p.Name, p.UID))
		}
		if _, done := w.doneAt[p.UID]; w.start[p.UID] && !done && restartCount(p) > 0 && kit.PodReady(p) {
			w.doneAt[p.UID] = time.Now()
		}
		w.pods[p.UID] = p
		if m, err := strconv.Atoi(p.Annotations[markerKey]); err == nil && m > w.marker {
			w.marker = m
		}
	}
	notReady := 0
	for uid, p := range w.pods {
		if w.start[uid] && !kit.PodReady(p) {
			notReady++
		}
	}
	w.maxNotReady = max(w.maxNotReady, notReady)
	w.maxDisrupted = max(w.maxDisrupted, w.disrupted())
}

// disrupted counts the pods of the start resized and not yet restarted
// and Ready; w.mu is held.
func (w *podWatch) disrupted() int {
	n := 0
	for uid, p := range w.pods {
		if w.start[uid] && cpuOf(p) != w.startCPU[uid] && (restartCount(p) == 0 || !kit.PodReady(p)) {
			n++
		}
	}
	return n
}

// markerKey is the annotation sync writes on a pod.
const markerKey = "test.ripple.dev/marker"

// sync waits until the watch has delivered everything that happened
// before it was called: it writes a marker annotation on a pod and waits
// for the watch to deliver that write (a watch delivers in order).
func (w *podWatch) sync() {
	w.t.Helper()
	w.mu.Lock()
	// A pod not being deleted: a terminating one may be gone before the
	// write.
	var name string
	for _, p := range w.pods {
		if p.DeletionTimestamp == nil {
			name = p.Name
			break
		}
	}
	m := w.marker + 1
	w.mu.Unlock()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"%d"}}}`, markerKey, m)
	if _, err := w.cs.CoreV1().Pods(w.ns).Patch(w.t.Context(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		w.t.Fatal(err)
	}
	w.until(30*time.Second, "its own marker", func() bool { return w.marker >= m })
}

// until waits, within timeout, for cond, evaluated with w.mu held after
// each event; what names the condition for a failure.
func (w *podWatch) until(timeout time.Duration, what string, cond func() bool) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(w.t.Context(), timeout)
	defer cancel()
	for {
		w.mu.Lock()
		ok, err, moved := cond(), w.err, w.moved
		w.mu.Unlock()
		switch {
		case ok:
			return
		case err != nil:
			w.t.Fatal(err)
		}
		select {
		case <-moved:
		case <-ctx.Done():
			w.t.Fatalf("the pod watch did not see %s within %v", what, timeout)
		}
	}
}

// restarted counts the pods of the start whose container restarted at
// least once and that are Ready again; w.mu is held.
func (w *podWatch) restarted() int {
	n := 0
	for uid, p := range w.pods {
		if w.start[uid] && restartCount(p) > 0 && kit.PodReady(p) {
			n++
		}
	}
	return n
}

// anyRestarted counts the pods of the start whose container restarted at
// least once, Ready or not; w.mu is held.
func (w *podWatch) anyRestarted() int {
	n := 0
	for uid, p := range w.pods {
		if w.start[uid] && restartCount(p) > 0 {
			n++
		}
	}
	return n
}

// resizedNotRestarted counts the pods of the start resized and whose
// container has not restarted yet; w.mu is held.
func (w *podWatch) resizedNotRestarted() int {
	n := 0
	for uid, p := range w.pods {
		if w.start[uid] && cpuOf(p) != w.startCPU[uid] && restartCount(p) == 0 {
			n++
		}
	}
	return n
}

// seen is what a pod watch saw.
type seen struct {
	// added and deleted are the pods created, and deleted (or marked for
	// deletion), after the start.
	added, deleted []string
	// maxNotReady and maxDisrupted are the most pods of the start not
	// Ready, and disrupted (see podWatch), at once.
	maxNotReady, maxDisrupted int
	// lastDone is when the last pod of the start was first seen restarted
	// and Ready; zero until every one was.
	lastDone time.Time
}

// snapshot returns what the watch saw so far.
func (w *podWatch) snapshot() seen {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := seen{added: append([]string(nil), w.added...), deleted: append([]string(nil), w.deleted...),
		maxNotReady: w.maxNotReady, maxDisrupted: w.maxDisrupted}
	if len(w.doneAt) == len(w.start) {
		for _, at := range w.doneAt {
			if at.After(s.lastDone) {
				s.lastDone = at
			}
		}
	}
	return s
}

// cpuOf is the cpu request of p's container, as its spec says.
func cpuOf(p *corev1.Pod) string {
	for _, c := range p.Spec.Containers {
		if c.Name == containerName {
			return c.Resources.Requests.Cpu().String()
		}
	}
	return ""
}
