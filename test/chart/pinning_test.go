package chart

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
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

	const record = "configmap/app=0123456789ab,secret/db=abcdef012345,configmap/other=nothex!!!!!!"
	var got *corev1.Pod
	// A policy takes effect once the API server has loaded it.
	deadline := time.Now().Add(caseTimeout)
	for {
		var err error
		got, err = cs.CoreV1().Pods(relNS).Create(t.Context(), pinnedPod(relNS, prefix+"/pinned", record), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
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
	plain, err := cs.CoreV1().Pods(relNS).Create(t.Context(), pinnedPod(relNS, prefix+"/pinned", ""), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range podConfigNames(plain) {
		if n.got != n.was {
			t.Errorf("a pod without the record: %s names %q, want %q", n.where, n.got, n.was)
		}
	}
	// A reference without a name is the API server's validation's to
	// refuse, with its own message: the policy (which runs first) does
	// not fail on it.
	nameless := pinnedPod(relNS, prefix+"/pinned", record)
	nameless.Spec.Containers[1].EnvFrom = append(nameless.Spec.Containers[1].EnvFrom,
		corev1.EnvFromSource{ConfigMapRef: &corev1.ConfigMapEnvSource{Optional: ptr.To(true)}})
	_, err = cs.CoreV1().Pods(relNS).Create(t.Context(), nameless, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "configMapRef.name: Required value") || strings.Contains(err.Error(), "Policy") {
		t.Errorf("a pinned pod with a nameless envFrom: %v, want the API server's validation error, not the policy's", err)
	}
}

// pinnedPod is a pod of ns reading ConfigMaps app and other and Secret db
// 20 ways (volumes, projected sources, envFrom and valueFrom of two
// containers and an init container), with record under key unless empty.
func pinnedPod(ns, key, record string) *corev1.Pod {
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
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "pinned-", Namespace: ns},
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
		p.Annotations = map[string]string{key: record}
	}
	return p
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

// TestPinningRules proves the rules ripple.pinning.enabled adds, with
// Ripple running as the chart's ServiceAccount. With them, a change of a
// ConfigMap a pinned Deployment reads rolls it with the copy named on its
// template, the copy immutable, Ripple's, and owned by the Deployment;
// once the rollout completes (the test plays the Deployment controller:
// the API server runs none), the copy is owned by the ReplicaSet of the
// template instead (a change of owners the API server's
// OwnerReferencesPermissionEnforcement, on here as on OpenShift, allows
// only to who may delete the copy). Without create and patch on configmaps and secrets
// the API server's forbidden error names configmaps and the Deployment
// does not roll: a template never names a copy that is not there. Without
// list on replicasets and controllerrevisions, or without delete on
// configmaps and secrets, the copy stays the Deployment's and the error
// says why.
func TestPinningRules(t *testing.T) {
	for _, tc := range []struct{ name, without string }{
		{"with the rules", ""},
		{"without create and patch on configmaps and secrets", copyRule},
		{"without list on replicasets and controllerrevisions", revisionsRule},
		{"without delete on configmaps and secrets", deleteRule},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pinningRulesCase(t, tc.without)
		})
	}
}

const (
	copyRule      = "core/configmaps,secrets create,patch"
	revisionsRule = "apps/replicasets,controllerrevisions list"
	deleteRule    = "core/configmaps,secrets delete"
)

