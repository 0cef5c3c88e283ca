package e2e

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/ripple-dev/ripple/hack/kit"
	"github.com/ripple-dev/ripple/internal/digest"
)

const (
	restartMethodAnnotation = "ripple.dev/restart-method"
	restartedAtAnnotation   = "ripple.dev/restarted-at"
)

// podLog follows the pods of a selector from a watch started before the
// change. A pod restarted twice is a replacement (a pod that was not there
// before the change) that became Ready and was then deleted. A replacement
// deleted before it was ever Ready is the workload controller's doing (its
// cache races with a deletion), not a restart, and is only counted.
type podLog struct {
	mu  sync.Mutex
	old map[types.UID]bool
	// everReady are the replacements that were Ready once; twice those of
	// them that were deleted afterwards.
	everReady map[types.UID]bool
	twice     []string
	// minReady is the fewest Ready pods (not being deleted) seen after an
	// event, from the first time all want were ready.
	minReady, want int
	ready          map[types.UID]bool
	full           bool
	// history is every event, for the failure message.
	history []string
	// progress is how far the watch has delivered; list reads the pods
	// as the API server has them, for check to wait on.
	progress *kit.WatchProgress
	list     func(context.Context) (*corev1.PodList, error)
}

// recordPods starts a podLog for the pods of selector in ns; old are the
// pods before the change, want how many pods are Ready when the workload
// is whole.
func recordPods(t *testing.T, cs kubernetes.Interface, ns, selector string, old map[types.UID]bool, want int) *podLog {
	t.Helper()
	l := &podLog{old: old, everReady: map[types.UID]bool{}, ready: map[types.UID]bool{}, minReady: want, want: want}
	l.list = func(ctx context.Context) (*corev1.PodList, error) {
		return cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	}
	pods, err := l.list(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for i := range pods.Items {
		l.observe(watch.Added, &pods.Items[i])
	}
	l.progress = kit.NewWatchProgress(pods.ResourceVersion)
	ctx, cancel := context.WithCancel(t.Context())
	w, err := cs.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{LabelSelector: selector, ResourceVersion: pods.ResourceVersion})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			l.observe(ev.Type, p)
			l.progress.Saw(p.ResourceVersion)
		}
		l.progress.Fail(errors.New("the pod watch ended"))
	}()
	t.Cleanup(func() { cancel(); w.Stop(); <-done })
	return l
}

func (l *podLog) observe(typ watch.EventType, p *corev1.Pod) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.history = append(l.history, fmt.Sprintf("%s %s %s %s created %s phase %s ready %v deleting %v",
		time.Now().Format("15:04:05.000"), typ, p.Name, p.UID, p.CreationTimestamp.Format("15:04:05"), p.Status.Phase, kit.PodReady(p), p.DeletionTimestamp != nil))
	gone := typ == watch.Deleted || p.DeletionTimestamp != nil
	if gone || !kit.PodReady(p) {
		delete(l.ready, p.UID)
	} else {
		l.ready[p.UID] = true
		if !l.old[p.UID] {
			l.everReady[p.UID] = true
		}
	}
	if gone && l.everReady[p.UID] {
		l.twice = append(l.twice, p.Name+" "+string(p.UID))
		delete(l.everReady, p.UID)
	}
	if len(l.ready) >= l.want {
		l.full = true
	}
	if l.full {
		l.minReady = min(l.minReady, len(l.ready))
	}
}

// check fails t when a replacement was restarted, or fewer than least
// pods were Ready at some point, once the watch has delivered every pod
// as the API server has it now.
func (l *podLog) check(t *testing.T, least int) {
	t.Helper()
	pods, err := l.list(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) > 0 {
		// A watch of a selector delivers only its pods' events, in order:
		// once it has delivered the latest pod's version, it has
		// delivered everything before.
		latest := slices.MaxFunc(pods.Items, func(a, b corev1.Pod) int {
			c, _ := resourceversion.CompareResourceVersion(a.ResourceVersion, b.ResourceVersion)
			return c
		})
		ctx, cancel := context.WithTimeout(t.Context(), watchCatchUp)
		defer cancel()
		if err := l.progress.Reached(ctx, latest.ResourceVersion); err != nil {
			t.Fatalf("the pod watch: %v", err)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.twice) > 0 || l.minReady < least {
		t.Errorf("replacements restarted again: %v; fewest Ready pods %d, want >= %d; the pod events:\n%s",
			l.twice, l.minReady, least, strings.Join(l.history, "\n"))
	}
}

// checkRestartLog stops Ripple and checks that its log, over every run,
// restarted each pod of old once and nothing else.
func checkRestartLog(t *testing.T, r *ripple, old map[types.UID]bool) {
	t.Helper()
	seen := map[string]int{}
	lines := r.finalLines("\trestarted pod\t")
	for _, line := range lines {
		for uid := range old {
			if strings.Contains(line, string(uid)) {
				seen[string(uid)]++
			}
		}
	}
	if n := len(lines); n != len(old) || len(seen) != len(old) {
		t.Errorf("Ripple restarted %d pods, %d of the %d before the change (%v)", n, len(seen), len(old), seen)
	}
}

// currentPods returns the UIDs and creation times of the pods of selector
// that are not being deleted.
func currentPods(ctx context.Context, cs kubernetes.Interface, ns, selector string) (map[types.UID]bool, int, error) {
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, 0, err
	}
	uids, ready := map[types.UID]bool{}, 0
	for i, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		uids[p.UID] = true
		if kit.PodReady(&pods.Items[i]) {
			ready++
		}
	}
	return uids, ready, nil
}

