package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/api/v1alpha1"
	"github.com/ripple-dev/ripple/hack/helmchart"
	"github.com/ripple-dev/ripple/hack/kit"
	"github.com/ripple-dev/ripple/internal/canary"
	"github.com/ripple-dev/ripple/internal/digest"
	"github.com/ripple-dev/ripple/internal/explain"
	"github.com/ripple-dev/ripple/internal/history"
	"github.com/ripple-dev/ripple/internal/metainfo"
	"github.com/ripple-dev/ripple/internal/reason"
	"github.com/ripple-dev/ripple/internal/standing"
)

// The namespace tenants of TestTenantCommands: users bound to the
// built-in view or edit role in their namespace only. Impersonated, they
// are also in system:authenticated, as every signed-in user.
const (
	tenantViewer = "tenant-viewer"
	tenantEditor = "tenant-editor"
)

// tenantRun is one command a namespace tenant runs with its own rights,
// at a step of a canaried change: "settled" (every workload has the
// data), "halted" (its canary halted it) or "resumed" (resumed, and every
// workload rolled it). -n and --ripple-namespace are added.
type tenantRun struct {
	step  string
	as    string
	args  []string
	check func(t *testing.T, r tenantResult)
}

// tenantResult is what a command printed, and how it ended.
type tenantResult struct {
	stdout, stderr string
	err            error
}

// A tenant with the built-in view role in its namespace, and nothing in
// Ripple's but the Role the chart ships, runs explain and history there
// and reads what Ripple decides, with Ripple's published settings, and
// waits for a change (a halted one fails naming its canary); with edit,
// resume continues a halted canary, and the held Deployments roll.
// Without the chart's Role the commands go on with Ripple's defaults and
// say so in one line; a Secret view may not read is told, not guessed.
func TestTenantCommands(t *testing.T) {
	t.Parallel()
	cs := kubernetes.NewForConfigOrDie(kc.Config)
	ns, rippleNS := newNamespace(t, cs), newNamespace(t, cs)
	bindTenant(t, cs, ns, tenantViewer, "view")
	bindTenant(t, cs, ns, tenantEditor, "edit")
	const fleet = 2
	cm := createCanaryFleet(t, cs, ns, fleet, "0s")
	createSecret(t, cs, ns)
	api := workload{kit.Deployment, ns, "api"}
	api.create(t, cs, spec{secrets: []string{secretName}, annotations: auto()})
	r := newRipple(t, ns, "--rollout-timeout=20s", "--settle-window=2s")
	r.Env = []string{"POD_NAMESPACE=" + rippleNS, "RELOADER_NAMESPACE=" + rippleNS}
	r.Start()
	waitFleetBaseline(t, cs, ns, "", fleet+1)
	setSecretValue(t, cs, ns, "p2") // a change of the Secret, with its ConfigRollout
	waitPropagated(t, ns, secretName)

	checkWithoutTheRole(t, ns, rippleNS)
	applyTenantRBAC(t, cs, rippleNS, ns)

	var first v1alpha1.ConfigRollout
	runs := tenantRuns(ns, rippleNS, &first)
	runTenantStep(t, ns, rippleNS, runs, "settled")

	quota := blockNewPods(t, cs, ns, fleet+int(defaultReplicas))
	cm = updateConfig(t, cs, cm, "v2")
	halted := digest.ConfigMap(cm)
	waitEvent(t, cs, ns, "ConfigMap", canaryConfig, reason.RolloutHalted)
	first = newestChange(t, ns)
	runTenantStep(t, ns, rippleNS, runs, "halted")

	if err := cs.CoreV1().ResourceQuotas(ns).Delete(t.Context(), quota, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, cs, ns, "ConfigMap", canaryConfig, reason.CanaryPassed)
	waitFleetRolled(t, cs, ns, halted, fleet, 2*time.Minute)
	waitPropagated(t, ns, canaryConfig)
	runTenantStep(t, ns, rippleNS, runs, "resumed")
}

