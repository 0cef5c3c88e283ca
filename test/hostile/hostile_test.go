package hostile

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/ripple-dev/ripple/hack/kit"
)

// The tier's bounds, which docs/security.md states.
const (
	// settleWindow is Ripple's default --settle-window.
	settleWindow = time.Second
	// reloadBound is how soon after its ConfigMap changed a workload in
	// another namespace carries the reload.
	reloadBound = settleWindow + 2*time.Second
	// eventBound is how soon after the change that workload's Reloaded
	// Event is recorded, while the tenant's Warnings fill Ripple's Event
	// queue (at 100 Events a second, 30 s of them).
	eventBound = reloadBound + 2*time.Second
	// memoryBound bounds Ripple's resident memory, and separately its
	// heap in use, with every hostile object in its cache. The patterns
	// of three such Deployments took Ripple to 1 GiB before issue 33.
	memoryBound = 128 << 20
	// floods is how many of the tenant's Deployments carry 100 invalid
	// patterns each: six Warnings each per reconcile (five and "... and
	// 95 more"), 1,800 at Ripple's start.
	floods = 300
	// maxWarnings is the most InvalidAnnotation Events of one workload.
	maxWarnings = 6
	// maxNote bounds one Warning's note: a message is cut at 1,024 bytes.
	maxNote = 1100
)

// A user with the built-in `edit` role in its namespace tries each attack
// of issue 33 at once, before Ripple starts; Ripple runs cluster-wide with
// a shared cluster's settings. The same user also edits a second
// namespace whose Namespace object says "manual" (tighten-only's test),
// and a user with the built-in `view` role in the other namespace tries
// to recover a Secret's PIN from what Ripple wrote there.
// The re-create record that Ripple's own namespace admin forges is
// test/integration's TestForgedJobRecordCreatesNothing.
func TestHostileTenant(t *testing.T) {
	admin := clientset(t, kc.Config)
	home := kit.NewNamespace(t, admin, "ripple-", nil)
	tenant := kit.NewNamespace(t, admin, "tenant-", nil)
	victim := kit.NewNamespace(t, admin, "victim-", nil)
	gated := governed(t, admin)
	// The change storm has a namespace of the tenant's own, so that its
	// Events do not crowd the Warnings checked in the first.
	storms := kit.NewNamespace(t, admin, "storm-", nil)
	canaried := kit.NewNamespace(t, admin, "canaried-", nil)
	bystander := kit.NewNamespace(t, admin, "bystander-", nil)
	mallory := editor(t, admin, tenant, gated, storms, canaried)
	view := viewer(t, admin, victim)

	refused(t, mallory, home, victim)
	plantPatterns(t, mallory, tenant)
	plantFlood(t, mallory, tenant)
	plantBatch(t, mallory, tenant)
	victimWorkload(t, admin, victim)
	plantPIN(t, admin, victim)
	plantLoosened(t, mallory, gated)
	plantChurn(t, mallory, storms)
	plantCanaries(t, mallory, canaried)
	victimWorkload(t, admin, bystander)
	viewConfigRollouts(t, admin)

	r := startRipple(t, home)
	t.Logf("Ripple's caches synced %s after its start, with the hostile objects present", r.started.Round(time.Millisecond))
	baseline := waitBaseline(t, admin, victim, "web")
	checkMemory(t, r, "after its start")

	changed := time.Now()
	setData(t, admin, victim, "v2")
	reloaded := waitReloaded(t, admin, victim, changed, reloadBound, "(settle window + 2s)")
	t.Logf("the other namespace's workload reloaded %s after its change", reloaded.Round(time.Millisecond))
	recorded := waitVictimEvent(t, admin, victim, changed)
	t.Logf("its Reloaded Event was recorded %s after its change", recorded.Round(time.Millisecond))
	// The Event did not come after the tenant's: some of the tenant's
	// workloads still wait for theirs, so it was recorded in turn with
	// them, where a FIFO queue kept it behind all of theirs.
	if warned := warnedFloods(t, admin, tenant); warned >= floods {
		t.Errorf("all %d flood workloads had their Warnings before the other namespace's Event: the tier did not flood the queue", warned)
	}
	checkMemory(t, r, "after the reload")
	checkCanaryStorm(t, mallory, admin, canaried, bystander)
	checkMemory(t, r, "after the tenant's canaried changes")
	storm := startChurn(t, mallory, admin, storms)
	storm.check(t, admin, storms)
	checkMemory(t, r, "after the tenant's change storm")

	checkOracle(t, admin, view, victim, home, tenant)
	checkLoosened(t, mallory, admin, gated)

	checkPendingJobs(t, admin, tenant)
	checkWarnings(t, admin, tenant)
	checkMemory(t, r, "with the tenant's Warnings recorded")
	checkNothingOutside(t, admin, home, tenant, victim, baseline)
}

