package hostile

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/ripple-dev/ripple/hack/kit"
	"github.com/ripple-dev/ripple/internal/annotation"
	"github.com/ripple-dev/ripple/internal/digest"
	"github.com/ripple-dev/ripple/internal/refs"
)

// The costly-pattern tier's figures, which docs/security.md states.
const (
	// costlyWorkloads is how many Deployments carry the costliest patterns
	// the bounds accept.
	costlyWorkloads = 6
	// longNames is how many ConfigMaps of the longest name the tenant's
	// patterns are matched against.
	longNames = 100
	// bigKeys is how many keys of bigKeyLen bytes the tenant's 1 MiB
	// ConfigMap holds.
	bigKeys, bigKeyLen = 3900, 250
	// patternReloadBound is how soon after its ConfigMap changed a
	// workload in another namespace carries the reload, while the tenant's
	// patterns are matched afresh.
	patternReloadBound = settleWindow + time.Second
	// cpuBound bounds the CPU Ripple spends from the tenant's rewrite until
	// it is idle again: each of the costlyWorkloads, in its reconcile and
	// in the change controller's look, matches afresh at most two budgets
	// of annotation.MatchBudget (about 130 ms each at worst), 3.1 s in
	// all, and the rest is small; 0.7 s is usual.
	cpuBound = 4 * time.Second
)

// A tenant plants the costliest patterns the bounds accept: Deployments
// whose named-reload patterns, matched against 100 ConfigMaps of 253-byte
// names, and whose reload-on-keys patterns, matched against the keys of a
// 1 MiB ConfigMap, are each just within the match budget, and a
// Deployment whose exclude list is over its bound. Then at once it
// rewrites every pattern (so nothing is remembered) and changes the 1 MiB
// ConfigMap, while another namespace's ConfigMap changes: that reload is
// not delayed past its settle window + 1 s, Ripple's CPU and heap stay
// bounded, and the excluded Deployment does not reload.
func TestCostlyPatterns(t *testing.T) {
	admin := clientset(t, kc.Config)
	// The CPU measured is this test's: the namespaces an earlier test
	// leaves terminating (their objects' deletions are events every
	// Ripple of the cluster handles) are gone first.
	waitNoNamespaceTerminating(t, admin)
	home := kit.NewNamespace(t, admin, "ripple-", nil)
	tenant := kit.NewNamespace(t, admin, "costly-", nil)
	victim := kit.NewNamespace(t, admin, "victim-", nil)
	mallory := editor(t, admin, tenant)

	for i := range longNames {
		name := fmt.Sprintf("n%d-", i)
		create(t, "a long-named config", mallory.CoreV1().ConfigMaps(tenant).Create, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: name + strings.Repeat("a", annotation.MaxItemLen-len(name))}, Data: map[string]string{"k": "v"}})
	}
	big := create(t, "the 1 MiB config", mallory.CoreV1().ConfigMaps(tenant).Create, bigConfig("v0"))
	create(t, "an excluded config", mallory.CoreV1().ConfigMaps(tenant).Create,
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "excluded"}, Data: map[string]string{"k": "v0"}})
	names := configNames(t, admin, tenant)
	table := digest.ConfigMapKeys(big)
	for i := range costlyWorkloads {
		name := fmt.Sprintf("costly-%d", i)
		create(t, "a costly Deployment", mallory.AppsV1().Deployments(tenant).Create,
			deployment(name, 0, costlyAnnotations(t, names, table, name, 0), usesConfig(name, "big")))
	}
	excluded := map[string]string{auto: "true", cmExclude: items(annotation.MaxItems+1, "other-%d")}
	create(t, "the excluding Deployment", mallory.AppsV1().Deployments(tenant).Create, deployment("excluding", 0, excluded, usesConfig("excluding", "excluded")))
	victimWorkload(t, admin, victim)

	r := startRipple(t, home)
	baseline := waitBaseline(t, admin, victim, "web")
	for i := range costlyWorkloads {
		waitBaseline(t, admin, tenant, fmt.Sprintf("costly-%d", i))
	}
	before := kit.Scrape(t, r.metrics)
	t.Logf("Ripple took its baselines with %.2f s of CPU, %.0f MiB heap in use",
		before["process_cpu_seconds_total{}"], before["go_memstats_heap_inuse_bytes{}"]/(1<<20))

	// At once: every pattern rewritten, the 1 MiB ConfigMap and the
	// excluded one changed, and the other namespace's ConfigMap changed.
	changed := time.Now()
	var wg sync.WaitGroup
	for i := range costlyWorkloads {
		wg.Go(func() {
			name := fmt.Sprintf("costly-%d", i)
			patch(t, mallory, tenant, name, costlyAnnotations(t, names, table, name, 1))
		})
	}
	wg.Go(func() { update(t, mallory, tenant, bigConfig("v1")) })
	wg.Go(func() {
		update(t, mallory, tenant, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "excluded"}, Data: map[string]string{"k": "v1"}})
	})
	setData(t, admin, victim, "v2")
	reloaded := waitReloaded(t, admin, victim, changed, patternReloadBound, "while the tenant's patterns were matched")
	t.Logf("the other namespace's workload reloaded %s after its change (bound %s)", reloaded.Round(time.Millisecond), patternReloadBound)
	wg.Wait()

	// The tenant's workloads all take the 1 MiB ConfigMap's change (the
	// keys their new pattern selects changed), and Ripple goes idle: every
	// pattern was matched afresh by then.
	for i := range costlyWorkloads {
		waitEnv(t, admin, tenant, fmt.Sprintf("costly-%d", i), "STAKATER_BIG_CONFIGMAP", 30*time.Second)
	}
	cpu := waitIdle(t, r) - time.Duration(before["process_cpu_seconds_total{}"]*float64(time.Second))
	t.Logf("Ripple spent %s of CPU from the tenant's rewrite to its reloads (bound %s)", cpu.Round(time.Millisecond), cpuBound)
	if cpu > cpuBound {
		t.Errorf("Ripple spent %s of CPU on the tenant's patterns, more than %s", cpu, cpuBound)
	}
	checkMemory(t, r, "after the costly patterns")

	// The exclude list over its bound failed closed: no reload, and a
	// Warning naming it.
	checkExcluded(t, admin, tenant)
	web, err := admin.AppsV1().Deployments(victim).Get(t.Context(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if web.Generation != baseline+1 {
		t.Errorf("the other namespace's workload is at generation %d, %d at Ripple's baseline: want one rollout", web.Generation, baseline)
	}
}

// bigConfig is the tenant's 1 MiB ConfigMap "big": bigKeys keys of
// bigKeyLen bytes, ending in their index, whose values are v.
func bigConfig(v string) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "big"}, Data: map[string]string{}}
	for i := range bigKeys {
		suffix := fmt.Sprintf("-%04d", i)
		cm.Data["k"+strings.Repeat("a", bigKeyLen-1-len(suffix))+suffix] = v
	}
	return cm
}

