package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/hack/kit"
	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/refs"
)

// approverRules are the approver's Role of docs/change-policies.md.
var approverRules = []rbacv1.PolicyRule{
	{APIGroups: []string{"apps"}, Resources: []string{"deployments", "statefulsets", "daemonsets"}, Verbs: []string{"get", "patch"}},
	{APIGroups: []string{"batch"}, Resources: []string{"cronjobs", "jobs"}, Verbs: []string{"get", "patch"}},
	{APIGroups: []string{""}, Resources: []string{"configmaps", "secrets"}, Verbs: []string{"get", "list"}},
}

// `ripple approve` run as an approver with the documented Role: without
// patch it is refused and nothing rolls; with it, the approval names the
// approver (the API server's user) and the change set, and Ripple rolls
// exactly that and removes the approval.
func TestApproveWithTheApproverRole(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.environ = map[string]string{"RELOADER_NAMESPACE": e.ns}
	e.newConfig(t, appConfig)
	w := e.newWorkload(t, kit.Deployment, "w", map[string]string{autoKey: "true", "ripple.dev/reload-policy": "manual"}, envFrom(refs.ConfigMap, "app"))
	e.run(t)
	e.waitFor(t, w, "the baseline", hasBaseline)
	e.waitMetaInfo(t)
	sum := e.setConfig(t, appConfig, "v2")
	e.waitEvent(t, "w", corev1.EventTypeNormal, "ReloadPending")

	readOnly := make([]rbacv1.PolicyRule, len(approverRules))
	copy(readOnly, approverRules)
	readOnly[0] = rbacv1.PolicyRule{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get"}}
	e.grantApprover(t, "approver", readOnly)
	kubeconfig := serviceAccountKubeconfig(t, e.ns, "approver")
	var out string
	var code int
	if err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		out, code = e.approve(t, kubeconfig, "deploy/w")
		return strings.Contains(out, "forbidden") && strings.Contains(out, "patch"), nil
	}); err != nil {
		t.Fatalf("approve without patch: exit %d, want forbidden to patch:\n%s", code, out)
	}

	e.grantApprover(t, "approver", approverRules)
	if err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		out, code = e.approve(t, kubeconfig, "deploy/w")
		return code == 0, nil
	}); err != nil {
		t.Fatalf("approve with the approver's Role: exit %d:\n%s", code, out)
	}
	if !strings.Contains(out, `ConfigMap "app" `+sum[:12]) {
		t.Errorf("approve does not print what it approves:\n%s", out)
	}
	e.waitApplied(t, kit.Deployment, w, appConfig, sum)
	notes := e.waitEvent(t, "w", corev1.EventTypeNormal, "Reloaded")
	if approver := "system:serviceaccount:" + e.ns + ":approver"; !strings.Contains(notes[0], "approved by "+approver) {
		t.Errorf("Reloaded %q does not name %s", notes[0], approver)
	}
	if err := e.c.Get(t.Context(), client.ObjectKeyFromObject(w), w); err != nil {
		t.Fatal(err)
	}
	if v, ok := w.GetAnnotations()["ripple.dev/approval"]; ok {
		var a plan.Approval
		t.Errorf("the approval is still there: %s (%v)", v, json.Unmarshal([]byte(v), &a))
	}
}