// refused: with edit rights in its own namespace only, the tenant cannot
// write a re-create record in Ripple's namespace, create a Job in
// kube-system, or touch the other namespace.
func refused(t *testing.T, mallory kubernetes.Interface, home, victim string) {
	t.Helper()
	ctx := t.Context()
	_, err := mallory.CoreV1().ConfigMaps(home).Create(ctx, forgedRecord(t, home), metav1.CreateOptions{})
	expectForbidden(t, "writes a re-create record in Ripple's namespace", err)
	_, err = mallory.BatchV1().Jobs("kube-system").Create(ctx, hostileJob(), metav1.CreateOptions{})
	expectForbidden(t, "creates a Job in kube-system", err)
	_, err = mallory.CoreV1().ConfigMaps(victim).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
	expectForbidden(t, "writes in another namespace", err)
}

// plantPatterns: the patterns of the report, on Deployments (replicas 0
// is enough) whose values are near the 256 KiB limit of a workload's
// annotations: three with one pattern with a huge compiled program, one
// of 30,000 small patterns, one of thousands of items with huge compiled
// programs and of reload-on-keys patterns; and configs for them to be
// matched against.
func plantPatterns(t *testing.T, mallory kubernetes.Interface, ns string) {
	t.Helper()
	for i := range 20 {
		create(t, "a config", mallory.CoreV1().ConfigMaps(ns).Create,
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cfg-%d", i)}, Data: map[string]string{"k": "v"}})
	}
	huge := strings.Repeat("(a{30}b{30}){30}", 200<<10/16)
	values := []map[string]string{
		{cmReload: huge}, {cmReload: huge + "x"}, {cmReload: huge + "y"},
		{secretReload: items(30_000, "c%d.*")},
		{cmReload: items(150<<10/20, "(a{30}b{30}){30}%d"), reloadOnKeys: "cfg-1[" + items(30<<10/20, "(k{30}j{30}){30}%d") + "]"},
	}
	for i, ann := range values {
		name := fmt.Sprintf("patterns-%d", i)
		ann[auto] = "true"
		tpl := podTemplate(name)
		tpl.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "cfg-1"}}}}
		create(t, "a Deployment of patterns", mallory.AppsV1().Deployments(ns).Create, deployment(name, 0, ann, tpl))
	}
}

// plantFlood: the Warning flood, floods Deployments with 100 distinct
// invalid patterns each, and three with thousands of invalid items and an
// exclude list of 20,000 names.
func plantFlood(t *testing.T, mallory kubernetes.Interface, ns string) {
	t.Helper()
	for i := range floods {
		name := fmt.Sprintf("flood-%d", i)
		ann := map[string]string{cmReload: items(100, "(bad-"+name+"-%d")}
		create(t, "a flood Deployment", mallory.AppsV1().Deployments(ns).Create, deployment(name, 0, ann, podTemplate(name)))
	}
	for i := range 3 {
		name := fmt.Sprintf("exclude-%d", i)
		ann := map[string]string{secretReload: items(5000, "(%d"), cmExclude: items(20_000, "x%d"), auto: "true"}
		create(t, "an exclude Deployment", mallory.AppsV1().Deployments(ns).Create, deployment(name, 0, ann, podTemplate(name)))
	}
}

// plantBatch: a re-create record forged in the tenant's own namespace
// (Ripple reads records only in its own), and CronJobs whose pending-job
// annotation holds a privileged pod template (the format of earlier
// Ripples) or smuggles an environment variable in.
func plantBatch(t *testing.T, mallory kubernetes.Interface, ns string) {
	t.Helper()
	create(t, "a forged record", mallory.CoreV1().ConfigMaps(ns).Create, forgedRecord(t, ns))
	evil := privileged()
	evil.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "STAKATER_CFG_1_CONFIGMAP", Value: "abc"}}
	b, err := json.Marshal(evil)
	if err != nil {
		t.Fatal(err)
	}
	create(t, "a CronJob", mallory.BatchV1().CronJobs(ns).Create, cronJob("pending-privileged", map[string]string{pendingJob: string(b)}))
	create(t, "a CronJob", mallory.BatchV1().CronJobs(ns).Create,
		cronJob("pending-smuggle", map[string]string{pendingJob: `{"env":{"app":{"LD_PRELOAD":"/evil.so"}}}`}))
}

