package kubelet

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/ripple-dev/ripple/hack/kit"
	"github.com/ripple-dev/ripple/hack/kubeletnode"
)

// The in-place e2e tests (issue 45): Ripple's in-place restart method,
// run by the Ripple binary, on Deployments whose pods run on a real
// kubelet. What each asserts is what the pods, the fake runtime's record
// and a pod watch show, not what Ripple says it did.

// Bounds of the in-place tests' waits. A restart in place takes the
// kubelet a second or two (the old container's grace period, a new one,
// the readiness probe's first success); 20 pods, two at a time, take
// about 20 s on an idle machine, and the bounds leave room for a loaded
// one.
const (
	replicas        = 20
	fleetReady      = 3 * time.Minute
	inPlaceDone     = 5 * time.Minute
	eventTimeout    = 2 * time.Minute
	maxUnavailable  = 2
	inPlaceRequests = "50m" // 20 pods and a resize by 1m each fit in the node's cpu
)

// TestInPlaceRestartsEachPodOnce: a ConfigMap change restarts the container
// of each of the 20 pods of an in-place Deployment exactly once, in the
// same pods, never more than max-unavailable not Ready at once, each
// restarted container created with the new value, and the Deployment's
// template untouched.
func TestInPlaceRestartsEachPodOnce(t *testing.T) {
	inPlaceFleet(t, "kubelet-inplace", false)
}

// TestInPlaceKilledMidway: the same with Ripple killed (SIGKILL) after some
// pods restarted and before all: the next run continues from what the pods
// show, and no container restarts twice.
func TestInPlaceKilledMidway(t *testing.T) {
	inPlaceFleet(t, "kubelet-inplace-kill", true)
}

