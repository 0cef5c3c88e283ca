package hostile

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ripple-dev/ripple/api/v1alpha1"
)

// The tenant's change storm: churnConfigs ConfigMaps read by one of its
// Deployments, changed churnChanges times in turn while the other
// namespace's change is made and reloaded.
const (
	churnConfigs = 200
	churnChanges = 1000
)

// viewConfigRollouts is the chart's ClusterRole that aggregates reading
// ConfigRollouts into the built-in view, edit and admin roles.
func viewConfigRollouts(t *testing.T, admin kubernetes.Interface) {
	t.Helper()
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "ripple-hostile-configrollouts-view", Labels: map[string]string{
			"rbac.authorization.k8s.io/aggregate-to-view": "true", "rbac.authorization.k8s.io/aggregate-to-edit": "true",
			"rbac.authorization.k8s.io/aggregate-to-admin": "true",
		}},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"ripple.dev"}, Resources: []string{"configrollouts"}, Verbs: []string{"get", "list", "watch"}}},
	}
	create(t, "the ConfigRollouts view role", admin.RbacV1().ClusterRoles().Create, role)
	t.Cleanup(func() {
		_ = admin.RbacV1().ClusterRoles().Delete(context.WithoutCancel(t.Context()), role.Name, metav1.DeleteOptions{})
	})
}

// plantChurn: the configs of the storm and the Deployment reading them
// all.
func plantChurn(t *testing.T, mallory kubernetes.Interface, ns string) {
	t.Helper()
	tpl := podTemplate("churn")
	for i := range churnConfigs {
		name := fmt.Sprintf("churn-%d", i)
		create(t, "a config of the storm", mallory.CoreV1().ConfigMaps(ns).Create,
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"k": "v0"}})
		tpl.Spec.Containers[0].EnvFrom = append(tpl.Spec.Containers[0].EnvFrom, corev1.EnvFromSource{ConfigMapRef: &corev1.ConfigMapEnvSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: name}}})
	}
	create(t, "the storm's Deployment", mallory.AppsV1().Deployments(ns).Create, deployment("churn", 0, map[string]string{auto: "true"}, tpl))
}

// churn is the storm running: the tenant changes its configs in turn,
// and the namespace's ConfigRollouts are counted every 200 ms.
type churn struct {
	wg           sync.WaitGroup
	stop         context.CancelFunc
	mu           sync.Mutex
	err          error
	most, counts int
}

func startChurn(t *testing.T, mallory, admin kubernetes.Interface, ns string) *churn {
	ctx, cancel := context.WithCancel(t.Context())
	c := &churn{stop: cancel}
	c.wg.Go(func() {
		for i := range churnChanges {
			name := fmt.Sprintf("churn-%d", i%churnConfigs)
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"k": fmt.Sprint("v", i+1)}}
			if _, err := mallory.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
				c.fail(fmt.Errorf("change %d of the storm: %w", i, err))
				return
			}
		}
	})
	c.wg.Go(func() {
		for ctx.Err() == nil {
			if n, err := countConfigRollouts(ctx, admin, ns); err == nil {
				c.mu.Lock()
				c.most, c.counts = max(c.most, n), c.counts+1
				c.mu.Unlock()
			}
			time.Sleep(200 * time.Millisecond)
		}
	})
	return c
}

func (c *churn) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.err = err
}

// checkChurn waits for the storm's changes to be made and for Ripple to
// have made ConfigRollouts of them, then checks that the namespace never
// held more than its bound.
func (c *churn) check(t *testing.T, admin kubernetes.Interface, ns string) {
	t.Helper()
	ctx := t.Context()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		n, err := countConfigRollouts(ctx, admin, ns)
		if err == nil && n >= v1alpha1.DefaultPerNamespace {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the storm's %d changes made %d ConfigRollouts (%v), want the namespace's bound, %d", churnChanges, n, err, v1alpha1.DefaultPerNamespace)
		}
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(2 * time.Second) // Ripple's last changes, if any
	c.stop()
	c.wg.Wait()
	if c.err != nil {
		t.Fatal(c.err)
	}
	n, err := countConfigRollouts(ctx, admin, ns)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("after %d changes of %d configs: %d ConfigRollouts in the tenant's namespace, at most %d in %d counts", churnChanges, churnConfigs, n, c.most, c.counts)
	if c.most > v1alpha1.DefaultPerNamespace || n > v1alpha1.DefaultPerNamespace {
		t.Errorf("the tenant's namespace held up to %d ConfigRollouts (%d at the end), over its bound of %d", c.most, n, v1alpha1.DefaultPerNamespace)
	}
}

// countConfigRollouts counts ns's ConfigRollouts.
func countConfigRollouts(ctx context.Context, c kubernetes.Interface, ns string) (int, error) {
	l, err := listConfigRollouts(ctx, c, ns)
	return len(l.Items), err
}

func listConfigRollouts(ctx context.Context, c kubernetes.Interface, ns string) (v1alpha1.ConfigRolloutList, error) {
	var l v1alpha1.ConfigRolloutList
	raw, err := c.Discovery().RESTClient().Get().AbsPath("/apis/ripple.dev/v1alpha1/namespaces", ns, "configrollouts").DoRaw(ctx)
	if err != nil {
		return l, err
	}
	return l, json.Unmarshal(raw, &l)
}

// changesDelay bounds how long the PIN's change waits for its
// ConfigRollout after the tenant's storm (in a namespace of its own, it
// was 0.1 s): the change controller's work is not yet fair per namespace
// (docs/security.md, "What is not defended").
const changesDelay = 2 * time.Minute

// checkChangesSeen: the viewer of the other namespace sees its changes
// (the PIN's among them), and is refused the tenant's.
func checkChangesSeen(t *testing.T, view kubernetes.Interface, ns, tenant string) []byte {
	t.Helper()
	var l v1alpha1.ConfigRolloutList
	seen, began := false, time.Now()
	for deadline := began.Add(changesDelay); !seen && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		var err error
		if l, err = listConfigRollouts(t.Context(), view, ns); err != nil {
			t.Fatalf("the viewer cannot list its namespace's ConfigRollouts: %v", err)
		}
		for _, cr := range l.Items {
			seen = seen || (cr.Spec.Config.Kind == "Secret" && cr.Spec.Config.Name == pinSecret)
		}
	}
	if !seen {
		t.Errorf("the viewer sees no ConfigRollout of the PIN's change among %d after %s", len(l.Items), changesDelay)
	}
	t.Logf("the PIN's ConfigRollout was there %s after its readers rolled, the tenant's storm over", time.Since(began).Round(100*time.Millisecond))
	if _, err := listConfigRollouts(t.Context(), view, tenant); !apierrors.IsForbidden(err) {
		t.Errorf("the viewer of one namespace lists another's ConfigRollouts: %v, want forbidden", err)
	}
	b, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
