package e2e

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/ripple-dev/ripple/hack/cluster"
	"github.com/ripple-dev/ripple/hack/kit"
	"github.com/ripple-dev/ripple/internal/digest"
)

// The fault tier: faults injected into the local cluster while Ripple
// works, each test counting rollouts exactly, by the Deployment's revision
// (deployment.kubernetes.io/revision and its ReplicaSets) or pod-template
// writes, and by Ripple's own "reloaded" log lines: nothing lost (the
// final template carries the last data's hash) and nothing twice.
//
// Killing kube-apiserver or etcd would stall every other test of the
// package, and client-go's reconnect backoff lingers in the controllers
// for minutes afterwards: those faults hit a cluster of their own, started
// by TestFaultControlPlane, which runs before the parallel tests resume.

// revisionAnnotation is the Deployment controller's count of its rollouts.
const revisionAnnotation = "deployment.kubernetes.io/revision"

// faultDeployments is how many Deployments each control-plane fault test
// rolls: each reads app-config and app-secret.
const faultDeployments = 3

// On a cluster of its own: etcd is killed with SIGKILL and restarted twice
// under a running API server, then kube-apiserver twice. Each time the
// next change (two writes of app-config 100 ms apart) is written by a
// client that retries through the outage, so it lands the moment the API
// server serves again; every Deployment rolls once per change, to the last
// data, and once for a change set before and after the faults. The time
// from the API server serving again to every Deployment carrying the new
// hash is logged: docs/performance.md, "Recovery after faults", explains
// why a second fault within two minutes takes longer, and a third longer
// still (client-go's reconnect backoff), which is why there are two.
func TestFaultControlPlane(t *testing.T) {
	fc := ownCluster(t, "the fault tier's cluster")
	// etcd first: its faults leave the clients of the API server with no
	// reconnect backoff, which the API server's faults would.
	t.Run("etcd", func(t *testing.T) { testControlPlaneFault(t, fc, cluster.Etcd, 2) })
	t.Run("kube-apiserver", func(t *testing.T) { testControlPlaneFault(t, fc, cluster.APIServer, 2) })

	// The restarted etcd and API server listen where they did: loopback only.
	bad, err := cluster.NonLoopbackListeners(cluster.Descendants())
	if err != nil {
		t.Fatal(err)
	}
	if len(bad) > 0 {
		t.Errorf("processes listen outside loopback: %v", bad)
	}
}

