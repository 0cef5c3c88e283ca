package chart

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ripple-dev/ripple/hack/helmchart"
	"github.com/ripple-dev/ripple/hack/kit"
)

// BenchmarkPinnedPodCreate is what the chart's pinned-pod policy adds to
// a pod's creation, on the real API server: pods reading three configs 20
// ways are created (dry run: admission runs, nothing is stored) in turns,
// one carrying the record the installed policy reads (on: every reference
// rewritten), one carrying a record no policy reads (off: the policy's
// match condition only). It reports each one's p50 and p99, and the p99
// added. Run it with `make bench-pinning` (docs/performance.md has the
// results).
func BenchmarkPinnedPodCreate(b *testing.B) {
	cs := kubernetes.NewForConfigOrDie(api.Config)
	ns := kit.NewNamespace(b, cs, "pinbench-", nil)
	prefix := ns + ".bench.test"
	_, objs := render(b, helmchart.Release{Name: ns, Namespace: ns, Values: []map[string]any{pinningValues(prefix)}})
	a := newApplier(b, api.Config)
	for _, o := range append(find(objs, "MutatingAdmissionPolicy"), find(objs, "MutatingAdmissionPolicyBinding")...) {
		if err := a.apply(b.Context(), o, false); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = a.delete(context.WithoutCancel(b.Context()), o) })
	}
	const record = "configmap/app=0123456789ab,secret/db=abcdef012345"
	on, off := pinnedPod(ns, prefix+"/pinned", record), pinnedPod(ns, ns+".none.test/pinned", record)
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	// create creates p and says how long it took and whether the policy
	// rewrote it.
	create := func(p *corev1.Pod) (time.Duration, bool) {
		began := time.Now()
		got, err := cs.CoreV1().Pods(ns).Create(b.Context(), p, dry)
		took := time.Since(began)
		if err != nil {
			b.Fatal(err)
		}
		return took, got.Spec.Volumes[0].ConfigMap.Name != "app"
	}
	// A policy takes effect once the API server has loaded it.
	for deadline := time.Now().Add(caseTimeout); ; time.Sleep(200 * time.Millisecond) {
		if _, rewritten := create(on); rewritten {
			break
		}
		if time.Now().After(deadline) {
			b.Fatal("the policy never took effect")
		}
	}
	const n = 2000
	for b.Loop() {
		var tOn, tOff []time.Duration
		for range n {
			took, rewritten := create(on)
			tOn = append(tOn, took)
			tookOff, rewrittenOff := create(off)
			tOff = append(tOff, tookOff)
			if !rewritten || rewrittenOff {
				b.Fatalf("the policy rewrote the pod with its record: %v, the other one: %v", rewritten, rewrittenOff)
			}
		}
		b.ReportMetric(quantile(tOn, 0.5), "on-p50-ms")
		b.ReportMetric(quantile(tOn, 0.99), "on-p99-ms")
		b.ReportMetric(quantile(tOff, 0.5), "off-p50-ms")
		b.ReportMetric(quantile(tOff, 0.99), "off-p99-ms")
		b.ReportMetric(quantile(tOn, 0.99)-quantile(tOff, 0.99), "added-p99-ms")
	}
}

// quantile is the q-quantile of ds, in milliseconds.
func quantile(ds []time.Duration, q float64) float64 {
	s := slices.Clone(ds)
	slices.Sort(s)
	return float64(s[int(q*float64(len(s)-1))].Microseconds()) / 1000
}