func pinningRulesCase(t *testing.T, without string) {
	ctx := t.Context()
	cs := kubernetes.NewForConfigOrDie(api.Config)
	relNS := kit.NewNamespace(t, cs, "pinrules-", nil)
	app := kit.NewNamespace(t, cs, "pinrules-app-", nil)
	prefix := relNS + ".rbac.test"
	_, objs := render(t, helmchart.Release{Name: relNS, Namespace: relNS, Values: []map[string]any{pinningValues(prefix)}})
	for _, rule := range []string{copyRule, revisionsRule, deleteRule} {
		takeRule(t, objs, rule, rule == without)
	}
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
	forbidden := func(resource string) []string {
		return slices.DeleteFunc(append(rip.Log.Lines("forbidden"), klogs.Lines("forbidden", `"`+user+`"`)...),
			func(l string) bool { return !strings.Contains(l, resource) })
	}
	// Change the config until Ripple rolls: a change seen before its
	// caches synced is its baseline.
	deadline := time.Now().Add(caseTimeout)
	for pinned() == "" && time.Now().Before(deadline) && (without != copyRule || len(forbidden("configmaps")) == 0) {
		cm.Data["v"] = time.Now().String()
		if _, err := cs.CoreV1().ConfigMaps(app).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Second)
	}
	if without == copyRule {
		if len(forbidden("configmaps")) == 0 {
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
	if got := forbidden("configmaps"); len(got) > 0 {
		t.Errorf("forbidden errors on configmaps with the rule: %q", got)
	}
	rs := newReplicaSet(t, cs, app, "web")
	completeRollout(t, cs, app, "web")
	owned := func() string {
		cp, err := cs.CoreV1().ConfigMaps(app).Get(ctx, pins[0].Name(), metav1.GetOptions{})
		if err != nil || len(cp.OwnerReferences) != 1 {
			return ""
		}
		return cp.OwnerReferences[0].Kind + "/" + cp.OwnerReferences[0].Name
	}
	// Without either of the others, the copy stays the Deployment's and
	// the refusal says why.
	want, refusal := "ReplicaSet/"+rs, ""
	switch without {
	case revisionsRule:
		want, refusal = "Deployment/web", "replicasets"
	case deleteRule:
		want, refusal = "Deployment/web", "cannot set an ownerRef on a resource you can't delete"
	}
	deadline = time.Now().Add(caseTimeout)
	done := func() bool {
		if refusal != "" {
			return len(forbidden(refusal)) > 0
		}
		return owned() == want
	}
	for !done() && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if got := owned(); got != want {
		t.Errorf("once the rollout completed the copy is owned by %q, want %q", got, want)
	}
	for _, r := range []string{"replicasets", "cannot set an ownerRef on a resource you can't delete"} {
		if got := forbidden(r); (r == refusal) != (len(got) > 0) {
			t.Errorf("forbidden errors with %q: %q; want them only without the rule", r, got)
		}
	}
}

// newReplicaSet plays the Deployment controller for the Deployment
// ns/name: it makes the ReplicaSet of its template, and returns its name.
func newReplicaSet(t *testing.T, cs kubernetes.Interface, ns, name string) string {
	t.Helper()
	d, err := cs.AppsV1().Deployments(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: name + "-pinned", Namespace: ns, Labels: d.Spec.Template.Labels,
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(d, appsv1.SchemeGroupVersion.WithKind("Deployment"))}},
		Spec: appsv1.ReplicaSetSpec{Replicas: d.Spec.Replicas, Selector: d.Spec.Selector, Template: d.Spec.Template}}
	if _, err := cs.AppsV1().ReplicaSets(ns).Create(t.Context(), rs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return rs.Name
}