// grantApprover gives the ServiceAccount name the rules in e's namespace,
// replacing what it had.
func (e *env) grantApprover(t *testing.T, name string, rules []rbacv1.PolicyRule) {
	t.Helper()
	ctx := t.Context()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}
	if _, err := e.cs.RbacV1().Roles(e.ns).Create(ctx, role, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
		_, err = e.cs.RbacV1().Roles(e.ns).Update(ctx, role, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return
	} else if err != nil {
		t.Fatal(err)
	}
	_, err := e.cs.RbacV1().RoleBindings(e.ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: e.ns, Name: name}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

// approve runs `ripple approve` with the kubeconfig: its output and exit code.
func (e *env) approve(t *testing.T, kubeconfig string, args ...string) (string, int) {
	t.Helper()
	base := []string{"approve", "--kubeconfig=" + kubeconfig, "-n", e.ns, "--ripple-namespace=" + e.ns}
	cmd := exec.CommandContext(t.Context(), os.Getenv("RIPPLE_BINARY"), append(base, args...)...)
	cmd.Env = []string{"HOME=" + t.TempDir()}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	var exit *exec.ExitError
	if err := cmd.Run(); errors.As(err, &exit) {
		return out.String(), exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), 0
}

// A per-key workload's digests are keyed with Ripple's digest key, in its
// own namespace. An approver with the documented Roles but not the key,
// nor the ConfigRollouts, is told so by `ripple approve`, which writes
// nothing, rather than writing an approval of digests Ripple never
// writes; with the ConfigRollouts readable (still not the key), approve
// takes what waits from them, and the approval rolls the workload once.
func TestApproveKeyedNeedsTheDigestKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	home := kit.NewNamespace(t, e.cs, "it-home-", nil)
	e.environ = map[string]string{"POD_NAMESPACE": home, "RELOADER_NAMESPACE": home}
	e.newConfig(t, appConfig)
	w := e.newWorkload(t, kit.Deployment, "w", ann(autoKey, "true", reloadOnKeysKey, "true", "ripple.dev/reload-policy", "manual"),
		valueFrom(appConfig.Kind, appConfig.Name))
	e.run(t)
	e.waitFor(t, w, "the baseline", hasBaseline)
	e.setConfig(t, appConfig, "v2")
	e.waitEvent(t, "w", corev1.EventTypeNormal, "ReloadPending")
	sum := e.keyedConfigMap(t, appConfig.Name, map[string]string{"k": "v2"}).Keys.Of(func(k string) bool { return k == "k" })

	e.grantApprover(t, "approver", approverRules)
	grantIn(t, e, home, "approver", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"},
		ResourceNames: []string{"reloader-meta-info"}, Verbs: []string{"get"}})
	kubeconfig := serviceAccountKubeconfig(t, e.ns, "approver")
	var out string
	var code int
	if err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		out, code = e.approve(t, kubeconfig, "--ripple-namespace="+home, "deploy/w")
		return strings.Contains(out, "digest key"), nil
	}); err != nil {
		t.Fatalf("approve without the digest key: exit %d, want it named:\n%s", code, out)
	}
	for _, want := range []string{`ConfigMap "app"`, "per-key reload", "get on secrets named ripple-digest-key in namespace " + home} {
		if code != 1 || !strings.Contains(out, want) {
			t.Errorf("approve without the digest key: exit %d, want 1 and %q:\n%s", code, want, out)
		}
	}
	if err := e.c.Get(t.Context(), client.ObjectKeyFromObject(w), w); err != nil {
		t.Fatal(err)
	}
	if v, ok := w.GetAnnotations()["ripple.dev/approval"]; ok {
		t.Errorf("approve refused, yet wrote the approval %s", v)
	}

	// Still without the key: reading the ConfigRollouts (as the view
	// role does), approve takes what waits from them and approves the
	// config at its resourceVersion.
	grantIn(t, e, e.ns, "approver-changes", rbacv1.PolicyRule{APIGroups: []string{"ripple.dev"}, Resources: []string{"configrollouts"},
		Verbs: []string{"get", "list"}})
	if err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		out, code = e.approve(t, kubeconfig, "--ripple-namespace="+home, "deploy/w")
		return code == 0, nil
	}); err != nil {
		t.Fatalf("approve without the digest key, reading the ConfigRollouts: exit %d:\n%s", code, out)
	}
	if !strings.Contains(out, "resourceVersion") {
		t.Errorf("approve without the key does not say what it approved:\n%s", out)
	}
	e.waitApplied(t, kit.Deployment, w, appConfig, sum)
	e.waitEvent(t, "w", corev1.EventTypeNormal, "Reloaded")
	if superseded, _ := kit.EventNotes(t.Context(), e.cs, e.ns, kit.EventMatch{Name: "w", Reason: "ApprovalSuperseded"}); len(superseded) > 0 {
		t.Errorf("an approval was refused: %q", superseded)
	}
}

// grantIn gives the approver ServiceAccount of e's namespace the rule in
// namespace ns, by a Role and a RoleBinding named name.
func grantIn(t *testing.T, e *env, ns, name string, rule rbacv1.PolicyRule) {
	t.Helper()
	ctx := t.Context()
	if _, err := e.cs.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{rule}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := e.cs.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: e.ns, Name: "approver"}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}
