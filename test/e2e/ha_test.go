package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/ripple-dev/ripple/internal/digest"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/strategy"
)

// haWorkloads is how many Deployments (each with a ConfigMap of its own)
// the failover test changes in one burst.
const haWorkloads = 50

// Two Ripple replicas share a Lease. The leader is killed with SIGKILL in
// the middle of a burst of one change to each of 50 ConfigMaps; once the
// standby has taken over, every Deployment carries its final hash and was
// rolled exactly once (one new ReplicaSet each): nothing lost, nothing
// twice. Then the new leader is stopped with SIGTERM and the first replica,
// back as a standby, takes over in under two seconds.
func TestHAFailoverDuringBurst(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	cs := kubernetes.NewForConfigOrDie(kc.Config)
	ns := newNamespace(t, cs)
	const lease = "ripple-ha"
	flags := []string{
		"--leader-elect", "--leader-election-namespace=" + ns, "--leader-election-id=" + lease,
		// Short, so that a SIGKILL costs seconds rather than the default 15.
		"--leader-election-lease-duration=4s", "--leader-election-renew-deadline=3s", "--leader-election-retry-period=1s",
	}
	a := newRipple(t, ns, flags...)
	a.Start() // the only candidate: it leads
	b := newRipple(t, ns, flags...)
	b.Launch()
	waitLog(t, b, "Attempting to acquire leader lease")

	uids := map[string]types.UID{}
	for i := range haWorkloads {
		name := fmt.Sprintf("w%02d", i)
		createConfigMap(t, cs, ns, name, "v1")
		d, err := cs.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: auto()},
			Spec: appsv1.DeploymentSpec{
				// No pods: the Deployment controller still makes one
				// ReplicaSet per template, which is what is counted.
				Replicas: ptr.To[int32](0),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
				Template: spec{configMaps: []string{name}}.template(name),
			},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		uids[name] = d.UID
	}
	waitFor(t, "a baseline and one ReplicaSet on every Deployment", func(ctx context.Context) (bool, error) {
		for name, uid := range uids {
			d, err := cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil || d.Annotations["ripple.dev/applied"] == "" || len(replicaSets(t, cs, ns, uid)) != 1 {
				return false, err
			}
		}
		return true, nil
	})

	// The burst: one change per ConfigMap, with the leader killed halfway.
	want := map[string]string{}
	var wg sync.WaitGroup
	var mu sync.Mutex
	for i := range haWorkloads {
		name := fmt.Sprintf("w%02d", i)
		if i == haWorkloads/2 {
			wg.Wait()
			a.Kill()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Data: map[string]string{"VALUE": "v2"}}
			if _, err := cs.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			want[name] = digest.ConfigMap(cm)
			mu.Unlock()
		}()
	}
	wg.Wait()
	waitLog(t, b, "Successfully acquired lease")

	st := strategy.EnvVars{}
	waitFor(t, "every Deployment to carry its final hash", func(ctx context.Context) (bool, error) {
		for name, sum := range want {
			d, err := cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if got, ok := st.Applied(&d.Spec.Template, refs.Ref{Kind: refs.ConfigMap, Name: name}); !ok || got != sum {
				return false, nil
			}
		}
		return true, nil
	})
	waitFor(t, "a second ReplicaSet of every Deployment", func(context.Context) (bool, error) {
		for _, uid := range uids {
			if len(replicaSets(t, cs, ns, uid)) < 2 {
				return false, nil
			}
		}
		return true, nil
	})
	// A duplicate rollout would come within a settle window or two; give it
	// time to show, then count.
	time.Sleep(3 * time.Second)
	for name, uid := range uids {
		if n := len(replicaSets(t, cs, ns, uid)); n != 2 {
			t.Errorf("Deployment %s has %d ReplicaSets, want 2: one rollout for one change", name, n)
		}
	}
	// The standby acted only once it led.
	out := b.Out.From(b.Mark)
	if i, j := strings.Index(out, "Successfully acquired lease"), strings.Index(out, "\treloaded\t"); j >= 0 && j < i {
		t.Errorf("the standby reloaded before it led:\n%s", out[:i])
	}

	// SIGTERM of the leader (now b): the first replica, restarted as a
	// standby, takes over in under two seconds because b releases the Lease.
	a.Launch()
	waitLog(t, a, "Attempting to acquire leader lease")
	held := leaseHolder(t, cs, ns, lease)
	if held == "" {
		t.Fatal("the Lease has no holder")
	}
	stopped := time.Now()
	exited := make(chan struct{})
	go func() { b.Stop(); close(exited) }() // SIGTERM; fails the test unless b exits cleanly
	var took time.Duration
	waitFor(t, "the standby to take the Lease", func(ctx context.Context) (bool, error) {
		if h := leaseHolder(t, cs, ns, lease); h != "" && h != held {
			took = time.Since(stopped)
			return true, nil
		}
		return false, nil
	})
	t.Logf("SIGTERM handover took %s", took)
	if took >= 2*time.Second {
		t.Errorf("the standby took the Lease %s after the leader's SIGTERM, want under 2s", took)
	}
	<-exited
	a.waitWorkers()

	// The new leader acts: one more change, one more rollout.
	sum := setConfigMapValue(t, cs, ns, "w00", "v3")
	waitFor(t, "the new leader to roll w00", func(ctx context.Context) (bool, error) {
		d, err := cs.AppsV1().Deployments(ns).Get(ctx, "w00", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		got, ok := st.Applied(&d.Spec.Template, refs.Ref{Kind: refs.ConfigMap, Name: "w00"})
		return ok && got == sum, nil
	})
	waitFor(t, "w00's third ReplicaSet", func(context.Context) (bool, error) {
		return len(replicaSets(t, cs, ns, uids["w00"])) == 3, nil
	})
}

func leaseHolder(t *testing.T, cs kubernetes.Interface, ns, name string) string {
	t.Helper()
	l, err := cs.CoordinationV1().Leases(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	return ptr.Deref(l.Spec.HolderIdentity, "")
}
