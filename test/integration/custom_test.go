package integration

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/hack/cluster"
	"github.com/ripple-dev/ripple/hack/kit"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/strategy"
)

const rolloutStrategyKey = "reloader.stakater.com/rollout-strategy"

// The optional kinds, as their CRDs serve them. Ripple reads them
// unstructured, and so do these tests: no Argo or OpenShift module.
var (
	rolloutGVK = schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "Rollout"}
	dcGVK      = schema.GroupVersionKind{Group: "apps.openshift.io", Version: "v1", Kind: "DeploymentConfig"}
)

// customKind is one way an optional kind takes a reload: a Rollout whose
// template is patched, restarted (spec.restartAt) or taken from a
// Deployment (spec.workloadRef), or a DeploymentConfig.
type customKind struct {
	name        string
	gvk         schema.GroupVersionKind
	restart     bool
	workloadRef bool
}

func customKinds() []customKind {
	return []customKind{
		{name: "Rollout", gvk: rolloutGVK},
		{name: "RolloutRestart", gvk: rolloutGVK, restart: true},
		{name: "RolloutWorkloadRef", gvk: rolloutGVK, workloadRef: true},
		{name: "DeploymentConfig", gvk: dcGVK},
	}
}

// customState is what a reload may change on a custom workload.
type customState struct {
	obj *unstructured.Unstructured
	// tpl is the pod template the workload runs: its own, or the
	// workloadRef Deployment's.
	tpl       *corev1.PodTemplateSpec
	restartAt string
}

// refDeployment names the Deployment a workloadRef Rollout takes its
// template from.
func refDeployment(name string) string { return name + "-tpl" }

// create creates a workload of kind k (and, for a workloadRef, its
// Deployment first) with metadata annotations meta and pod template tpl.
func (k customKind) create(t *testing.T, e *env, name string, meta map[string]string, tpl corev1.PodTemplateSpec) *unstructured.Unstructured {
	t.Helper()
	if k.workloadRef {
		e.createRefDeployment(t, name, tpl)
	}
	return k.createWorkload(t, e, name, meta, tpl)
}

// createRefDeployment creates the Deployment, scaled to zero as Argo
// recommends, that the workloadRef Rollout name takes its template from.
func (e *env) createRefDeployment(t *testing.T, name string, tpl corev1.PodTemplateSpec) {
	t.Helper()
	tpl.Labels = map[string]string{"app": name}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: refDeployment(name), Namespace: e.ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](0),
			Selector: &metav1.LabelSelector{MatchLabels: tpl.Labels},
			Template: tpl,
		},
	}
	if err := e.c.Create(t.Context(), d); err != nil {
		t.Fatal(err)
	}
}

// createWorkload creates the workload alone.
func (k customKind) createWorkload(t *testing.T, e *env, name string, meta map[string]string, tpl corev1.PodTemplateSpec) *unstructured.Unstructured {
	t.Helper()
	tpl.Labels = map[string]string{"app": name}
	ann := maps.Clone(meta)
	if k.restart {
		if ann == nil {
			ann = map[string]string{}
		}
		ann[rolloutStrategyKey] = "restart"
	}
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetGroupVersionKind(k.gvk)
	u.SetName(name)
	u.SetNamespace(e.ns)
	u.SetAnnotations(ann)
	spec := map[string]any{"replicas": int64(1)}
	switch {
	case k.workloadRef:
		spec["workloadRef"] = map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": refDeployment(name)}
		spec["selector"] = map[string]any{"matchLabels": map[string]any{"app": name}}
	case k.gvk == dcGVK:
		spec["selector"] = map[string]any{"app": name}
		spec["template"] = toUnstructured(t, &tpl)
	default:
		spec["selector"] = map[string]any{"matchLabels": map[string]any{"app": name}}
		spec["template"] = toUnstructured(t, &tpl)
	}
	u.Object["spec"] = spec
	if err := e.c.Create(t.Context(), u); err != nil {
		t.Fatal(err)
	}
	return u
}

func toUnstructured(t *testing.T, tpl *corev1.PodTemplateSpec) map[string]any {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(tpl)
	if err != nil {
		t.Fatal(err)
	}
	if md, ok := m["metadata"].(map[string]any); ok {
		delete(md, "creationTimestamp") // null; the server would drop it
	}
	return m
}

