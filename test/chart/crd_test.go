package chart

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/api/v1alpha1"
	"github.com/ripple-dev/ripple/hack/cluster"
	"github.com/ripple-dev/ripple/hack/helmchart"
	"github.com/ripple-dev/ripple/hack/kit"
)

// TestHelmInstallsTheCRD installs the chart on an API server that has no
// ConfigRollout CRD, as a migrating user's cluster has none: the release
// installs it and owns it; a second release (another shard's, another
// team's) installs beside it without failing on the CRD and leaves it to
// the first; an upgrade keeps it; uninstalling its release leaves it, as
// deleting it would delete every ConfigRollout.
func TestHelmInstallsTheCRD(t *testing.T) {
	t.Parallel()
	own, err := cluster.StartAPI(cluster.APIOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := own.Stop(); err != nil {
			t.Errorf("stopping the test's own API server: %v", err)
		}
	})
	chart, err := helmchart.Dir()
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(own.Config)
	crds := apiextensionsclient.NewForConfigOrDie(own.Config).ApiextensionsV1().CustomResourceDefinitions()
	helm := func(ns string, args ...string) {
		t.Helper()
		if out, err := helmchart.HelmEnv([]string{"KUBECONFIG=" + own.Kubeconfig}, append(args, "--namespace", ns)...); err != nil {
			t.Fatalf("helm %v: %v\n%s", args, err, out)
		}
	}
	owner := func() string {
		t.Helper()
		crd, err := crds.Get(t.Context(), "configrollouts.ripple.dev", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("the ConfigRollout CRD: %v", err)
		}
		if crd.Annotations["helm.sh/resource-policy"] != "keep" {
			t.Errorf("the CRD's annotations %v lack Helm's keep policy", crd.Annotations)
		}
		return crd.Annotations["meta.helm.sh/release-namespace"] + "/" + crd.Annotations["meta.helm.sh/release-name"]
	}

	first := kit.NewNamespace(t, cs, "crd-a-", nil)
	helm(first, "install", "ripple", chart, "-f", reloaderValues())
	if got := owner(); got != first+"/ripple" {
		t.Errorf("after the first install the CRD is owned by %q, want %s/ripple", got, first)
	}
	second := kit.NewNamespace(t, cs, "crd-b-", nil)
	helm(second, "install", "other", chart, "-f", reloaderValues())
	helm(first, "upgrade", "ripple", chart, "-f", reloaderValues(), "--set", "reloader.deployment.replicas=2")
	if got := owner(); got != first+"/ripple" {
		t.Errorf("after a second release and an upgrade the CRD is owned by %q, want %s/ripple", got, first)
	}
	helm(first, "uninstall", "ripple")
	if got := owner(); got != first+"/ripple" {
		t.Errorf("after its release's uninstall the CRD is owned by %q", got)
	}
}

