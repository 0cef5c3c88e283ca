package chart

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/ripple-dev/ripple/hack/helmchart"
	"github.com/ripple-dev/ripple/hack/kit"
	"github.com/ripple-dev/ripple/internal/pin"
)

// pinningValues turn pinning on for a release whose keys are its own.
func pinningValues(prefix string) map[string]any {
	return map[string]any{
		"reloader": map[string]any{"custom_annotations": map[string]any{"auto": prefix + "/auto"}},
		"ripple":   map[string]any{"annotationPrefix": prefix, "pinning": map[string]any{"enabled": true}},
	}
}

// TestPinningPolicy applies the chart's MutatingAdmissionPolicy to the
// real API server and creates pods through it (dry run: admission runs,
// nothing is stored): every reference to a pinned config, in volumes,
// projected sources, envFrom and valueFrom of containers and init
// containers, names its copy; references to other configs, and an item of
// the record not of Ripple's form, are left alone; a pod without the
// record is not touched. Other releases' policies read their own key.
func TestPinningPolicy(t *testing.T) {
	t.Parallel()
	cs := kubernetes.NewForConfigOrDie(api.Config)
	relNS := kit.NewNamespace(t, cs, "pinpolicy-", nil)
	prefix := relNS + ".pin.test"
	_, objs := render(t, helmchart.Release{Name: relNS, Namespace: relNS, Values: []map[string]any{pinningValues(prefix)}})
	policies := append(find(objs, "MutatingAdmissionPolicy"), find(objs, "MutatingAdmissionPolicyBinding")...)
	if len(policies) != 2 {
		t.Fatalf("ripple.pinning.enabled renders %d MutatingAdmissionPolicy objects, want a policy and its binding", len(policies))
	}
	a := newApplier(t, api.Config)
	for _, o := range policies {
		if err := a.apply(t.Context(), o, false); err != nil {
			t.Fatalf("the API server refuses the chart's %s: %v", o.GetKind(), err)
		}
		t.Cleanup(func() { _ = a.delete(context.WithoutCancel(t.Context()), o) })
	}

	cmRef := func(n string) corev1.LocalObjectReference { return corev1.LocalObjectReference{Name: n} }
	ctr := func(name string) corev1.Container {
		return corev1.Container{Name: name, Image: "example.com/app:1",
			EnvFrom: []corev1.EnvFromSource{
				{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: cmRef("app")}},
				{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: cmRef("db")}},
				{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: cmRef("other")}},
			},
			Env: []corev1.EnvVar{
				{Name: "A", Value: "plain"},
				{Name: "B", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: cmRef("app"), Key: "k"}}},
				{Name: "C", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: cmRef("db"), Key: "k"}}},
				{Name: "D", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
			}}
	}
	pod := func(record string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "pinned-", Namespace: relNS},
			Spec: corev1.PodSpec{
				InitContainers: []corev1.Container{ctr("init")},
				Containers:     []corev1.Container{ctr("app"), ctr("side")},
				Volumes: []corev1.Volume{
					{Name: "a", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: cmRef("app")}}},
					{Name: "e", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
					{Name: "d", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "db"}}},
					{Name: "p", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
						{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: cmRef("other")}},
						{Secret: &corev1.SecretProjection{LocalObjectReference: cmRef("db")}},
						{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: cmRef("app")}},
					}}}},
				},
			}}
		if record != "" {
			p.Annotations = map[string]string{prefix + "/pinned": record}
		}
		return p
	}
	const record = "configmap/app=0123456789ab,secret/db=abcdef012345,configmap/other=nothex!!!!!!"
	var got *corev1.Pod
	// A policy takes effect once the API server has loaded it.
	deadline := time.Now().Add(caseTimeout)
	for {
		var err error
		got, err = cs.CoreV1().Pods(relNS).Create(t.Context(), pod(record), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			t.Fatalf("creating a pinned pod: %v", err)
		}
		if got.Spec.Volumes[0].ConfigMap.Name != "app" || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	want := map[string]string{"app": "app-r-0123456789ab", "db": "db-r-abcdef012345", "other": "other"}
	names := podConfigNames(got)
	for _, n := range names {
		if n.got != want[n.was] {
			t.Errorf("%s names %q, want %q", n.where, n.got, want[n.was])
		}
	}
	if len(names) != 20 {
		t.Errorf("%d references read back, want 20", len(names))
	}
	if got.Spec.Containers[0].Env[0].Value != "plain" || got.Spec.Containers[0].Env[3].ValueFrom.FieldRef == nil || got.Spec.Volumes[1].EmptyDir == nil {
		t.Errorf("the policy changed what it does not rewrite: %+v", got.Spec)
	}
	plain, err := cs.CoreV1().Pods(relNS).Create(t.Context(), pod(""), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range podConfigNames(plain) {
		if n.got != n.was {
			t.Errorf("a pod without the record: %s names %q, want %q", n.where, n.got, n.was)
		}
	}
}

// configName is one config reference of a pod: where it is, the name the
// test wrote there (was, from the path's config) and the name read back.
type configName struct{ where, was, got string }

// podConfigNames lists every ConfigMap and Secret reference of p. The
// test pods name each config the same way everywhere, so the name
// written is known from the reference's kind and its sibling fields.
func podConfigNames(p *corev1.Pod) []configName {
	var out []configName
	orig := func(n string) string { return strings.SplitN(n, "-r-", 2)[0] }
	add := func(where, n string) { out = append(out, configName{where, orig(n), n}) }
	for _, v := range p.Spec.Volumes {
		switch {
		case v.ConfigMap != nil:
			add("volume "+v.Name, v.ConfigMap.Name)
		case v.Secret != nil:
			add("volume "+v.Name, v.Secret.SecretName)
		case v.Projected != nil:
			for _, s := range v.Projected.Sources {
				if s.ConfigMap != nil {
					add("projected "+v.Name, s.ConfigMap.Name)
				}
				if s.Secret != nil {
					add("projected "+v.Name, s.Secret.Name)
				}
			}
		}
	}
	for _, c := range slices.Concat(p.Spec.InitContainers, p.Spec.Containers) {
		for _, e := range c.EnvFrom {
			if e.ConfigMapRef != nil {
				add(c.Name+" envFrom", e.ConfigMapRef.Name)
			}
			if e.SecretRef != nil {
				add(c.Name+" envFrom", e.SecretRef.Name)
			}
		}
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil {
				add(c.Name+" env "+e.Name, e.ValueFrom.ConfigMapKeyRef.Name)
			}
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				add(c.Name+" env "+e.Name, e.ValueFrom.SecretKeyRef.Name)
			}
		}
	}
	return out
}

