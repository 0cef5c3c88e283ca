package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/ripple-dev/ripple/hack/kit"
	"github.com/ripple-dev/ripple/internal/digest"
)

// These tests hold Ripple to the "when to roll" contract (design 2.3) on a
// real cluster: each runs its own Ripple process on a namespace of its own
// and counts rollouts exactly. Every check that nothing rolled is followed by
// a real data change that must roll exactly once, so a Ripple that does
// nothing at all cannot pass.

// The configs every test uses and the env vars Reloader (and Ripple) name
// after them.
const (
	configName = "app-config"
	secretName = "app-secret"
	configEnv  = "STAKATER_APP_CONFIG_CONFIGMAP"
	secretEnv  = "STAKATER_APP_SECRET_SECRET"
)

// Creating a workload while Ripple runs rolls nothing; the first data
// change afterwards rolls each workload exactly once.
func TestNoRolloutOnCreate(t *testing.T) {
	t.Parallel()
	cs := kubernetes.NewForConfigOrDie(kc.Config)
	ns := newNamespace(t, cs)
	startRipple(t, ns)

	cm := createConfigMap(t, cs, ns, configName, "v1")
	sec := createSecret(t, cs, ns)
	ws := createAllKinds(t, cs, ns)
	before := waitRolledOut(t, cs, ws...)
	for _, w := range ws {
		waitBaseline(t, cs, w, digest.ConfigMap(cm), digest.Secret(sec))
	}
	before = expectNoRollout(t, cs, before)

	sum := setConfigMapValue(t, cs, ns, configName, "v2")
	expectRollouts(t, cs, oneEach(before, envIs(configEnv, sum)))
}

// Adopting workloads and configs that exist before Ripple starts rolls
// nothing; the first data change afterwards rolls each exactly once.
func TestNoRolloutOnAdoption(t *testing.T) {
	t.Parallel()
	cs := kubernetes.NewForConfigOrDie(kc.Config)
	ns := newNamespace(t, cs)
	cm := createConfigMap(t, cs, ns, configName, "v1")
	sec := createSecret(t, cs, ns)
	ws := createAllKinds(t, cs, ns)
	before := waitRolledOut(t, cs, ws...)

	startRipple(t, ns)
	for _, w := range ws {
		waitBaseline(t, cs, w, digest.ConfigMap(cm), digest.Secret(sec))
	}
	before = expectNoRollout(t, cs, before)

	sum := setSecretValue(t, cs, ns, "p2")
	expectRollouts(t, cs, oneEach(before, envIs(secretEnv, sum)))
}

