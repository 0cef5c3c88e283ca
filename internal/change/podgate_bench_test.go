package change

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/hack/cluster"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/workload"
)

// BenchmarkPodGateBakes bakes 1,000 canaried changes at once, each with a
// canary running a pod, on a real API server: the pod gate watches each
// canary's pods, then every bake ends. Ripple's heap and goroutines must
// come back to where they were: the gate keeps nothing of an ended bake.
// Run it with `make bench-gates` (docs/performance.md).
func BenchmarkPodGateBakes(b *testing.B) {
	if os.Getenv("RIPPLE_TOOLS_DIR") == "" {
		b.Skip("needs the built API server: run `make bench-gates`")
	}
	const namespaces, perNamespace = 10, maxBaking
	api, err := cluster.StartAPI(cluster.APIOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = api.Stop() }()
	cfg := *api.Config
	cfg.QPS, cfg.Burst = 1000, 2000 // memory is measured here, not the client's rate limit
	cs := kubernetes.NewForConfigOrDie(&cfg)
	canaries := map[workload.Ref]*appsv1.Deployment{}
	for n := range namespaces {
		ns := fmt.Sprintf("bake-%d", n)
		if _, err := cs.CoreV1().Namespaces().Create(b.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		for i := range perNamespace {
			name := fmt.Sprintf("d%03d", i)
			labels := map[string]string{"app": name}
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name + "-0", Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app"}}}}
			if _, err := cs.CoreV1().Pods(ns).Create(b.Context(), pod, metav1.CreateOptions{}); err != nil {
				b.Fatal(err)
			}
			canaries[workload.Ref{Kind: "Deployment", Namespace: ns, Name: name}] = &appsv1.Deployment{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
				Spec:       appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}},
			}
		}
	}
	deployments := workload.WithRestarts(workload.Deployment)
	// A first round of bakes opens the client's connections (HTTP/2 opens
	// more as the watches pass its streams per connection): they stay,
	// pooled, as Ripple's client keeps them. The rounds measured after it
	// must each leave the heap and the goroutines where they found them.
	bakeAll(b, cs, canaries, deployments)
	for b.Loop() {
		before, goroutines := settledHeap(), runtime.NumGoroutine()
		baking := bakeAll(b, cs, canaries, deployments)
		deadline := time.Now().Add(30 * time.Second)
		for runtime.NumGoroutine() > goroutines && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		after, left := settledHeap(), runtime.NumGoroutine()-goroutines
		b.ReportMetric(before, "heap-before-MiB")
		b.ReportMetric(baking, "heap-baking-MiB")
		b.ReportMetric(after, "heap-after-MiB")
		b.ReportMetric(float64(left), "goroutines-left")
		if left > 0 {
			b.Errorf("%d goroutines of the gate's watches outlived their bakes", left)
		}
		if grown := after - before; grown > 1 {
			b.Errorf("the heap grew by %.1f MiB over 1,000 ended bakes (%.1f MiB while they baked): the gate keeps what it watched", grown, baking-before)
		}
	}
}

// bakeAll starts the pod gate's watch of each canary's pods, each its own
// change's, waits until every watch has listed them, ends every bake and
// returns the heap while they baked.
func bakeAll(b *testing.B, cs kubernetes.Interface, canaries map[workload.Ref]*appsv1.Deployment, kind workload.Kind) float64 {
	ctx, cancel := context.WithCancel(b.Context())
	defer cancel()
	g := &podGate{pods: cs, look: func(Key) {}, base: func() context.Context { return ctx },
		object: func(_ context.Context, w workload.Ref) (client.Object, workload.Kind, error) {
			return canaries[w], kind, nil
		}}
	keys := make([]Key, 0, len(canaries))
	for w := range canaries {
		key := Key{Namespace: w.Namespace, Config: refs.Ref{Kind: refs.ConfigMap, Name: "config-" + w.Name}}
		keys = append(keys, key)
		g.Judge(ctx, key, time.Time{}, []workload.Ref{w})
	}
	for _, key := range keys {
		for g.Judge(ctx, key, time.Time{}, nil).Hold != "" {
			time.Sleep(10 * time.Millisecond)
		}
	}
	watched := 0
	g.watches.each(func(w *podWatch) { watched += len(w.pods) })
	if watched != len(keys) {
		b.Fatalf("the gate watches %d canaries' pods, want %d", watched, len(keys))
	}
	baking := settledHeap()
	for _, key := range keys {
		g.Done(key)
	}
	return baking
}

// settledHeap is the live heap after a collection, in MiB.
func settledHeap() float64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return float64(m.HeapAlloc) / (1 << 20)
}

// each calls f with every run kept.
func (b *bakes[T]) each(f func(*T)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, r := range b.runs {
		f(r.run)
	}
}
