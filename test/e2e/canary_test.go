package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/api/v1alpha1"
	"github.com/ripple-dev/ripple/internal/canary"
	"github.com/ripple-dev/ripple/internal/digest"
	"github.com/ripple-dev/ripple/internal/explain"
	"github.com/ripple-dev/ripple/internal/reason"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/rollout"
	ripplewl "github.com/ripple-dev/ripple/internal/workload"
)

const (
	// canaryFleet Deployments share the ConfigMap canaryConfig, marked to
	// canary its changes on one workload.
	canaryFleet  = 50
	canaryConfig = "shared"
	canaryEnv    = "STAKATER_SHARED_CONFIGMAP"
	// canaryDeadline is the Deployments' progress deadline, in seconds.
	canaryDeadline = 10
)

// A bad change of a ConfigMap shared by 50 Deployments, canaried on one:
// a ResourceQuota lets no new pod start, so the canary's rollout stalls at
// its progress deadline. The change halts there (a RolloutHalted Event on
// the ConfigMap within 5 s of the Deployment controller marking the
// canary past its deadline), no other
// Deployment is written for two minutes after the change, a kill -9 of
// Ripple during the halt rolls nothing more, the namespace's owner (every
// right in it) can neither mark the halt passed nor delete it under the
// chart's write policy, and each held Deployment is told why. The fix (quota lifted, data changed again) rolls all 50, the
// held ones exactly once.
func TestCanaryHaltsABadChange(t *testing.T) {
	t.Parallel()
	cs := kubernetes.NewForConfigOrDie(kc.Config)
	ns := newNamespace(t, cs)
	cm := createCanaryFleet(t, cs, ns, canaryFleet, "5s")
	r := newRipple(t, ns)
	r.Env = []string{"POD_NAMESPACE=" + ns, "RELOADER_NAMESPACE=" + ns} // its records and settings, for explain
	r.Start()
	waitFleetBaseline(t, cs, ns, "", canaryFleet)

	quota := blockNewPods(t, cs, ns, canaryFleet)
	cm = updateConfig(t, cs, cm, "v2")
	changed := time.Now()
	bad := digest.ConfigMap(cm)

	halt := waitEvent(t, cs, ns, "ConfigMap", canaryConfig, reason.RolloutHalted)
	// Ripple halts on the canary's stall, which the Deployment controller
	// marks when the progress deadline passes (on a loaded machine, well
	// after it): the halt follows that mark, and comes within 5 s of it.
	d00, err := cs.AppsV1().Deployments(ns).Get(t.Context(), "d00", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var stalled time.Time
	for _, c := range d00.Status.Conditions {
		if c.Type == appsv1.DeploymentProgressing && c.Reason == "ProgressDeadlineExceeded" {
			stalled = c.LastTransitionTime.Time
		}
	}
	switch took := eventTime(halt).Sub(stalled); {
	case stalled.IsZero():
		t.Errorf("the change halted, but the canary d00 is not marked past its progress deadline: %+v", d00.Status.Conditions)
	case took < -time.Second: // the condition's time is to the second
		t.Errorf("RolloutHalted came %s before the canary was marked past its progress deadline", -took)
	case took > 5*time.Second:
		t.Errorf("RolloutHalted came %s after the canary was marked past its progress deadline, want at most 5s", took)
	}
	t.Logf("halted %s after the change: %s", eventTime(halt).Sub(changed).Round(100*time.Millisecond), halt.Note)

	r.Kill() // during the halt: the restart must find it
	r.Start()
	checkOnlyRippleWrites(t, cs, ns)
	time.Sleep(time.Until(changed.Add(2 * time.Minute)))
	rolled := fleetWith(t, cs, ns, canaryEnv, bad)
	if len(rolled) != 1 || rolled[0] != "d00" {
		t.Fatalf("2 minutes after the bad change, the Deployments written with it are %v, want only the canary d00", rolled)
	}
	for i := 1; i < canaryFleet; i++ {
		if notes := eventNotes(t, cs, ns, "Deployment", fmt.Sprintf("d%02d", i), reason.RolloutHalted); len(notes) == 0 {
			t.Errorf("Deployment d%02d holds the change without a RolloutHalted event", i)
		}
	}
	out, err := runCommand(t, ns, "explain", "deployment/d07", "-o", "json")
	var report explain.Report
	if err != nil || json.Unmarshal([]byte(out), &report) != nil || report.Reason != reason.RolloutHalted ||
		!strings.Contains(report.Verdict, `failed on its canary: Deployment "d00" stalled`) {
		t.Errorf("ripple explain of a held Deployment (%v):\n%s\nwant the halt as its verdict, naming the canary", err, out)
	}
	out, err = runCommand(t, ns, "explain", "configmap/"+canaryConfig, "-o", "json")
	var change explain.Change
	if err != nil || json.Unmarshal([]byte(out), &change) != nil || change.Canary == nil || change.Canary.Phase != canary.Halted ||
		len(change.Workloads) != canaryFleet || countReason(change, reason.RolloutHalted) != canaryFleet-1 {
		t.Errorf("ripple explain of the config (%v):\n%s\nwant the halt and %d workloads, %d held", err, out, canaryFleet, canaryFleet-1)
	}

	if err := cs.CoreV1().ResourceQuotas(ns).Delete(t.Context(), quota, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	cm = updateConfig(t, cs, cm, "v3")
	fixed := digest.ConfigMap(cm)
	waitFleetRolled(t, cs, ns, fixed, canaryFleet, 3*time.Minute)
	checkFleetRevisions(t, cs, ns, map[string]string{"d00": "3"})
}

// A halted change continued by `ripple resume`, as an operator would: the
// config gets CanaryPassed, and the held Deployments roll the halted data
// once (the quota lifted). The resume names that change: when the same
// data comes back later (A, B, then A again) and halts, the resume left
// on the config continues nothing. (The canary's return to its earlier
// ReplicaSet never reports ProgressDeadlineExceeded: the Deployment
// controller does not time out a rollout after NewReplicaSetAvailable, so
// --rollout-timeout halts it.)
func TestCanaryResume(t *testing.T) {
	t.Parallel()
	const fleet = 3
	cs := kubernetes.NewForConfigOrDie(kc.Config)
	ns := newNamespace(t, cs)
	cm := createCanaryFleet(t, cs, ns, fleet, "0s")
	r := newRipple(t, ns, "--rollout-timeout=20s")
	r.Env = []string{"POD_NAMESPACE=" + ns, "RELOADER_NAMESPACE=" + ns}
	r.Start()
	waitFleetBaseline(t, cs, ns, "", fleet)
	quota := blockNewPods(t, cs, ns, fleet)
	cm = updateConfig(t, cs, cm, "v2")
	halted := digest.ConfigMap(cm)
	waitEvent(t, cs, ns, "ConfigMap", canaryConfig, reason.RolloutHalted)

	first := newestChange(t, ns)
	if out, err := runCommand(t, ns, "resume", "configmap/"+canaryConfig); err != nil || !strings.Contains(out, "Resumed the change "+first.Name) {
		t.Fatalf("ripple resume (%v): %s\nwant it to name the change %s", err, out, first.Name)
	}
	if err := cs.CoreV1().ResourceQuotas(ns).Delete(t.Context(), quota, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, cs, ns, "ConfigMap", canaryConfig, reason.CanaryPassed)
	waitFleetRolled(t, cs, ns, halted, fleet, 2*time.Minute)
	checkFleetRevisions(t, cs, ns, nil)

	cm, err := cs.CoreV1().ConfigMaps(ns).Get(t.Context(), canaryConfig, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm = updateConfig(t, cs, cm, "v3")
	waitFleetRolled(t, cs, ns, digest.ConfigMap(cm), fleet, 2*time.Minute)
	blockNewPods(t, cs, ns, fleet)
	updateConfig(t, cs, cm, "v2")
	var last v1alpha1.ConfigRollout
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := json.MarshalIndent(last, "", "  ")
			t.Logf("the newest ConfigRollout:\n%s", b)
		}
	})
	waitFor(t, "the same data's later change halted, on a ConfigRollout of its own", func(ctx context.Context) (bool, error) {
		var err error
		last, _, err = latestChange(ctx, t, ns)
		return last.Name != first.Name && last.Status.Canary != nil && last.Status.Canary.Phase == string(canary.Halted), err
	})
	time.Sleep(10 * time.Second) // a resume taken would roll d01 and d02 at once
	if rolled := fleetWith(t, cs, ns, canaryEnv, halted); !slices.Equal(rolled, []string{"d00"}) {
		t.Errorf("after the same data halted again, the Deployments written with it are %v, want only its canary d00: the earlier resume continued it", rolled)
	}
}