// Restarting Ripple, gracefully or by SIGKILL, is a full relist: it rolls
// nothing, neither workloads Ripple rolled before nor those it only
// recorded a baseline for.
func TestNoRolloutOnRestart(t *testing.T) {
	t.Parallel()
	cs := kubernetes.NewForConfigOrDie(kc.Config)
	ns := newNamespace(t, cs)
	r := startRipple(t, ns)

	fresh := createConfigMap(t, cs, ns, "fresh-config", "v1")
	used := createConfigMap(t, cs, ns, "rolled-config", "v1")
	freshWeb := workload{kit.Deployment, ns, "fresh"}
	rolledWeb := workload{kit.Deployment, ns, "rolled"}
	agent := workload{kit.DaemonSet, ns, "agent"}
	freshWeb.create(t, cs, spec{configMaps: []string{"fresh-config"}, annotations: auto()})
	rolledWeb.create(t, cs, spec{configMaps: []string{"rolled-config"}, annotations: auto()})
	// Named, not referenced: the env var goes on the first container.
	agent.create(t, cs, spec{annotations: map[string]string{configMapReloadAnnot: "rolled-config"}})
	s := waitRolledOut(t, cs, freshWeb, rolledWeb, agent)
	waitBaseline(t, cs, freshWeb, digest.ConfigMap(fresh))
	waitBaseline(t, cs, rolledWeb, digest.ConfigMap(used))
	waitBaseline(t, cs, agent, digest.ConfigMap(used))

	sum := setConfigMapValue(t, cs, ns, "rolled-config", "v2")
	s = expectRollouts(t, cs, map[workload]rollouts{
		freshWeb:  {before: s[freshWeb]},
		rolledWeb: {before: s[rolledWeb], n: 1, checks: []templateCheck{envIs("STAKATER_ROLLED_CONFIG_CONFIGMAP", sum)}},
		agent:     {before: s[agent], n: 1, checks: []templateCheck{envIs("STAKATER_ROLLED_CONFIG_CONFIGMAP", sum)}},
	})

	r.Restart()
	s = expectNoRollout(t, cs, s)

	sum = setConfigMapValue(t, cs, ns, "fresh-config", "v2")
	s = expectRollouts(t, cs, map[workload]rollouts{
		freshWeb:  {before: s[freshWeb], n: 1, checks: []templateCheck{envIs("STAKATER_FRESH_CONFIG_CONFIGMAP", sum)}},
		rolledWeb: {before: s[rolledWeb]},
		agent:     {before: s[agent]},
	})

	r.Kill()
	r.Start()
	s = expectNoRollout(t, cs, s)

	sum = setConfigMapValue(t, cs, ns, "rolled-config", "v3")
	expectRollouts(t, cs, map[workload]rollouts{
		freshWeb:  {before: s[freshWeb]},
		rolledWeb: {before: s[rolledWeb], n: 1, checks: []templateCheck{envIs("STAKATER_ROLLED_CONFIG_CONFIGMAP", sum)}},
		agent:     {before: s[agent], n: 1, checks: []templateCheck{envIs("STAKATER_ROLLED_CONFIG_CONFIGMAP", sum)}},
	})
}

// Label-only and annotation-only edits of a ConfigMap or Secret, and
// updates that change nothing, roll nothing, while Ripple runs or while it
// is down.
func TestNoRolloutOnMetadataOnlyEdits(t *testing.T) {
	t.Parallel()
	cs := kubernetes.NewForConfigOrDie(kc.Config)
	ns := newNamespace(t, cs)
	r := startRipple(t, ns)
	cm := createConfigMap(t, cs, ns, configName, "v1")
	sec := createSecret(t, cs, ns)
	web := workload{kit.Deployment, ns, "web"}
	web.create(t, cs, spec{configMaps: []string{configName}, secrets: []string{secretName}, annotations: auto()})
	before := waitRolledOut(t, cs, web)
	waitBaseline(t, cs, web, digest.ConfigMap(cm), digest.Secret(sec))

	edits := func(round string) {
		updateConfigMap(t, cs, ns, configName, func(cm *corev1.ConfigMap) {
			metav1.SetMetaDataLabel(&cm.ObjectMeta, "edit", round)
		})
		updateConfigMap(t, cs, ns, configName, func(cm *corev1.ConfigMap) {
			metav1.SetMetaDataAnnotation(&cm.ObjectMeta, "example.com/note", round)
		})
		updateConfigMap(t, cs, ns, configName, func(*corev1.ConfigMap) {}) // no-op update
		updateSecret(t, cs, ns, func(s *corev1.Secret) {
			metav1.SetMetaDataLabel(&s.ObjectMeta, "edit", round)
		})
		updateSecret(t, cs, ns, func(s *corev1.Secret) {
			metav1.SetMetaDataAnnotation(&s.ObjectMeta, "example.com/note", round)
		})
		// The same data written through stringData is no data change.
		updateSecret(t, cs, ns, func(s *corev1.Secret) {
			s.StringData = map[string]string{"PASSWORD": string(s.Data["PASSWORD"])}
		})
	}

	edits("running")
	before = expectNoRollout(t, cs, before)
	sum := setSecretValue(t, cs, ns, "p2")
	before = expectRollouts(t, cs, oneEach(before, envIs(secretEnv, sum)))

	r.Stop()
	edits("stopped")
	r.Start()
	before = expectNoRollout(t, cs, before)
	sum = setConfigMapValue(t, cs, ns, configName, "v2")
	expectRollouts(t, cs, oneEach(before, envIs(configEnv, sum)))
}

