package chart

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/ripple-dev/ripple/hack/helmchart"
	"github.com/ripple-dev/ripple/internal/config"
	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/test/inproc"
)

// approvals are the approval policy and its binding among objs (the
// ConfigRollout write policy is another's).
func approvals(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, kind := range []string{"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"} {
		for _, o := range find(objs, kind) {
			if strings.HasSuffix(o.GetName(), "-approvals") {
				out = append(out, o)
			}
		}
	}
	return out
}

func governance(kv map[string]any) map[string]any {
	return map[string]any{"ripple": map[string]any{"governance": kv}}
}

// TestGovernanceRenders: the governance values reach Ripple's
// configuration through its real flag parsing, and the approval admission
// policy renders only when enabled (and not without approvers).
func TestGovernanceRenders(t *testing.T) {
	_, objs := render(t, helmchart.Release{Name: relName, Namespace: relNS})
	if n := len(approvals(objs)); n != 0 {
		t.Errorf("defaults render %d approval policy objects, want none", n)
	}
	d, c := rippleDeployment(t, objs)
	_, cfg, err := inproc.ParseFlags(c.Args, envLookup(nil, d, c))
	if err != nil || cfg.TightenOnly || cfg.ApprovalsVerified || cfg.DeleteNamespaces != nil || cfg.ApprovalMaxAge != config.DefaultApprovalMaxAge {
		t.Errorf("defaults: tighten %v, verified %v, delete in %v, max age %v (%v); want Ripple's defaults",
			cfg.TightenOnly, cfg.ApprovalsVerified, cfg.DeleteNamespaces, cfg.ApprovalMaxAge, err)
	}

	_, objs = render(t, helmchart.Release{Name: relName, Namespace: relNS, Values: []map[string]any{governance(map[string]any{
		"tightenOnly": true, "approvalMaxAge": "48h", "restartDeleteNamespaces": []any{"batch", "shop"},
		"approvalPolicy": map[string]any{"enabled": true, "approvers": []any{"shop-approvers"}},
	})}})
	d, c = rippleDeployment(t, objs)
	_, cfg, err = inproc.ParseFlags(c.Args, envLookup(nil, d, c))
	if err != nil || !cfg.TightenOnly || !cfg.ApprovalsVerified || !slices.Equal(cfg.DeleteNamespaces, []string{"batch", "shop"}) || cfg.ApprovalMaxAge != 48*time.Hour {
		t.Errorf("set: tighten %v, verified %v, delete in %v, max age %v (%v)", cfg.TightenOnly, cfg.ApprovalsVerified, cfg.DeleteNamespaces, cfg.ApprovalMaxAge, err)
	}
	if kinds := approvals(objs); len(kinds) != 2 || kinds[0].GetKind() != "ValidatingAdmissionPolicy" || kinds[1].GetKind() != "ValidatingAdmissionPolicyBinding" {
		t.Error("approvalPolicy.enabled renders no policy and binding")
	}

	_, err = helmchart.Template(helmchart.Release{Name: relName, Namespace: relNS, Values: []map[string]any{governance(map[string]any{
		"approvalPolicy": map[string]any{"enabled": true},
	})}})
	if err == nil || !strings.Contains(err.Error(), "ripple.governance.approvalPolicy.approvers") {
		t.Errorf("enabled without approvers: %v, want an error naming the value", err)
	}
	_, err = helmchart.Template(helmchart.Release{Name: relName, Namespace: relNS, Values: []map[string]any{governance(map[string]any{
		"restartDeleteNamespaces": []any{"Not_A_Namespace"},
	})}})
	if err == nil || !strings.Contains(err.Error(), "restartDeleteNamespaces") {
		t.Errorf("a bad namespace name: %v, want the schema to refuse it", err)
	}
}