// A change halted by a Ripple before ConfigRollouts, as it left it (the
// canary d00 rolled, the others held, its record in Ripple's namespace),
// stays halted across the upgrade: the new Ripple carries the record over
// to the change's ConfigRollout (Halted, the record deleted) and rolls
// nothing more; the fix rolls every held Deployment once.
func TestCanaryHaltCarriedOverAnUpgrade(t *testing.T) {
	t.Parallel()
	const fleet = 3
	cs := kubernetes.NewForConfigOrDie(kc.Config)
	ns := newNamespace(t, cs)
	cm := createCanaryFleet(t, cs, ns, fleet, "0s")
	r := newRipple(t, ns)
	r.Env = []string{"POD_NAMESPACE=" + ns}
	r.Start()
	waitFleetBaseline(t, cs, ns, "", fleet)
	r.Kill()

	cm = updateConfig(t, cs, cm, "v2")
	bad := digest.ConfigMap(cm)
	d, err := cs.AppsV1().Deployments(ns).Get(t.Context(), "d00", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range d.Spec.Template.Spec.Containers {
		c := &d.Spec.Template.Spec.Containers[i]
		c.Env = append(c.Env, corev1.EnvVar{Name: canaryEnv, Value: bad})
	}
	if _, err := cs.AppsV1().Deployments(ns).Update(t.Context(), d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	config := refs.Ref{Kind: refs.ConfigMap, Name: canaryConfig}
	why := `Deployment "d00" stalled: progress deadline exceeded`
	data, err := json.Marshal(canary.State{Namespace: ns, Config: config, Digest: bad, Phase: canary.Halted, Since: time.Now(), Why: why,
		Members: []canary.Member{{Ref: ripplewl.Ref{Kind: "Deployment", Namespace: ns, Name: "d00"}, Applied: time.Now()}}})
	if err != nil {
		t.Fatal(err)
	}
	record := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: canary.RecordName(ns, config), Labels: map[string]string{"ripple.dev/canary-record": "true"}},
		Data: map[string]string{canary.RecordKey: string(data)}}
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(t.Context(), record, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	r.Start()
	upgraded := time.Now()
	c := crClient(t)
	waitFor(t, "the change's ConfigRollout, halted by the record", func(ctx context.Context) (bool, error) {
		var l v1alpha1.ConfigRolloutList
		if err := c.List(ctx, &l, client.InNamespace(ns), client.MatchingLabels{v1alpha1.LabelConfigName: canaryConfig}); err != nil {
			return false, err
		}
		if len(l.Items) != 1 || l.Items[0].Status.Canary == nil {
			return false, nil
		}
		st := l.Items[0].Status
		if st.Canary.Phase != string(canary.Halted) || st.Canary.Why != why || st.Phase != v1alpha1.PhaseHalted {
			return false, fmt.Errorf("the change after the upgrade: phase %s, canary %+v; want the record's halt", st.Phase, st.Canary)
		}
		return true, nil
	})
	waitFor(t, "the record carried over, deleted", func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, record.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	time.Sleep(time.Until(upgraded.Add(15 * time.Second)))
	if rolled := fleetWith(t, cs, ns, canaryEnv, bad); len(rolled) != 1 || rolled[0] != "d00" {
		t.Fatalf("15 s after the upgrade, the Deployments written with the halted change are %v, want only the canary d00", rolled)
	}

	cm = updateConfig(t, cs, cm, "v3")
	waitFleetRolled(t, cs, ns, digest.ConfigMap(cm), fleet, 2*time.Minute)
	checkFleetRevisions(t, cs, ns, map[string]string{"d00": "3"})
}

// countReason counts the workloads of a config's change in explain whose
// reason is r.
func countReason(c explain.Change, r reason.Reason) int {
	n := 0
	for _, w := range c.Workloads {
		if w.Reason == r {
			n++
		}
	}
	return n
}

// blockNewPods creates a ResourceQuota that lets no pod start beyond the
// n running, once it counts them, and returns its name.
func blockNewPods(t *testing.T, cs kubernetes.Interface, ns string, n int) string {
	t.Helper()
	quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "no-new-pods"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(int64(n), resource.DecimalSI)}}}
	if _, err := cs.CoreV1().ResourceQuotas(ns).Create(t.Context(), quota, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the quota to count the pods", func(ctx context.Context) (bool, error) {
		q, err := cs.CoreV1().ResourceQuotas(ns).Get(ctx, quota.Name, metav1.GetOptions{})
		used := q.Status.Used[corev1.ResourcePods]
		return err == nil && used.Value() == int64(n), nil
	})
	return quota.Name
}

