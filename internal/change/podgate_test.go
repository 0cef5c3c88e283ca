package change

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/internal/canary"
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
// as it was. A pod seen for the first time fails it if a container's last
// run ended in the bake, or it is in CrashLoopBackOff.
func TestPodSignal(t *testing.T) {
	since := time.Date(2026, 12, 3, 8, 0, 1, 0, time.UTC) // the bake's start, rounded up to the second
	oom := &corev1.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 137, FinishedAt: metav1.NewTime(since.Add(5 * time.Second))}
	before := &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 1, FinishedAt: metav1.NewTime(since.Add(-2 * time.Second))}
	inTheSecond := &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 1, FinishedAt: metav1.NewTime(since.Add(-time.Second))}
	deleting := gatePod(false, 0, "", nil)
	deleting.DeletionTimestamp = &metav1.Time{}
	for _, tc := range []struct {
		name     string
		old, cur *corev1.Pod
		want     string
	}{
		// First seen (old nil): after a list that came late, or a restart
		// of Ripple during the bake.
		{"first seen, restarted in the bake", nil, gatePod(true, 1, "", oom), "container app restarted (OOMKilled, exit code 137)"},
		{"first seen, restarted in the bake's first second", nil, gatePod(true, 1, "", inTheSecond), "container app restarted (Error, exit code 1)"},
		{"first seen, restarted before the bake", nil, gatePod(true, 1, "", before), ""},
		{"first seen, in a crash loop", nil, gatePod(false, 2, "CrashLoopBackOff", before), "container app is in CrashLoopBackOff (Error, exit code 1)"},
		{"first seen, unready", nil, gatePod(false, 0, "", nil), ""},
		{"first seen, as it started", nil, gatePod(true, 0, "", nil), ""},
		{"unchanged", gatePod(true, 0, "", nil), gatePod(true, 0, "", nil), ""},
		{"restarted, Ready again", gatePod(true, 0, "", nil), gatePod(true, 1, "", oom), "container app restarted (OOMKilled, exit code 137)"},
		{"crash loop", gatePod(false, 2, "", nil), gatePod(false, 2, "CrashLoopBackOff", oom), "container app is in CrashLoopBackOff (OOMKilled, exit code 137)"},
		{"still in the crash loop", gatePod(false, 2, "CrashLoopBackOff", nil), gatePod(false, 2, "CrashLoopBackOff", nil), ""},
		{"unready", gatePod(true, 0, "", nil), gatePod(false, 0, "", nil), "turned unready"},
		{"ready", gatePod(false, 0, "", nil), gatePod(true, 0, "", nil), ""},
		{"deleted", gatePod(true, 0, "", nil), deleting, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var old podRecord
			if tc.old != nil {
				old = recordOf(tc.old)
			}
			if got := podSignal(old, recordOf(tc.cur), since); got != tc.want {
				t.Errorf("podSignal = %q, want %q", got, tc.want)
			}
		})
	}
	// A tenant's strings are kept bounded: at most maxPodContainers
	// containers, names and reasons cut.
	big := gatePod(true, 1, "", &corev1.ContainerStateTerminated{Reason: strings.Repeat("é", 100), ExitCode: 1})
	for i := range 40 {
		big.Status.ContainerStatuses = append(big.Status.ContainerStatuses, corev1.ContainerStatus{Name: fmt.Sprint(i, strings.Repeat("x", 100))})
	}
	rec := recordOf(big)
	if len(rec.containers) != maxPodContainers || len(rec.containers[1].name) != maxContainerName || len(rec.containers[0].reason) > maxReason ||
		!utf8.ValidString(rec.containers[0].reason) || rec.containers[0].exitCode != 1 || !rec.ready {
		t.Errorf("recordOf kept %d containers, a name of %d bytes, a reason of %d bytes (%q): want at most %d, %d, %d",
			len(rec.containers), len(rec.containers[1].name), len(rec.containers[0].reason), rec.containers[0].reason, maxPodContainers, maxContainerName, maxReason)
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
	if v := g.Judge(t.Context(), key("tenant", "a"), time.Time{}, canaries("tenant", maxBaking)); v.Hold != "" {
		t.Fatalf("the first %d canaries: held %q", maxBaking, v.Hold)
	}
	if v := g.Judge(t.Context(), key("tenant", "b"), time.Time{}, canaries("tenant", 1)); !strings.Contains(v.Hold, "at most 100 canaries of a namespace") {
		t.Errorf("one canary more in the namespace: hold %q, want the bound", v.Hold)
	}
	if v := g.Judge(t.Context(), key("shop", "a"), time.Time{}, canaries("shop", 1)); v.Hold != "" {
		t.Errorf("another namespace held: %q", v.Hold)
	}
	g.Done(key("tenant", "a"))
	if v := g.Judge(t.Context(), key("tenant", "b"), time.Time{}, canaries("tenant", 1)); v.Hold != "" {
		t.Errorf("after a bake ended: held %q", v.Hold)
	}
}