// restartDone waits until none of the pods in old is left, want pods are
// Ready, and Ripple removed its restart time from the workload.
func restartDone(t *testing.T, cs kubernetes.Interface, ns, selector string, old map[types.UID]bool, want int,
	annotations func(context.Context) (map[string]string, error)) {
	t.Helper()
	waitFor(t, "every pod restarted and the restart complete", func(ctx context.Context) (bool, error) {
		uids, ready, err := currentPods(ctx, cs, ns, selector)
		if err != nil {
			return false, err
		}
		for uid := range uids {
			if old[uid] {
				return false, nil
			}
		}
		ann, err := annotations(ctx)
		if err != nil {
			return false, err
		}
		_, restarting := ann[restartedAtAnnotation]
		return ready == want && len(uids) == want && !restarting, nil
	})
}

// waitReadyAndBaseline waits until want pods of selector are Ready and
// Ripple recorded the digest sum as applied on the workload.
func waitReadyAndBaseline(t *testing.T, cs kubernetes.Interface, ns, selector string, want int,
	annotations func(context.Context) (map[string]string, error), sum string) {
	t.Helper()
	waitFor(t, "every pod Ready and Ripple's baseline", func(ctx context.Context) (bool, error) {
		ann, err := annotations(ctx)
		if err != nil {
			return false, err
		}
		return readyPods(ctx, cs, ns, selector) == want && strings.Contains(ann[appliedAnnotation], sum), nil
	})
}

// reloadedEvent waits for Ripple's Reloaded Event on the workload named
// name and returns its message.
func reloadedEvent(t *testing.T, cs kubernetes.Interface, ns, name string) string {
	t.Helper()
	var msg string
	waitFor(t, "the Reloaded event", func(ctx context.Context) (bool, error) {
		evs, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.Reason == "Reloaded" && e.InvolvedObject.Name == name {
				msg = e.Message
				return true, nil
			}
		}
		return false, nil
	})
	return msg
}