func testControlPlaneFault(t *testing.T, fc *cluster.Cluster, c cluster.Component, faults int) {
	cs := kubernetes.NewForConfigOrDie(fc.Config)
	// The writes during the outage give up after a second and retry: an
	// API server without etcd holds a request for much longer.
	impatient := rest.CopyConfig(fc.Config)
	impatient.Timeout = time.Second
	writes := kubernetes.NewForConfigOrDie(impatient)
	ns := newNamespace(t, cs)
	r := newRipple(t, ns)
	// newRipple points Ripple at the shared cluster; this one is fc's.
	r.Args[slices.Index(r.Args, "--kubeconfig="+kc.Kubeconfig)] = "--kubeconfig=" + fc.Kubeconfig
	r.Start()
	createConfigMap(t, cs, ns, configName, "v1")
	createSecret(t, cs, ns)
	ds := createDeployments(t, cs, ns, spec{configMaps: []string{configName}, secrets: []string{secretName}, annotations: auto()})
	expectRevision(t, cs, r, ns, ds, 1)

	// Before the faults: one change set, one rollout.
	cmSum, secSum := changeBoth(t, cs, ns)
	expectRevision(t, cs, r, ns, ds, 2, envIs(configEnv, cmSum), envIs(secretEnv, secSum))

	for i := range faults {
		if err := fc.Kill(t.Context(), c); err != nil {
			t.Fatal(err)
		}
		killed := time.Now()
		// The burst: two writes of app-config 100 ms apart, the first
		// retried through the outage. Only the ConfigMap changes: each kind
		// has its own informer, which reconnects on its own backoff, so a
		// change set spanning a ConfigMap and a Secret may reach Ripple
		// more than a settle window apart (docs/performance.md).
		type change struct {
			sum   string
			first time.Time // when the first write landed
		}
		written := make(chan change, 1)
		go func() {
			writeRetrying(t, writes, ns, configName, fmt.Sprintf("fault-%d-a", i))
			first := time.Now()
			time.Sleep(100 * time.Millisecond)
			written <- change{writeRetrying(t, writes, ns, configName, fmt.Sprintf("fault-%d-b", i)), first}
		}()
		time.Sleep(time.Second) // down long enough for every client to notice
		if err := fc.Restart(t.Context(), c); err != nil {
			t.Fatal(err)
		}
		ready := time.Now()
		w := <-written
		cmSum = w.sum
		// The API server serves again when it takes the first write or
		// reports ready, whichever comes first: writes often land before
		// /readyz turns ok.
		serving := w.first
		if ready.Before(serving) {
			serving = ready
		}
		checks := []templateCheck{envIs(configEnv, w.sum), envIs(secretEnv, secSum)}
		waitFor(t, "every Deployment to carry the change written after the outage", func(ctx context.Context) (bool, error) {
			return deploymentsPass(ctx, cs, ns, ds, checks)
		})
		t.Logf("%s fault %d: down %s; API server serving again -> change applied to %d Deployments: %s (first write %s, /readyz ok %s after it served; settle window 1s)",
			c, i+1, serving.Sub(killed).Round(10*time.Millisecond), len(ds), time.Since(serving).Round(10*time.Millisecond),
			w.first.Sub(serving).Round(10*time.Millisecond), ready.Sub(serving).Round(10*time.Millisecond))
		expectRevision(t, cs, r, ns, ds, 3+i, checks...)
	}

	// The Secret informer reconnects on its own backoff, which after two
	// outages can take longer than the ConfigMap's: a Secret change alone
	// rolls once whenever it arrives, and shows it is back.
	secSum = setSecretValue(t, cs, ns, "reconnected")
	expectRevision(t, cs, r, ns, ds, 3+faults, envIs(configEnv, cmSum), envIs(secretEnv, secSum))

	// After the faults: Ripple still acts on a change set at once.
	cmSum = setConfigMapValue(t, cs, ns, configName, "after")
	time.Sleep(100 * time.Millisecond)
	secSum = setSecretValue(t, cs, ns, "after")
	expectRevision(t, cs, r, ns, ds, 4+faults, envIs(configEnv, cmSum), envIs(secretEnv, secSum))
}

// writeRetrying sets a ConfigMap's VALUE to value, retrying every 20 ms
// while the API server is unreachable, and returns the stored object's
// digest.
func writeRetrying(t *testing.T, cs kubernetes.Interface, ns, name, value string) string {
	var sum string
	err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		cm, err := cs.CoreV1().ConfigMaps(ns).Update(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Data:       map[string]string{"VALUE": value},
		}, metav1.UpdateOptions{})
		if err == nil {
			sum = digest.ConfigMap(cm)
		}
		return err == nil, nil
	})
	if err != nil {
		t.Errorf("writing %s=%s: %v", name, value, err)
	}
	return sum
}

// createDeployments creates faultDeployments Deployments d0, d1, ... with
// no pods (the Deployment controller still makes one ReplicaSet per pod
// template, which is what is counted) and returns their UIDs by name.
func createDeployments(t *testing.T, cs kubernetes.Interface, ns string, s spec) map[string]types.UID {
	t.Helper()
	uids := map[string]types.UID{}
	for i := range faultDeployments {
		name := "d" + strconv.Itoa(i)
		d, err := cs.AppsV1().Deployments(ns).Create(t.Context(), &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: s.annotations},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](0),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
				Template: s.template(name),
			},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		uids[name] = d.UID
	}
	return uids
}