// state reads w and what it runs from the API server.
func (k customKind) state(ctx context.Context, e *env, w *unstructured.Unstructured) (customState, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(k.gvk)
	if err := e.c.Get(ctx, client.ObjectKeyFromObject(w), u); err != nil {
		return customState{}, err
	}
	s := customState{obj: u}
	s.restartAt, _, _ = unstructured.NestedString(u.Object, "spec", "restartAt")
	if k.workloadRef {
		d := &appsv1.Deployment{}
		if err := e.c.Get(ctx, client.ObjectKey{Namespace: w.GetNamespace(), Name: refDeployment(w.GetName())}, d); err != nil {
			return customState{}, err
		}
		s.tpl = &d.Spec.Template
		return s, nil
	}
	m, _, err := unstructured.NestedMap(u.Object, "spec", "template")
	if err != nil {
		return customState{}, err
	}
	s.tpl = &corev1.PodTemplateSpec{}
	return s, runtime.DefaultUnstructuredConverter.FromUnstructured(m, s.tpl)
}

// waitCustom polls w's state until cond holds.
func (k customKind) waitCustom(t *testing.T, e *env, w *unstructured.Unstructured, what string, cond func(customState) bool) customState {
	t.Helper()
	return k.waitCustomFor(t, e, w, 15*time.Second, what, cond)
}

func (k customKind) waitCustomFor(t *testing.T, e *env, w *unstructured.Unstructured, timeout time.Duration, what string, cond func(customState) bool) customState {
	t.Helper()
	var last customState
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		s, err := k.state(ctx, e, w)
		if err != nil {
			return false, err
		}
		last = s
		return cond(s), nil
	})
	if err != nil {
		t.Fatalf("waiting for %s on %s %s: %v\nlast template: %+v\nlast annotations: %v", what, k.name, w.GetName(), err, last.tpl, last.obj.GetAnnotations())
	}
	return last
}

// reloaded reports whether s shows the reload of ref to sum by strategy
// st, compared with the state before the change: the template carries
// the digest, or, for a restart, spec.restartAt is set, the template is
// untouched and the applied record carries the digest.
func (k customKind) reloaded(st strategy.Strategy, before, s customState, ref refs.Ref, sum string) bool {
	if k.restart {
		return s.restartAt != "" && s.restartAt != before.restartAt &&
			equality.Semantic.DeepEqual(before.tpl, s.tpl) && appliedRecord(s.obj)[ref.String()] == sum
	}
	got, ok := st.Applied(s.tpl, ref)
	return ok && got == sum
}

// customScenarios are the reload rules (Reloader rows C1, C2, C4, C5, C13,
// N29, N31, N32 and the exclude precedence) that every optional kind must
// follow exactly as the built-in kinds do.
var customScenarios = []scenario{
	{name: "C1 named ConfigMap", meta: ann(cmReloadKey, "{cm1}"), uses: []use{envFrom(refs.ConfigMap, "cm1")}, configs: cfgs(cm1), change: cm1, baseline: true, reload: true},
	{name: "C2 named Secret", meta: ann(secretReload, "{s1}"), uses: []use{volume(refs.Secret, "s1")}, configs: cfgs(s1), change: s1, baseline: true, reload: true},
	{name: "C4 auto", meta: ann(autoKey, "true"), uses: []use{envFrom(refs.ConfigMap, "cm1")}, configs: cfgs(cm1), change: cm1, baseline: true, reload: true},
	{name: "C14 named, unreferenced ConfigMap", meta: ann(cmReloadKey, "{cm1},{cm2}"), uses: []use{envFrom(refs.ConfigMap, "cm1")}, configs: cfgs(cm1, cm2), change: cm2, baseline: true, reload: true},
	{name: "N31 search and match", meta: ann(searchKey, "true"), uses: []use{envFrom(refs.Secret, "s1")}, configs: map[refs.Ref]map[string]string{s1: ann(matchKey, "true")}, change: s1, baseline: true, reload: true},
	{name: "C5 labels only", meta: ann(autoKey, "true"), uses: []use{envFrom(refs.ConfigMap, "cm1")}, configs: cfgs(cm1), change: cm1, labelsOnly: true, baseline: true},
	{name: "C13 no annotation", uses: []use{envFrom(refs.ConfigMap, "cm1")}, configs: cfgs(cm1), change: cm1},
	{name: "exclude beats named", meta: ann(cmReloadKey, "{cm1}", cmExcludeKey, "{cm1}"), uses: []use{envFrom(refs.ConfigMap, "cm1")}, configs: cfgs(cm1), change: cm1},
	{name: "N29 ignore on the config", meta: ann(autoKey, "true"), uses: []use{envFrom(refs.ConfigMap, "cm1")}, configs: map[refs.Ref]map[string]string{cm1: ann(ignoreKey, "true")}, change: cm1},
	{name: "N32 search without match", meta: ann(searchKey, "true"), uses: []use{envFrom(refs.ConfigMap, "cm1")}, configs: cfgs(cm1), change: cm1},
}