// A Deployment that Reloader managed carries STAKATER_ env vars with the
// current SHA1s. Ripple must not touch it at all when it takes over: no
// template change and no metadata write either.
func TestSwitchFromReloaderRestartsNothing(t *testing.T) {
	t.Parallel()
	cs := kubernetes.NewForConfigOrDie(kc.Config)
	ns := newNamespace(t, cs)
	cm := createConfigMap(t, cs, ns, configName, "v1")
	sec := createSecret(t, cs, ns)
	web := workload{kit.Deployment, ns, "web"}
	web.create(t, cs, spec{
		configMaps: []string{configName}, secrets: []string{secretName}, annotations: auto(),
		// What Reloader wrote when it last rolled this Deployment.
		env: []corev1.EnvVar{
			{Name: configEnv, Value: digest.ConfigMap(cm)},
			{Name: secretEnv, Value: digest.Secret(sec)},
		},
	})
	waitRolledOut(t, cs, web)
	before := waitStable(t, cs, web)
	if before.revisions != 1 {
		t.Fatalf("%s has %d ReplicaSets before Ripple starts, want 1", web, before.revisions)
	}

	startRipple(t, ns)
	consistently(t, "Ripple leaves a Reloader-managed Deployment alone", quiet, func(ctx context.Context) error {
		s, err := web.observe(ctx, cs)
		if err != nil {
			return err
		}
		if s.resourceVersion != before.resourceVersion || s.generation != before.generation || s.revisions != 1 {
			return fmt.Errorf("%s was written: resourceVersion %s -> %s, generation %d -> %d, %d ReplicaSets (annotations %v)",
				web, before.resourceVersion, s.resourceVersion, before.generation, s.generation, s.revisions, s.annotations)
		}
		return nil
	})

	sum := setConfigMapValue(t, cs, ns, configName, "v2")
	expectRollouts(t, cs, map[workload]rollouts{web: {before: before, n: 1, checks: []templateCheck{
		envIs(configEnv, sum), envIs(secretEnv, digest.Secret(sec)), envOnce(configEnv), envOnce(secretEnv),
	}}})
}

// A Deployment whose Reloader env var is stale (its ConfigMap changed
// while neither Reloader nor Ripple ran) is rolled once when Ripple takes
// over, and only the stale env var changes.
func TestSwitchFromReloaderCatchesUp(t *testing.T) {
	t.Parallel()
	cs := kubernetes.NewForConfigOrDie(kc.Config)
	ns := newNamespace(t, cs)
	old := createConfigMap(t, cs, ns, configName, "v0")
	sec := createSecret(t, cs, ns)
	web := workload{kit.Deployment, ns, "web"}
	web.create(t, cs, spec{
		configMaps: []string{configName}, secrets: []string{secretName}, annotations: auto(),
		env: []corev1.EnvVar{
			{Name: configEnv, Value: digest.ConfigMap(old)},
			{Name: secretEnv, Value: digest.Secret(sec)},
		},
	})
	before := waitRolledOut(t, cs, web)
	sum := setConfigMapValue(t, cs, ns, configName, "v1")

	startRipple(t, ns)
	expectRollouts(t, cs, oneEach(before,
		envIs(configEnv, sum), envIs(secretEnv, digest.Secret(sec)), envOnce(configEnv), envOnce(secretEnv)))
}

// Changes made while Ripple is down are applied once when it comes back,
// for a workload Ripple only recorded a baseline for...
func TestCatchUpNeverRolled(t *testing.T) { testCatchUp(t, false) }

// ...and for one it rolled before.
func TestCatchUpRolledBefore(t *testing.T) { testCatchUp(t, true) }