func inPlaceFleet(t *testing.T, name string, kill bool) {
	node := kubeletnode.StartT(t, kc.API, name)
	cs := clientset(t)
	ns := kit.NewNamespace(t, cs, name+"-", nil)
	ctx := t.Context()

	cm := createConfigMap(t, cs, ns, "settings", map[string]string{"greeting": "hello-old"})
	dep := createDeployment(t, cs, ns, "app", replicas, map[string]string{
		"ripple.dev/max-unavailable": fmt.Sprint(maxUnavailable),
	}, inPlaceSpec(node.Name, cm.Name, corev1.RestartContainer))
	before := waitFleetReady(t, cs, ns, "app", replicas)
	rss, err := kit.ReplicaSets(ctx, cs, ns, dep.UID)
	if err != nil || len(rss) != 1 {
		t.Fatalf("the Deployment has %d ReplicaSets (%v), expected one", len(rss), err)
	}
	rs := rss[0].UID
	r := startRipple(t, ns, "")
	w := watchPods(t, cs, ns)

	cm.Data["greeting"] = "hello-new"
	changed := time.Now()
	if _, err := cs.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if kill {
		// Some pods restarted, not all: a third of them, well before the
		// last (two at a time, a second or two each); and the kill falls
		// when a pod was resized and its container not restarted yet, the
		// moment a Ripple that kept what it did in memory would resize
		// again (the condition is checked at each event, and holds for
		// most of a second each time).
		w.until(inPlaceDone, "a third of the pods restarted, and a resize in flight", func() bool {
			return w.anyRestarted() >= replicas/3 && w.resizedNotRestarted() > 0
		})
		r.Kill()
		w.mu.Lock()
		done, inFlight := w.anyRestarted(), w.resizedNotRestarted()
		w.mu.Unlock()
		if done >= replicas {
			t.Fatalf("every pod had restarted when Ripple was killed: the test shows nothing of a kill midway")
		}
		t.Logf("Ripple killed (SIGKILL) with %d of %d pods restarted and %d resized and not restarted yet, %v after the change",
			done, replicas, inFlight, time.Since(changed).Round(100*time.Millisecond))
		start(r)
	}
	w.until(inPlaceDone, "every pod restarted and Ready", func() bool { return w.restarted() == replicas })
	r.WaitLog(inPlaceDone, 1, "restart complete")
	w.sync()

	s := w.snapshot()
	t.Logf("%d pods restarted in place in %v (change to the last pod restarted and Ready), at most %d not Ready and %d disrupted (resized, not yet restarted and Ready) at once",
		replicas, s.lastDone.Sub(changed).Round(100*time.Millisecond), s.maxNotReady, s.maxDisrupted)
	if len(s.added) > 0 || len(s.deleted) > 0 {
		t.Errorf("pods were created (%v) or deleted (%v); an in-place restart makes and removes none", s.added, s.deleted)
	}
	if s.maxNotReady > maxUnavailable || s.maxDisrupted > maxUnavailable {
		t.Errorf("%d pods were not Ready and %d disrupted at once, max-unavailable is %d", s.maxNotReady, s.maxDisrupted, maxUnavailable)
	}
	if s.maxNotReady == 0 {
		t.Errorf("no pod was ever seen not Ready: the restarts were not seen")
	}

	pods := listApp(t, cs, ns, "app")
	if len(pods) != replicas {
		t.Errorf("the Deployment has %d pods, expected %d", len(pods), replicas)
	}
	for _, p := range pods {
		if !before[p.UID] {
			t.Errorf("pod %s (%s) is new", p.Name, p.UID)
		}
		if n := restartCount(&p); n != 1 {
			t.Errorf("the container of pod %s restarted %d times, expected once", p.Name, n)
		}
	}
	assertRecords(t, node, before, "hello-old", "hello-new")

	after, err := cs.AppsV1().Deployments(ns).Get(ctx, dep.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Its generation moves: a Deployment's counts changes of its
	// annotations too, where Ripple keeps its record of the restart. Its
	// template does not, so no new ReplicaSet is made.
	if !apiequality.Semantic.DeepEqual(after.Spec.Template, dep.Spec.Template) {
		t.Errorf("the Deployment's template changed:\n%+v\nwas\n%+v", after.Spec.Template, dep.Spec.Template)
	}
	if rss, err := kit.ReplicaSets(ctx, cs, ns, dep.UID); err != nil {
		t.Fatal(err)
	} else if len(rss) != 1 || rss[0].UID != rs {
		t.Errorf("the Deployment has %d ReplicaSets, expected the one it had", len(rss))
	}
	if n := len(r.Out.Lines("restarted pod")); n > replicas || (!kill && n != replicas) {
		t.Errorf("Ripple logged %d restarted pods, expected %d", n, replicas)
	}
}

// TestInPlaceNotEligible: pods whose container has no RestartContainer
// resize policy cannot be restarted in place. Each gets a RestartNotInPlace
// Warning; without in-place-fallback it is left as it is (not restarted,
// not evicted), and with in-place-fallback: evict it is evicted and
// replaced by a pod that runs the new value.
func TestInPlaceNotEligible(t *testing.T) {
	node := kubeletnode.StartT(t, kc.API, "kubelet-fallback")
	cs := clientset(t)
	ns := kit.NewNamespace(t, cs, "kubelet-fallback-", nil)
	ctx := t.Context()

	cm := createConfigMap(t, cs, ns, "settings", map[string]string{"greeting": "hello-old"})
	spec := inPlaceSpec(node.Name, cm.Name, corev1.NotRequired)
	createDeployment(t, cs, ns, "keep", 2, nil, spec)
	createDeployment(t, cs, ns, "evict", 2, map[string]string{"ripple.dev/in-place-fallback": "evict"}, spec)
	keep := waitFleetReady(t, cs, ns, "keep", 2)
	evict := waitFleetReady(t, cs, ns, "evict", 2)
	r := startRipple(t, ns, "")
	w := watchPods(t, cs, ns)

	cm.Data["greeting"] = "hello-new"
	if _, err := cs.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Both restarts end: the one of keep without its pods, the one of
	// evict once its pods were replaced.
	r.WaitLog(inPlaceDone, 2, "restart complete")
	replaced := waitFleet(t, cs, ns, "evict", 2, func(p *corev1.Pod) bool { return !evict[p.UID] && kit.PodReady(p) })
	keepNotes := waitNotes(t, cs, ns, "keep", 2)
	evictNotes := waitNotes(t, cs, ns, "evict", 2)
	w.sync()

	for _, n := range keepNotes {
		if !strings.Contains(n, "RestartContainer") || !strings.Contains(n, "keeps its old configuration") {
			t.Errorf("keep's RestartNotInPlace says %q: expected why (no RestartContainer policy) and that the pod keeps its old configuration", n)
		}
	}
	for _, n := range evictNotes {
		if !strings.Contains(n, "evicting it instead") {
			t.Errorf("evict's RestartNotInPlace says %q: expected that it evicts the pod", n)
		}
	}
	deleted := w.snapshot().deleted
	for uid := range keep {
		for _, d := range deleted {
			if strings.Contains(d, string(uid)) {
				t.Errorf("pod %s of keep, which has no fallback, was deleted", d)
			}
		}
	}
	for uid := range evict {
		found := false
		for _, d := range deleted {
			found = found || strings.Contains(d, string(uid))
		}
		if !found {
			t.Errorf("pod %s of evict was not seen deleted", uid)
		}
	}
	for _, p := range listApp(t, cs, ns, "keep") {
		if !keep[p.UID] || restartCount(&p) != 0 {
			t.Errorf("pod %s (%s) of keep is new or restarted (%d restarts): expected it left as it was", p.Name, p.UID, restartCount(&p))
		}
	}
	// keep's containers were created once, with the old value; evict's
	// replacements run the new one.
	assertRecords(t, node, keep, "hello-old", "")
	assertRecords(t, node, replaced, "hello-new", "")
}

// inPlaceSpec is a Guaranteed pod on node whose container takes GREETING
// from the ConfigMap cm and has cpu resize policy policy.
func inPlaceSpec(node, cm string, policy corev1.ResourceResizeRestartPolicy) corev1.PodSpec {
	spec := podSpec(node)
	c := &spec.Containers[0]
	res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(inPlaceRequests), corev1.ResourceMemory: resource.MustParse("16Mi")}
	c.Resources = corev1.ResourceRequirements{Requests: res, Limits: res.DeepCopy()}
	c.ResizePolicy[0].RestartPolicy = policy
	// A readiness probe (an exec probe, which the fake runtime answers
	// with success) keeps a restarted container not Ready for a second:
	// the fake runtime starts a container at once, and without a probe the
	// kubelet reports the stop and the start in one status, so no pod
	// would ever be seen not Ready and max-unavailable would go unchecked.
	c.ReadinessProbe = &corev1.Probe{
		ProbeHandler:        corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}},
		InitialDelaySeconds: 1, PeriodSeconds: 1,
	}
	c.Env = []corev1.EnvVar{{Name: "GREETING", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: cm}, Key: "greeting"}}}}
	return spec
}