// TestCustomKindReloadRules runs the reload rules against Argo Rollouts
// (template, restart and workloadRef) and DeploymentConfigs, with both
// strategies.
func TestCustomKindReloadRules(t *testing.T) {
	for _, st := range []string{"env-vars", "annotations"} {
		t.Run(st, func(t *testing.T) {
			t.Parallel()
			e := startRipple(t, "--reload-strategy="+st, "--is-Argo-Rollouts", "--is-openshift")
			e.waitWatching(t, "Rollout", "DeploymentConfig")
			for i, sc := range customScenarios {
				for _, k := range customKinds() {
					t.Run(sc.name+"/"+k.name, func(t *testing.T) {
						t.Parallel()
						e.runCustomScenario(t, fmt.Sprintf("s%d-%s-", i, strings.ToLower(k.name)), k, sc, st)
					})
				}
			}
		})
	}
}

// waitWatching waits until Ripple's discovery has found each optional kind
// served and started watching it.
func (e *env) waitWatching(t *testing.T, kinds ...string) {
	t.Helper()
	for _, kind := range kinds {
		err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 25*time.Second, true, func(context.Context) (bool, error) {
			return len(e.logs.Lines("the API is served; watching it", `"kind": "`+kind+`"`)) > 0, nil
		})
		if err != nil {
			t.Fatalf("ripple never started watching %s: %v", kind, err)
		}
	}
}

// runCustomScenario is runScenario for an optional kind.
func (e *env) runCustomScenario(t *testing.T, p string, k customKind, sc scenario, strategyName string) {
	ctx := t.Context()
	s := e.stage(t, p, sc)
	w := k.create(t, e, p+"w", s.subst(sc.meta), corev1.PodTemplateSpec{Spec: podSpec(s.uses...)})
	if sc.baseline {
		k.waitCustom(t, e, w, "the baseline record of the changed config", func(st customState) bool { return tracks(s.changed)(st.obj) })
	}
	before, err := k.state(ctx, e, w)
	if err != nil {
		t.Fatal(err)
	}
	want := e.change(t, s, sc)
	changed := s.changed

	if !sc.reload {
		k.expectNoReload(t, e, w, before)
		return
	}
	st, _ := strategy.New(strategyName)
	k.waitCustom(t, e, w, fmt.Sprintf("the %s strategy to record %s = %s", strategyName, changed, want), func(s customState) bool {
		return k.reloaded(st, before, s, changed, want)
	})
}

// expectNoReload checks, for a while, that neither the template w runs
// nor its restartAt changes.
func (k customKind) expectNoReload(t *testing.T, e *env, w *unstructured.Unstructured, before customState) {
	t.Helper()
	time.Sleep(negativeWindow)
	after, err := k.state(t.Context(), e, w)
	if err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(before.tpl, after.tpl) {
		t.Fatalf("the pod template changed; want no reload\nbefore: %+v\nafter:  %+v", before.tpl, after.tpl)
	}
	if after.restartAt != before.restartAt {
		t.Fatalf("spec.restartAt changed from %q to %q; want no restart", before.restartAt, after.restartAt)
	}
}

// A restarted Rollout keeps its template, so only the applied record says
// the change is done: it must restart once per change, not on every
// reconcile, and again on the next change.
func TestRolloutRestartOncePerChange(t *testing.T) {
	e := startRipple(t, "--is-Argo-Rollouts")
	e.waitWatching(t, "Rollout")
	k := customKinds()[1]
	cm := refs.Ref{Kind: refs.ConfigMap, Name: "app"}
	e.newConfig(t, cm)
	w := k.create(t, e, "restarted", ann(autoKey, "true"), corev1.PodTemplateSpec{Spec: podSpec(envFrom(cm.Kind, cm.Name))})
	before := k.waitCustom(t, e, w, "the baseline record", func(s customState) bool { return hasBaseline(s.obj) })
	if before.restartAt != "" {
		t.Fatalf("restartAt %q set before any change", before.restartAt)
	}

	st := strategy.EnvVars{}
	sum := e.setConfig(t, cm, "v2")
	first := k.waitCustom(t, e, w, "a restart", func(s customState) bool { return k.reloaded(st, before, s, cm, sum) })
	if _, err := time.Parse(time.RFC3339, first.restartAt); err != nil {
		t.Fatalf("restartAt %q is not RFC3339: %v", first.restartAt, err)
	}
	// restartAt has one-second resolution: a repeated restart would show
	// as a new value or at least a new generation.
	time.Sleep(1500 * time.Millisecond)
	again, err := k.state(t.Context(), e, w)
	if err != nil {
		t.Fatal(err)
	}
	if again.obj.GetGeneration() != first.obj.GetGeneration() || again.restartAt != first.restartAt {
		t.Fatalf("the Rollout was written again without a change: generation %d -> %d, restartAt %q -> %q",
			first.obj.GetGeneration(), again.obj.GetGeneration(), first.restartAt, again.restartAt)
	}

	sum = e.setConfig(t, cm, "v3")
	k.waitCustom(t, e, w, "a second restart", func(s customState) bool { return k.reloaded(st, first, s, cm, sum) })
}

