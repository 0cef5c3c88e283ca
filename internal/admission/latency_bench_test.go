package admission_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/ripple-dev/ripple/hack/cluster"
	"github.com/ripple-dev/ripple/hack/kit"
	"github.com/ripple-dev/ripple/internal/admission"
	"github.com/ripple-dev/ripple/test/inproc"
)

const (
	benchNamespaces   = 100
	benchPerNamespace = 100
)

// BenchmarkAdmissionLatency is the webhook's latency at 10,000 workloads,
// on a real API server: 100 namespaces of 100 Deployments, each reading
// its namespace's ConfigMap "shared" and one of its own. Ripple runs in
// the benchmark's process with --admission-bind-address, its caches
// synced and its start's reconciles done; reviews of "shared" (100
// workloads to plan) and of one Deployment's own ConfigMap (1) are POSTed
// over TLS to 127.0.0.1, as the API server sends them, and the time to
// each answer is measured, each review with other data (the memo never
// answers them), and in a row of its own one review again and again (the
// memo answers). Run it with `make bench-admission`
// (docs/performance.md has the results).
func BenchmarkAdmissionLatency(b *testing.B) {
	if os.Getenv("RIPPLE_TOOLS_DIR") == "" {
		b.Skip("needs the built API server: run `make bench-admission`")
	}
	ctrl.SetLogger(logr.Discard()) // the webhook server logs through controller-runtime's root logger
	api, err := cluster.StartAPI(cluster.APIOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = api.Stop() }()
	cfg := *api.Config
	cfg.QPS, cfg.Burst = 2000, 4000 // the fleet's creation is not measured
	cs := kubernetes.NewForConfigOrDie(&cfg)
	createBenchFleet(b, cs)

	dir := b.TempDir()
	ca, err := kit.ServingCert(dir)
	if err != nil {
		b.Fatal(err)
	}
	addr := freeAddr(b)
	r, err := inproc.Start(b.Context(), inproc.Options{REST: api.Config, Args: []string{
		"--admission-bind-address=" + addr, "--admission-cert-dir=" + dir, "--metrics-bind-address=0", "--health-probe-bind-address=0",
	}})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = r.Stop() }()
	waitBaselines(b, cs)

	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	for _, bc := range []struct {
		name, config string
		same         bool
	}{{"shared-100-readers", "shared", false}, {"own-1-reader", "app-042", false}, {"shared-100-readers-memo-hit", "shared", true}} {
		b.Run(bc.name, func(b *testing.B) {
			var took []time.Duration
			i := 0
			for b.Loop() {
				// Each review writes other data, as a forger's guesses do,
				// so that the memo does not answer it; the memo's row sends
				// one write again and again.
				if !bc.same {
					i++
				}
				b.StopTimer()
				body := reviewBody(b, "team-042", bc.config, fmt.Sprintf("new-%d", i))
				b.StartTimer()
				start := time.Now()
				post(b, hc, "https://"+addr+admission.Path, body)
				took = append(took, time.Since(start))
			}
			slices.Sort(took)
			b.ReportMetric(ms(took[len(took)/2]), "p50-ms")
			b.ReportMetric(ms(took[len(took)*99/100]), "p99-ms")
			b.ReportMetric(ms(took[len(took)-1]), "max-ms")
		})
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// createBenchFleet creates the namespaces, ConfigMaps and Deployments,
// 16 at a time.
func createBenchFleet(b *testing.B, cs kubernetes.Interface) {
	ctx := b.Context()
	work := make(chan func() error)
	errs := make(chan error, 1)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for f := range work {
				if err := f(); err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		})
	}
	for n := range benchNamespaces {
		ns := fmt.Sprintf("team-%03d", n)
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		work <- func() error { return createConfig(ctx, cs, ns, "shared") }
		for i := range benchPerNamespace {
			name := fmt.Sprintf("app-%03d", i)
			work <- func() error {
				if err := createConfig(ctx, cs, ns, name); err != nil {
					return err
				}
				_, err := cs.AppsV1().Deployments(ns).Create(ctx, benchDeployment(name), metav1.CreateOptions{})
				return err
			}
		}
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errs:
		b.Fatal(err)
	default:
	}
}

func createConfig(ctx context.Context, cs kubernetes.Interface, ns, name string) error {
	_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"db.url": "old"}}, metav1.CreateOptions{})
	return err
}

// benchDeployment is Deployment name, auto-reloaded, reading ConfigMap
// "shared" and its own.
func benchDeployment(name string) *appsv1.Deployment {
	from := func(cm string) corev1.EnvFromSource {
		return corev1.EnvFromSource{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: cm}}}
	}
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{"reloader.stakater.com/auto": "true"}},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "app", Image: "example.com/app:1", EnvFrom: []corev1.EnvFromSource{from("shared"), from(name)}}}}}},
	}
}

// waitBaselines waits until Ripple has recorded its baseline on every
// Deployment: its start's reconciles are done, and no write of its own
// competes with the reviews.
func waitBaselines(b *testing.B, cs kubernetes.Interface) {
	err := wait.PollUntilContextTimeout(b.Context(), 2*time.Second, 10*time.Minute, true, func(ctx context.Context) (bool, error) {
		ds, err := cs.AppsV1().Deployments("").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		done := 0
		for _, d := range ds.Items {
			if d.Annotations["ripple.dev/applied"] != "" {
				done++
			}
		}
		return done == benchNamespaces*benchPerNamespace, nil
	})
	if err != nil {
		b.Fatalf("Ripple's baselines: %v", err)
	}
}

// reviewBody is the AdmissionReview of a change of ConfigMap name in ns
// to the value v.
func reviewBody(b *testing.B, ns, name, v string) []byte {
	raw := func(v string) runtime.RawExtension {
		cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string]string{"db.url": v}}
		out, err := json.Marshal(cm)
		if err != nil {
			b.Fatal(err)
		}
		return runtime.RawExtension{Raw: out}
	}
	review := admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{UID: "bench", Operation: admissionv1.Update, Namespace: ns, Name: name,
			Kind:      metav1.GroupVersionKind{Version: "v1", Kind: "ConfigMap"},
			Resource:  metav1.GroupVersionResource{Version: "v1", Resource: "configmaps"},
			OldObject: raw("old"), Object: raw(v)}}
	out, err := json.Marshal(review)
	if err != nil {
		b.Fatal(err)
	}
	return out
}

// post sends one review and checks that its answer carries the verdict.
func post(b *testing.B, hc *http.Client, url string, body []byte) {
	resp, err := hc.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		b.Fatal(err)
	}
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(out, &review); err != nil || review.Response == nil || !review.Response.Allowed || len(review.Response.Warnings) != 1 {
		b.Fatalf("the answer %s (%v): want allowed, with the verdict", out, err)
	}
}

func freeAddr(b *testing.B) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().String()
}