// victimWorkload: in another namespace, a Deployment that reloads on its
// ConfigMap "app".
func victimWorkload(t *testing.T, admin kubernetes.Interface, ns string) {
	t.Helper()
	create(t, "the victim's config", admin.CoreV1().ConfigMaps(ns).Create,
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app"}, Data: map[string]string{"k": "v1"}})
	tpl := podTemplate("web")
	tpl.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: "app"}}}}
	create(t, "the victim's Deployment", admin.AppsV1().Deployments(ns).Create, deployment("web", 1, map[string]string{auto: "true"}, tpl))
}

// waitBaseline waits until Ripple has seen Deployment ns/name (its
// applied record): a change before that is its first sight, a baseline.
// It returns the Deployment's generation then.
func waitBaseline(t *testing.T, admin kubernetes.Interface, ns, name string) int64 {
	t.Helper()
	var generation int64
	err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		d, err := admin.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		generation = d.Generation
		return d.Annotations["ripple.dev/applied"] != "", nil
	})
	if err != nil {
		t.Fatalf("Ripple did not record its baseline of Deployment %s/%s within 10s: %v", ns, name, err)
	}
	return generation
}

func setData(t *testing.T, admin kubernetes.Interface, ns, v string) {
	t.Helper()
	cm, err := admin.CoreV1().ConfigMaps(ns).Get(t.Context(), "app", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["k"] = v
	if _, err := admin.CoreV1().ConfigMaps(ns).Update(t.Context(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitReloaded waits, at most bound after changed, until the victim's
// Deployment carries Reloader's env var of its ConfigMap, and returns when
// it did; while says what the tenant did meanwhile.
func waitReloaded(t *testing.T, admin kubernetes.Interface, ns string, changed time.Time, bound time.Duration, while string) time.Duration {
	t.Helper()
	for {
		d, err := admin.AppsV1().Deployments(ns).Get(t.Context(), "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range d.Spec.Template.Spec.Containers[0].Env {
			if e.Name == "STAKATER_APP_CONFIGMAP" {
				return time.Since(changed)
			}
		}
		if time.Since(changed) > bound {
			t.Fatalf("the other namespace's workload did not reload within %s of its change, %s", bound, while)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitVictimEvent waits, at most eventBound after changed, for the
// victim's Reloaded Event.
func waitVictimEvent(t *testing.T, admin kubernetes.Interface, ns string, changed time.Time) time.Duration {
	t.Helper()
	for {
		notes, err := kit.EventNotes(t.Context(), admin, ns, kit.EventMatch{Kind: "Deployment", Name: "web", Reason: "Reloaded"})
		if err != nil {
			t.Fatal(err)
		}
		if len(notes) > 0 {
			return time.Since(changed)
		}
		if time.Since(changed) > eventBound {
			t.Fatalf("the other namespace's Reloaded Event was not recorded within %s of its change", eventBound)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// invalidNotes are the notes of the InvalidAnnotation Events in ns, by
// workload.
func invalidNotes(ctx context.Context, admin kubernetes.Interface, ns string) (map[string][]string, error) {
	list, err := admin.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for _, e := range list.Items {
		if e.Reason == "InvalidAnnotation" {
			out[e.Regarding.Name] = append(out[e.Regarding.Name], e.Note)
		}
	}
	return out, nil
}

// warnedFloods is how many flood workloads have a Warning recorded.
func warnedFloods(t *testing.T, admin kubernetes.Interface, ns string) int {
	t.Helper()
	notes, err := invalidNotes(t.Context(), admin, ns)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for name := range notes {
		if strings.HasPrefix(name, "flood-") {
			n++
		}
	}
	return n
}

// checkWarnings waits until every hostile workload has its Warnings, and
// checks each has at most maxWarnings short ones, naming the annotation.
func checkWarnings(t *testing.T, admin kubernetes.Interface, ns string) {
	t.Helper()
	want := map[string]string{}
	for i := range floods {
		want[fmt.Sprintf("flood-%d", i)] = cmReload
	}
	for i := range 3 {
		want[fmt.Sprintf("patterns-%d", i)] = cmReload
		want[fmt.Sprintf("exclude-%d", i)] = cmExclude
	}
	want["patterns-3"], want["patterns-4"] = secretReload, reloadOnKeys
	var notes map[string][]string
	// 1,800 Events at 100 a second, and the correlator's writes.
	err := wait.PollUntilContextTimeout(t.Context(), time.Second, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		notes, err = invalidNotes(ctx, admin, ns)
		for name := range want {
			if len(notes[name]) == 0 {
				return false, err
			}
		}
		return true, err
	})
	if err != nil {
		t.Fatalf("the tenant's workloads did not all get their Warnings: %d of %d did (%v)", len(notes), len(want), err)
	}
	for name, key := range want {
		got := notes[name]
		if len(got) > maxWarnings || !strings.Contains(strings.Join(got, "\n"), key) {
			t.Errorf("%s: %d Warnings, want at most %d and one naming %s: %.300q", name, len(got), maxWarnings, key, got)
		}
		for _, n := range got {
			if len(n) > maxNote {
				t.Errorf("%s: a Warning of %d bytes, more than %d", name, len(n), maxNote)
			}
		}
	}
}

// checkPendingJobs: the pending-job annotation with a privileged pod
// starts a Job of the CronJob's own template, and the one that smuggles
// an environment variable in starts none and is a Warning naming it.
func checkPendingJobs(t *testing.T, admin kubernetes.Interface, ns string) {
	t.Helper()
	var smuggle []string
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		smuggle, err = kit.EventNotes(ctx, admin, ns, kit.EventMatch{Name: "pending-smuggle", Reason: "InvalidAnnotation"})
		return len(smuggle) > 0 && len(jobsOf(t, admin, ns, "pending-privileged")) > 0, err
	})
	if err != nil {
		t.Fatalf("Ripple did not act on the pending-job annotations within 30s: %v", err)
	}
	if !strings.Contains(smuggle[0], pendingJob) {
		t.Errorf("the Warning %q does not name %s", smuggle[0], pendingJob)
	}
	if jobs := jobsOf(t, admin, ns, "pending-smuggle"); len(jobs) > 0 {
		t.Errorf("a smuggled pending-job annotation started Job %s", jobs[0])
	}
}

// jobsOf are the names of the Jobs in ns that cronJob owns.
func jobsOf(t *testing.T, admin kubernetes.Interface, ns, cronJob string) []string {
	t.Helper()
	list, err := admin.BatchV1().Jobs(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, j := range list.Items {
		for _, o := range j.OwnerReferences {
			if o.Kind == "CronJob" && o.Name == cronJob {
				out = append(out, j.Name)
			}
		}
	}
	return out
}

// checkNothingOutside: the only Job is the privileged CronJob's, of its
// own template, in the tenant's namespace; no pod anywhere is privileged
// or shares the host's PIDs; Ripple's namespace holds no re-create
// record; the other namespace's workload rolled once.
func checkNothingOutside(t *testing.T, admin kubernetes.Interface, home, tenant, victim string, baseline int64) {
	t.Helper()
	ctx := t.Context()
	jobs, err := admin.BatchV1().Jobs("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs.Items {
		spec := j.Spec.Template.Spec
		if j.Namespace != tenant || len(j.OwnerReferences) == 0 || j.OwnerReferences[0].Name != "pending-privileged" {
			t.Errorf("Job %s/%s exists: no Job but the CronJob's own may", j.Namespace, j.Name)
		}
		if spec.HostPID || spec.Containers[0].SecurityContext != nil || spec.Containers[0].Image != "registry.invalid/app:1" {
			t.Errorf("Job %s/%s took the annotation's pod: hostPID %v, securityContext %v, image %s",
				j.Namespace, j.Name, spec.HostPID, spec.Containers[0].SecurityContext, spec.Containers[0].Image)
		}
	}
	pods, err := admin.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.Spec.HostPID || p.Spec.Containers[0].SecurityContext != nil {
			t.Errorf("pod %s/%s is privileged or shares the host's PIDs", p.Namespace, p.Name)
		}
	}
	records, err := admin.CoreV1().ConfigMaps(home).List(ctx, metav1.ListOptions{LabelSelector: recreateJob})
	if err != nil {
		t.Fatal(err)
	}
	if len(records.Items) > 0 {
		t.Errorf("Ripple's namespace holds re-create record %s", records.Items[0].Name)
	}
	// Its spec was written once since Ripple's baseline: the reload.
	web, err := admin.AppsV1().Deployments(victim).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if web.Generation != baseline+1 {
		t.Errorf("the other namespace's workload is at generation %d, %d at Ripple's baseline: want one rollout", web.Generation, baseline)
	}
}

// checkMemory fails when Ripple's resident memory or heap in use is over
// memoryBound.
func checkMemory(t *testing.T, r *ripple, when string) {
	t.Helper()
	m := kit.Scrape(t, r.metrics)
	rss, heap := m["process_resident_memory_bytes{}"], m["go_memstats_heap_inuse_bytes{}"]
	t.Logf("Ripple's memory %s: %.0f MiB resident, %.0f MiB heap in use", when, rss/(1<<20), heap/(1<<20))
	if rss == 0 || heap == 0 {
		t.Fatalf("no memory metrics in Ripple's /metrics")
	}
	if rss > memoryBound || heap > memoryBound {
		t.Errorf("Ripple's memory %s is over %d MiB", when, memoryBound>>20)
	}
}