// TestPinnedCopyPolicy applies the chart's pinned copy policy to the real
// API server and, as Ripple's ServiceAccount with every right in two
// namespaces (its own and an app's), tries what the rule pinning adds
// would let it do: outside its own namespace it creates a copy, adds an
// owner to it and nothing else; it makes no copy in its own namespace,
// where its Role decides the rest. Another user is not confined.
func TestPinnedCopyPolicy(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	admin := kubernetes.NewForConfigOrDie(api.Config)
	own := kit.NewNamespace(t, admin, "pincopy-", nil)
	app := kit.NewNamespace(t, admin, "pincopy-app-", nil)
	_, objs := render(t, helmchart.Release{Name: own, Namespace: own, Values: []map[string]any{pinningValues(own + ".copy.test")}})
	ps, bs := find(objs, "ValidatingAdmissionPolicy"), find(objs, "ValidatingAdmissionPolicyBinding")
	ps = slices.DeleteFunc(ps, func(o *unstructured.Unstructured) bool { return !strings.HasSuffix(o.GetName(), "-pinned-copies") })
	bs = slices.DeleteFunc(bs, func(o *unstructured.Unstructured) bool { return !strings.HasSuffix(o.GetName(), "-pinned-copies") })
	if len(ps) != 1 || len(bs) != 1 {
		t.Fatalf("ripple.pinning.enabled renders %d pinned copy policies and %d bindings, want one each", len(ps), len(bs))
	}
	// The API server is shared: the binding is narrowed to the test's
	// namespaces.
	if err := unstructured.SetNestedField(bs[0].Object, map[string]any{"namespaceSelector": map[string]any{"matchExpressions": []any{
		map[string]any{"key": "kubernetes.io/metadata.name", "operator": "In", "values": []any{own, app}}}}}, "spec", "matchResources"); err != nil {
		t.Fatal(err)
	}
	a := newApplier(t, api.Config)
	for _, o := range []*unstructured.Unstructured{ps[0], bs[0]} {
		if err := a.apply(ctx, o, false); err != nil {
			t.Fatalf("the API server refuses the chart's %s: %v", o.GetKind(), err)
		}
		t.Cleanup(func() { _ = a.delete(context.WithoutCancel(ctx), o) })
	}
	sas := find(objs, "ServiceAccount")
	if len(sas) != 1 {
		t.Fatalf("%d ServiceAccounts rendered", len(sas))
	}
	ripple := "system:serviceaccount:" + own + ":" + sas[0].GetName()
	for _, ns := range []string{own, app} {
		everything(t, admin, ns, ripple, "tenant")
	}
	as := func(user string) kubernetes.Interface {
		rc := rest.CopyConfig(api.Config)
		rc.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
		return kubernetes.NewForConfigOrDie(rc)
	}
	rip, tenant := as(ripple), as("tenant")
	copyMeta := func(ns, name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{pin.CopyLabel: "true"}}
	}
	const copyName = "cfg-r-0123456789ab"
	copyOf := func(ns string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: copyMeta(ns, copyName), Immutable: ptr.To(true), Data: map[string]string{"k": "v"}}
	}
	plain := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: app, Name: "cfg"}, Data: map[string]string{"k": "v"}}
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	createCM := func(c kubernetes.Interface, cm *corev1.ConfigMap) error {
		_, err := c.CoreV1().ConfigMaps(cm.Namespace).Create(ctx, cm, dry)
		return err
	}
	// The API server loads a new policy asynchronously.
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return apierrors.IsForbidden(createCM(rip, plain)), nil
	}); err != nil {
		t.Fatalf("the policy never took effect: %v", err)
	}

	mutable := copyOf(app)
	mutable.Immutable = nil
	misnamed := copyOf(app)
	misnamed.Name = "cfg-copy"
	token := &corev1.Secret{ObjectMeta: copyMeta(app, "tok-r-0123456789ab"), Immutable: ptr.To(true), Type: corev1.SecretTypeServiceAccountToken}
	token.Annotations = map[string]string{corev1.ServiceAccountNameKey: "default"}
	for what, tc := range map[string]struct {
		err  error
		want string // in the refusal; "": allowed
	}{
		"a copy":                           {createCM(rip, copyOf(app)), ""},
		"a ConfigMap not labelled a copy":  {createCM(rip, plain), "only its pinned copies"},
		"a mutable copy":                   {createCM(rip, mutable), "immutable"},
		"a copy not named <config>-r-<12>": {createCM(rip, misnamed), "<config>-r-<12 hex digits>"},
		"a copy in its own namespace":      {createCM(rip, copyOf(own)), "no pinned copy in its own namespace"},
		"a ConfigMap in its own namespace": {createCM(rip, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: own, Name: "ripple-state"}}), ""},
		"the tenant's ConfigMap":           {createCM(tenant, plain), ""},
		"a ServiceAccount token copy": {func() error {
			_, err := rip.CoreV1().Secrets(app).Create(ctx, token, dry)
			return err
		}(), "ServiceAccount token"},
	} {
		switch {
		case tc.want == "" && tc.err != nil:
			t.Errorf("Ripple creating %s: %v, want it allowed", what, tc.err)
		case tc.want != "" && (tc.err == nil || !strings.Contains(tc.err.Error(), tc.want)):
			t.Errorf("Ripple creating %s: %v, want the policy's refusal saying %q", what, tc.err, tc.want)
		}
	}

	// Changes and deletes (dry runs): an owner added to a copy, or its
	// delete, passes; a change of another ConfigMap, one that makes it a
	// copy, one that unmarks a copy, or the delete of another ConfigMap,
	// does not.
	cp, err := rip.CoreV1().ConfigMaps(app).Create(ctx, copyOf(app), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CoreV1().ConfigMaps(app).Create(ctx, plain, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	owner := `{"metadata":{"ownerReferences":[{"apiVersion":"apps/v1","kind":"Deployment","name":"web","uid":"00000000-0000-0000-0000-000000000001"}]}}`
	for what, tc := range map[string]struct {
		name, patch, want string // no patch: a delete
	}{
		"adds an owner to its copy":    {cp.Name, owner, ""},
		"adds an owner to a ConfigMap": {plain.Name, owner, "is not one"},
		"labels a ConfigMap a copy":    {plain.Name, `{"metadata":{"labels":{"` + pin.CopyLabel + `":"true"}}}`, "was not one"},
		"takes the label off its copy": {cp.Name, `{"metadata":{"labels":{"` + pin.CopyLabel + `":null}}}`, "is not one"},
		"deletes its copy":             {cp.Name, "", ""},
		"deletes a ConfigMap":          {plain.Name, "", "is not one"},
	} {
		var err error
		if tc.patch == "" {
			err = rip.CoreV1().ConfigMaps(app).Delete(ctx, tc.name, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
		} else {
			_, err = rip.CoreV1().ConfigMaps(app).Patch(ctx, tc.name, types.MergePatchType, []byte(tc.patch), metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
		}
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("Ripple %s: %v, want it allowed", what, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("Ripple %s: %v, want the policy's refusal saying %q", what, err, tc.want)
		}
	}
}

// everything binds users to every right in ns: only an admission policy
// tells them apart.
func everything(t *testing.T, cs kubernetes.Interface, ns string, users ...string) {
	t.Helper()
	all := []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}}
	if _, err := cs.RbacV1().Roles(ns).Create(t.Context(), &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "everything"}, Rules: all}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var subjects []rbacv1.Subject
	for _, u := range users {
		subjects = append(subjects, rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: u})
	}
	if _, err := cs.RbacV1().RoleBindings(ns).Create(t.Context(), &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "everything"},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "everything"}, Subjects: subjects}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}