// A workloadRef Rollout reloads through its Deployment, whichever of the
// Rollout's configs changes, while the Deployment alone (no annotations)
// would not reload; and the Rollout itself is never given a template.
func TestRolloutWorkloadRefPatchesTheDeployment(t *testing.T) {
	e := startRipple(t, "--is-Argo-Rollouts")
	e.waitWatching(t, "Rollout")
	k := customKinds()[2]
	cm, sec := refs.Ref{Kind: refs.ConfigMap, Name: "app"}, refs.Ref{Kind: refs.Secret, Name: "creds"}
	e.newConfig(t, cm)
	e.newConfig(t, sec)
	w := k.create(t, e, "ref", ann(cmReloadKey, "app", secretAutoKey, "true"),
		corev1.PodTemplateSpec{Spec: podSpec(envFrom(cm.Kind, cm.Name), volume(sec.Kind, sec.Name))})
	before := k.waitCustom(t, e, w, "the baseline record", func(s customState) bool { return hasBaseline(s.obj) })

	st := strategy.EnvVars{}
	sum := e.setConfig(t, sec, "v2")
	k.waitCustom(t, e, w, "the Secret on the Deployment", func(s customState) bool { return k.reloaded(st, before, s, sec, sum) })
	sum = e.setConfig(t, cm, "v2")
	s := k.waitCustom(t, e, w, "the ConfigMap on the Deployment", func(s customState) bool { return k.reloaded(st, before, s, cm, sum) })
	if _, found, _ := unstructured.NestedFieldNoCopy(s.obj.Object, "spec", "template"); found {
		t.Fatal("the Rollout was given a template of its own")
	}
}

// Rollouts and their Deployments are applied together, in any order: a
// Rollout seen before its Deployment is reconciled again when the
// Deployment appears, and its named configs are found even then.
func TestRolloutWorkloadRefBeforeItsDeployment(t *testing.T) {
	e := startRipple(t, "--is-Argo-Rollouts")
	e.waitWatching(t, "Rollout")
	k := customKinds()[2]
	cm, other := refs.Ref{Kind: refs.ConfigMap, Name: "app"}, refs.Ref{Kind: refs.ConfigMap, Name: "other"}
	e.newConfig(t, cm)
	e.newConfig(t, other)
	tpl := corev1.PodTemplateSpec{Spec: podSpec(envFrom(cm.Kind, cm.Name))}
	w := k.createWorkload(t, e, "early", ann(autoKey, "true", cmReloadKey, "other"), tpl)
	time.Sleep(time.Second) // Ripple sees a Rollout without a template
	e.createRefDeployment(t, "early", tpl)
	before := k.waitCustom(t, e, w, "the baseline record", func(s customState) bool { return hasBaseline(s.obj) })

	st := strategy.EnvVars{}
	sum := e.setConfig(t, cm, "v2")
	k.waitCustom(t, e, w, "the referenced ConfigMap on the Deployment", func(s customState) bool { return k.reloaded(st, before, s, cm, sum) })
	sum = e.setConfig(t, other, "v2")
	k.waitCustom(t, e, w, "the named ConfigMap on the Deployment", func(s customState) bool { return k.reloaded(st, before, s, other, sum) })
}

