package e2e

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/ripple-dev/ripple/hack/kit"
	"github.com/ripple-dev/ripple/internal/digest"
)

// The approver of docs/change-policies.md: a user in the group the
// documented RoleBindings name.
const (
	approverUser  = "alice"
	approverGroup = "shop-approvers"
)

// With a cluster-wide --reload-policy=manual (no annotation on the
// workload) a change waits; a user bound only to the approver RBAC that
// docs/change-policies.md documents approves it with the documented
// command, and the Deployment rolls exactly once. Ripple runs in its own
// namespace, where it publishes its settings, as a chart install does;
// without the Role that reads them the approval fails naming the
// permission, rather than deciding with Ripple's defaults.
func TestManualPolicyFlagApprovedByDocumentedRole(t *testing.T) {
	t.Parallel()
	cs := kubernetes.NewForConfigOrDie(kc.Config)
	ns, rippleNS := newNamespace(t, cs), newNamespace(t, cs)
	workloadRBAC, settingsRBAC := documentedApproverRBAC(t, ns, rippleNS)
	createRBAC(t, cs, workloadRBAC)
	cm := createConfigMap(t, cs, ns, configName, "v1")
	w := workload{kit.Deployment, ns, "web"}
	w.create(t, cs, spec{configMaps: []string{configName}, annotations: auto()})
	before := waitRolledOut(t, cs, w)
	r := newRipple(t, ns, "--reload-policy=manual")
	r.Env = []string{"RELOADER_NAMESPACE=" + rippleNS, "POD_NAMESPACE=" + rippleNS}
	r.Start()
	waitBaseline(t, cs, w, digest.ConfigMap(cm))
	waitFor(t, "Ripple's settings in its namespace", func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().ConfigMaps(rippleNS).Get(ctx, "reloader-meta-info", metav1.GetOptions{})
		return err == nil, nil
	})

	sum := setConfigMapValue(t, cs, ns, configName, "v2")
	waitEventNaming(t, cs, w, "ReloadPending", sum[:12])
	before = expectNoRollout(t, cs, before)

	// As documented: `ripple approve deployment/<name> -n <ns> --ripple-namespace <ripple's>`.
	approve := []string{"approve", "deployment/" + w.name, "-n", ns, "--ripple-namespace", rippleNS}
	want := "needs get on configmaps in namespace " + rippleNS
	if out, err := runAsApprover(t, approve...); err == nil || !strings.Contains(out, want) {
		t.Fatalf("approve without the settings Role: %v, want an error naming %q\n%s", err, want, out)
	}
	createRBAC(t, cs, settingsRBAC)
	out, err := runAsApprover(t, approve...)
	if err != nil || !strings.Contains(out, `ConfigMap "`+configName+`" `+sum[:12]) {
		t.Fatalf("approve: %v\n%s", err, out)
	}
	expectRollouts(t, cs, oneEach(before, envIs(configEnv, sum)))
	waitEventNaming(t, cs, w, "Reloaded", "approved by "+approverUser)
}

// runAsApprover runs the ripple binary with args as the approver: the
// test's kubeconfig impersonating the user and group the documented
// bindings name, so the API server authorizes it by those alone.
func runAsApprover(t *testing.T, args ...string) (string, error) {
	t.Helper()
	args = append(args, "--kubeconfig="+kc.Kubeconfig, "--as="+approverUser, "--as-group="+approverGroup)
	cmd := exec.CommandContext(t.Context(), os.Getenv("RIPPLE_BINARY"), args...)
	cmd.Env = []string{"HOME=" + t.TempDir()} // no kubeconfig but the test's
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	return out.String(), err
}

// rbacObjects are the Roles and RoleBindings of one namespace.
type rbacObjects struct {
	roles    []rbacv1.Role
	bindings []rbacv1.RoleBinding
}

// documentedApproverRBAC reads the approver's Roles and RoleBindings from
// docs/change-policies.md, moved from the docs' namespaces (shop for the
// workload, ripple for Ripple) to the test's: those of the workload's
// namespace, and those of Ripple's.
func documentedApproverRBAC(t *testing.T, ns, rippleNS string) (inWorkloadNS, inRippleNS rbacObjects) {
	t.Helper()
	doc, err := os.ReadFile("../../docs/change-policies.md")
	if err != nil {
		t.Fatal(err)
	}
	section, _, _ := strings.Cut(string(doc)[strings.Index(string(doc), "#### Who may approve"):], "\n### ")
	moved := map[string]string{"shop": ns, "ripple": rippleNS}
	out := map[string]*rbacObjects{"shop": &inWorkloadNS, "ripple": &inRippleNS}
	for _, block := range regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(section, -1) {
		for _, manifest := range strings.Split(block[1], "\n---\n") {
			var head struct {
				Kind     string
				Metadata struct{ Namespace string }
			}
			if err := yaml.Unmarshal([]byte(manifest), &head); err != nil {
				t.Fatalf("docs/change-policies.md: %v\n%s", err, manifest)
			}
			into := out[head.Metadata.Namespace]
			switch {
			case head.Kind == "Role" && into != nil:
				var r rbacv1.Role
				mustUnmarshal(t, manifest, &r)
				r.Namespace = moved[r.Namespace]
				into.roles = append(into.roles, r)
			case head.Kind == "RoleBinding" && into != nil:
				var b rbacv1.RoleBinding
				mustUnmarshal(t, manifest, &b)
				b.Namespace = moved[b.Namespace]
				into.bindings = append(into.bindings, b)
			}
		}
	}
	if len(inWorkloadNS.roles) != 1 || len(inWorkloadNS.bindings) != 1 || len(inRippleNS.roles) != 1 || len(inRippleNS.bindings) != 1 {
		t.Fatalf("docs/change-policies.md documents %+v in the workload's namespace and %+v in Ripple's; want a Role and a RoleBinding in each",
			inWorkloadNS, inRippleNS)
	}
	return inWorkloadNS, inRippleNS
}

func mustUnmarshal(t *testing.T, manifest string, into any) {
	t.Helper()
	if err := yaml.UnmarshalStrict([]byte(manifest), into); err != nil {
		t.Fatalf("docs/change-policies.md: %v\n%s", err, manifest)
	}
}

// createRBAC creates the Roles and RoleBindings, and waits until the
// approver is authorized by each rule: the API server's authorizer sees a
// new binding through its own watch, a moment later.
func createRBAC(t *testing.T, cs kubernetes.Interface, objs rbacObjects) {
	t.Helper()
	for i := range objs.roles {
		if _, err := cs.RbacV1().Roles(objs.roles[i].Namespace).Create(t.Context(), &objs.roles[i], metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range objs.bindings {
		if _, err := cs.RbacV1().RoleBindings(objs.bindings[i].Namespace).Create(t.Context(), &objs.bindings[i], metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, role := range objs.roles {
		for _, rule := range role.Rules {
			attrs := &authorizationv1.ResourceAttributes{Namespace: role.Namespace, Group: rule.APIGroups[0],
				Resource: rule.Resources[0], Verb: rule.Verbs[0]}
			if len(rule.ResourceNames) > 0 {
				attrs.Name = rule.ResourceNames[0]
			}
			waitFor(t, "the approver to be allowed to "+attrs.Verb+" "+attrs.Resource+" in "+role.Namespace, func(ctx context.Context) (bool, error) {
				r, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
					User: approverUser, Groups: []string{approverGroup}, ResourceAttributes: attrs,
				}}, metav1.CreateOptions{})
				return err == nil && r.Status.Allowed, err
			})
		}
	}
}