func testCatchUp(t *testing.T, rolledBefore bool) {
	t.Parallel()
	cs := kubernetes.NewForConfigOrDie(kc.Config)
	ns := newNamespace(t, cs)
	r := startRipple(t, ns)
	cm := createConfigMap(t, cs, ns, configName, "v1")
	sec := createSecret(t, cs, ns)
	web := workload{kit.Deployment, ns, "web"}
	web.create(t, cs, spec{configMaps: []string{configName}, secrets: []string{secretName}, annotations: auto()})
	before := waitRolledOut(t, cs, web)
	waitBaseline(t, cs, web, digest.ConfigMap(cm), digest.Secret(sec))
	if rolledBefore {
		sum := setConfigMapValue(t, cs, ns, configName, "v2")
		before = expectRollouts(t, cs, oneEach(before, envIs(configEnv, sum), noEnv(secretEnv)))
	}

	r.Stop()
	cmSum := setConfigMapValue(t, cs, ns, configName, "v3")
	secSum := setSecretValue(t, cs, ns, "p3")
	if s := web.get(t, cs); s.templates != before[web].templates {
		t.Fatalf("%s changed while Ripple was down: %d pod-template changes -> %d", web, before[web].templates, s.templates)
	}
	r.Start()
	// Both changes are one change set: one rollout carrying both hashes.
	expectRollouts(t, cs, oneEach(before, envIs(configEnv, cmSum), envIs(secretEnv, secSum)))
}

// A change undone while Ripple is down is no change: nothing rolls.
func TestCatchUpRevertedWhileDown(t *testing.T) {
	t.Parallel()
	cs := kubernetes.NewForConfigOrDie(kc.Config)
	ns := newNamespace(t, cs)
	r := startRipple(t, ns)
	cm := createConfigMap(t, cs, ns, configName, "v1")
	web := workload{kit.Deployment, ns, "web"}
	web.create(t, cs, spec{configMaps: []string{configName}, annotations: auto()})
	before := waitRolledOut(t, cs, web)
	waitBaseline(t, cs, web, digest.ConfigMap(cm))

	r.Stop()
	setConfigMapValue(t, cs, ns, configName, "v2")
	setConfigMapValue(t, cs, ns, configName, "v1")
	r.Start()
	before = expectNoRollout(t, cs, before)

	sum := setConfigMapValue(t, cs, ns, configName, "v3")
	expectRollouts(t, cs, oneEach(before, envIs(configEnv, sum)))
}

// A ConfigMap change and a Secret change 100 ms apart are one change set:
// one new ReplicaSet carrying both new hashes, which takes over every pod.
func TestOneRolloutPerChangeSetDeployment(t *testing.T) {
	t.Parallel()
	cs := kubernetes.NewForConfigOrDie(kc.Config)
	ns := newNamespace(t, cs)
	startRipple(t, ns)
	cm := createConfigMap(t, cs, ns, configName, "v1")
	sec := createSecret(t, cs, ns)
	web := workload{kit.Deployment, ns, "web"}
	web.create(t, cs, spec{configMaps: []string{configName}, secrets: []string{secretName}, annotations: auto()})
	before := waitRolledOut(t, cs, web)
	waitBaseline(t, cs, web, digest.ConfigMap(cm), digest.Secret(sec))
	oldRS := replicaSets(t, cs, ns, before[web].uid)
	if len(oldRS) != 1 {
		t.Fatalf("got %d ReplicaSets before the change, want 1", len(oldRS))
	}

	cmSum, secSum := changeBoth(t, cs, ns)
	checks := []templateCheck{envIs(configEnv, cmSum), envIs(secretEnv, secSum)}
	expectRollouts(t, cs, oneEach(before, checks...))

	rss := replicaSets(t, cs, ns, before[web].uid)
	if len(rss) != 2 {
		t.Fatalf("got %d ReplicaSets, want 2", len(rss))
	}
	newRS := newReplicaSet(t, rss, oldRS[0].UID)
	if newRS.Status.ReadyReplicas != defaultReplicas {
		t.Errorf("new ReplicaSet %s has %d Ready replicas, want %d", newRS.Name, newRS.Status.ReadyReplicas, defaultReplicas)
	}
	for _, c := range checks {
		if err := c(&newRS.Spec.Template); err != nil {
			t.Errorf("new ReplicaSet %s: %v", newRS.Name, err)
		}
	}
	pods, err := cs.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != int(defaultReplicas) {
		t.Errorf("got %d pods, want %d", len(pods.Items), defaultReplicas)
	}
	for _, p := range pods.Items {
		if ref := metav1.GetControllerOf(&p); ref == nil || ref.UID != newRS.UID || !kit.PodReady(&p) {
			t.Errorf("pod %s: owner %v, Ready %v; want a Ready pod of the new ReplicaSet %s", p.Name, ref, kit.PodReady(&p), newRS.Name)
		}
	}
	podsPass(t, cs, ns, "app=web", checks...)
}