// TestPinningRules proves the rule ripple.pinning.enabled adds (create
// and patch on configmaps and secrets) with Ripple running as the chart's
// ServiceAccount: a change of a ConfigMap a pinned Deployment reads rolls
// it with the copy named on its template, the copy immutable, Ripple's,
// and owned by the Deployment. Without the rule the API server's
// forbidden error names configmaps and the Deployment does not roll: a
// template never names a copy that is not there.
func TestPinningRules(t *testing.T) {
	withAndWithoutRule(t, "with create on configmaps and secrets", pinningRulesCase)
}

func pinningRulesCase(t *testing.T, withRule bool) {
	ctx := t.Context()
	cs := kubernetes.NewForConfigOrDie(api.Config)
	relNS := kit.NewNamespace(t, cs, "pinrules-", nil)
	app := kit.NewNamespace(t, cs, "pinrules-app-", nil)
	prefix := relNS + ".rbac.test"
	_, objs := render(t, helmchart.Release{Name: relNS, Namespace: relNS, Values: []map[string]any{pinningValues(prefix)}})
	takeRule(t, objs, "core/configmaps,secrets create,patch", !withRule)
	sa := applyRBAC(t, newApplier(t, api.Config), objs)
	user := "system:serviceaccount:" + relNS + ":" + sa
	waitAuthorized(t, cs, relNS, sa, roles(objs), []string{app})

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: app}, Data: map[string]string{"v": "0"}}
	if _, err := cs.CoreV1().ConfigMaps(app).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: app, Annotations: map[string]string{prefix + "/auto": "true", prefix + "/pin": "true"}},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "example.com/app:1",
					EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}}}}},
			},
		},
	}
	if _, err := cs.AppsV1().Deployments(app).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dep, c := rippleDeployment(t, objs)
	rip := startRipple(t, user, relNS, sa, c.Args, envLookup(objs, dep, c))
	defer func() {
		if err := rip.Stop(); err != nil && strings.Contains(err.Error(), "did not stop") {
			t.Error(err)
		}
	}()
	pinned := func() string {
		d, err := cs.AppsV1().Deployments(app).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return ""
		}
		return d.Spec.Template.Annotations[prefix+"/pinned"]
	}
	forbidden := func() []string {
		return slices.DeleteFunc(append(rip.Log.Lines("forbidden"), klogs.Lines("forbidden", `"`+user+`"`)...),
			func(l string) bool { return !strings.Contains(l, "configmaps") })
	}
	// Change the config until Ripple rolls: a change seen before its
	// caches synced is its baseline.
	deadline := time.Now().Add(caseTimeout)
	for pinned() == "" && time.Now().Before(deadline) && (withRule || len(forbidden()) == 0) {
		cm.Data["v"] = time.Now().String()
		if _, err := cs.CoreV1().ConfigMaps(app).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Second)
	}
	if !withRule {
		if len(forbidden()) == 0 {
			t.Errorf("without the rule no forbidden error on configmaps (pinned: %q): the rule is not needed", pinned())
		}
		if pinned() != "" {
			t.Errorf("without the rule the template names copies %q that could not be made", pinned())
		}
		return
	}
	pins, err := pin.Parse(pinned())
	if err != nil || len(pins) != 1 || pins[0].Ref.Name != "cfg" {
		t.Fatalf("the Deployment's template names %q (%v), want the copy of cfg", pinned(), err)
	}
	cp, err := cs.CoreV1().ConfigMaps(app).Get(ctx, pins[0].Name(), metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the copy the template names: %v", err)
	}
	if !ptr.Deref(cp.Immutable, false) || cp.Labels[pin.CopyLabel] != "true" || len(cp.OwnerReferences) != 1 || cp.OwnerReferences[0].Name != "web" || cp.OwnerReferences[0].Kind != "Deployment" {
		t.Errorf("copy %s: immutable %v, labels %v, owners %v; want immutable, Ripple's, owned by the Deployment", cp.Name, cp.Immutable, cp.Labels, cp.OwnerReferences)
	}
	if got := forbidden(); len(got) > 0 {
		t.Errorf("forbidden errors on configmaps with the rule: %q", got)
	}
}
