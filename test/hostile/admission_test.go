package hostile

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/ripple-dev/ripple/hack/kit"
)

// The forged-review flood's bounds (issue 56).
const (
	// sharedReaders is how many Deployments read the forged config.
	sharedReaders = 5000
	// forgers is how many reviews are in flight at once, all the time.
	forgers = 16
	// floodReloadBound is how soon another namespace's workload reloads
	// while the reviews come.
	floodReloadBound = settleWindow + time.Second
	// floodMemory is how much Ripple's resident memory may grow under
	// them.
	floodMemory = 50 << 20
)

// Anyone who reaches the admission webhook's port (the chart's
// NetworkPolicy opened it to every pod) sends 16 reviews at once, all
// the time, of a ConfigMap read by 5,000 Deployments, each with other
// data so that no answer comes from the memo: Ripple makes at most
// admission.MaxInFlight verdicts at once and lets the rest through
// unchecked, so another namespace's workload still reloads within its
// settle window + 1 s, and Ripple's resident memory grows by less than
// 50 MiB.
func TestForgedReviewsDoNotDelayReloads(t *testing.T) {
	admin := clientset(t, kc.Config)
	home := kit.NewNamespace(t, admin, "ripple-", nil)
	readers := kit.NewNamespace(t, admin, "readers-", nil)
	drainAfter(t, admin, readers)
	victim := kit.NewNamespace(t, admin, "victim-", nil)
	began := time.Now()
	plantSharedReaders(t, admin, readers)
	t.Logf("%d Deployments reading one ConfigMap created in %s", sharedReaders, time.Since(began).Round(time.Millisecond))
	victimWorkload(t, admin, victim)

	dir := t.TempDir()
	ca, err := kit.ServingCert(dir)
	if err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	r := startRipple(t, home, "--admission-bind-address="+addr, "--admission-cert-dir="+dir)
	// The readers first: Ripple's start records 5,000 baselines, the
	// victim's among them, and waitBaseline waits 10 s only.
	waitReadersBaselines(t, admin, readers)
	waitBaseline(t, admin, victim, "web")
	t.Logf("Ripple recorded its baselines %s after its start", time.Since(began).Round(time.Millisecond))

	changed := time.Now()
	setData(t, admin, victim, "v2")
	quiet := waitReloaded(t, admin, victim, changed, reloadBound, "with no review sent")
	applied := victimHash(t, admin, victim)
	t.Logf("with no review sent, the other namespace's workload reloaded %s after its change", quiet.Round(time.Millisecond))
	before := rss(t, r)

	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: forgers,
		TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	f := &forgery{url: "https://" + addr + "/validate-configs", client: hc, ns: readers}
	ctx, stop := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	for range forgers {
		wg.Go(func() { f.send(ctx) })
	}
	// The reviews come for 3 s before the change, and until Ripple's
	// memory was read after it.
	time.Sleep(3 * time.Second)
	peak := before
	changed = time.Now()
	setData(t, admin, victim, "v3")
	reloaded := waitEnvChanged(t, admin, victim, applied, changed, floodReloadBound, fmt.Sprintf("(settle window + 1s) under %d forged reviews at once", forgers))
	var heap, goal float64
	for range 5 {
		m := kit.Scrape(t, r.metrics)
		peak = max(peak, m["process_resident_memory_bytes{}"])
		heap, goal = max(heap, m["go_memstats_heap_inuse_bytes{}"]), max(goal, m["go_memstats_next_gc_bytes{}"])
		time.Sleep(time.Second)
	}
	stop()
	wg.Wait()
	verdicts, busy, late, failed := f.verdicts.Load(), f.busy.Load(), f.late.Load(), f.failed.Load()
	t.Logf("under %d forged reviews at once, the other namespace's workload reloaded %s after its change (%s without them)",
		forgers, reloaded.Round(time.Millisecond), quiet.Round(time.Millisecond))
	t.Logf("the forged reviews: %d verdicts, %d let through unchecked at once (busy), %d past the budget, %d failed (%s)", verdicts, busy, late, failed, f.lastErr())
	t.Logf("Ripple's resident memory: %.0f MiB before the reviews, at most %.0f MiB under them (heap in use at most %.0f MiB, GC goal at most %.0f MiB)",
		before/(1<<20), peak/(1<<20), heap/(1<<20), goal/(1<<20))
	if verdicts+late == 0 {
		// A verdict past its budget planned until then: it reached the
		// planner too.
		t.Errorf("no forged review was judged, in time or not: the flood did not reach the planner (%s)", f.lastErr())
	}
	if busy == 0 {
		t.Errorf("no forged review was let through unchecked: %d verdicts were made at once", forgers)
	}
	if peak-before > floodMemory {
		t.Errorf("Ripple's resident memory grew by %.0f MiB under the reviews, over %d MiB", (peak-before)/(1<<20), floodMemory>>20)
	}
}

