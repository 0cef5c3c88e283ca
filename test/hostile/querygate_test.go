package hostile

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/ripple-dev/ripple/hack/kit"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/strategy"
)

// The query gate's test: the cluster's condition, which the tenant's own
// series fail (errors 5 on every pod) and another namespace's series, of
// pods of the same names, would pass (errors 0) if Ripple's query could
// read them; and the always-passing condition the tenant writes.
const (
	canaryQuery   = "ripple.dev/canary-query"
	gateCondition = `min(app_errors{pod=~"$pods"}) < 1`
	tenantsQuery  = `vector(0) < 1`
	gateBake      = 10 * time.Second
)

var (
	gateReaders = []string{"q0", "q1", "q2"}
	gateRef     = refs.Ref{Kind: refs.ConfigMap, Name: "metrics"}
)

// TestQueryGateHoldsTheTenant: a tenant with edit rights cannot set or
// loosen the canary's query, and a query cannot read another namespace's
// series through Ripple. The tenant annotates its config and workloads
// with an always-passing canary-query and canaries its change; the
// cluster's condition fails on the tenant's series, so the change halts
// with RolloutHalted naming the query gate, and only the canary rolls,
// not after the bake either. Every query Ripple asked is bound to the
// tenant's namespace, though the other namespace's series would pass it.
func TestQueryGateHoldsTheTenant(t *testing.T) {
	admin := clientset(t, kc.Config)
	home := kit.NewNamespace(t, admin, "ripple-", nil)
	tenant := kit.NewNamespace(t, admin, "metered-", nil)
	mallory := editor(t, admin, tenant)

	prom := kit.NewPrometheus(t)
	for _, name := range gateReaders {
		pod := name + "-7d4b9c-x2x9q" // the same pod names in both namespaces
		prom.Set(5, "app_errors", "namespace", tenant, "pod", pod)
		prom.Set(0, "app_errors", "namespace", home, "pod", pod)
	}
	plantQueried(t, mallory, tenant)

	startRipple(t, home, "--canary-gates=query", "--prometheus-url="+prom.URL, "--canary-query="+gateCondition,
		"--canary-query-interval=5s", "--canary-bake="+gateBake.String())
	for _, name := range gateReaders {
		waitBaseline(t, admin, tenant, name)
	}
	cm, err := mallory.CoreV1().ConfigMaps(tenant).Get(t.Context(), "metrics", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["k"] = "v2"
	if _, err := mallory.CoreV1().ConfigMaps(tenant).Update(t.Context(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	var halted []string
	err = wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		halted, err = kit.EventNotes(ctx, admin, tenant, kit.EventMatch{Kind: "ConfigMap", Name: "metrics", Reason: "RolloutHalted"})
		return len(halted) > 0, err
	})
	if err != nil {
		t.Fatalf("the tenant's canaried change did not halt within a minute (its always-passing canary-query won?): %v", err)
	}
	haltedAt := time.Now()
	if note := strings.Join(halted, "\n"); !strings.Contains(note, "query gate") || !strings.Contains(note, "app_errors") {
		t.Errorf("RolloutHalted %q does not name the query gate and the cluster's condition", note)
	}

	// A halted change stays halted: nothing rolls past the bake's end.
	time.Sleep(time.Until(haltedAt.Add(gateBake + 5*time.Second)))
	var rolled []string
	for _, name := range gateReaders {
		d, err := admin.AppsV1().Deployments(tenant).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := (strategy.EnvVars{}).Applied(&d.Spec.Template, gateRef); ok {
			rolled = append(rolled, name)
		}
	}
	if len(rolled) != 1 {
		t.Errorf("rolled with the halted change: %v, want the canary alone", rolled)
	}

	asked := prom.Queries()
	if len(asked) == 0 {
		t.Fatal("Ripple asked Prometheus nothing")
	}
	t.Logf("halted: %q; Ripple asked %d queries, the first %q", halted[0], len(asked), asked[0])
	bound := fmt.Sprintf(`namespace="%s"`, tenant)
	for _, q := range asked {
		if !strings.Contains(q, bound) || strings.Contains(q, home) || strings.Contains(q, "vector(0)") {
			t.Errorf("Ripple asked %q: want the cluster's condition bound to %s", q, bound)
		}
	}
}

// plantQueried: the tenant's canaried config, with the always-passing
// query on it and on every workload (object and pod template) that reads
// it.
func plantQueried(t *testing.T, mallory kubernetes.Interface, ns string) {
	t.Helper()
	create(t, "a canaried config", mallory.CoreV1().ConfigMaps(ns).Create, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "metrics", Annotations: map[string]string{"ripple.dev/canary": "1", canaryQuery: tenantsQuery}},
		Data:       map[string]string{"k": "v1"},
	})
	for _, name := range gateReaders {
		tpl := usesConfig(name, "metrics")
		tpl.Annotations = map[string]string{canaryQuery: tenantsQuery}
		// One replica each: a workload scaled to zero runs no pod the
		// change could harm, so it stands complete and no gate is asked.
		create(t, "a queried Deployment", mallory.AppsV1().Deployments(ns).Create,
			deployment(name, 1, map[string]string{auto: "true", canaryQuery: tenantsQuery}, tpl))
	}
}
