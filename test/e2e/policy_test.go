package e2e

import (
	"context"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
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
	"github.com/ripple-dev/ripple/hack/helmchart"
)

// chartObjects renders the chart as release ns in ns with values and
// returns the objects of kind, decoded into T.
func chartObjects[T any](t *testing.T, ns, kind string, values map[string]any) []*T {
	t.Helper()
	out, err := helmchart.Template(helmchart.Release{Name: "rp", Namespace: ns, Values: []map[string]any{values}})
	if err != nil {
		t.Fatal(err)
	}
	objs, err := helmchart.Objects(out)
	if err != nil {
		t.Fatal(err)
	}
	var found []*T
	for _, o := range objs {
		if o.GetKind() != kind {
			continue
		}
		v := new(T)
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, v); err != nil {
			t.Fatal(err)
		}
		found = append(found, v)
	}
	return found
}

// checkOnlyRippleWrites installs the chart's ConfigRollout write policy
// (its binding narrowed to ns: the API server is shared) and checks that
// a tenant with every right in ns can neither mark the halted change
// passed nor delete it. Ripple runs here as the cluster's admin, whom the
// policy lets through (system:masters), as it lets Ripple's
// ServiceAccount through in a cluster.
func checkOnlyRippleWrites(t *testing.T, cs kubernetes.Interface, ns string) {
	t.Helper()
	ctx := t.Context()
	ps := chartObjects[admissionregistrationv1.ValidatingAdmissionPolicy](t, ns, "ValidatingAdmissionPolicy", nil)
	bs := chartObjects[admissionregistrationv1.ValidatingAdmissionPolicyBinding](t, ns, "ValidatingAdmissionPolicyBinding", nil)
	if len(ps) != 1 || len(bs) != 1 {
		t.Fatalf("the chart renders %d policies and %d bindings, want the ConfigRollouts' one each", len(ps), len(bs))
	}
	p, b := ps[0], bs[0]
	p.Name = "ripple-configrollouts-" + ns
	b.Name, b.Spec.PolicyName = p.Name, p.Name
	b.Spec.MatchResources = &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
		MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}}}
	if _, err := cs.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.AdmissionregistrationV1().ValidatingAdmissionPolicies().Delete(context.WithoutCancel(ctx), p.Name, metav1.DeleteOptions{})
	})
	if _, err := cs.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, b, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Delete(context.WithoutCancel(ctx), b.Name, metav1.DeleteOptions{})
	})

	all := []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}}
	if _, err := cs.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "owner"}, Rules: all}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "owner"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "owner"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "owner"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rc := rest.CopyConfig(kc.Config)
	rc.Impersonate = rest.ImpersonationConfig{UserName: "owner", Groups: []string{"system:authenticated"}}
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	owner, err := client.New(rc, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}

	halted := newestChange(t, ns)
	if halted.Status.Phase != v1alpha1.PhaseHalted {
		t.Fatalf("the change is %q, want Halted", halted.Status.Phase)
	}
	passed := []byte(`{"status":{"phase":"` + string(v1alpha1.PhasePropagated) + `"}}`)
	// The API server loads a new policy asynchronously: until it refuses
	// the owner's dry-run status patch, it is not on yet.
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		err := owner.Status().Patch(ctx, &halted, client.RawPatch(types.MergePatchType, passed), client.DryRunAll)
		return apierrors.IsForbidden(err), nil
	}); err != nil {
		t.Fatalf("the write policy never refused the namespace's owner: %v", err)
	}
	for what, err := range map[string]error{
		"marks the halted change passed": owner.Status().Patch(ctx, &halted, client.RawPatch(types.MergePatchType, passed)),
		"deletes the halted change":      owner.Delete(ctx, &halted),
	} {
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "only Ripple") {
			t.Errorf("the namespace's owner (* on *) %s: %v, want the write policy's refusal", what, err)
		}
	}
	if now := newestChange(t, ns); now.UID != halted.UID || now.Status.Phase != v1alpha1.PhaseHalted {
		t.Errorf("after the owner's tries the newest change is %s (%q), want %s still Halted", now.Name, now.Status.Phase, halted.Name)
	}
}

// checkQueryGateEgress renders the chart's NetworkPolicy for a Ripple that
// asks promURL, creates it in ns (the API server validates it) and checks
// that it lets Ripple reach the URL's port at any address. No CNI
// enforces policies here: the policy is data this test reads.
func checkQueryGateEgress(t *testing.T, cs kubernetes.Interface, ns, promURL string) {
	t.Helper()
	nps := chartObjects[networkingv1.NetworkPolicy](t, ns, "NetworkPolicy", map[string]any{
		"reloader": map[string]any{"netpol": map[string]any{"enabled": true}},
		"ripple": map[string]any{"canaryGates": []any{"query"},
			"prometheus": map[string]any{"url": promURL, "query": "max(" + canaryErrors + `{pod=~"$pods"}) < 0.05`}},
	})
	if len(nps) != 1 {
		t.Fatalf("the chart renders %d NetworkPolicies, want 1", len(nps))
	}
	np, err := cs.NetworkingV1().NetworkPolicies(ns).Create(t.Context(), nps[0], metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("the API server refuses the chart's NetworkPolicy: %v", err)
	}
	u, err := url.Parse(promURL)
	if err != nil {
		t.Fatal(err)
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		t.Fatal(err)
	}
	reaches := slices.ContainsFunc(np.Spec.Egress, func(r networkingv1.NetworkPolicyEgressRule) bool {
		return len(r.To) == 0 && slices.ContainsFunc(r.Ports, func(p networkingv1.NetworkPolicyPort) bool {
			return p.Port != nil && p.Port.IntValue() == port && p.Protocol != nil && *p.Protocol == "TCP"
		})
	})
	if !reaches {
		egress, _ := runtime.DefaultUnstructuredConverter.ToUnstructured(np)
		spec, _, _ := unstructured.NestedFieldNoCopy(egress, "spec", "egress")
		t.Errorf("the chart's NetworkPolicy does not let Ripple reach %s (TCP %d at any address): egress %v", promURL, port, spec)
	}
}