// The same for a StatefulSet and a DaemonSet: one new ControllerRevision,
// every pod replaced by one carrying both new hashes.
func TestOneRolloutPerChangeSetStatefulSet(t *testing.T) {
	testOneRolloutPerChangeSet(t, kit.StatefulSet)
}
func TestOneRolloutPerChangeSetDaemonSet(t *testing.T) { testOneRolloutPerChangeSet(t, kit.DaemonSet) }

func testOneRolloutPerChangeSet(t *testing.T, kind *kit.WorkloadKind) {
	t.Parallel()
	cs := kubernetes.NewForConfigOrDie(kc.Config)
	ns := newNamespace(t, cs)
	startRipple(t, ns)
	cm := createConfigMap(t, cs, ns, configName, "v1")
	sec := createSecret(t, cs, ns)
	w := workload{kind, ns, "app"}
	w.create(t, cs, spec{configMaps: []string{configName}, secrets: []string{secretName}, annotations: auto()})
	before := waitRolledOut(t, cs, w)
	waitBaseline(t, cs, w, digest.ConfigMap(cm), digest.Secret(sec))
	if before[w].revisions != 1 {
		t.Fatalf("got %d ControllerRevisions before the change, want 1", before[w].revisions)
	}
	oldPods := podUIDs(t, cs, ns, "app=app")

	cmSum, secSum := changeBoth(t, cs, ns)
	checks := []templateCheck{envIs(configEnv, cmSum), envIs(secretEnv, secSum)}
	expectRollouts(t, cs, oneEach(before, checks...))

	for uid := range podUIDs(t, cs, ns, "app=app") {
		if oldPods[uid] {
			t.Errorf("pod %s of the old revision is still there", uid)
		}
	}
	podsPass(t, cs, ns, "app=app", checks...)
}

// With --reload-strategy=annotations a change rolls once and restarts of
// Ripple roll nothing (Reloader restarts every annotated workload when it
// restarts). The Deployment uses two configs, so after each reload the
// pod-template annotation names only one of them and Ripple must remember
// the other across the restart.
func TestAnnotationsStrategyNoRolloutOnRestart(t *testing.T) {
	t.Parallel()
	cs := kubernetes.NewForConfigOrDie(kc.Config)
	ns := newNamespace(t, cs)
	r := startRipple(t, ns, "--reload-strategy=annotations")
	cm := createConfigMap(t, cs, ns, configName, "v1")
	sec := createSecret(t, cs, ns)
	web := workload{kit.Deployment, ns, "web"}
	web.create(t, cs, spec{configMaps: []string{configName}, secrets: []string{secretName}, annotations: auto()})
	before := waitRolledOut(t, cs, web)
	waitBaseline(t, cs, web, digest.ConfigMap(cm), digest.Secret(sec))

	sum := setConfigMapValue(t, cs, ns, configName, "v2")
	before = expectRollouts(t, cs, oneEach(before, lastReloadedFrom("CONFIGMAP", configName, sum), noStakaterEnv))

	r.Restart()
	before = expectNoRollout(t, cs, before)

	sum = setSecretValue(t, cs, ns, "p2")
	before = expectRollouts(t, cs, oneEach(before, lastReloadedFrom("SECRET", secretName, sum), noStakaterEnv))

	r.Restart()
	before = expectNoRollout(t, cs, before)

	sum = setConfigMapValue(t, cs, ns, configName, "v3")
	expectRollouts(t, cs, oneEach(before, lastReloadedFrom("CONFIGMAP", configName, sum), noStakaterEnv))
}