// createDeployment creates a Deployment that reloads in place on changes
// of the configs it references, with annotations added.
func createDeployment(t testing.TB, cs kubernetes.Interface, ns, name string, n int32, annotations map[string]string, spec corev1.PodSpec) *appsv1.Deployment {
	t.Helper()
	ann := map[string]string{
		"reloader.stakater.com/auto": "true",
		"ripple.dev/restart-method":  "in-place",
	}
	for k, v := range annotations {
		ann[k] = v
	}
	labels := map[string]string{"app": name}
	dep, err := cs.AppsV1().Deployments(ns).Create(t.Context(), &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: ann},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(n),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return dep
}

// waitFleetReady waits until the Deployment name has n pods, all Ready,
// and returns their UIDs.
func waitFleetReady(t testing.TB, cs kubernetes.Interface, ns, name string, n int) map[types.UID]bool {
	t.Helper()
	return waitFleet(t, cs, ns, name, n, kit.PodReady)
}

// waitFleet waits until the Deployment name has exactly n pods, each of
// which ok accepts, and returns their UIDs.
func waitFleet(t testing.TB, cs kubernetes.Interface, ns, name string, n int, ok func(*corev1.Pod) bool) map[types.UID]bool {
	t.Helper()
	var uids map[types.UID]bool
	var seen int
	err := wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, fleetReady, true, func(ctx context.Context) (bool, error) {
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
		if err != nil {
			return false, err
		}
		uids, seen = map[types.UID]bool{}, len(pods.Items)
		for i := range pods.Items {
			if !ok(&pods.Items[i]) {
				return false, nil
			}
			uids[pods.Items[i].UID] = true
		}
		return len(uids) == n, nil
	})
	if err != nil {
		t.Fatalf("the Deployment %s/%s has not %d pods as expected after %v (%d pods, %d of them as expected): %v", ns, name, n, fleetReady, seen, len(uids), err)
	}
	return uids
}

func listApp(t *testing.T, cs kubernetes.Interface, ns, name string) []corev1.Pod {
	t.Helper()
	pods, err := cs.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: "app=" + name})
	if err != nil {
		t.Fatal(err)
	}
	return pods.Items
}

// assertRecords checks the fake runtime's record of the container of each
// pod in uids: created first with GREETING=first and, when then is not
// empty, exactly once more, with GREETING=then; else never again.
func assertRecords(t *testing.T, node *kubeletnode.Node, uids map[types.UID]bool, first, then string) {
	t.Helper()
	all, err := node.Containers()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{first}
	if then != "" {
		want = append(want, then)
	}
	var exp []string
	for i, v := range want {
		exp = append(exp, fmt.Sprintf("%d:%s", i, v))
	}
	got := map[types.UID][]string{}
	for _, c := range all {
		if uid := types.UID(c.PodUID); uids[uid] && c.Container == containerName {
			v, _ := c.Getenv("GREETING")
			got[uid] = append(got[uid], fmt.Sprintf("%d:%s", c.Attempt, v))
		}
	}
	for uid := range uids {
		if strings.Join(got[uid], ",") != strings.Join(exp, ",") {
			t.Errorf("the kubelet created the container of pod %s as %v (attempt:GREETING), expected %v", uid, got[uid], exp)
		}
	}
}

// waitNotes waits for n RestartNotInPlace Warnings on the Deployment name
// and returns their notes.
func waitNotes(t *testing.T, cs kubernetes.Interface, ns, name string, n int) []string {
	t.Helper()
	var notes []string
	err := wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, eventTimeout, true, func(ctx context.Context) (bool, error) {
		var err error
		notes, err = kit.EventNotes(ctx, cs, ns, kit.EventMatch{Kind: "Deployment", Name: name, Reason: "RestartNotInPlace", Type: corev1.EventTypeWarning})
		return len(notes) >= n, err
	})
	if err != nil {
		t.Fatalf("the Deployment %s has %d RestartNotInPlace Warnings after %v, expected %d: %v (%q)", name, len(notes), eventTimeout, n, err, notes)
	}
	return notes
}