// A good change canaried on one Deployment with a 10 s bake: the others
// roll only once the canary completed its rollout and stayed healthy for
// the bake (a kill -9 of Ripple during the bake changes nothing), then at
// once: the first of them within 2 s of the canary passing. All 50 roll
// once. The bake's start is the change's status.canary.since, not the
// RolloutComplete Event's time: Events trail what they tell by a second or
// more on a busy API server.
func TestCanaryBakesThenRollsTheFleet(t *testing.T) {
	t.Parallel()
	cs := kubernetes.NewForConfigOrDie(kc.Config)
	ns := newNamespace(t, cs)
	cm := createCanaryFleet(t, cs, ns, canaryFleet, "10s")
	r := startRipple(t, ns)
	waitFleetBaseline(t, cs, ns, "", canaryFleet)

	changed := time.Now()
	// Killed during the bake: the restart must not roll the rest early.
	good, bakeStarted := changeAndKillInBake(t, cs, ns, cm, r, nil)
	passed := waitEvent(t, cs, ns, "ConfigMap", canaryConfig, reason.CanaryPassed)
	waitFleetRolled(t, cs, ns, good, canaryFleet, 3*time.Minute)
	all := time.Since(changed)
	checkFleetRevisions(t, cs, ns, nil)

	first := firstRest(t, cs, ns)
	if bakeEnd := bakeStarted.Add(10 * time.Second); first.Before(bakeEnd) {
		t.Errorf("a non-canary rolled at %s, before the bake ended at %s", first.Format(time.RFC3339Nano), bakeEnd.Format(time.RFC3339Nano))
	}
	if lag := first.Sub(eventTime(passed)); lag > 2*time.Second {
		t.Errorf("the first non-canary rolled %s after the canary passed, want at most 2s", lag)
	}
	// No RolloutComplete Event is waited for: Ripple was killed as the
	// bake started, and an Event not yet written dies with the process.
	t.Logf("canary baking %s after the change, passed %s after, all %d rolled and complete %s after",
		bakeStarted.Sub(changed).Round(100*time.Millisecond), eventTime(passed).Sub(changed).Round(100*time.Millisecond), canaryFleet, all.Round(100*time.Millisecond))
}

