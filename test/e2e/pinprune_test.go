package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/ripple-dev/ripple/hack/kit"
	"github.com/ripple-dev/ripple/internal/pin"
)

// A pinned Deployment with revisionHistoryLimit 2 and six changes of its
// ConfigMap keeps at most 3 copies of it: each rollout's copies are
// handed to the ReplicaSet of its template once it completes, and the
// garbage collector deletes them with the ReplicaSets the Deployment
// controller prunes. The copy the running revision names is kept.
// Deleting the Deployment deletes its ReplicaSets, and so its copies.
// Ripple runs as the chart's ServiceAccount, with every right but
// confined by the chart's pinned copy policy: its copies and their hand
// over pass it, and it denies that ServiceAccount any other ConfigMap or
// Secret.
func TestPinnedCopiesFollowTheRevisionHistory(t *testing.T) {
	t.Parallel()
	cs := kubernetes.NewForConfigOrDie(kc.Config)
	ns := newNamespace(t, cs)
	confined := confinePinning(t, cs, ns)
	startRipple(t, ns, "--pinning", "--kubeconfig="+confined.kubeconfig)
	w := workload{kind: kit.Deployment, ns: ns, name: "web"}
	createConfigMap(t, cs, ns, configName, "v1")
	w.create(t, cs, spec{configMaps: []string{configName}, annotations: map[string]string{autoAnnotation: "true", "ripple.dev/pin": "true"}})
	if _, err := cs.AppsV1().Deployments(ns).Patch(t.Context(), "web", types.MergePatchType,
		[]byte(`{"spec":{"revisionHistoryLimit":2}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRolledOut(t, cs, w)
	waitBaselineRecord(t, func(ctx context.Context) (metav1.Object, error) {
		return cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
	})

	// The ReplicaSets do not count the rollouts here (the limit prunes
	// them): each change is waited for by its record, rolled out.
	var last string
	for i := 2; i <= 7; i++ {
		sum := setConfigMapValue(t, cs, ns, configName, fmt.Sprintf("v%d", i))
		last = fmt.Sprintf("configmap/%s=%s", configName, sum[:pin.DigestLen])
		waitFor(t, "the rollout pinning "+last, func(ctx context.Context) (bool, error) {
			s, err := w.observe(ctx, cs)
			return err == nil && s.complete && s.template.Annotations["ripple.dev/pinned"] == last, err
		})
	}
	copies := func(ctx context.Context) (map[string]string, error) {
		l, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{LabelSelector: pin.CopyLabel + "=true"})
		if err != nil {
			return nil, err
		}
		out := map[string]string{}
		for _, c := range l.Items {
			owner := "none"
			if len(c.OwnerReferences) == 1 {
				owner = c.OwnerReferences[0].Kind
			}
			out[c.Name] = owner
		}
		return out, nil
	}
	pins, err := pin.Parse(last)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]string
	waitFor(t, "at most 3 copies, each owned by a ReplicaSet", func(ctx context.Context) (bool, error) {
		got, err = copies(ctx)
		if err != nil || len(got) > 3 || got[pins[0].Name()] == "" {
			return false, err
		}
		for _, owner := range got {
			if owner != "ReplicaSet" {
				return false, nil
			}
		}
		return true, nil
	})
	t.Logf("copies after 6 changes with revisionHistoryLimit 2: %v", got)
	confined.checkDenied(t, ns)

	if err := cs.AppsV1().Deployments(ns).Delete(t.Context(), "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "no copy once the Deployment is deleted", func(ctx context.Context) (bool, error) {
		got, err = copies(ctx)
		return err == nil && len(got) == 0, err
	})
}

// confined is Ripple's ServiceAccount under the chart's pinned copy
// policy.
type confined struct {
	user       string
	groups     []string
	kubeconfig string // the test's, acting as user
}

// confinePinning installs the chart's pinned copy policy for a release in
// a namespace of its own (its binding narrowed to that namespace and app:
// the API server is shared), gives the release's ServiceAccount every
// right in the cluster, so that only the policy confines it, and waits
// until the policy denies it a ConfigMap in app.
func confinePinning(t *testing.T, cs kubernetes.Interface, app string) confined {
	t.Helper()
	ctx := t.Context()
	own := newNamespace(t, cs)
	values := map[string]any{"ripple": map[string]any{"pinning": map[string]any{"enabled": true}}}
	named := func(name string) bool { return strings.HasSuffix(name, "-pinned-copies") }
	ps := slices.DeleteFunc(chartObjects[admissionregistrationv1.ValidatingAdmissionPolicy](t, own, "ValidatingAdmissionPolicy", values),
		func(p *admissionregistrationv1.ValidatingAdmissionPolicy) bool { return !named(p.Name) })
	bs := slices.DeleteFunc(chartObjects[admissionregistrationv1.ValidatingAdmissionPolicyBinding](t, own, "ValidatingAdmissionPolicyBinding", values),
		func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) bool { return !named(b.Name) })
	sas := chartObjects[corev1.ServiceAccount](t, own, "ServiceAccount", values)
	if len(ps) != 1 || len(bs) != 1 || len(sas) != 1 {
		t.Fatalf("the chart renders %d pinned copy policies, %d bindings and %d ServiceAccounts, want one each", len(ps), len(bs), len(sas))
	}
	c := confined{user: "system:serviceaccount:" + own + ":" + sas[0].Name,
		groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + own, "system:authenticated"}}
	p, b := ps[0], bs[0]
	p.Name = "ripple-pinned-copies-" + app
	b.Name, b.Spec.PolicyName = p.Name, p.Name
	b.Spec.MatchResources = &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
		MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpIn, Values: []string{app, own}}}}}
	api := cs.AdmissionregistrationV1()
	if _, err := api.ValidatingAdmissionPolicies().Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = api.ValidatingAdmissionPolicies().Delete(context.WithoutCancel(ctx), p.Name, metav1.DeleteOptions{})
	})
	if _, err := api.ValidatingAdmissionPolicyBindings().Create(ctx, b, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = api.ValidatingAdmissionPolicyBindings().Delete(context.WithoutCancel(ctx), b.Name, metav1.DeleteOptions{})
	})
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: p.Name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: own, Name: sas[0].Name}}}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.RbacV1().ClusterRoleBindings().Delete(context.WithoutCancel(ctx), crb.Name, metav1.DeleteOptions{})
	})

	kcfg, err := clientcmd.LoadFromFile(kc.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range kcfg.AuthInfos {
		a.Impersonate, a.ImpersonateGroups = c.user, c.groups
	}
	c.kubeconfig = filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kcfg, c.kubeconfig); err != nil {
		t.Fatal(err)
	}
	// The API server loads a new policy asynchronously.
	plain := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: app, Name: "plain"}}
	waitFor(t, "the pinned copy policy in effect", func(ctx context.Context) (bool, error) {
		_, err := c.client().CoreV1().ConfigMaps(app).Create(ctx, plain, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return apierrors.IsForbidden(err), nil
	})
	return c
}

// client acts as the confined ServiceAccount.
func (c confined) client() kubernetes.Interface {
	rc := rest.CopyConfig(kc.Config)
	rc.Impersonate = rest.ImpersonationConfig{UserName: c.user, Groups: c.groups}
	return kubernetes.NewForConfigOrDie(rc)
}

// checkDenied checks that the policy denies the ServiceAccount a mutable
// copy, a copy of another name form and a ServiceAccount token Secret in
// ns, and lets through a copy of the documented form (all dry runs).
func (c confined) checkDenied(t *testing.T, ns string) {
	t.Helper()
	ctx := t.Context()
	cl := c.client()
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{pin.CopyLabel: "true"}}
	}
	createCM := func(cm *corev1.ConfigMap) error {
		_, err := cl.CoreV1().ConfigMaps(ns).Create(ctx, cm, dry)
		return err
	}
	token := &corev1.Secret{ObjectMeta: meta("tok-r-0123456789ab"), Immutable: ptr.To(true), Type: corev1.SecretTypeServiceAccountToken}
	token.Annotations = map[string]string{corev1.ServiceAccountNameKey: "default"}
	_, tokenErr := cl.CoreV1().Secrets(ns).Create(ctx, token, dry)
	for what, tc := range map[string]struct {
		err  error
		want string // in the denial; "": allowed
	}{
		"a copy":                        {createCM(&corev1.ConfigMap{ObjectMeta: meta("cfg-r-0123456789ab"), Immutable: ptr.To(true)}), ""},
		"a mutable copy":                {createCM(&corev1.ConfigMap{ObjectMeta: meta("cfg-r-0123456789ab")}), "immutable"},
		"a misnamed copy":               {createCM(&corev1.ConfigMap{ObjectMeta: meta("cfg-copy"), Immutable: ptr.To(true)}), "<config>-r-<12 hex digits>"},
		"a ServiceAccount token Secret": {tokenErr, "ServiceAccount token"},
	} {
		switch {
		case tc.want == "" && tc.err != nil:
			t.Errorf("%s: %v, want it allowed", what, tc.err)
		case tc.want != "" && (tc.err == nil || !strings.Contains(tc.err.Error(), "ValidatingAdmissionPolicy") || !strings.Contains(tc.err.Error(), tc.want)):
			t.Errorf("%s: %v, want it denied by the policy saying %q", what, tc.err, tc.want)
		}
	}
}