// A Deployment of 4 replicas with restart-method evict and a
// PodDisruptionBudget of minAvailable 3: a ConfigMap change replaces every
// pod exactly once through the Eviction API, its template, revision and
// ReplicaSet stay as they were (no rollout of its own), and at least 3
// pods are Ready at every pod event of the restart. The reverting operator
// of TestRevertingOperator runs beside it and never has to put its
// template back.
func TestRestartEvictHonoursPodDisruptionBudget(t *testing.T) {
	t.Parallel()
	cs := kubernetes.NewForConfigOrDie(kc.Config)
	ns := newNamespace(t, cs)
	r := startRipple(t, ns)
	cm := createConfigMap(t, cs, ns, configName, "v1")
	const replicas = 4
	tpl := spec{configMaps: []string{configName}}.template("web")
	d, err := cs.AppsV1().Deployments(ns).Create(t.Context(), &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Annotations: map[string]string{autoAnnotation: "true", restartMethodAnnotation: "evict"}},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: tpl,
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = cs.PolicyV1().PodDisruptionBudgets(ns).Create(t.Context(), &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: ptr.To(intstr.FromInt32(replicas - 1)),
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	deployment := func(ctx context.Context) (map[string]string, error) {
		d, err := cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		return d.Annotations, nil
	}
	waitReadyAndBaseline(t, cs, ns, "app=web", replicas, deployment, digest.ConfigMap(cm))
	waitFor(t, "the PodDisruptionBudget to allow one disruption", func(ctx context.Context) (bool, error) {
		pdb, err := cs.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "web", metav1.GetOptions{})
		return err == nil && pdb.Status.CurrentHealthy == replicas && pdb.Status.DisruptionsAllowed == 1, err
	})
	// The Deployment controller writes its first revision in a write of its
	// own, which a conflict (Ripple's baseline record) can delay past the
	// pods being Ready: the baseline is taken once it is there.
	var before *appsv1.Deployment
	waitFor(t, "the Deployment's first revision", func(ctx context.Context) (bool, error) {
		var err error
		before, err = cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		return err == nil && before.Annotations[revisionAnnotation] == "1", err
	})
	old, _, err := currentPods(t.Context(), cs, ns, "app=web")
	if err != nil {
		t.Fatal(err)
	}
	pods := recordPods(t, cs, ns, "app=web", old, replicas)
	// The reverting operator of TestRevertingOperator owns the template:
	// with evict it has nothing to put back.
	op := startOperator(t, cs, ns, "web", d.Spec.Template, nil)

	setConfigMapValue(t, cs, ns, configName, "v2")
	restartDone(t, cs, ns, "app=web", old, replicas, deployment)
	time.Sleep(3 * time.Second) // nothing more may happen
	op.stop()
	<-op.done
	if n := op.rewrites.Load(); n != 0 {
		t.Errorf("the operator put its template back %d times, want never", n)
	}

	pods.check(t, replicas-1)
	checkRestartLog(t, r, old)
	after, err := cs.AppsV1().Deployments(ns).Get(t.Context(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// A Deployment's generation counts its annotation changes too (the
	// applied record), so the template, the revision and the ReplicaSets
	// tell that it did not roll out.
	rss := replicaSets(t, cs, ns, d.UID)
	if after.Annotations[revisionAnnotation] != before.Annotations[revisionAnnotation] || len(rss) != 1 ||
		!equality.Semantic.DeepEqual(after.Spec.Template, before.Spec.Template) || !equality.Semantic.DeepEqual(d.Spec.Template, before.Spec.Template) {
		t.Errorf("the Deployment rolled out: revision %q -> %q, %d ReplicaSets, template changed %v",
			before.Annotations[revisionAnnotation], after.Annotations[revisionAnnotation], len(rss),
			!equality.Semantic.DeepEqual(after.Spec.Template, before.Spec.Template))
	}
	if msg := reloadedEvent(t, cs, ns, "web"); !strings.Contains(msg, "restart method evict") {
		t.Errorf("Reloaded event %q does not name the restart method", msg)
	}
}

// An OnDelete StatefulSet with restart-method delete: a ConfigMap change
// deletes each of its pods once. Ripple is killed (SIGKILL) once the first
// pod went and started again: the pods left are restarted once, and none
// twice: Ripple's log, over both runs, names each pod before the change
// once and no other. Ripple deletes a pod only with its UID as a
// precondition and logs every delete, so its log is the exact record of
// what it deleted. The pods' watch is not: under load (make test on 2
// cores) the local cluster's StatefulSet controller was seen deleting its
// own fresh replacements by name, with no delete from Ripple, so the watch
// cannot tell who deleted a replacement.
func TestRestartDeleteStatefulSetSurvivesKill(t *testing.T) {
	t.Parallel()
	cs := kubernetes.NewForConfigOrDie(kc.Config)
	ns := newNamespace(t, cs)
	r := startRipple(t, ns)
	cm := createConfigMap(t, cs, ns, configName, "v1")
	const replicas = 4
	_, err := cs.AppsV1().StatefulSets(ns).Create(t.Context(), &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Annotations: map[string]string{autoAnnotation: "true", restartMethodAnnotation: "delete"}},
		Spec: appsv1.StatefulSetSpec{
			Replicas:            ptr.To[int32](replicas),
			ServiceName:         "db",
			PodManagementPolicy: appsv1.ParallelPodManagement,
			UpdateStrategy:      appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType},
			Selector:            &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
			Template:            spec{configMaps: []string{configName}}.template("db"),
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	statefulSet := func(ctx context.Context) (map[string]string, error) {
		s, err := cs.AppsV1().StatefulSets(ns).Get(ctx, "db", metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		return s.Annotations, nil
	}
	waitReadyAndBaseline(t, cs, ns, "app=db", replicas, statefulSet, digest.ConfigMap(cm))
	before, err := cs.AppsV1().StatefulSets(ns).Get(t.Context(), "db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	old, _, err := currentPods(t.Context(), cs, ns, "app=db")
	if err != nil {
		t.Fatal(err)
	}

	setConfigMapValue(t, cs, ns, configName, "v2")
	waitFor(t, "the first pod restarted", func(ctx context.Context) (bool, error) {
		uids, _, err := currentPods(ctx, cs, ns, "app=db")
		left := 0
		for uid := range uids {
			if old[uid] {
				left++
			}
		}
		return err == nil && left < replicas, err
	})
	r.Kill()
	uids, _, err := currentPods(t.Context(), cs, ns, "app=db")
	if err != nil {
		t.Fatal(err)
	}
	left := 0
	for uid := range uids {
		if old[uid] {
			left++
		}
	}
	if left == 0 {
		t.Fatalf("every pod was restarted before Ripple was killed: the test shows nothing")
	}
	r.Start()
	restartDone(t, cs, ns, "app=db", old, replicas, statefulSet)
	time.Sleep(3 * time.Second) // nothing more may happen

	checkRestartLog(t, r, old)
	after, err := cs.AppsV1().StatefulSets(ns).Get(t.Context(), "db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.Generation != before.Generation || !equality.Semantic.DeepEqual(after.Spec.Template, before.Spec.Template) {
		t.Errorf("the StatefulSet's spec changed: generation %d -> %d", before.Generation, after.Generation)
	}
	t.Logf("Ripple was killed with %d of %d pods left to restart", left, replicas)
}