// configNames are the names of the ConfigMaps in ns.
func configNames(t *testing.T, admin kubernetes.Interface, ns string) []string {
	t.Helper()
	list, err := admin.CoreV1().ConfigMaps(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, cm := range list.Items {
		out = append(out, cm.Name)
	}
	return out
}

// costlyAnnotations are the costliest pattern lists the bounds accept
// against names and the keys of table, made distinct by the workload's
// name and gen: as many items of a pattern of four unbounded repeats
// (matched by a backtracker at about 16 ns an instruction and byte) as
// the match budget takes, for the named-reload annotation; for
// reload-on-keys over "big", whose 980,000 bytes of keys leave room for
// one pattern of 8 instructions, the longest such list.
func costlyAnnotations(t *testing.T, names []string, table digest.KeyTable, name string, gen int) map[string]string {
	t.Helper()
	keys := annotation.DefaultKeys("")
	tag := fmt.Sprintf("-%s-%d", name, gen)
	named := costliest(t, func(v string) error {
		p := annotation.Parse(keys, refs.ConfigMap, map[string]string{cmReload: v}, nil)
		if len(p.Invalid) > 0 {
			return p.Invalid[0]
		}
		return p.CheckBudget(names)
	}, ".*a.*a.*a.*a%d"+tag)
	onKeys := costliest(t, func(v string) error {
		spec, err := annotation.ParseKeySpec(keys, map[string]string{reloadOnKeys: "big[" + v + "]"}, nil)
		if err != nil {
			return err
		}
		return spec.CheckBudget(func(yield func(refs.Ref, digest.KeyTable) bool) {
			yield(refs.Ref{Kind: refs.ConfigMap, Name: "big"}, table)
		})
	}, ".*a.*a%d"+tag, fmt.Sprintf(".*%%d%d", gen))
	t.Logf("%s: %d named-reload patterns, key patterns %q", tag, strings.Count(named, ",")+1, onKeys)
	return map[string]string{cmReload: named, reloadOnKeys: "big[" + onKeys + "]", auto: "true"}
}

// costliest is the longest list of items of the first of formats that
// check accepts, for at least one item.
func costliest(t *testing.T, check func(string) error, formats ...string) string {
	t.Helper()
	for _, format := range formats {
		n := 0
		for n < annotation.MaxItems && check(items(n+1, format)) == nil {
			n++
		}
		if n > 0 {
			return items(n, format)
		}
	}
	t.Fatalf("the bounds accept no item of %q", formats)
	return ""
}

// usesConfig is a pod template that reads ConfigMap config whole.
func usesConfig(name, config string) corev1.PodTemplateSpec {
	tpl := podTemplate(name)
	tpl.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: config}}}}
	return tpl
}

