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

	"github.com/ripple-dev/ripple/internal/reason"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/utils/ptr"

	"github.com/ripple-dev/ripple/hack/kit"
	"github.com/ripple-dev/ripple/internal/digest"
	"github.com/ripple-dev/ripple/internal/rollout"
)

const (
	// waveWorkloads Deployments share one Secret; at most waveCap of their
	// rollouts may be in progress at once.
	waveWorkloads = 300
	waveCap       = 50
	waveSecret    = "shared"
	waveEnv       = "STAKATER_SHARED_SECRET"
	// stuck is a Deployment whose pods never become Ready (their node
	// selector matches no node, so they are never scheduled), with a progress deadline
	// of a few seconds: its rollout stalls. It sorts before the w*
	// Deployments, so it takes a slot in the first wave.
	stuck = "stuck"
)

// Rollout waves: one Secret change rolls 300 Deployments with
// --max-concurrent-rollouts=50. Sampled from the cluster while it runs,
// never more than 50 of them have a rollout in progress; all 300 end with
// the new hash, each rolled once (Deployment revision 2), each with its
// Reloaded and RolloutComplete Events. A Deployment whose rollout stalls
// (progress deadline exceeded) is reported by a RolloutStalled Event.
func TestRolloutWaves(t *testing.T) {
	t.Parallel()
	cs := kubernetes.NewForConfigOrDie(kc.Config)
	ns := newNamespace(t, cs)
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: waveSecret}, StringData: map[string]string{"token": "v1"}}
	if _, err := cs.CoreV1().Secrets(ns).Create(t.Context(), sec, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	startRipple(t, ns, fmt.Sprintf("--max-concurrent-rollouts=%d", waveCap))
	createWaveDeployments(t, cs, ns)
	began := time.Now()
	waitFor(t, "every Deployment available, with its baseline", func(ctx context.Context) (bool, error) {
		ds, err := cs.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, d := range ds.Items {
			if d.Annotations[appliedAnnotation] == "" || (d.Name != stuck && rollout.Deployment(&d).State != rollout.Complete) {
				return false, nil
			}
		}
		return len(ds.Items) == waveWorkloads+1, nil
	})
	t.Logf("%d Deployments available after %s", waveWorkloads, time.Since(began).Round(time.Second))

	sec.StringData = map[string]string{"token": "v2"}
	sec, err := cs.CoreV1().Secrets(ns).Update(t.Context(), sec, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := digest.Secret(sec)
	changed := time.Now()
	s := sampleInProgress(t, cs, ns, want)
	waitWaveDone(t, cs, ns, want)
	peak, samples := s.stop(t, cs, ns)
	t.Logf("all %d rolled and complete %s after the change; peak %d in progress (%d samples)",
		waveWorkloads, time.Since(changed).Round(time.Second), peak, samples)
	if peak > waveCap {
		t.Errorf("%d rollouts were in progress at once, want at most %d", peak, waveCap)
	}
	checkRevisions(t, cs, ns)
	checkWaveEvents(t, cs, ns)
}

func createWaveDeployments(t *testing.T, cs kubernetes.Interface, ns string) {
	t.Helper()
	create := func(name string, mod func(*appsv1.Deployment)) {
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: auto()},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](1),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
				Template: spec{secrets: []string{waveSecret}}.template(name),
			},
		}
		mod(d)
		if _, err := cs.AppsV1().Deployments(ns).Create(t.Context(), d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	create(stuck, func(d *appsv1.Deployment) {
		d.Spec.ProgressDeadlineSeconds = ptr.To[int32](3)
		d.Spec.Template.Spec.NodeSelector = map[string]string{"test.ripple.dev/no-such-node": "true"}
	})
	for i := range waveWorkloads {
		create(fmt.Sprintf("w%03d", i), func(*appsv1.Deployment) {})
	}
}

// sampler counts, from the cluster, the Deployments that carry the new
// hash and whose rollout is in progress by their status: patched and not
// yet complete. It follows every status change through a watch, as Ripple
// does, so a rollout that completes between two looks is never missed. One
// seen complete or stalled is done, as in Ripple's count: losing a pod later
// (kwok's nodes on a loaded machine) is not a rollout in progress.
type sampler struct {
	cancel   context.CancelFunc
	done     chan struct{}
	progress *kit.WatchProgress
	mu       sync.Mutex
	peak, n  int
}

