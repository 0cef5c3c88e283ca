package main

import (
	"context"
	"crypto/sha1" //nolint:gosec // G505: the digest's form, as Ripple's; not security
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/ripple-dev/ripple/internal/config"
)

// The floor of a fan-out: how long the API server itself takes to accept
// the writes of one change set, made by the benchmark with nothing else to
// do. It makes the same writes as Ripple (a forced server-side apply of
// the env var on the pod template and the applied record, locked on the
// resourceVersion, one per Deployment), as many at a time as Ripple's
// default --max-concurrent-reconciles, through the same proxy, with a JSON
// client and no client-side rate limit. What Ripple takes beyond its
// settle window, against that, is Ripple's own cost.

// floorManager is the field manager of the floor's writes.
const floorManager = "ripple-bench-floor"

// defaultSettleWindow is Ripple's default --settle-window, which the
// fan-out with default flags waits before it writes.
const defaultSettleWindow = time.Second

// Floor is the fan-out's floor and the controller's time against it.
type Floor struct {
	Writes      int `json:"writes"`
	Concurrency int `json:"concurrency"`
	// Ms is, per run of the writes (as many as the change sets), the time
	// from the first write sent to the last acknowledged.
	Ms []float64 `json:"ms"`
	// ControllerMs is the controller's slowest change set: its last PATCH
	// acknowledged after the change, less the settle window.
	ControllerMs float64 `json:"controller_ms"`
	// Ratio is ControllerMs over the slowest run of the floor.
	Ratio float64 `json:"ratio"`
}

// measureFloor stops the controller, makes the change sets' writes itself
// runs times on the Deployments of ns named by keys, and sets res.Floor.
func (s *session) measureFloor(ctx context.Context, ns string, keys []string, runs int, settle time.Duration) error {
	if err := s.ctl.stop(15 * time.Second); err != nil {
		return err
	}
	cs, err := s.floorClient()
	if err != nil {
		return err
	}
	f := &Floor{Writes: len(keys), Concurrency: config.DefaultMaxConcurrentReconciles}
	slowest := 0.0
	for run := range runs {
		took, err := floorRun(ctx, cs, ns, keys, f.Concurrency, fmt.Sprintf("floor-%d", run))
		if err != nil {
			return err
		}
		ms := round3(float64(took) / float64(time.Millisecond))
		f.Ms = append(f.Ms, ms)
		slowest = max(slowest, ms)
	}
	f.ControllerMs = round3(s.res.LastPatch.Max - float64(settle/time.Millisecond))
	if slowest > 0 {
		f.Ratio = round3(f.ControllerMs / slowest)
	}
	s.res.Floor = f
	s.log.Info("floor", "writes", f.Writes, "floorMs", f.Ms, "controllerMinusSettleMs", f.ControllerMs, "ratio", f.Ratio)
	return nil
}

// floorClient is a JSON client, as Ripple's, through the proxy when the
// controller used one, without a client-side rate limit.
func (s *session) floorClient() (kubernetes.Interface, error) {
	cfg := s.config
	if s.px != nil {
		c, err := clientcmd.BuildConfigFromFlags("", s.px.Kubeconfig)
		if err != nil {
			return nil, err
		}
		cfg = c
	}
	cfg = rest.CopyConfig(cfg)
	cfg.ContentType, cfg.AcceptContentTypes = "application/json", ""
	cfg.RateLimiter = flowcontrol.NewFakeAlwaysRateLimiter()
	return kubernetes.NewForConfig(cfg)
}

// floorRun applies value's digest to every Deployment of keys in ns,
// concurrency at a time, each locked on the resourceVersion read before
// (as Ripple's from its cache), and returns the time from the first write
// to the last acknowledged.
func floorRun(ctx context.Context, cs kubernetes.Interface, ns string, keys []string, concurrency int, value string) (time.Duration, error) {
	list, err := cs.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	rv := map[string]string{}
	for i := range list.Items {
		rv[list.Items[i].Name] = list.Items[i].ResourceVersion
	}
	sum := sha1.Sum([]byte(value)) //nolint:gosec // G401: see the import
	digest := hex.EncodeToString(sum[:])
	work := make(chan string)
	errs := make(chan error, len(keys))
	var wg sync.WaitGroup
	start := time.Now()
	for range concurrency {
		wg.Go(func() {
			for name := range work {
				errs <- floorWrite(ctx, cs, ns, name, rv[name], digest)
			}
		})
	}
	for _, key := range keys {
		work <- key[strings.LastIndexByte(key, '/')+1:]
	}
	close(work)
	wg.Wait()
	took := time.Since(start)
	close(errs)
	for err := range errs {
		if err != nil {
			return 0, fmt.Errorf("the floor's write: %w", err)
		}
	}
	return took, nil
}

// floorWrite is one write of the floor: Ripple's fields of a reload.
func floorWrite(ctx context.Context, cs kubernetes.Interface, ns, name, rv, digest string) error {
	d := appsv1ac.Deployment(name, ns).WithResourceVersion(rv).
		WithAnnotations(map[string]string{"ripple.dev/applied": fmt.Sprintf(`{"ConfigMap/%s/shared":%q}`, ns, digest)}).
		WithSpec(appsv1ac.DeploymentSpec().WithTemplate(corev1ac.PodTemplateSpec().WithSpec(corev1ac.PodSpec().
			WithContainers(corev1ac.Container().WithName("app").
				WithEnv(corev1ac.EnvVar().WithName("STAKATER_SHARED_CONFIGMAP").WithValue(digest))))))
	_, err := cs.AppsV1().Deployments(ns).Apply(ctx, d, metav1.ApplyOptions{FieldManager: floorManager, Force: true})
	return err
}

// writeFloor writes the fan-outs' floors: the API server's time for the
// writes, the controller's beyond its settle window, and their ratio.
func writeFloor(w *strings.Builder, results []Result) {
	var rows []string
	for _, r := range results {
		if f := r.Floor; f != nil {
			ms := make([]string, len(f.Ms))
			for i, m := range f.Ms {
				ms[i] = fmt.Sprintf("%.0f", m)
			}
			rows = append(rows, fmt.Sprintf("| %s | %d at %d at a time | %s ms | %.0f ms | %.2f |\n", r.Name, f.Writes, f.Concurrency, strings.Join(ms, ", "), f.ControllerMs, f.Ratio))
		}
	}
	if len(rows) == 0 {
		return
	}
	w.WriteString("\n## Fan-out floor\n\nThe API server's own time for a change set's writes, made by the benchmark after the controller stopped (the same forced server-side apply per Deployment, as many at a time as Ripple's default workers, through the same proxy), against the controller's last PATCH after the change less its settle window (the slowest change set). Goal: a ratio of 1.2 or less.\n\n")
	w.WriteString("| scenario | writes | floor | controller − settle | ratio |\n|---|---|---|---|---|\n")
	for _, row := range rows {
		w.WriteString(row)
	}
}