// tenantRuns are the commands the tenants run, step by step; first is the
// halted change, known once it halted.
func tenantRuns(ns, rippleNS string, first *v1alpha1.ConfigRollout) []tenantRun {
	settingsFrom := "ConfigMap " + rippleNS + "/reloader-meta-info"
	return []tenantRun{
		{"settled", tenantViewer, []string{"explain", "deployment/d01", "-o", "json"}, func(t *testing.T, r tenantResult) {
			rep := decode[explain.Report](t, r)
			settle := setting(rep.Settings, "--settle-window")
			key := setting(rep.Settings, "digest key")
			if rep.State != standing.Complete || rep.SettingsFrom != settingsFrom || settle.Value != "2s" || settle.From != settingsFrom ||
				!strings.Contains(key.Value, "not read") || !strings.Contains(key.Value, "forbidden") {
				t.Errorf("state %s, settings from %q, %+v, %+v; want up to date, Ripple's settle window from %s, and the digest key said unread",
					rep.State, rep.SettingsFrom, settle, key, settingsFrom)
			}
		}},
		{"settled", tenantViewer, []string{"explain", "configmap/" + canaryConfig, "-o", "json"}, func(t *testing.T, r tenantResult) {
			c := decode[explain.Change](t, r)
			if len(c.Workloads) != 2 || countState(c, standing.Complete) != 2 || len(c.Unplanned) != 0 || c.Digest == "" {
				t.Errorf("change %+v: want d00 and d01 up to date, api (which reads only the Secret) left out", c)
			}
		}},
		{"settled", tenantViewer, []string{"history", "deployment/d01", "-o", "json"}, func(t *testing.T, r tenantResult) {
			h := decode[history.History](t, r)
			if len(h.Revisions) != 1 || !h.Revisions[0].Current || len(h.Revisions[0].Configs) != 1 || h.Revisions[0].Configs[0].Name != canaryConfig {
				t.Errorf("history %+v: want one revision, current, built for ConfigMap %s", h, canaryConfig)
			}
		}},
		{"settled", tenantViewer, []string{"history", "deployment/api", "-o", "json"}, func(t *testing.T, r tenantResult) {
			h := decode[history.History](t, r)
			if want := "cannot read Secret " + ns + "/" + secretName; len(h.Revisions) != 2 || h.Current == nil || !strings.Contains(h.Current.Unread, want) {
				t.Errorf("history %+v: want 2 revisions (the Secret's change) and the current one not compared, naming %q", h, want)
			}
		}},
		{"settled", tenantViewer, []string{"explain", "secret/" + secretName}, wants(
			"Data:       not read: needs get on secrets in namespace "+ns, "Change:     "+secretName+"-", "Propagated, 1 of 1 managed consumers updated",
			"kubectl get configrollout "+secretName+"-")},
		{"settled", tenantViewer, []string{"wait", "secret/" + secretName, "--timeout=1m"}, wants(
			"you may not read it, so this waits for its newest change", "Propagated: 1 of 1 managed consumers updated")},
		{"settled", tenantViewer, []string{"explain", "deployment/api"}, func(t *testing.T, r tenantResult) {
			if want := "cannot read Secret " + ns + "/" + secretName + ", which the workload may use (needs get on secrets in namespace " + ns; r.err == nil || !strings.Contains(r.stderr, want) {
				t.Errorf("exit %v, stderr %q; want a failure naming %q", r.err, r.stderr, want)
			}
		}},

		{"halted", tenantViewer, []string{"explain", "configmap/" + canaryConfig, "-o", "json"}, func(t *testing.T, r tenantResult) {
			c := decode[explain.Change](t, r)
			if c.Canary == nil || c.Canary.Phase != canary.Halted || c.Rollout == nil || c.Rollout.Name != first.Name ||
				countReason(c, reason.RolloutHalted) != 1 {
				t.Errorf("change %+v: want the canary halted, the ConfigRollout %s, and d01 held", c, first.Name)
			}
		}},
		{"halted", tenantViewer, []string{"wait", "configmap/" + canaryConfig, "--timeout=1m"}, func(t *testing.T, r tenantResult) {
			if r.err == nil || !strings.Contains(r.stderr, "change "+first.Name+" halted") || !strings.Contains(r.stderr, "canary Deployment d00") {
				t.Errorf("wait on a halted change: exit %v, stderr %q; want a failure naming the change and its canary", r.err, r.stderr)
			}
		}},
		{"halted", tenantViewer, []string{"resume", "configmap/" + canaryConfig}, func(t *testing.T, r tenantResult) {
			if r.err == nil || !strings.Contains(r.stderr, `cannot patch resource "configmaps"`) {
				t.Errorf("resume as a viewer: exit %v, stderr %q; want the patch refused", r.err, r.stderr)
			}
		}},
		{"halted", tenantEditor, []string{"resume", "configmap/" + canaryConfig}, func(t *testing.T, r tenantResult) {
			wants("Resumed the change "+first.Name)(t, r)
		}},

		{"resumed", tenantViewer, []string{"explain", "configmap/" + canaryConfig, "-o", "json"}, func(t *testing.T, r tenantResult) {
			c := decode[explain.Change](t, r)
			if countState(c, standing.Complete) != 2 || c.Rollout == nil || c.Rollout.Phase != v1alpha1.PhasePropagated {
				t.Errorf("change %+v: want both up to date and the change propagated", c)
			}
		}},
		{"resumed", tenantViewer, []string{"wait", "configmap/" + canaryConfig, "--timeout=1m"}, wants("Propagated: 2 of 2 managed consumers updated")},
		{"resumed", tenantViewer, []string{"history", "deployment/d01", "-o", "json"}, func(t *testing.T, r tenantResult) {
			h := decode[history.History](t, r)
			if n := len(h.Revisions); n != 2 || h.Revisions[1].StartedBy != history.ByRipple || !slices.Contains(h.Revisions[1].Changes, "ConfigMap/"+canaryConfig) {
				t.Errorf("history %+v: want a second revision started by Ripple for ConfigMap/%s", h, canaryConfig)
			}
		}},
	}
}