func sampleInProgress(t *testing.T, cs kubernetes.Interface, ns, want string) *sampler {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	list, err := cs.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rw, err := watchtools.NewRetryWatcherWithContext(ctx, list.ResourceVersion, &toolscache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return cs.AppsV1().Deployments(ns).Watch(ctx, o)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	s := &sampler{cancel: cancel, done: make(chan struct{}), progress: kit.NewWatchProgress(list.ResourceVersion)}
	in, complete := map[string]bool{}, map[string]bool{}
	observe := func(d *appsv1.Deployment) {
		v, _ := envValue(&d.Spec.Template, waveEnv)
		if v != want || complete[d.Name] {
			return
		}
		st := rollout.Deployment(d).State
		// A stalled rollout has freed its slot for good, as a complete one
		// has, even if its status later reads as progressing again.
		complete[d.Name] = st == rollout.Complete || st == rollout.Stalled
		in[d.Name] = st == rollout.Progressing
	}
	for i := range list.Items {
		observe(&list.Items[i])
	}
	go func() {
		defer close(s.done)
		defer rw.Stop()
		for ev := range rw.ResultChan() {
			d, ok := ev.Object.(*appsv1.Deployment)
			if !ok {
				continue
			}
			observe(d)
			n := 0
			for _, p := range in {
				if p {
					n++
				}
			}
			s.mu.Lock()
			s.peak, s.n = max(s.peak, n), s.n+1
			s.mu.Unlock()
			s.progress.Saw(d.ResourceVersion)
		}
		s.progress.Fail(errors.New("the watch of the Deployments ended"))
	}()
	return s
}

// stop ends the sampling once the watch has delivered every Deployment of
// ns as the API server has it now, and returns the peak and the number of
// samples.
func (s *sampler) stop(t *testing.T, cs kubernetes.Interface, ns string) (peak, samples int) {
	t.Helper()
	list, err := cs.AppsV1().Deployments(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) > 0 {
		// The watch delivers in order: once it has the latest Deployment's
		// version, it has every write before.
		latest := slices.MaxFunc(list.Items, func(a, b appsv1.Deployment) int {
			c, _ := resourceversion.CompareResourceVersion(a.ResourceVersion, b.ResourceVersion)
			return c
		})
		ctx, cancel := context.WithTimeout(t.Context(), watchCatchUp)
		defer cancel()
		if err := s.progress.Reached(ctx, latest.ResourceVersion); err != nil {
			t.Fatalf("the watch of the Deployments: %v", err)
		}
	}
	s.cancel()
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peak, s.n
}

// waitWaveDone waits until every w* Deployment has the new hash and its
// rollout is complete.
func waitWaveDone(t *testing.T, cs kubernetes.Interface, ns, want string) {
	t.Helper()
	var done int
	err := wait.PollUntilContextTimeout(t.Context(), time.Second, 4*time.Minute, true, func(ctx context.Context) (bool, error) {
		ds, err := cs.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		done = 0
		for _, d := range ds.Items {
			v, _ := envValue(&d.Spec.Template, waveEnv)
			if d.Name != stuck && v == want && rollout.Deployment(&d).State == rollout.Complete {
				done++
			}
		}
		return done == waveWorkloads, nil
	})
	if err != nil {
		t.Fatalf("%d of %d Deployments rolled with %s=%s and complete: %v", done, waveWorkloads, waveEnv, want, err)
	}
}

// checkRevisions checks each w* Deployment rolled exactly once: revision 2.
func checkRevisions(t *testing.T, cs kubernetes.Interface, ns string) {
	t.Helper()
	ds, err := cs.AppsV1().Deployments(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range ds.Items {
		if rev := d.Annotations["deployment.kubernetes.io/revision"]; d.Name != stuck && rev != "2" {
			t.Errorf("Deployment %s is at revision %s, want 2 (one rollout)", d.Name, rev)
		}
	}
}

// checkWaveEvents waits for every w* Deployment's Reloaded and
// RolloutComplete Events and the stuck one's RolloutStalled.
func checkWaveEvents(t *testing.T, cs kubernetes.Interface, ns string) {
	t.Helper()
	var counts map[string]map[string]int
	// The Events trail the rollouts: Ripple writes them one at a time as
	// the API server takes them, which on a busy 2-core machine is a few a
	// second, so a minute after the last rollout a hundred or more may
	// still be on their way. Lost is an Event that never comes: the wait
	// ends when none has come for eventStall.
	const eventStall = 30 * time.Second
	seen, progressed := 0, time.Now()
	err := wait.PollUntilContextCancel(t.Context(), time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := cs.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		counts = map[string]map[string]int{}
		for _, e := range list.Items {
			if e.Regarding.Kind == "Deployment" {
				if counts[e.Reason] == nil {
					counts[e.Reason] = map[string]int{}
				}
				counts[e.Reason][e.Regarding.Name]++
			}
		}
		if len(list.Items) > seen {
			seen, progressed = len(list.Items), time.Now()
		}
		done := len(counts[string(reason.Reloaded)]) == waveWorkloads+1 &&
			len(counts[string(reason.RolloutComplete)]) == waveWorkloads && counts[string(reason.RolloutStalled)][stuck] == 1
		if !done && time.Since(progressed) > eventStall {
			return false, fmt.Errorf("no Event came for %s", eventStall)
		}
		return done, nil
	})
	if err != nil {
		t.Errorf("Events: %d Deployments Reloaded (want %d), %d RolloutComplete (want %d), %s RolloutStalled %d (want 1): %v",
			len(counts[string(reason.Reloaded)]), waveWorkloads+1, len(counts[string(reason.RolloutComplete)]), waveWorkloads,
			stuck, counts[string(reason.RolloutStalled)][stuck], err)
	}
	notes, _ := kit.EventNotes(t.Context(), cs, ns, kit.EventMatch{Name: stuck, Reason: string(reason.RolloutStalled)})
	if len(notes) != 1 || !strings.Contains(notes[0], "progress deadline exceeded") {
		t.Errorf("RolloutStalled of %s: %q, want one naming the progress deadline", stuck, notes)
	}
}
