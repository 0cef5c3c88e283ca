// Command declaredmem (beside the benchmark, hack/bench) measures what a
// declared workload kind costs Ripple in memory against a built-in one:
// Ripple runs on a local API server first
// with N Deployments, then, afresh, with N OpenKruise CloneSets (the kruise
// preset, on its real CRD) of the same pod template and configs; once
// every object carries Ripple's baseline, it reads the live heap
// (go_gc_heap_live_bytes) and the RSS. docs/performance.md ("Declared
// kinds") has the result.
//
//	RIPPLE_TOOLS_DIR=$(bash hack/build-tools.sh | tail -n1) go run ./hack/declaredmem --ripple bin/ripple
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/ripple-dev/ripple/hack/cluster"
)

// configs is how many ConfigMaps the objects of a run share.
const configs = 5

func main() {
	bin := flag.String("ripple", "bin/ripple", "the ripple binary")
	n := flag.Int("n", 1000, "objects of each kind")
	flag.Parse()
	// envtest warns, with a stack trace, when no logger is set.
	ctrllog.SetLogger(logr.Discard())
	if err := run(context.Background(), *bin, *n); err != nil {
		fmt.Fprintf(os.Stderr, "declaredmem: %v\n", err)
		os.Exit(1)
	}
}

// sample is one run's memory once every object is baselined.
type sample struct {
	kind      string
	live, rss float64
	baseline  time.Duration
}

func run(ctx context.Context, bin string, n int) error {
	var out []sample
	for _, kind := range []string{"", "Deployment", "CloneSet"} {
		s, err := measure(ctx, bin, kind, n)
		if err != nil {
			return err
		}
		out = append(out, s)
	}
	fmt.Printf("| objects | live heap | RSS | all baselined after |\n|---|---|---|---|\n")
	for _, s := range out {
		what := "none (the kruise preset on, no object)"
		if s.kind != "" {
			what = fmt.Sprintf("%d %ss", n, s.kind)
		}
		fmt.Printf("| %s | %.1f MiB | %.1f MiB | %.1f s |\n", what, s.live/(1<<20), s.rss/(1<<20), s.baseline.Seconds())
	}
	for _, s := range out[1:] {
		fmt.Printf("%s: %.2f KiB of live heap per object over none\n", s.kind, (s.live-out[0].live)/float64(n)/1024)
	}
	return nil
}

// measure starts a fresh API server with the CloneSet CRD, creates n
// objects of kind (none when empty) and runs Ripple until all are
// baselined.
func measure(ctx context.Context, bin, kind string, n int) (sample, error) {
	api, err := cluster.StartAPI(cluster.APIOptions{})
	if err != nil {
		return sample{}, err
	}
	defer func() { _ = api.Stop() }()
	if err := api.InstallCRDs(ctx, cluster.CloneSetCRD); err != nil {
		return sample{}, err
	}
	rc := rest.CopyConfig(api.Config)
	rc.QPS, rc.Burst = 1000, 2000
	c, err := client.New(rc, client.Options{})
	if err != nil {
		return sample{}, err
	}
	const ns = "mem"
	if err := create(ctx, c, ns, kind, n); err != nil {
		return sample{}, err
	}
	port, err := freePort()
	if err != nil {
		return sample{}, err
	}
	cmd := exec.CommandContext(ctx, bin, "--kubeconfig="+api.Kubeconfig, "--namespaces="+ns, "--workload-kinds-preset=kruise",
		fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", port), "--health-probe-bind-address=0",
		"--settle-window=0", "--kube-api-qps=500", "--kube-api-burst=1000")
	if err := cmd.Start(); err != nil {
		return sample{}, err
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	start := time.Now()
	if err := waitBaselined(ctx, c, ns, kind, n); err != nil {
		return sample{}, err
	}
	s := sample{kind: kind, baseline: time.Since(start)}
	// The live heap is as of the last GC: let a few run after the writes.
	time.Sleep(10 * time.Second)
	s.live, err = liveHeap(port)
	if err != nil {
		return sample{}, err
	}
	s.rss, err = rss(cmd.Process.Pid)
	return s, err
}

// create makes the namespace, the configs and n objects of kind, each
// with the auto annotation and one ConfigMap by envFrom.
func create(ctx context.Context, c client.Client, ns, kind string, n int) error {
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		return err
	}
	for i := range configs {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("config-%d", i)}, Data: map[string]string{"k": "v1"}}
		if err := c.Create(ctx, cm); err != nil {
			return err
		}
	}
	for i := range n {
		if kind == "" {
			break
		}
		obj, err := object(ns, kind, i)
		if err != nil {
			return err
		}
		if err := c.Create(ctx, obj); err != nil {
			return err
		}
	}
	return nil
}

// object is the i-th Deployment or CloneSet: the same spec either way.
func object(ns, kind string, i int) (client.Object, error) {
	name := fmt.Sprintf("w-%d", i)
	labels := map[string]string{"app": name}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: map[string]string{"reloader.stakater.com/auto": "true"}},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "app", Image: "registry.invalid/app:1",
				EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: fmt.Sprintf("config-%d", i%configs)}}}},
			}}}},
		},
	}
	if kind == "Deployment" {
		return d, nil
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(d)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: map[string]any{"metadata": m["metadata"], "spec": m["spec"]}}
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(u.Object, "spec", "template", "metadata", "creationTimestamp")
	u.SetGroupVersionKind(schema.GroupVersionKind{Group: "apps.kruise.io", Version: "v1alpha1", Kind: "CloneSet"})
	return u, nil
}

// waitBaselined waits until every object carries Ripple's record; with no
// objects, five seconds for Ripple to start.
func waitBaselined(ctx context.Context, c client.Client, ns, kind string, n int) error {
	if kind == "" {
		time.Sleep(5 * time.Second) // started and synced
		return nil
	}
	return wait.PollUntilContextTimeout(ctx, time.Second, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		l := &unstructured.UnstructuredList{}
		gv := "apps/v1"
		if kind == "CloneSet" {
			gv = "apps.kruise.io/v1alpha1"
		}
		l.SetAPIVersion(gv)
		l.SetKind(kind + "List")
		if err := c.List(ctx, l, client.InNamespace(ns)); err != nil {
			return false, err
		}
		done := 0
		for _, o := range l.Items {
			if o.GetAnnotations()["ripple.dev/applied"] != "" {
				done++
			}
		}
		return done == n, nil
	})
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }()
	addr, ok := l.Addr().(*net.TCPAddr)
	if !ok {
		return 0, fmt.Errorf("listening on %v: not a TCP address", l.Addr())
	}
	return addr.Port, nil
}

// liveHeap reads go_gc_heap_live_bytes from Ripple's /metrics.
func liveHeap(port int) (float64, error) {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
	if err != nil {
		return 0, err
	}
	defer func() { _ = resp.Body.Close() }()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "go_gc_heap_live_bytes "); ok {
			return strconv.ParseFloat(v, 64)
		}
	}
	return 0, fmt.Errorf("no go_gc_heap_live_bytes in /metrics")
}

// rss reads the process's resident set from /proc.
func rss(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 64)
			return kb * 1024, err
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}