// patch sets annotations on the tenant's Deployment ns/name.
func patch(t *testing.T, c kubernetes.Interface, ns, name string, ann map[string]string) {
	t.Helper()
	// A merge patch of the annotations, as kubectl annotate sends: no
	// resourceVersion, so Ripple's and the Deployment controller's writes
	// racing with it (the 1 MiB config changes at the same time) cannot
	// make it conflict.
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": ann}})
	if err != nil {
		t.Error(err)
		return
	}
	if _, err := c.AppsV1().Deployments(ns).Patch(t.Context(), name, types.MergePatchType, body, metav1.PatchOptions{}); err != nil {
		t.Errorf("rewriting %s's patterns: %v", name, err)
	}
}

// update replaces the data of the ConfigMap cm in ns.
func update(t *testing.T, c kubernetes.Interface, ns string, cm *corev1.ConfigMap) {
	t.Helper()
	old, err := c.CoreV1().ConfigMaps(ns).Get(t.Context(), cm.Name, metav1.GetOptions{})
	if err != nil {
		t.Error(err)
		return
	}
	old.Data = cm.Data
	if _, err := c.CoreV1().ConfigMaps(ns).Update(t.Context(), old, metav1.UpdateOptions{}); err != nil {
		t.Errorf("changing ConfigMap %s: %v", cm.Name, err)
	}
}

// waitEnv waits until Deployment ns/name carries the env var env.
func waitEnv(t *testing.T, admin kubernetes.Interface, ns, name, env string, timeout time.Duration) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		d, err := admin.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, e := range d.Spec.Template.Spec.Containers[0].Env {
			if e.Name == env {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("Deployment %s/%s did not take %s within %s: %v", ns, name, env, timeout, err)
	}
}

// waitIdle waits until Ripple spends less than 20 ms of CPU in a second,
// at most 30 s, and returns the CPU it has spent since its start.
func waitIdle(t *testing.T, r *ripple) time.Duration {
	t.Helper()
	cpu := func() time.Duration {
		return time.Duration(kit.Scrape(t, r.metrics)["process_cpu_seconds_total{}"] * float64(time.Second))
	}
	last := cpu()
	for start := time.Now(); time.Since(start) < 30*time.Second; {
		time.Sleep(time.Second)
		now := cpu()
		if now-last < 20*time.Millisecond {
			return now
		}
		last = now
	}
	t.Fatal("Ripple did not go idle within 30s of the tenant's reloads")
	return 0
}

// checkExcluded: the Deployment whose exclude list is over its bound has
// a Warning naming the list, and did not reload on the ConfigMap it reads
// (which the list does not name).
func checkExcluded(t *testing.T, admin kubernetes.Interface, ns string) {
	t.Helper()
	var notes []string
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		notes, err = kit.EventNotes(ctx, admin, ns, kit.EventMatch{Name: "excluding", Reason: "InvalidAnnotation"})
		return len(notes) > 0, err
	})
	if err != nil {
		t.Fatalf("no Warning on the excluding Deployment within 30s: %v", err)
	}
	if !strings.Contains(notes[0], cmExclude) || !strings.Contains(notes[0], "excluding every ConfigMap") {
		t.Errorf("the Warning %q does not name %s and say it excludes every ConfigMap", notes[0], cmExclude)
	}
	d, err := admin.AppsV1().Deployments(ns).Get(t.Context(), "excluding", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range d.Spec.Template.Spec.Containers[0].Env {
		if strings.HasPrefix(e.Name, "STAKATER_") {
			t.Errorf("the excluding Deployment reloaded (%s) past an exclude list over its bound", e.Name)
		}
	}
}

// waitNoNamespaceTerminating waits until no namespace of the cluster is
// being deleted.
func waitNoNamespaceTerminating(t *testing.T, cs kubernetes.Interface) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 250*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		l, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		return err == nil && !slices.ContainsFunc(l.Items, func(ns corev1.Namespace) bool { return ns.Status.Phase == corev1.NamespaceTerminating }), err
	})
	if err != nil {
		t.Fatalf("namespaces of earlier tests are still terminating: %v", err)
	}
}