// createAllKinds creates a Deployment, a StatefulSet and a DaemonSet that
// reload on app-config and app-secret: the first two through the auto
// annotation, the DaemonSet through named-reload annotations.
func createAllKinds(t *testing.T, cs kubernetes.Interface, ns string) []workload {
	t.Helper()
	ws := []workload{{kit.Deployment, ns, "web"}, {kit.StatefulSet, ns, "db"}, {kit.DaemonSet, ns, "agent"}}
	for _, w := range ws {
		s := spec{configMaps: []string{configName}, secrets: []string{secretName}, annotations: auto()}
		if w.kind == kit.DaemonSet {
			s.annotations = map[string]string{
				configMapReloadAnnot:                  configName,
				"secret.reloader.stakater.com/reload": secretName,
			}
		}
		w.create(t, cs, s)
	}
	return ws
}

// changeBoth changes app-config and, 100 ms later, app-secret, and returns
// their new digests.
func changeBoth(t *testing.T, cs kubernetes.Interface, ns string) (string, string) {
	t.Helper()
	cmSum := setConfigMapValue(t, cs, ns, configName, "v2")
	time.Sleep(100 * time.Millisecond)
	secSum := setSecretValue(t, cs, ns, "p2")
	return cmSum, secSum
}

// oneEach expects exactly one rollout of every workload in before, to a
// template that passes checks.
func oneEach(before map[workload]snapshot, checks ...templateCheck) map[workload]rollouts {
	want := map[workload]rollouts{}
	for w, s := range before {
		want[w] = rollouts{before: s, n: 1, checks: checks}
	}
	return want
}

// envOnce checks that env var name is set once, on one container.
func envOnce(name string) templateCheck {
	return func(tpl *corev1.PodTemplateSpec) error {
		n := 0
		for _, c := range tpl.Spec.Containers {
			for _, e := range c.Env {
				if e.Name == name {
					n++
				}
			}
		}
		if n != 1 {
			return fmt.Errorf("env var %s is set %d times, want once", name, n)
		}
		return nil
	}
}

// noEnv checks that env var name is not set.
func noEnv(name string) templateCheck {
	return func(tpl *corev1.PodTemplateSpec) error {
		if v, ok := envValue(tpl, name); ok {
			return fmt.Errorf("unexpected env var %s=%s", name, v)
		}
		return nil
	}
}

// podsPass checks that every pod matching selector runs a spec that passes
// the checks: the pods, not only the template, carry the new hashes.
func podsPass(t *testing.T, cs kubernetes.Interface, ns, selector string, checks ...templateCheck) {
	t.Helper()
	pods, err := cs.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) == 0 {
		t.Fatalf("no pods match %s", selector)
	}
	for _, p := range pods.Items {
		tpl := corev1.PodTemplateSpec{ObjectMeta: p.ObjectMeta, Spec: p.Spec}
		for _, c := range checks {
			if err := c(&tpl); err != nil {
				t.Errorf("pod %s: %v", p.Name, err)
			}
		}
	}
}