// expectRevision waits until every Deployment of ds is at revision n (its
// revision annotation and its ReplicaSets, one per rollout), with a
// template that passes checks, and Ripple logged n-1 reloads of each;
// then it watches for afterRollout that neither count moves. It fails at
// once when a Deployment goes past revision n.
func expectRevision(t *testing.T, cs kubernetes.Interface, r *ripple, ns string, ds map[string]types.UID, n int, checks ...templateCheck) {
	t.Helper()
	var last, lastErr string // what the last poll saw, for the failure message
	count := func(ctx context.Context) (bool, error) {
		for _, name := range slices.Sorted(maps.Keys(ds)) {
			d, err := cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				lastErr = err.Error()
				return false, nil // the control plane may still be coming back
			}
			rss, err := kit.ReplicaSets(ctx, cs, ns, ds[name])
			if err != nil {
				lastErr = err.Error()
				return false, nil
			}
			rev, _ := strconv.Atoi(d.Annotations[revisionAnnotation])
			last = fmt.Sprintf("Deployment %s: revision %d, %d ReplicaSets, generation %d, observed %d",
				name, rev, len(rss), d.Generation, d.Status.ObservedGeneration)
			if rev > n || len(rss) > n {
				return false, fmt.Errorf("%s, want revision %d: a duplicate rollout", last, n)
			}
			if rev < n || len(rss) < n || d.Status.ObservedGeneration < d.Generation {
				return false, nil
			}
			for _, c := range checks {
				if err := c(&d.Spec.Template); err != nil {
					return false, fmt.Errorf("Deployment %s rolled to a wrong template: %w", name, err)
				}
			}
		}
		got, want := len(r.Out.Lines("\treloaded\t")), (n-1)*len(ds)
		last = fmt.Sprintf("Ripple logged %d reloads, want %d", got, want)
		if got > want {
			return false, errors.New(last)
		}
		return got == want, nil
	}
	if err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 2*time.Minute, true, count); err != nil {
		t.Fatalf("waiting for revision %d of every Deployment: %v (last seen: %s; last error: %s)", n, err, last, lastErr)
	}
	consistently(t, fmt.Sprintf("every Deployment stays at revision %d", n), afterRollout, func(ctx context.Context) error {
		_, err := count(ctx)
		return err
	})
}