// gateFixture is a pod gate over a fake API server holding Deployment
// "web" (app=web, 2 replicas) of namespace "tenant": its 2 pods (of its
// ReplicaSet web-abc) and strays, pods that match its selector with 20 KB
// of labels but are no one's.
func gateFixture(t *testing.T, strays int) (*podGate, *k8sfake.Clientset, workload.Ref) {
	t.Helper()
	web := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "web"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
	var objs []runtime.Object
	for i := range 2 {
		p := gatePod(true, 0, "", nil)
		p.Namespace, p.Name = "tenant", fmt.Sprint("web-abc-", i)
		p.Labels = map[string]string{"app": "web", appsv1.DefaultDeploymentUniqueLabelKey: "abc"}
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-abc", UID: "rs", Controller: ptr.To(true)}}
		objs = append(objs, p)
	}
	for i := range strays {
		labels := map[string]string{"app": "web"}
		for j := range 20 {
			labels[fmt.Sprint("decoy-", j)] = strings.Repeat("x", 1000)
		}
		objs = append(objs, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: fmt.Sprint("decoy-", i), Labels: labels}})
	}
	cs := k8sfake.NewClientset(objs...)
	kind := workload.WithRestarts(workload.Deployment)
	g := &podGate{pods: cs, look: func(Key) {}, base: t.Context,
		object: func(context.Context, workload.Ref) (client.Object, workload.Kind, error) { return web, kind, nil }}
	return g, cs, workload.Ref{Kind: "Deployment", Namespace: "tenant", Name: "web"}
}