// runTenantStep runs the commands of step as their tenants, in order, each
// a subtest named for its step and command, so that a failure names the
// command; what it printed is shown only when it failed. With the chart's
// Role every command reads Ripple's settings: none warns.
func runTenantStep(t *testing.T, ns, rippleNS string, runs []tenantRun, step string) {
	t.Helper()
	for _, run := range runs {
		if run.step != step {
			continue
		}
		args := append(slices.Clone(run.args), "-n", ns, "--ripple-namespace", rippleNS)
		t.Run(step+" "+run.as+" "+strings.Join(run.args, " "), func(t *testing.T) {
			r := runAs(t, run.as, args...)
			if strings.Contains(r.stderr, "settings not read") {
				t.Errorf("ripple %s warned: %s", strings.Join(args, " "), r.stderr)
			}
			run.check(t, r)
			if t.Failed() {
				t.Logf("as %s: ripple %s: exit %v\n%s%s", run.as, strings.Join(args, " "), r.err, r.stdout, r.stderr)
			}
		})
	}
}

// checkWithoutTheRole runs explain as the viewer before the chart's Role
// exists: Ripple's defaults, told in one line naming what could not be
// read and what to pass; also when the tenant does not name Ripple's
// namespace (finding it needs list in every namespace).
func checkWithoutTheRole(t *testing.T, ns, rippleNS string) {
	t.Helper()
	for _, tc := range []struct {
		args []string
		warn string
	}{
		{[]string{"--ripple-namespace", rippleNS}, "ConfigMap " + rippleNS + "/reloader-meta-info (needs get on configmaps in namespace " + rippleNS + ")"},
		{nil, "(finding it needs list on configmaps in every namespace): deciding with Ripple's defaults and the flags given; name Ripple's namespace with --ripple-namespace"},
	} {
		r := runAs(t, tenantViewer, append([]string{"explain", "deployment/d01", "-n", ns, "-o", "json"}, tc.args...)...)
		rep := decode[explain.Report](t, r)
		lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
		if len(lines) != 1 || !strings.Contains(lines[0], "warning: Ripple's settings not read, ") || !strings.Contains(lines[0], tc.warn) {
			t.Errorf("stderr %q, want one warning naming %q", r.stderr, tc.warn)
		}
		if settle := setting(rep.Settings, "--settle-window"); !strings.HasPrefix(rep.SettingsFrom, "the defaults: not read") || settle.From != "default" || rep.State != standing.Complete {
			t.Errorf("settings from %q, %+v, state %s; want the defaults, said so, and the workload up to date", rep.SettingsFrom, settle, rep.State)
		}
	}
}

// applyTenantRBAC applies what the chart, installed in rippleNS, grants
// namespace tenants (the reloader-meta-info reader Role and the
// ConfigRollouts read aggregated into view), and waits until the viewer
// holds both.
func applyTenantRBAC(t *testing.T, cs kubernetes.Interface, rippleNS, ns string) {
	t.Helper()
	// The release named after its namespace: its ClusterRole is this test's.
	out, err := helmchart.Template(helmchart.Release{Name: rippleNS, Namespace: rippleNS})
	if err != nil {
		t.Fatal(err)
	}
	objs, err := helmchart.Objects(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		_, aggregated := o.GetLabels()["rbac.authorization.k8s.io/aggregate-to-view"]
		if !aggregated && !strings.HasSuffix(o.GetName(), "-meta-info-reader") {
			continue
		}
		createRBACObject(t, cs, o.GetKind(), o.Object)
	}
	for _, ra := range []authorizationv1.ResourceAttributes{
		{Namespace: rippleNS, Resource: "configmaps", Name: "reloader-meta-info", Verb: "get"},
		{Namespace: ns, Group: v1alpha1.GroupVersion.Group, Resource: "configrollouts", Verb: "list"},
	} {
		waitFor(t, "the viewer to be allowed to "+ra.Verb+" "+ra.Resource+" in "+ra.Namespace, func(ctx context.Context) (bool, error) {
			return allowedTo(ctx, cs, tenantViewer, ra)
		})
	}
}