// plantSharedReaders creates ConfigMap "shared" in ns and sharedReaders
// auto-reloaded Deployments reading it, paused and of no replica (no
// ReplicaSet, no pod: only Ripple's cache holds them), 8 at a time.
func plantSharedReaders(t *testing.T, admin kubernetes.Interface, ns string) {
	t.Helper()
	create(t, "the shared config", admin.CoreV1().ConfigMaps(ns).Create,
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "shared"}, Data: map[string]string{"k": "v1"}})
	names := make(chan string)
	var failed atomic.Pointer[error]
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for name := range names {
				tpl := podTemplate(name)
				tpl.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: "shared"}}}}
				d := deployment(name, 0, map[string]string{auto: "true"}, tpl)
				d.Spec.Paused = true
				if _, err := admin.AppsV1().Deployments(ns).Create(t.Context(), d, metav1.CreateOptions{}); err != nil {
					failed.CompareAndSwap(nil, &err)
				}
			}
		})
	}
	for i := range sharedReaders {
		names <- fmt.Sprintf("reader-%04d", i)
	}
	close(names)
	wg.Wait()
	if err := failed.Load(); err != nil {
		t.Fatalf("creating the readers: %v", *err)
	}
}

// waitReadersBaselines waits until Ripple has recorded its baseline on
// every reader of ns: its start's writes done, the flood meets a Ripple
// at rest.
func waitReadersBaselines(t *testing.T, admin kubernetes.Interface, ns string) {
	t.Helper()
	var done int
	err := wait.PollUntilContextTimeout(t.Context(), 2*time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		ds, err := admin.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return false, err
		}
		done = 0
		for _, d := range ds.Items {
			if d.Annotations["ripple.dev/applied"] != "" {
				done++
			}
		}
		return done == sharedReaders, nil
	})
	if err != nil {
		t.Fatalf("Ripple recorded its baseline on %d of %d readers within 2m: %v", done, sharedReaders, err)
	}
}

// waitEnvChanged waits, at most bound after changed, until the victim's
// Deployment carries another value than old in Reloader's env var (a
// reload after the one that wrote old), and returns when it did; while
// says what happened meanwhile.
func waitEnvChanged(t *testing.T, admin kubernetes.Interface, ns, old string, changed time.Time, bound time.Duration, while string) time.Duration {
	t.Helper()
	for {
		if v := victimHash(t, admin, ns); v != old && v != "" {
			return time.Since(changed)
		}
		if time.Since(changed) > bound {
			t.Fatalf("the other namespace's workload did not reload within %s of its change, %s", bound, while)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// rss is Ripple's resident memory.
func rss(t *testing.T, r *ripple) float64 {
	t.Helper()
	v := kit.Scrape(t, r.metrics)["process_resident_memory_bytes{}"]
	if v == 0 {
		t.Fatal("no process_resident_memory_bytes in Ripple's /metrics")
	}
	return v
}

// forgery sends forged reviews of ConfigMap ns/shared, each changing its
// data to a value of its own, and counts the answers.
type forgery struct {
	url                  string
	client               *http.Client
	ns                   string
	n                    atomic.Int64
	verdicts, busy, late atomic.Int64
	other, failed        atomic.Int64
	err                  atomic.Pointer[string]
}

// send posts reviews one after the other until ctx ends.
func (f *forgery) send(ctx context.Context) {
	for ctx.Err() == nil {
		body, err := f.review(f.n.Add(1))
		if err == nil {
			err = f.post(ctx, body)
		}
		if err != nil && ctx.Err() == nil {
			f.failed.Add(1)
			msg := err.Error()
			f.err.Store(&msg)
		}
	}
}

func (f *forgery) lastErr() string {
	if p := f.err.Load(); p != nil {
		return *p
	}
	return "no error"
}

// review is the AdmissionReview of an update of ns/shared from "v1" to
// value i.
func (f *forgery) review(i int64) ([]byte, error) {
	raw := func(v string) (runtime.RawExtension, error) {
		b, err := json.Marshal(&corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "shared"}, Data: map[string]string{"k": v}})
		return runtime.RawExtension{Raw: b}, err
	}
	old, err := raw("v1")
	if err != nil {
		return nil, err
	}
	cur, err := raw(fmt.Sprintf("guess-%d", i))
	if err != nil {
		return nil, err
	}
	return json.Marshal(admissionv1.AdmissionReview{TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{UID: "forged", Operation: admissionv1.Update, Namespace: f.ns, Name: "shared",
			Kind:      metav1.GroupVersionKind{Version: "v1", Kind: "ConfigMap"},
			Resource:  metav1.GroupVersionResource{Version: "v1", Resource: "configmaps"},
			OldObject: old, Object: cur, DryRun: ptr.To(true)}})
}

// post sends one review and counts its answer: a verdict, or let
// through unchecked.
func (f *forgery) post(ctx context.Context, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := f.client.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(out, &review); err != nil || review.Response == nil {
		return fmt.Errorf("the answer %.200s: %w", out, err)
	}
	w := strings.Join(review.Response.Warnings, "; ")
	switch {
	case strings.Contains(w, "busy"):
		f.busy.Add(1)
	case strings.Contains(w, "not checked"):
		f.late.Add(1)
	case strings.Contains(w, "rolls"):
		f.verdicts.Add(1)
	default:
		f.other.Add(1)
		return fmt.Errorf("the answer's warnings %q: neither a verdict nor busy", w)
	}
	return nil
}