// judgeUntil judges key until verdict says done, for at most 10 s.
func judgeUntil(t *testing.T, g *podGate, key Key, c workload.Ref, done func(canary.Verdict) bool) canary.Verdict {
	t.Helper()
	var v canary.Verdict
	for range 1000 {
		if v = g.Judge(t.Context(), key, time.Time{}, []workload.Ref{c}); done(v) {
			return v
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("the pod gate says %+v after 10 s", v)
	return v
}

func records(g *podGate) (kept, strays int) {
	g.watches.each(func(w *podWatch) {
		for _, s := range w.pods {
			k, n := s.count()
			kept, strays = kept+k, strays+n
		}
	})
	return kept, strays
}

// The pod gate keeps a record of the canary's own pods only: strays that
// match its selector are counted, never kept. A restart of its own pod
// still fails the gate.
func TestPodGateKeepsItsOwnPodsOnly(t *testing.T) {
	g, cs, web := gateFixture(t, 50)
	key := Key{Namespace: "tenant", Config: refs.Ref{Kind: refs.ConfigMap, Name: "app"}}
	judgeUntil(t, g, key, web, func(v canary.Verdict) bool { return v.Hold == "" })
	if kept, strays := records(g); kept != 2 || strays != 50 || g.kept.Load() != 2 {
		t.Errorf("the gate keeps %d records (%d across the cluster) and counts %d strays, want 2 and 50", kept, g.kept.Load(), strays)
	}
	p := gatePod(true, 1, "", &corev1.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 137})
	p.Namespace, p.Name = "tenant", "web-abc-1"
	p.Labels = map[string]string{"app": "web", appsv1.DefaultDeploymentUniqueLabelKey: "abc"}
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-abc", UID: "rs", Controller: ptr.To(true)}}
	if _, err := cs.CoreV1().Pods("tenant").Update(t.Context(), p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	v := judgeUntil(t, g, key, web, func(v canary.Verdict) bool { return v.Fail != "" })
	if want := `Deployment "web": pod web-abc-1 container app restarted (OOMKilled, exit code 137)`; v.Fail != want {
		t.Errorf("the gate fails with %q, want %q", v.Fail, want)
	}
	g.Done(key)
	for i := 0; g.kept.Load() != 0 && i < 100; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if n := g.kept.Load(); n != 0 {
		t.Errorf("%d records kept after the bake ended", n)
	}
}

// A restart the gate's watch did not see happen (before its list, or
// while Ripple was down) fails it if the container's last run ended
// after the bake started; one that ended before does not.
func TestPodGateSeesARestartBeforeItsList(t *testing.T) {
	since := time.Now().Truncate(time.Second)
	for _, tc := range []struct {
		name     string
		finished time.Time
		want     string
	}{
		{"in the bake", since.Add(3 * time.Second), `Deployment "web": pod web-abc-1 container app restarted (OOMKilled, exit code 137)`},
		{"before the bake", since.Add(-time.Minute), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, cs, web := gateFixture(t, 0)
			p, err := cs.CoreV1().Pods("tenant").Get(t.Context(), "web-abc-1", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			p.Status.ContainerStatuses[0].RestartCount = 1
			p.Status.ContainerStatuses[0].LastTerminationState.Terminated = &corev1.ContainerStateTerminated{
				Reason: "OOMKilled", ExitCode: 137, FinishedAt: metav1.NewTime(tc.finished)}
			if _, err := cs.CoreV1().Pods("tenant").Update(t.Context(), p, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			key := Key{Namespace: "tenant", Config: refs.Ref{Kind: refs.ConfigMap, Name: "app"}}
			var v canary.Verdict
			for range 1000 {
				if v = g.Judge(t.Context(), key, since, []workload.Ref{web}); v.Hold == "" {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			if v.Hold != "" || v.Fail != tc.want {
				t.Errorf("the gate says %+v once it listed, want it to fail with %q", v, tc.want)
			}
			g.Done(key)
		})
	}
}

// A selector that matches far more pods than the canary owns holds the
// gate, naming the workload and the bound, and its watch stops.
func TestPodGateHoldsOnStrays(t *testing.T) {
	g, _, web := gateFixture(t, maxStrays+3)
	key := Key{Namespace: "tenant", Config: refs.Ref{Kind: refs.ConfigMap, Name: "app"}}
	v := judgeUntil(t, g, key, web, func(v canary.Verdict) bool { return strings.Contains(v.Hold, "does not own") })
	if want := `the selector of Deployment "web" matches more than 102 pods it does not own`; !strings.Contains(v.Hold, want) {
		t.Errorf("hold %q, want %q", v.Hold, want)
	}
	g.watches.each(func(w *podWatch) {
		for _, s := range w.pods {
			s.mu.Lock()
			if !s.ended {
				t.Error("the watch of a selector of too many strays goes on")
			}
			s.mu.Unlock()
		}
	})
	if n := g.kept.Load(); n != 0 {
		t.Errorf("%d records kept by a stopped watch", n)
	}
}

// Past the cluster's bound on the pods it keeps records of, a new watch
// holds its change (and starts once there is room); a watch whose pods
// would pass it stops, holding.
func TestPodGateCap(t *testing.T) {
	g, _, web := gateFixture(t, 0)
	key := Key{Namespace: "tenant", Config: refs.Ref{Kind: refs.ConfigMap, Name: "app"}}
	g.kept.Store(maxPodRecords)
	if v := g.Judge(t.Context(), key, time.Time{}, []workload.Ref{web}); !strings.Contains(v.Hold, "at most 50000 pods across the cluster") {
		t.Errorf("past the bound: hold %q", v.Hold)
	}
	g.kept.Store(maxPodRecords - 1)
	v := judgeUntil(t, g, key, web, func(v canary.Verdict) bool { return strings.Contains(v.Hold, "stopped watching") })
	if want := `the pod gate keeps records of at most 50000 pods across the cluster: it stopped watching the pods of Deployment "web"`; v.Hold != want {
		t.Errorf("hold %q, want %q", v.Hold, want)
	}
	if n := g.kept.Load(); n != maxPodRecords-1 {
		t.Errorf("the stopped watch left %d records across the cluster, want the %d before it", n, maxPodRecords-1)
	}
}

// The store judges each event's pod as it comes: a streamed list's pods
// through Transformer, a stray adopted or released, a stray deleted.
func TestPodRecords(t *testing.T) {
	g := &podGate{look: func(Key) {}}
	owned := func(p *corev1.Pod) bool { return p.Labels["owner"] == "web" }
	s := &podRecords{gate: g, w: &podWatch{}, canary: workload.Ref{Kind: "Deployment", Name: "web"}, owns: owned, want: 1, stop: func() {}}
	pod := func(name, owner string, restarts int32) *corev1.Pod {
		p := gatePod(true, restarts, "", nil)
		p.Name, p.Labels = name, map[string]string{"owner": owner}
		return p
	}
	check := func(step string, wantKept, wantStrays int) {
		t.Helper()
		if kept, strays := s.count(); kept != wantKept || strays != wantStrays || g.kept.Load() != int64(wantKept) {
			t.Errorf("%s: %d records (%d across the cluster), %d strays; want %d and %d", step, kept, g.kept.Load(), strays, wantKept, wantStrays)
		}
	}
	tr := s.Transformer()
	var streamed []any
	for _, p := range []*corev1.Pod{pod("a", "web", 0), pod("b", "", 0), pod("c", "", 0)} {
		o, err := tr(p)
		if err != nil {
			t.Fatal(err)
		}
		streamed = append(streamed, o)
	}
	if err := s.Replace(streamed, "1"); err != nil || !s.synced.Load() {
		t.Fatalf("Replace: %v, synced %v", err, s.synced.Load())
	}
	check("listed", 1, 2)
	_ = s.Update(pod("b", "", 0))
	check("a stray updated", 1, 2)
	_ = s.Update(pod("b", "web", 0))
	check("a stray adopted", 2, 1)
	_ = s.Update(pod("a", "", 0))
	check("a pod released", 1, 2)
	_ = s.Delete(pod("c", "", 0))
	check("a stray deleted", 1, 1)
	_ = s.Delete(pod("a", "", 0))
	check("a stray deleted", 1, 0)
	_ = s.Update(pod("b", "web", 1))
	if want := `Deployment "web": pod b container app restarted`; s.w.signal != want {
		t.Errorf("signal %q, want %q", s.w.signal, want)
	}
	_ = s.Replace(nil, "2")
	check("listed again", 0, 0)
	s.end()
	_ = s.Add(pod("d", "web", 0))
	check("ended", 0, 0)
}

// At most maxListing watches list their pods at once: the pods a list
// decodes are in memory while it runs.
func TestPodGateListsFewAtOnce(t *testing.T) {
	g, cs, _ := gateFixture(t, 0)
	var mu sync.Mutex
	listing, most := 0, 0
	cs.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		listing++
		most = max(most, listing)
		mu.Unlock()
		time.Sleep(20 * time.Millisecond)
		mu.Lock()
		listing--
		mu.Unlock()
		return false, nil, nil
	})
	var canaries []workload.Ref
	for i := range 3 * maxListing {
		canaries = append(canaries, workload.Ref{Kind: "Deployment", Namespace: "tenant", Name: fmt.Sprint("web-", i)})
	}
	key := Key{Namespace: "tenant", Config: refs.Ref{Kind: refs.ConfigMap, Name: "app"}}
	for i := 0; g.Judge(t.Context(), key, time.Time{}, canaries).Hold != ""; i++ {
		if i > 1000 {
			t.Fatal("the watches did not list their pods within 10 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if most > maxListing {
		t.Errorf("%d lists at once, want at most %d", most, maxListing)
	}
	if n := len(g.listSlots()); n != 0 {
		t.Errorf("%d list slots still held after every list ended", n)
	}
}

// A gate refused the pods (no list rights) holds the change, saying so.
func TestPodGateRefusedHolds(t *testing.T) {
	g, cs, web := gateFixture(t, 0)
	cs.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(corev1.Resource("pods"), "", fmt.Errorf("no rights"))
	})
	key := Key{Namespace: "tenant", Config: refs.Ref{Kind: refs.ConfigMap, Name: "app"}}
	v := judgeUntil(t, g, key, web, func(v canary.Verdict) bool { return strings.Contains(v.Hold, "cannot watch") })
	if want := `cannot watch the pods of Deployment "web"`; !strings.HasPrefix(v.Hold, want) {
		t.Errorf("hold %q, want %q", v.Hold, want)
	}
	g.Done(key)
}