// deploymentsWith returns the Deployments of ds whose template passes check.
func deploymentsWith(t *testing.T, cs kubernetes.Interface, ns string, ds map[string]types.UID, check templateCheck) []string {
	t.Helper()
	var pass []string
	for _, name := range slices.Sorted(maps.Keys(ds)) {
		d, err := cs.AppsV1().Deployments(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if check(&d.Spec.Template) == nil {
			pass = append(pass, name)
		}
	}
	return pass
}

// deploymentsPass reports whether every Deployment's template passes checks.
func deploymentsPass(ctx context.Context, cs kubernetes.Interface, ns string, ds map[string]types.UID, checks []templateCheck) (bool, error) {
	for name := range ds {
		d, err := cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, c := range checks {
			if c(&d.Spec.Template) != nil {
				return false, nil
			}
		}
	}
	return true, nil
}

// Ripple killed with SIGKILL inside the settle window of a change set: no
// graceful shutdown, nothing written. The restarted Ripple rolls the
// workload exactly once, to the last data of the change set.
// TestCatchUpStoppedDuringSettleWindow covers SIGTERM.
func TestFaultRippleKilledInSettleWindow(t *testing.T) {
	t.Parallel()
	cs := kubernetes.NewForConfigOrDie(kc.Config)
	ns := newNamespace(t, cs)
	r := startRipple(t, ns, "--settle-window=5s", "--log-level=debug")
	cm := createConfigMap(t, cs, ns, configName, "v1")
	sec := createSecret(t, cs, ns)
	web := workload{kit.Deployment, ns, "web"}
	web.create(t, cs, spec{configMaps: []string{configName}, secrets: []string{secretName}, annotations: auto()})
	before := waitRolledOut(t, cs, web)
	waitBaseline(t, cs, web, digest.ConfigMap(cm), digest.Secret(sec))

	setConfigMapValue(t, cs, ns, configName, "v2")
	waitLog(t, r, "waiting for the settle window")
	cmSum := setConfigMapValue(t, cs, ns, configName, "v3")
	secSum := setSecretValue(t, cs, ns, "p2")
	r.Kill()
	if s := web.get(t, cs); s.templates != before[web].templates {
		t.Fatalf("%s rolled within its 5s settle window", web)
	}
	if n := len(r.Out.Lines("\treloaded\t")); n != 0 {
		t.Fatalf("Ripple logged %d reloads before it was killed, want 0", n)
	}
	r.Start()
	expectRollouts(t, cs, oneEach(before, envIs(configEnv, cmSum), envIs(secretEnv, secSum)))
	if n := len(r.finalLines("\treloaded\t")); n != 1 {
		t.Errorf("Ripple logged %d reloads, want 1", n)
	}
}

// writerKey is the annotation the competing writer sets on the Deployment
// and on its pod template.
const writerKey = "test.ripple.dev/writer"

// A competing writer (an autoscaler, a GitOps tool) annotates the
// Deployment every 10 ms, and every tenth time scales it (and, until the
// config changes, annotates its pod template), with optimistic locking,
// while a change is applied: Ripple's write, which carries the
// resourceVersion it read, meets conflicts and is retried. The change
// rolls exactly once (Ripple's hash goes from the old to the new value once
// in the Deployment's write history, and Ripple logs one reload), and the
// writer's last scale and annotations are all there at the end.
func TestFaultCompetingWriter(t *testing.T) {
	t.Parallel()
	cs := kubernetes.NewForConfigOrDie(kc.Config)
	ns := newNamespace(t, cs)
	r := startRipple(t, ns, "--log-level=debug") // debug: Ripple logs its conflicts
	cm := createConfigMap(t, cs, ns, configName, "v1")
	d, err := cs.AppsV1().Deployments(ns).Create(t.Context(), &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Annotations: auto()},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: spec{configMaps: []string{configName}}.template("web"),
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	hashes := watchEnv(t, cs, d, configEnv)
	waitFor(t, "Ripple's baseline on web", func(ctx context.Context) (bool, error) {
		d, err := cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		return err == nil && strings.Contains(d.Annotations[appliedAnnotation], digest.ConfigMap(cm)), err
	})

	wcfg := rest.CopyConfig(kc.Config)
	wcfg.QPS, wcfg.Burst = 200, 200
	w := startWriter(t, kubernetes.NewForConfigOrDie(wcfg), ns, "web")
	time.Sleep(time.Second) // the writer is in full swing
	waitFor(t, "the writer's first write of the pod template", func(ctx context.Context) (bool, error) {
		d, err := cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		return err == nil && d.Spec.Template.Annotations[writerKey] != "", err
	})
	// A change of the pod template by someone else after the config's
	// applies it by itself (the pods it starts read the new data), and
	// Ripple then writes nothing (docs/rollbacks.md): from now on the
	// writer leaves the template alone, so that Ripple's own write is what
	// meets its conflicts.
	w.holdTemplate()
	sum := setConfigMapValue(t, cs, ns, configName, "v2")
	waitFor(t, "Ripple's hash on web", func(ctx context.Context) (bool, error) {
		d, err := cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		return err == nil && envIs(configEnv, sum)(&d.Spec.Template) == nil, err
	})
	time.Sleep(time.Second) // the writer keeps writing over Ripple's change
	last := w.stop()
	t.Logf("the writer made %d writes, %d of them after a conflict; Ripple's patches met %d conflicts",
		last.writes, last.conflicts, len(r.Out.Lines("workload changed since it was read")))

	consistently(t, "web keeps Ripple's hash and the writer's last writes", afterRollout, func(ctx context.Context) error {
		d, err := cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if err := envIs(configEnv, sum)(&d.Spec.Template); err != nil {
			return err
		}
		if d.Annotations[writerKey] != strconv.Itoa(last.writes) || d.Spec.Template.Annotations[writerKey] != strconv.Itoa(last.template) ||
			*d.Spec.Replicas != last.replicas {
			return fmt.Errorf("the writer's last writes (%s=%d, on the template %d, replicas %d) are lost: annotations %v, template annotations %v, replicas %d",
				writerKey, last.writes, last.template, last.replicas, d.Annotations, d.Spec.Template.Annotations, *d.Spec.Replicas)
		}
		return nil
	})
	if got, want := hashes.at(t, cs, ns, "web"), []string{"", sum}; !slices.Equal(got, want) {
		t.Errorf("web's %s went through %q, want %q: one rollout for one change", configEnv, got, want)
	}
	if n := len(r.finalLines("\treloaded\t")); n != 1 {
		t.Errorf("Ripple logged %d reloads, want 1", n)
	}
}

// writer is the competing writer of TestFaultCompetingWriter.
type writer struct {
	quit chan struct{} // closed to stop it between two writes
	// held stops its writes of the pod template (holdTemplate).
	held atomic.Bool
	// writing is held through each write, from the read of held on, so
	// that holdTemplate can wait out a template write in flight.
	writing sync.Mutex
	once    sync.Once
	done    chan writerResult
	last    writerResult
}

// writerResult is what the writer wrote last: the number of its last
// write, which is its annotation's value, of its last write of the
// template annotation, and its last scale.
type writerResult struct {
	writes, template, conflicts int
	replicas                    int32
}

// writerRetry retries a write that met a conflict: the Deployment
// controller's status writes and Ripple's patches come in between.
var writerRetry = wait.Backoff{Steps: 100, Duration: 5 * time.Millisecond, Factor: 1, Jitter: 1}

// startWriter starts writing Deployment ns/name every 10 ms: writerKey set
// to the write's number on the Deployment and, every tenth write, on its
// pod template too, with replicas alternating 1 and 2. Each write reads the
// Deployment and updates it with its resourceVersion, retrying on conflict.
func startWriter(t *testing.T, cs kubernetes.Interface, ns, name string) *writer {
	ctx := t.Context()
	w := &writer{quit: make(chan struct{}), done: make(chan writerResult, 1)}
	go func() {
		var res writerResult
		defer func() { w.done <- res }()
		for i := 1; ; i++ {
			w.writing.Lock()
			tenth, held := i%10 == 0, w.held.Load()
			replicas := int32(1 + (i/10)%2)
			err := retry.RetryOnConflict(writerRetry, func() error {
				d, err := cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					return err
				}
				metav1.SetMetaDataAnnotation(&d.ObjectMeta, writerKey, strconv.Itoa(i))
				if tenth {
					if !held {
						metav1.SetMetaDataAnnotation(&d.Spec.Template.ObjectMeta, writerKey, strconv.Itoa(i))
					}
					d.Spec.Replicas = &replicas
				}
				_, err = cs.AppsV1().Deployments(ns).Update(ctx, d, metav1.UpdateOptions{})
				if apierrors.IsConflict(err) {
					res.conflicts++
				}
				return err
			})
			w.writing.Unlock()
			if err != nil {
				t.Errorf("writer: %v", err)
				return
			}
			res.writes = i
			if tenth {
				res.replicas = replicas
				if !held {
					res.template = i
				}
			}
			select {
			case <-w.quit:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() { w.stop() })
	return w
}

// holdTemplate makes the writer leave the pod template alone from its
// next write on (it still annotates and scales the Deployment), and waits
// for its current write to end: a template write that lands after the
// test's config change counts as the change's rollout (plan/template.go),
// and Ripple then rightly writes nothing.
func (w *writer) holdTemplate() {
	w.held.Store(true)
	w.writing.Lock()
	defer w.writing.Unlock()
}

// stop ends the writer after its current write and returns what it wrote
// last; it may be called twice.
func (w *writer) stop() writerResult {
	w.once.Do(func() {
		close(w.quit)
		w.last = <-w.done
	})
	return w.last
}

// envHistory is the sequence of values an env var took in a Deployment's
// pod template, from a watch: every write, however close to another.
type envHistory struct {
	mu       sync.Mutex
	values   []string
	progress *kit.WatchProgress
}

// at returns the values up to now, once the watch has delivered the
// Deployment as the API server has it now: the watch runs behind it.
func (h *envHistory) at(t *testing.T, cs kubernetes.Interface, ns, name string) []string {
	t.Helper()
	d, err := cs.AppsV1().Deployments(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), watchCatchUp)
	defer cancel()
	if err := h.progress.Reached(ctx, d.ResourceVersion); err != nil {
		t.Fatalf("the watch of %s's %s: %v", name, configEnv, err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.values...)
}

// watchEnv records the values env var name takes in d's pod template from
// its creation on ("" while unset), until the test ends.
func watchEnv(t *testing.T, cs kubernetes.Interface, d *appsv1.Deployment, name string) *envHistory {
	first, _ := envValue(&d.Spec.Template, name)
	h := &envHistory{values: []string{first}, progress: kit.NewWatchProgress(d.ResourceVersion)}
	wi, err := cs.AppsV1().Deployments(d.Namespace).Watch(t.Context(), metav1.ListOptions{
		FieldSelector: "metadata.name=" + d.Name, ResourceVersion: d.ResourceVersion,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(wi.Stop)
	go func() {
		for ev := range wi.ResultChan() {
			switch o := ev.Object.(type) {
			case *appsv1.Deployment:
				h.mu.Lock()
				if v, _ := envValue(&o.Spec.Template, name); v != h.values[len(h.values)-1] {
					h.values = append(h.values, v)
				}
				h.mu.Unlock()
				h.progress.Saw(o.ResourceVersion)
			default:
				if ev.Type == watch.Error {
					h.progress.Fail(errors.New("the watch failed: " + apierrors.FromObject(ev.Object).Error()))
				}
			}
		}
		h.progress.Fail(errors.New("the watch ended"))
	}()
	return h
}

// A config deleted and re-created with the same data is no change: nothing
// rolls. Deleted and re-created with new data, it is one change: one
// rollout. (Without --reload-on-delete the deletion itself rolls nothing;
// Ripple keeps the digest it applied.)
func TestFaultConfigDeletedAndRecreated(t *testing.T) {
	t.Parallel()
	cs := kubernetes.NewForConfigOrDie(kc.Config)
	ns := newNamespace(t, cs)
	startRipple(t, ns)
	cm := createConfigMap(t, cs, ns, configName, "v1")
	web := workload{kit.Deployment, ns, "web"}
	web.create(t, cs, spec{configMaps: []string{configName}, annotations: auto()})
	before := waitRolledOut(t, cs, web)
	waitBaseline(t, cs, web, digest.ConfigMap(cm))

	recreate := func(value string) string {
		if err := cs.CoreV1().ConfigMaps(ns).Delete(t.Context(), configName, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		// Two settle windows: Ripple has seen the deletion on its own.
		time.Sleep(2 * time.Second)
		return digest.ConfigMap(createConfigMap(t, cs, ns, configName, value))
	}
	if sum := recreate("v1"); sum != digest.ConfigMap(cm) {
		t.Fatalf("the same data has another digest: %s, was %s", sum, digest.ConfigMap(cm))
	}
	before = expectNoRollout(t, cs, before)

	sum := recreate("v2")
	expectRollouts(t, cs, oneEach(before, envIs(configEnv, sum)))
}

// outageLength is how long TestFaultOutage keeps the API server, etcd or
// the network to Ripple down, and outageCatchUp how long after the settle
// window a change made as it returns may take to roll.
const (
	outageLength  = 15 * time.Second
	outageCatchUp = 2 * time.Second
)

// outage is one way TestFaultOutage takes the API server away from Ripple
// and brings it back.
type outage struct {
	name string
	// start prepares the outage: Ripple's kubeconfig, the function that
	// begins it and the one that ends it, returning once Ripple could be
	// served again.
	start func(t *testing.T, fc *cluster.Cluster) (kubeconfig string, down, up func())
	// partition cuts Ripple alone: the test still writes meanwhile.
	partition bool
}

// On a cluster of its own, the API server is taken from Ripple for 15 s:
// etcd killed under a running API server, the API server killed, or
// Ripple alone cut from it by a network partition (its connections reset,
// or silently held). A change made the moment the API server is back
// (/readyz answers ok) rolls every Deployment within the settle window
// (1 s) and 2 s more, measured from that moment, once (by the
// Deployments' revisions and Ripple's log): Ripple's informers wait for
// the API server by probing /readyz, not on client-go's watch back-off (up
// to 30 s, jittered: 22.8 s after an API server outage before). A
// partition is judged harder: the change is made in its middle, has not
// rolled when it heals, and rolls within the same time of the heal. The
// API server's outage comes last: it leaves the cluster's own controllers
// backing off.
func TestFaultOutage(t *testing.T) {
	fc := ownCluster(t, "the fault tier's cluster")
	for _, o := range []outage{
		{"partition-reset", partitioned(resetPartition), true},
		{"partition-silent", partitioned(silentPartition), true},
		{"etcd", killed(cluster.Etcd), false},
		{"kube-apiserver", killed(cluster.APIServer), false},
	} {
		t.Run(o.name, func(t *testing.T) { testOutage(t, fc, o) })
	}
}

// killed is an outage of component c: killed with SIGKILL, restarted.
func killed(c cluster.Component) func(*testing.T, *cluster.Cluster) (string, func(), func()) {
	return func(t *testing.T, fc *cluster.Cluster) (string, func(), func()) {
		down := func() {
			if err := fc.Kill(t.Context(), c); err != nil {
				t.Fatal(err)
			}
		}
		up := func() { // Restart returns as /readyz answers ok
			if err := fc.Restart(t.Context(), c); err != nil {
				t.Fatal(err)
			}
		}
		return fc.Kubeconfig, down, up
	}
}

// partitioned is a network partition of Ripple alone: Ripple reaches the
// API server through a proxy the test cuts and heals.
func partitioned(mode partitionMode) func(*testing.T, *cluster.Cluster) (string, func(), func()) {
	return func(t *testing.T, fc *cluster.Cluster) (string, func(), func()) {
		u, err := url.Parse(fc.Config.Host)
		if err != nil {
			t.Fatal(err)
		}
		p := startPartitionProxy(t, u.Host, mode)
		return kubeconfigThrough(t, fc.Kubeconfig, p.Addr()), p.Cut, p.Heal
	}
}

func testOutage(t *testing.T, fc *cluster.Cluster, o outage) {
	cs := kubernetes.NewForConfigOrDie(fc.Config)
	ns := newNamespace(t, cs)
	kubeconfig, down, up := o.start(t, fc)
	r := newRipple(t, ns)
	r.Args[slices.Index(r.Args, "--kubeconfig="+kc.Kubeconfig)] = "--kubeconfig=" + kubeconfig
	r.Start()
	createConfigMap(t, cs, ns, configName, "v1")
	createSecret(t, cs, ns)
	ds := createDeployments(t, cs, ns, spec{configMaps: []string{configName}, secrets: []string{secretName}, annotations: auto()})
	expectRevision(t, cs, r, ns, ds, 1)

	down()
	var sum string
	if o.partition {
		time.Sleep(outageLength / 2)
		sum = setConfigMapValue(t, cs, ns, configName, "during the partition")
		time.Sleep(outageLength / 2)
		if rolled := deploymentsWith(t, cs, ns, ds, envIs(configEnv, sum)); len(rolled) > 0 {
			t.Fatalf("%v rolled to the change made during the partition before it healed: Ripple was not cut off", rolled)
		}
	}
	up()
	back := time.Now()
	if !o.partition {
		sum = setConfigMapValue(t, cs, ns, configName, "after the outage")
	}
	checks := []templateCheck{envIs(configEnv, sum)}
	err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		return deploymentsPass(ctx, cs, ns, ds, checks)
	})
	took := time.Since(back)
	if err != nil {
		t.Fatalf("the change never rolled: %v", err)
	}
	t.Logf("%s: down %s; back -> change rolled to %d Deployments in %s (settle window 1s)",
		o.name, outageLength, len(ds), took.Round(10*time.Millisecond))
	if limit := time.Second + outageCatchUp; took > limit {
		t.Errorf("the change rolled %s after the outage ended, want within %s", took.Round(10*time.Millisecond), limit)
	}
	expectRevision(t, cs, r, ns, ds, 2, checks...)
}