// TestOptionalKindsFollowDiscovery runs Ripple, with every optional kind
// enabled, against an API server of its own that serves none of them:
// Ripple says so and reloads Deployments; it picks the kinds up when their
// CRDs are installed, and keeps running when they are removed.
func TestOptionalKindsFollowDiscovery(t *testing.T) {
	t.Parallel()
	own, e := ownAPI(t)
	e.run(t, "--is-Argo-Rollouts", "--is-openshift", "--enable-csi-integration")

	for _, kind := range []string{"Rollout", "DeploymentConfig", "SecretProviderClassPodStatus"} {
		e.waitLog(t, 5*time.Second, "enabled, but the API server does not serve it", `"kind": "`+kind+`"`)
	}
	deploy := kit.Deployment
	cm := refs.Ref{Kind: refs.ConfigMap, Name: "app"}
	e.newConfig(t, cm)
	d := e.newWorkload(t, deploy, "plain", ann(autoKey, "true"), envFrom(cm.Kind, cm.Name))
	e.waitFor(t, d, "the baseline record", hasBaseline)
	e.waitApplied(t, deploy, d, cm, e.setConfig(t, cm, "v2"))

	// Installed while Ripple runs: picked up at its next discovery poll.
	if err := own.InstallCRDs(t.Context(), cluster.DeploymentConfigCRD, cluster.RolloutCRD,
		cluster.SecretProviderClassCRD, cluster.SecretProviderClassPodStatusCRD); err != nil {
		t.Fatal(err)
	}
	e.waitWatching(t, "Rollout", "DeploymentConfig", "SecretProviderClassPodStatus")
	st := strategy.EnvVars{}
	tpl := corev1.PodTemplateSpec{Spec: podSpec(envFrom(cm.Kind, cm.Name))}
	dc, ro := customKinds()[3], customKinds()[0]
	dcw := dc.create(t, e, "dc", ann(autoKey, "true"), tpl)
	row := ro.create(t, e, "ro", ann(autoKey, "true"), tpl)
	spcw := e.csiWorkload(t, "csi", ann(autoKey, "true"), nil, "spc")
	e.newSPC(t, "spc", nil)
	e.setPodStatuses(t, "spc", "v1", "pod-1")
	dcBefore := dc.waitCustom(t, e, dcw, "the baseline record", func(s customState) bool { return hasBaseline(s.obj) })
	roBefore := ro.waitCustom(t, e, row, "the baseline record", func(s customState) bool { return hasBaseline(s.obj) })
	e.waitFor(t, spcw, "the baseline record", hasBaseline)

	sum := e.setConfig(t, cm, "v3")
	dc.waitCustom(t, e, dcw, "the DeploymentConfig reload", func(s customState) bool { return dc.reloaded(st, dcBefore, s, cm, sum) })
	ro.waitCustom(t, e, row, "the Rollout reload", func(s customState) bool { return ro.reloaded(st, roBefore, s, cm, sum) })
	e.waitApplied(t, deploy, d, cm, sum)
	spc := refs.Ref{Kind: refs.SecretProviderClass, Name: "spc"}
	e.waitApplied(t, deploy, spcw, spc, e.setPodStatuses(t, "spc", "v2", "pod-1"))

	// Removed while Ripple runs: it says so and goes on with the rest.
	if err := own.UninstallCRDs(t.Context(), cluster.DeploymentConfigCRD, cluster.RolloutCRD,
		cluster.SecretProviderClassCRD, cluster.SecretProviderClassPodStatusCRD); err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"Rollout", "DeploymentConfig", "SecretProviderClassPodStatus"} {
		e.waitLog(t, 25*time.Second, "the API is no longer served", `"kind": "`+kind+`"`)
	}
	e.waitApplied(t, deploy, d, cm, e.setConfig(t, cm, "v4"))
	// Still running well after its informers first failed to list the
	// removed kinds.
	time.Sleep(3 * time.Second)
	e.waitApplied(t, deploy, d, cm, e.setConfig(t, cm, "v5"))

	// Back again: the same watches resume.
	if err := own.InstallCRDs(t.Context(), cluster.DeploymentConfigCRD); err != nil {
		t.Fatal(err)
	}
	e.waitLog(t, 25*time.Second, "the API is served again", `"kind": "DeploymentConfig"`)
	dcw = dc.create(t, e, "dc-again", ann(autoKey, "true"), tpl)
	dcBefore = dc.waitCustomFor(t, e, dcw, 30*time.Second, "the baseline record", func(s customState) bool { return hasBaseline(s.obj) })
	sum = e.setConfig(t, cm, "v6")
	dc.waitCustom(t, e, dcw, "the DeploymentConfig reload", func(s customState) bool { return dc.reloaded(st, dcBefore, s, cm, sum) })
}

// waitLog waits for a line of Ripple's log that holds every one of subs.
func (e *env) waitLog(t *testing.T, timeout time.Duration, subs ...string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		return len(e.logs.Lines(subs...)) > 0, nil
	})
	if err != nil {
		t.Fatalf("no log line with %q within %s", subs, timeout)
	}
}