// TestApprovalPolicyAdmits installs the rendered admission policy on the
// real API server and writes approvals as several users: only a member of
// the approvers group may set one, with "by" their own username and in
// the form `ripple approve` writes; anyone may remove one or leave it
// unchanged.
func TestApprovalPolicyAdmits(t *testing.T) {
	ctx := t.Context()
	const prefix = "governance.example"
	key := prefix + "/approval"
	_, objs := render(t, helmchart.Release{Name: "gov", Namespace: relNS, Values: []map[string]any{
		{"ripple": map[string]any{"annotationPrefix": prefix, "governance": map[string]any{
			"approvalPolicy": map[string]any{"enabled": true, "approvers": []any{"shop-approvers"}}}}},
	}})
	a := newApplier(t, api.Config)
	for _, o := range approvals(objs) {
		if err := a.apply(ctx, o, false); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = a.delete(ctx, o) })
	}
	admin := kubernetes.NewForConfigOrDie(api.Config)
	const ns = "governance-approvals"
	ensureNamespace(t, admin, ns, nil)
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns}, Spec: appsv1.DeploymentSpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "registry.k8s.io/pause:3.10"}}}},
	}}
	if _, err := admin.AppsV1().Deployments(ns).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// Both users may patch Deployments (system:masters): only the policy
	// tells them apart.
	as := func(user string, groups ...string) kubernetes.Interface {
		rc := rest.CopyConfig(api.Config)
		rc.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: append(groups, "system:masters", "system:authenticated")}
		return kubernetes.NewForConfigOrDie(rc)
	}
	alice, mallory := as("alice", "shop-approvers"), as("mallory")
	// As `ripple approve` writes it.
	written := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	approvalBy := func(by string) string {
		b, _ := json.Marshal(plan.Approval{Changes: []plan.Approved{{Config: "ConfigMap/app", Digest: "3f2a9c01", Written: written}},
			By: by, At: written.Add(time.Minute), Now: true})
		return string(b)
	}
	write := func(cs kubernetes.Interface, value *string, dryRun bool) error {
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{key: value}}})
		opts := metav1.PatchOptions{}
		if dryRun {
			opts.DryRun = []string{metav1.DryRunAll}
		}
		_, err := cs.AppsV1().Deployments(ns).Patch(ctx, "web", types.MergePatchType, patch, opts)
		return err
	}
	ptr := func(s string) *string { return &s }

	// The API server loads a new policy asynchronously: wait until it
	// refuses the first write it must refuse (a dry run, which changes
	// nothing), then judge.
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		err := write(mallory, ptr(approvalBy("mallory")), true)
		return apierrors.IsForbidden(err) || apierrors.IsInvalid(err), nil
	}); err != nil {
		t.Fatalf("the policy never took effect: %v", err)
	}

	for _, tc := range []struct {
		name    string
		cs      kubernetes.Interface
		value   *string
		refused string // part of the refusal; "" when admitted
	}{
		{"outside the group", mallory, ptr(approvalBy("mallory")), "only members of the groups shop-approvers may set " + key},
		{"in the group, by someone else", alice, ptr(approvalBy("bob")), `"by" must be your own username, alice`},
		{"in the group, not ripple approve's form", alice, ptr(`{"by":"alice","by":"bob","changes":[],"at":"2026-11-27T10:01:00Z"}`), "must be written by ripple approve"},
		{"in the group, an escape in a value", alice, ptr(`{"changes":[],"by":"alice\",\"by\":\"bob","at":"x"}`), "must be written by ripple approve"},
		{"in the group, by self", alice, ptr(approvalBy("alice")), ""},
		{"outside the group, leaving it unchanged", mallory, ptr(approvalBy("alice")), ""},
		{"outside the group, removing it", mallory, nil, ""},
	} {
		err := write(tc.cs, tc.value, false)
		switch {
		case tc.refused == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.name, err)
		case tc.refused != "" && (err == nil || !strings.Contains(err.Error(), tc.refused)):
			t.Errorf("%s: %v, want a refusal saying %q", tc.name, err, tc.refused)
		}
	}
	got, err := admin.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := got.Annotations[key]; ok {
		t.Errorf("the approval is still there after its removal: %q", v)
	}
}
