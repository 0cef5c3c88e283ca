package hostile

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ripple-dev/ripple/hack/kit"
)

// The pod gate's test: the tenant's canaries, all of one change, and its
// decoys, bare pods that match every canary's selector with 20 KB of
// labels each. Before issue 56 the gate kept every pod a canary's
// selector matched, labels and all: 100 canaries over 300 decoys grew
// Ripple's heap by 576 MiB.
const (
	gatedCanaries = 100
	decoys        = 1000
	decoyLabels   = 160 // of 126 bytes: 20 KB
	// heapGrowthBound bounds Ripple's live heap's growth over the bake.
	heapGrowthBound = 20 << 20
)

// TestPodGateCostsTheTenantItsOwn: a tenant with edit rights canaries a
// change on 100 Deployments whose selectors also match 1,000 decoys of
// 20 KB. The pod gate holds the change, naming the selector that matches
// far more pods than its own, Ripple's live heap (after a collection)
// grows by less than 20 MiB from before the change, and another
// namespace's workload still reloads within the tier's bound.
func TestPodGateCostsTheTenantItsOwn(t *testing.T) {
	admin := clientset(t, kc.Config)
	home := kit.NewNamespace(t, admin, "ripple-", nil)
	tenant := kit.NewNamespace(t, admin, "podgated-", nil)
	drainAfter(t, admin, tenant)
	bystander := kit.NewNamespace(t, admin, "bystander-", nil)
	mallory := editor(t, admin, tenant)

	plantGated(t, mallory, tenant)
	plantDecoys(t, mallory, tenant)
	victimWorkload(t, admin, bystander)

	pprof := freeAddr(t)
	r := startRipple(t, home, "--canary-gates=pods", "--canary-bake=2m", "--enable-pprof", "--pprof-addr="+pprof)
	for i := range gatedCanaries {
		waitBaseline(t, admin, tenant, fmt.Sprintf("gated-%03d", i))
	}
	waitBaseline(t, admin, tenant, "rest")
	waitBaseline(t, admin, bystander, "web")
	waitAvailable(t, admin, tenant)
	before := liveHeap(t, r, pprof)

	cm, err := mallory.CoreV1().ConfigMaps(tenant).Get(t.Context(), "gated", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["k"] = "v2"
	if _, err := mallory.CoreV1().ConfigMaps(tenant).Update(t.Context(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The canaries roll, their bake starts and the gate watches their
	// pods: the live heap is read every second until the gate holds, and
	// for 10 s more.
	changed, peak := time.Now(), 0.0
	check := func(when string) {
		t.Helper()
		grown := liveHeap(t, r, pprof) - before
		peak = max(peak, grown)
		if grown > heapGrowthBound {
			t.Fatalf("Ripple's live heap grew by %.1f MiB %s, over %d MiB: the pod gate keeps the tenant's decoys",
				grown/(1<<20), when, heapGrowthBound>>20)
		}
	}
	for len(r.out.Lines("pods it does not own")) == 0 {
		if time.Since(changed) > 2*time.Minute {
			t.Fatalf("the pod gate did not hold the change within 2 minutes of it (its heap grew by %.1f MiB at most)", peak/(1<<20))
		}
		check("while the canaries rolled and baked")
		time.Sleep(time.Second)
	}
	held := r.out.Lines("pods it does not own")[0]
	t.Logf("the pod gate held the change %s after it: %s", time.Since(changed).Round(time.Second), held)
	if !strings.Contains(held, "Deployment") || !strings.Contains(held, "gated-") || !strings.Contains(held, "more than 101 pods") {
		t.Errorf("the hold %q does not name the Deployment and the bound (100 beyond the 1 it wants)", held)
	}

	changedThere := time.Now()
	setData(t, admin, bystander, "v3")
	reloaded := waitReloaded(t, admin, bystander, changedThere, reloadBound, "(settle window + 2s) while the pod gate held the tenant's change")
	t.Logf("the other namespace's workload reloaded %s after its change", reloaded.Round(time.Millisecond))
	for range 10 { // the other canaries' lists go on a few at a time, then the holds stay
		check("while the gate held the change")
		time.Sleep(time.Second)
	}
	m := kit.Scrape(t, r.metrics)
	t.Logf("Ripple's live heap: %.1f MiB before the change, %.1f MiB more at most over its bake (bound %d MiB); %.0f MiB resident",
		before/(1<<20), peak/(1<<20), heapGrowthBound>>20, m["process_resident_memory_bytes{}"]/(1<<20))
}

// plantGated: the canaried config "gated" (canary 100) and the
// Deployments of a pod each that read it, selecting app in (their name,
// decoy): its canaries.
func plantGated(t *testing.T, mallory kubernetes.Interface, ns string) {
	t.Helper()
	create(t, "a canaried config", mallory.CoreV1().ConfigMaps(ns).Create, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "gated", Annotations: map[string]string{"ripple.dev/canary": fmt.Sprint(gatedCanaries)}},
		Data:       map[string]string{"k": "v1"},
	})
	for i := range gatedCanaries {
		name := fmt.Sprintf("gated-%03d", i)
		d := deployment(name, 1, map[string]string{auto: "true"}, usesConfig(name, "gated"))
		d.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{name, "decoy"}}}}
		create(t, "a canary Deployment", mallory.AppsV1().Deployments(ns).Create, d)
	}
	// One reader more, after the canaries by name, waits for the bake:
	// until then the change is in flight and the gates are asked. It runs
	// a pod: one scaled to zero would stand complete at once.
	create(t, "a Deployment after the canaries", mallory.AppsV1().Deployments(ns).Create,
		deployment("rest", 1, map[string]string{auto: "true"}, usesConfig("rest", "gated")))
}