// createCanaryFleet creates the ConfigMap, canaried on one workload with
// bake, and the 50 Deployments that use it (one replica each, a progress
// deadline of canaryDeadline).
func createCanaryFleet(t *testing.T, cs kubernetes.Interface, ns string, n int, bake string) *corev1.ConfigMap {
	t.Helper()
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: canaryConfig, Annotations: map[string]string{"ripple.dev/canary": "1", "ripple.dev/canary-bake": bake}},
		Data:       map[string]string{"value": "v1"},
	}
	cm, err := cs.CoreV1().ConfigMaps(ns).Create(t.Context(), cm, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		name := fmt.Sprintf("d%02d", i)
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: auto()},
			Spec: appsv1.DeploymentSpec{
				Replicas:                ptr.To[int32](1),
				ProgressDeadlineSeconds: ptr.To[int32](canaryDeadline),
				Selector:                &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
				Template:                spec{configMaps: []string{canaryConfig}}.template(name),
			},
		}
		if _, err := cs.AppsV1().Deployments(ns).Create(t.Context(), d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return cm
}

func updateConfig(t *testing.T, cs kubernetes.Interface, cm *corev1.ConfigMap, value string) *corev1.ConfigMap {
	t.Helper()
	cm.Data = map[string]string{"value": value}
	cm, err := cs.CoreV1().ConfigMaps(cm.Namespace).Update(t.Context(), cm, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cm
}

// waitFleetBaseline waits until the n Deployments that selector selects
// (all with "") are available with their baseline recorded.
func waitFleetBaseline(t *testing.T, cs kubernetes.Interface, ns, selector string, n int) {
	t.Helper()
	waitFor(t, "every Deployment available, with its baseline", func(ctx context.Context) (bool, error) {
		ds, err := cs.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, err
		}
		for _, d := range ds.Items {
			if d.Annotations[appliedAnnotation] == "" || rollout.Deployment(&d).State != rollout.Complete {
				return false, nil
			}
		}
		return len(ds.Items) == n, nil
	})
}