// TestConfigRolloutWritePolicy: the chart's ConfigRollout write policy is
// rendered by a cluster-wide install (as the CRD; none scoped, in single
// mode or turned off) for the ConfigRollouts of the kinds it watches, and
// on the real API server it lets Ripple's ServiceAccount write them while
// a tenant with every right in the namespace can neither mark a halted
// change passed, nor delete it, nor plant one; the garbage collector and
// the controller manager may still delete one.
func TestConfigRolloutWritePolicy(t *testing.T) {
	const rel = "crpolicy"
	var sa string // Ripple's ServiceAccount, as rendered
	policy := func(values map[string]any) (*unstructured.Unstructured, *unstructured.Unstructured) {
		t.Helper()
		_, objs := render(t, helmchart.Release{Name: rel, Namespace: relNS, Values: []map[string]any{values}})
		if sas := find(objs, "ServiceAccount"); len(sas) == 1 {
			sa = sas[0].GetName()
		}
		ps, bs := find(objs, "ValidatingAdmissionPolicy"), find(objs, "ValidatingAdmissionPolicyBinding")
		if len(ps) == 0 && len(bs) == 0 {
			return nil, nil
		}
		if len(ps) != 1 || len(bs) != 1 || !strings.HasSuffix(ps[0].GetName(), "-configrollouts") {
			t.Fatalf("%d policies, %d bindings, want the ConfigRollouts' one each", len(ps), len(bs))
		}
		return ps[0], bs[0]
	}
	for _, tc := range []struct {
		name   string
		values map[string]any
		// match is the binding's matchResources as JSON; "none": no policy.
		match string
	}{
		{"global", nil, "null"},
		{"scoped", r(map[string]any{"namespaces": []any{"team-a", "team-b"}}), "none"},
		{"Secrets ignored", r(map[string]any{"ignoreSecrets": true}),
			`{"objectSelector":{"matchExpressions":[{"key":"ripple.dev/config-kind","operator":"NotIn","values":["secret"]}]}}`},
		{"single", r(map[string]any{"watchGlobally": false}), "none"},
		{"off", map[string]any{"ripple": map[string]any{"configRollouts": map[string]any{"writePolicy": false}}}, "none"},
		{"ConfigRollouts off", map[string]any{"ripple": map[string]any{"configRollouts": map[string]any{"enabled": false}}}, "none"},
	} {
		p, b := policy(tc.values)
		if p == nil {
			if tc.match != "none" {
				t.Errorf("%s: no policy", tc.name)
			}
			continue
		}
		m, _, _ := unstructured.NestedFieldNoCopy(b.Object, "spec", "matchResources")
		if got, _ := json.Marshal(m); string(got) != tc.match {
			t.Errorf("%s: matchResources %s, want %s", tc.name, got, tc.match)
		}
	}

	ctx := t.Context()
	admin := kubernetes.NewForConfigOrDie(api.Config)
	ns := kit.NewNamespace(t, admin, "crpolicy-", nil)
	p, b := policy(nil)
	// The API server is shared with tests that run Ripples under other
	// ServiceAccounts: the binding is narrowed to this test's namespace.
	if err := unstructured.SetNestedField(b.Object, map[string]any{"namespaceSelector": map[string]any{
		"matchLabels": map[string]any{"kubernetes.io/metadata.name": ns}}}, "spec", "matchResources"); err != nil {
		t.Fatal(err)
	}
	a := newApplier(t, api.Config)
	for _, o := range []*unstructured.Unstructured{p, b} {
		if err := a.apply(ctx, o, false); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = a.delete(context.WithoutCancel(ctx), o) })
	}
	ripple := "system:serviceaccount:" + relNS + ":" + sa
	gc := "system:serviceaccount:kube-system:generic-garbage-collector"
	kcm := "system:kube-controller-manager" // its controllers without --use-service-account-credentials
	// Every right in the namespace, for the tenant as for Ripple and the
	// garbage collector: only the policy tells them apart.
	everything(t, admin, ns, "tenant", ripple, gc, kcm)
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	as := func(user string) client.Client {
		rc := rest.CopyConfig(api.Config)
		if user != "" {
			rc.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
		}
		c, err := client.New(rc, client.Options{Scheme: scheme})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	tenant, rippleSA := as("tenant"), as(ripple)
	change := func(name string) *v1alpha1.ConfigRollout {
		return &v1alpha1.ConfigRollout{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{v1alpha1.LabelConfigKind: "configmap"}},
			Spec: v1alpha1.ConfigRolloutSpec{Config: v1alpha1.ConfigReference{Kind: "ConfigMap", Name: "app", UID: "uid-app"}, Revision: "r1"}}
	}
	// The API server loads a new policy asynchronously: wait until it
	// refuses the tenant's planted change (a dry run), then judge.
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		return apierrors.IsForbidden(tenant.Create(ctx, change("planted"), client.DryRunAll)), nil
	}); err != nil {
		t.Fatalf("the policy never took effect: %v", err)
	}
	halted := change("app-r1")
	if err := rippleSA.Create(ctx, halted); err != nil {
		t.Fatalf("Ripple creates a ConfigRollout: %v", err)
	}
	halted.Status.Phase = v1alpha1.PhaseHalted
	if err := rippleSA.Status().Update(ctx, halted); err != nil {
		t.Fatalf("Ripple writes its status: %v", err)
	}
	passed := halted.DeepCopy()
	passed.Status.Phase = v1alpha1.PhasePropagated
	for what, err := range map[string]error{
		"plants a change":        tenant.Create(ctx, change("planted")),
		"marks the halt passed":  tenant.Status().Update(ctx, passed),
		"deletes the halt":       tenant.Delete(ctx, halted),
		"relabels it the latest": tenant.Patch(ctx, halted, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"ripple.dev/latest":"true"}}}`))),
	} {
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "only Ripple") {
			t.Errorf("the tenant %s: %v, want the policy's refusal", what, err)
		}
	}
	var got v1alpha1.ConfigRollout
	if err := as("").Get(ctx, client.ObjectKeyFromObject(halted), &got); err != nil {
		t.Fatal(err)
	}
	if got.Status.Phase != v1alpha1.PhaseHalted {
		t.Errorf("the change is %q after the tenant's tries, want Halted", got.Status.Phase)
	}
	if err := as(gc).Delete(ctx, halted); err != nil {
		t.Errorf("the garbage collector deletes a ConfigRollout: %v", err)
	}
	other := change("app-r2")
	if err := rippleSA.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	if err := as(kcm).Delete(ctx, other); err != nil {
		t.Errorf("the controller manager deletes a ConfigRollout: %v", err)
	}
}