// createRBACObject creates a rendered Role, RoleBinding or ClusterRole; a
// ClusterRole is deleted when the test ends.
func createRBACObject(t *testing.T, cs kubernetes.Interface, kind string, obj map[string]any) {
	t.Helper()
	var err error
	switch kind {
	case "Role":
		var r rbacv1.Role
		mustConvert(t, obj, &r)
		_, err = cs.RbacV1().Roles(r.Namespace).Create(t.Context(), &r, metav1.CreateOptions{})
	case "RoleBinding":
		var b rbacv1.RoleBinding
		mustConvert(t, obj, &b)
		_, err = cs.RbacV1().RoleBindings(b.Namespace).Create(t.Context(), &b, metav1.CreateOptions{})
	case "ClusterRole":
		var r rbacv1.ClusterRole
		mustConvert(t, obj, &r)
		_, err = cs.RbacV1().ClusterRoles().Create(t.Context(), &r, metav1.CreateOptions{})
		t.Cleanup(func() {
			_ = cs.RbacV1().ClusterRoles().Delete(context.WithoutCancel(t.Context()), r.Name, metav1.DeleteOptions{})
		})
	default:
		t.Fatalf("the chart grants tenants a %s: not expected", kind)
	}
	if err != nil {
		t.Fatal(err)
	}
}

func mustConvert(t *testing.T, obj map[string]any, into any) {
	t.Helper()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, into); err != nil {
		t.Fatal(err)
	}
}

// bindTenant binds user to the built-in ClusterRole role in ns, and waits
// until the authorizer sees it.
func bindTenant(t *testing.T, cs kubernetes.Interface, ns, user, role string) {
	t.Helper()
	b := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}}
	if _, err := cs.RbacV1().RoleBindings(ns).Create(t.Context(), b, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, user+" to be allowed to get deployments in "+ns, func(ctx context.Context) (bool, error) {
		return allowedTo(ctx, cs, user, authorizationv1.ResourceAttributes{Namespace: ns, Group: "apps", Resource: "deployments", Verb: "get"})
	})
}

// allowedTo asks the authorizer whether the signed-in user may do ra.
func allowedTo(ctx context.Context, cs kubernetes.Interface, user string, ra authorizationv1.ResourceAttributes) (bool, error) {
	r, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: user, Groups: []string{"system:authenticated"}, ResourceAttributes: &ra,
	}}, metav1.CreateOptions{})
	return err == nil && r.Status.Allowed, err
}

// runAs runs the ripple binary with args as user: the test's kubeconfig
// impersonating it, so the API server authorizes it by that user's
// bindings (and system:authenticated's) alone.
func runAs(t *testing.T, user string, args ...string) tenantResult {
	t.Helper()
	args = append(args, "--kubeconfig="+kc.Kubeconfig, "--as="+user)
	cmd := exec.CommandContext(t.Context(), os.Getenv("RIPPLE_BINARY"), args...)
	cmd.Env = []string{"HOME=" + t.TempDir()} // no kubeconfig but the test's
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	return tenantResult{stdout.String(), stderr.String(), err}
}

// decode reads a command's JSON output, which must have succeeded.
func decode[T any](t *testing.T, r tenantResult) T {
	t.Helper()
	var v T
	if r.err != nil {
		t.Fatalf("exit %v: %s", r.err, r.stderr)
	}
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
		t.Fatalf("%v:\n%s", err, r.stdout)
	}
	return v
}

// wants checks that a command succeeded and printed each of want.
func wants(want ...string) func(*testing.T, tenantResult) {
	return func(t *testing.T, r tenantResult) {
		t.Helper()
		if r.err != nil {
			t.Errorf("exit %v: %s", r.err, r.stderr)
		}
		for _, w := range want {
			if !strings.Contains(r.stdout, w) {
				t.Errorf("output:\n%s\nwant %q", r.stdout, w)
			}
		}
	}
}

func setting(settings []metainfo.Setting, flag string) metainfo.Setting {
	i := slices.IndexFunc(settings, func(s metainfo.Setting) bool { return s.Flag == flag })
	if i < 0 {
		return metainfo.Setting{}
	}
	return settings[i]
}

func countState(c explain.Change, s standing.State) int {
	n := 0
	for _, w := range c.Workloads {
		if w.State == s {
			n++
		}
	}
	return n
}

// waitPropagated waits until the newest ConfigRollout of the config named
// name in ns is Propagated.
func waitPropagated(t *testing.T, ns, name string) {
	t.Helper()
	c := crClient(t)
	waitFor(t, "the change of "+name+" propagated", func(ctx context.Context) (bool, error) {
		var l v1alpha1.ConfigRolloutList
		if err := c.List(ctx, &l, client.InNamespace(ns), client.MatchingLabels{v1alpha1.LabelConfigName: name}); err != nil || len(l.Items) == 0 {
			return false, err
		}
		slices.SortFunc(l.Items, func(a, b v1alpha1.ConfigRollout) int { return b.CreationTimestamp.Compare(a.CreationTimestamp.Time) })
		return l.Items[0].Status.Phase == v1alpha1.PhasePropagated, nil
	})
}