// fleetWith names the Deployments whose template carries hash in env.
func fleetWith(t *testing.T, cs kubernetes.Interface, ns, env, hash string) []string {
	t.Helper()
	ds, err := cs.AppsV1().Deployments(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range ds.Items {
		if v, _ := envValue(&d.Spec.Template, env); v == hash {
			out = append(out, d.Name)
		}
	}
	return out
}

// waitFleetRolled waits until every Deployment carries hash and its
// rollout is complete.
func waitFleetRolled(t *testing.T, cs kubernetes.Interface, ns, hash string, n int, timeout time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	var done int
	for ctx.Err() == nil {
		ds, err := cs.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
		if err == nil {
			done = 0
			for _, d := range ds.Items {
				if v, _ := envValue(&d.Spec.Template, canaryEnv); v == hash && rollout.Deployment(&d).State == rollout.Complete {
					done++
				}
			}
			if done == n {
				return
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("%d of %d Deployments rolled with %s and complete within %s", done, n, hash, timeout)
}

// checkFleetRevisions checks each Deployment's revision: want[name], else
// 2 (rolled once).
func checkFleetRevisions(t *testing.T, cs kubernetes.Interface, ns string, want map[string]string) {
	t.Helper()
	ds, err := cs.AppsV1().Deployments(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range ds.Items {
		w, ok := want[d.Name]
		if !ok {
			w = "2"
		}
		if rev := d.Annotations["deployment.kubernetes.io/revision"]; rev != w {
			t.Errorf("Deployment %s is at revision %s, want %s", d.Name, rev, w)
		}
	}
}

// waitEvent waits for the first Event of reason about the object kind/name.
func waitEvent(t *testing.T, cs kubernetes.Interface, ns, kind, name string, r reason.Reason) eventsv1.Event {
	t.Helper()
	var found eventsv1.Event
	waitFor(t, fmt.Sprintf("a %s event on %s %s", r, kind, name), func(ctx context.Context) (bool, error) {
		evs := events(ctx, cs, ns, kind, name, r)
		if len(evs) == 0 {
			return false, nil
		}
		found = evs[0]
		return true, nil
	})
	return found
}

func eventNotes(t *testing.T, cs kubernetes.Interface, ns, kind, name string, r reason.Reason) []string {
	t.Helper()
	var notes []string
	for _, e := range events(t.Context(), cs, ns, kind, name, r) {
		notes = append(notes, e.Note)
	}
	return notes
}

// events are the Events of reason r about kind/name, oldest first.
func events(ctx context.Context, cs kubernetes.Interface, ns, kind, name string, r reason.Reason) []eventsv1.Event {
	list, err := cs.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil
	}
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Regarding.Kind == kind && e.Regarding.Name == name && e.Reason == string(r) {
			out = append(out, e)
		}
	}
	return out
}

// firstRest is when the first Deployment other than the canary d00 was
// reloaded (its Reloaded event).
func firstRest(t *testing.T, cs kubernetes.Interface, ns string) time.Time {
	t.Helper()
	var first time.Time
	for i := 1; i < canaryFleet; i++ {
		evs := events(t.Context(), cs, ns, "Deployment", fmt.Sprintf("d%02d", i), reason.Reloaded)
		if len(evs) == 0 {
			t.Fatalf("Deployment d%02d has no Reloaded event", i)
		}
		if at := eventTime(evs[0]); first.IsZero() || at.Before(first) {
			first = at
		}
	}
	return first
}

// eventTime is when an Event was first recorded: Ripple records core/v1
// Events, whose time is to the second (eventTime is left empty).
func eventTime(e eventsv1.Event) time.Time {
	if !e.EventTime.IsZero() {
		return e.EventTime.Time
	}
	return e.DeprecatedFirstTimestamp.Time
}