// plantDecoys: bare pods labelled app=decoy, and 20 KB of labels more,
// that no scheduler takes (they only have to match).
func plantDecoys(t *testing.T, mallory kubernetes.Interface, ns string) {
	t.Helper()
	labels := map[string]string{"app": "decoy"}
	for i := range decoyLabels {
		labels[fmt.Sprintf("d%03d-%s", i, strings.Repeat("x", 58))] = strings.Repeat("y", 63)
	}
	var wg sync.WaitGroup
	errs := make(chan error, decoys)
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < decoys; i += 8 {
				_, err := mallory.CoreV1().Pods(ns).Create(t.Context(), &corev1.Pod{
					ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("decoy-%04d", i), Labels: labels},
					Spec: corev1.PodSpec{SchedulerName: "no-scheduler",
						Containers: []corev1.Container{{Name: "app", Image: "registry.invalid/app:1"}}},
				}, metav1.CreateOptions{})
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		t.Fatalf("creating a decoy: %v", err)
	}
}

// waitAvailable waits until every Deployment of ns has its pods
// available.
func waitAvailable(t *testing.T, admin kubernetes.Interface, ns string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		list, err := admin.AppsV1().Deployments(ns).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		waiting := 0
		for _, d := range list.Items {
			if !available(&d) {
				waiting++
			}
		}
		if waiting == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d Deployments of %s are not available after 2 minutes", waiting, ns)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func available(d *appsv1.Deployment) bool {
	return d.Status.ObservedGeneration >= d.Generation && d.Status.AvailableReplicas == *d.Spec.Replicas && d.Status.UpdatedReplicas == *d.Spec.Replicas
}

// liveHeap is Ripple's live heap as its last collection found it, which
// its pprof heap profile asks for (gc=1): the heap goal that collection
// set is the live heap and GOGC percent more (the goroutines' stacks and
// the globals count too, the same before and after). The heap allocated
// right after a collection would count what the lists under way decode
// meanwhile, garbage at once.
func liveHeap(t *testing.T, r *ripple, pprof string) float64 {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+pprof+"/debug/pprof/heap?gc=1", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("Ripple's heap profile: %v, %s", err, resp.Status)
	}
	m := kit.Scrape(t, r.metrics)
	goal, gogc := m["go_memstats_next_gc_bytes{}"], m["go_gc_gogc_percent{}"]
	if goal == 0 || gogc == 0 {
		t.Fatal("no go_memstats_next_gc_bytes or go_gc_gogc_percent in Ripple's /metrics")
	}
	return goal / (1 + gogc/100)
}