// waitStable waits until w's resourceVersion has not changed for a second
// (the workload controller has finished writing status) and returns it.
func waitStable(t *testing.T, cs kubernetes.Interface, w workload) snapshot {
	t.Helper()
	last := w.get(t, cs)
	since := time.Now()
	waitFor(t, w.String()+" unchanged for a second", func(ctx context.Context) (bool, error) {
		s, err := w.observe(ctx, cs)
		if err != nil {
			return false, err
		}
		if s.resourceVersion != last.resourceVersion {
			last, since = s, time.Now()
		}
		return time.Since(since) >= time.Second, nil
	})
	return last
}

// A change that Ripple has seen but not yet acted on when it stops (it is
// waiting for the settle window) is not lost: it rolls once after the
// restart.
func TestCatchUpStoppedDuringSettleWindow(t *testing.T) {
	t.Parallel()
	cs := kubernetes.NewForConfigOrDie(kc.Config)
	ns := newNamespace(t, cs)
	r := startRipple(t, ns, "--settle-window=5s", "--log-level=debug")
	cm := createConfigMap(t, cs, ns, configName, "v1")
	web := workload{kit.Deployment, ns, "web"}
	web.create(t, cs, spec{configMaps: []string{configName}, annotations: auto()})
	before := waitRolledOut(t, cs, web)
	waitBaseline(t, cs, web, digest.ConfigMap(cm))

	sum := setConfigMapValue(t, cs, ns, configName, "v2")
	waitLog(t, r, "waiting for the settle window")
	r.Stop()
	if s := web.get(t, cs); s.templates != before[web].templates {
		t.Fatalf("%s rolled within its 5s settle window", web)
	}
	r.Start()
	expectRollouts(t, cs, oneEach(before, envIs(configEnv, sum)))
}

// Two ConfigMaps whose names map to the same Reloader env var
// (STAKATER_APP_CONFIG_CONFIGMAP for both app-config and app.config): a
// change of one must roll the workload once, not start an endless series
// of rollouts.
func TestEnvVarNameCollisionRollsOnce(t *testing.T) {
	t.Parallel()
	cs := kubernetes.NewForConfigOrDie(kc.Config)
	ns := newNamespace(t, cs)
	startRipple(t, ns)
	a := createConfigMap(t, cs, ns, "app-config", "a1")
	b := createConfigMap(t, cs, ns, "app.config", "b1")
	web := workload{kit.Deployment, ns, "web"}
	web.create(t, cs, spec{configMaps: []string{"app-config", "app.config"}, annotations: auto()})
	before := waitRolledOut(t, cs, web)
	waitBaseline(t, cs, web, digest.ConfigMap(a), digest.ConfigMap(b))

	sum := setConfigMapValue(t, cs, ns, "app-config", "a2")
	expectRollouts(t, cs, oneEach(before, envIs(configEnv, sum)))
}

// The same collision on a Deployment Reloader managed: its one env var
// holds the hash of one of the two ConfigMaps. Taking over rolls nothing,
// and a change of the other ConfigMap rolls once.
func TestEnvVarNameCollisionSwitchFromReloader(t *testing.T) {
	t.Parallel()
	cs := kubernetes.NewForConfigOrDie(kc.Config)
	ns := newNamespace(t, cs)
	a := createConfigMap(t, cs, ns, "app-config", "a1")
	b := createConfigMap(t, cs, ns, "app.config", "b1")
	web := workload{kit.Deployment, ns, "web"}
	web.create(t, cs, spec{
		configMaps: []string{"app-config", "app.config"}, annotations: auto(),
		env: []corev1.EnvVar{{Name: configEnv, Value: digest.ConfigMap(a)}},
	})
	before := waitRolledOut(t, cs, web)

	startRipple(t, ns)
	waitBaseline(t, cs, web, digest.ConfigMap(a), digest.ConfigMap(b))
	before = expectNoRollout(t, cs, before)

	sum := setConfigMapValue(t, cs, ns, "app.config", "b2")
	expectRollouts(t, cs, oneEach(before, envIs(configEnv, sum), envOnce(configEnv)))
}
