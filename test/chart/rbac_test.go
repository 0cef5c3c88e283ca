package chart

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ripple-dev/ripple/hack/helmchart"
	"github.com/ripple-dev/ripple/hack/kit"
	"github.com/ripple-dev/ripple/test/inproc"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// rbacMode is a chart configuration whose RBAC is proven on the API server.
type rbacMode struct {
	name string
	// values are the chart values for a release in relNS; watched are the
	// namespaces the scoped mode lists.
	values func(relNS string, watched []string, webhook string) map[string]any
	// scoped: Ripple also watches <relNS>-a and <relNS>-b.
	scoped bool
	// single: the workload lives in the release namespace.
	single bool
	// selector: the workload's namespace carries the selected label.
	selector bool
	// webhook: success is a POST instead of a rollout.
	webhook bool
	// optional: the optional kinds (Argo Rollouts, DeploymentConfigs, CSI)
	// are on, and each must reload too.
	optional bool
	// ignoreJobs: Jobs are not reloaded (CronJobs still start Jobs).
	ignoreJobs bool
	// secretConfig: the workloads use a Secret, as ConfigMaps are ignored.
	secretConfig bool
	// restarts: the evict and delete restart methods are on, and a
	// StatefulSet of each has its pod evicted or deleted.
	restarts bool
	// limitDelete: governance.restartDeleteNamespaces lists the workloads'
	// namespaces, so pods are deleted by a Role there, and Ripple may not
	// delete pods in the release namespace.
	limitDelete bool
	// ignoreSecrets: Ripple may read no Secret in the release namespace
	// but its own (the Job record key, the digest key).
	ignoreSecrets bool
}

// limitDelete lists namespaces in governance.restartDeleteNamespaces.
func limitDelete(values map[string]any, namespaces []string) map[string]any {
	return deepMerge(values, map[string]any{"ripple": map[string]any{"governance": map[string]any{"restartDeleteNamespaces": namespaces}}})
}

// optionalKinds are the values that turn on every optional kind.
var optionalKinds = map[string]any{"isArgoRollouts": true, "isOpenshift": true, "enableCSIIntegration": true}

func rbacModes() []rbacMode {
	return []rbacMode{
		{name: "global", values: func(string, []string, string) map[string]any { return nil }},
		{name: "single namespace", single: true, values: func(string, []string, string) map[string]any {
			return r(map[string]any{"watchGlobally": false})
		}},
		{name: "scoped", scoped: true, values: func(_ string, watched []string, _ string) map[string]any {
			return r(map[string]any{"watchGlobally": false, "namespaces": watched})
		}},
		{name: "HA", values: func(string, []string, string) map[string]any {
			return r(map[string]any{"enableHA": true})
		}},
		{name: "namespace selector", selector: true, values: func(relNS string, _ []string, _ string) map[string]any {
			return r(map[string]any{"namespaceSelector": "ripple-rbac-test=" + relNS})
		}},
		// --namespace-defaults caches Namespaces: their rule is needed.
		{name: "namespace defaults", values: func(string, []string, string) map[string]any {
			return map[string]any{"ripple": map[string]any{"namespaceDefaults": true}}
		}},
		// The optional kinds are on but unused in webhook mode, which grants
		// nothing for them.
		{name: "webhook", webhook: true, values: func(_ string, _ []string, url string) map[string]any {
			return r(deepMerge(map[string]any{"webhookUrl": url}, optionalKinds))
		}},
		{name: "optional kinds", optional: true, values: func(string, []string, string) map[string]any {
			return r(deepMerge(map[string]any{}, optionalKinds))
		}},
		{name: "ignoreJobs", ignoreJobs: true, values: func(string, []string, string) map[string]any {
			return r(map[string]any{"ignoreJobs": true})
		}},
		// The Job re-create records are then read around the cache.
		{name: "ignoreConfigMaps", secretConfig: true, values: func(string, []string, string) map[string]any {
			return r(map[string]any{"ignoreConfigMaps": true})
		}},
		// The Job record key and the digest key are then read by name.
		{name: "ignoreSecrets", ignoreSecrets: true, values: func(string, []string, string) map[string]any {
			return r(map[string]any{"ignoreSecrets": true})
		}},
		{name: "restart methods", restarts: true, values: func(string, []string, string) map[string]any {
			return map[string]any{"ripple": map[string]any{"restartMethods": map[string]any{"evict": true, "delete": true}}}
		}},
		{name: "restart delete namespaces", restarts: true, limitDelete: true, values: func(string, []string, string) map[string]any {
			return map[string]any{"ripple": map[string]any{"restartMethods": map[string]any{"evict": true, "delete": true}}}
		}},
		{name: "optional kinds in one namespace", optional: true, single: true, values: func(string, []string, string) map[string]any {
			return r(deepMerge(map[string]any{"watchGlobally": false}, optionalKinds))
		}},
	}
}

// ruleRef names one rule of one rendered Role or ClusterRole: the index of
// the role among the rendered roles, and of the rule in it.
type ruleRef struct {
	role, rule int
	desc       string
}

// TestRBAC proves the chart's RBAC on the real API server, for each mode:
// with the rendered (Cluster)Roles applied, Ripple runs in-process as the
// chart's ServiceAccount (impersonated) with the rendered arguments and
// environment, and a ConfigMap change reloads every workload that uses it,
// with no "forbidden" anywhere in its logs: the Deployments roll, each
// CronJob starts a Job, and each Job is deleted and created again (its
// re-create record, kept in the release namespace, written over the one an
// earlier attempt left, then gone): with ConfigMaps and Secrets only read
// outside the release namespace. With ignoreSecrets the ServiceAccount may
// touch no Secret of its namespace but its own keys. In the optional-kinds mode an Argo Rollout and a
// DeploymentConfig roll on the ConfigMap too, and a Deployment mounting a
// SecretProviderClass rolls when its SecretProviderClassPodStatus changes.
// In webhook mode the change is posted instead. With the restart methods
// on, a StatefulSet with restart-method evict has its pod evicted and one
// with delete its pod deleted; with restartDeleteNamespaces listing the
// workloads' namespace too, and Ripple may not delete pods in the release
// namespace. Then minimality: with any
// single rule removed, Ripple logs a forbidden error for exactly that rule's
// resource, or fails to act. The optional kinds are proven with the
// ClusterRole and with a namespaced Role.
//
// The API server runs the OwnerReferencesPermissionEnforcement admission
// plugin (as OpenShift does), which makes cronjobs/finalizers needed.
// Not covered: the meta-info Role <fullname>-metadata-role (on by
// default, as in Reloader's chart, which names it so): the config read
// rule and the job-records Role grant its rights too, and its update is
// used only when the ConfigMap exists; single verbs
// within a rule (whole rules are removed: TestWorkloadKindRules pins the
// verbs), and --cronjob-reload=template (the same rules as run).
func TestRBAC(t *testing.T) {
	// Cases run concurrently (up to cap(cases)) through concurrent t.Run
	// calls rather than t.Parallel, which go test limits to GOMAXPROCS.
	var modes sync.WaitGroup
	for _, mode := range rbacModes() {
		modes.Go(func() {
			t.Run(mode.name, func(t *testing.T) {
				// Enumerate the rules once, with placeholder names.
				values := mode.values("rel", []string{"rel-a", "rel-b"}, "http://127.0.0.1:1/hook")
				if mode.limitDelete {
					values = limitDelete(values, []string{"rel-app"})
				}
				_, objs := render(t, helmchart.Release{Name: "rel", Namespace: "rel", Values: []map[string]any{values}})
				var removals []ruleRef
				for i, role := range roles(objs) {
					rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
					if strings.HasSuffix(role.GetName(), "-metadata-role") {
						continue // not covered: see above
					}
					for j, x := range rules {
						where := role.GetKind() + " " + role.GetName()
						if role.GetNamespace() != "" {
							where += " in " + role.GetNamespace()
						}
						removals = append(removals, ruleRef{i, j, where + ": " + describeRule(x)})
					}
				}
				if len(removals) < 2 {
					t.Fatalf("only %d rules rendered", len(removals))
				}
				var subtests sync.WaitGroup
				subtests.Go(func() {
					t.Run("all rules", func(t *testing.T) {
						o := runRBACCase(t, mode, nil)
						if len(o.forbidden) > 0 {
							t.Errorf("ripple hit forbidden errors with the chart's RBAC:\n%s", strings.Join(o.forbidden, "\n"))
						}
						if !o.acted {
							t.Errorf("ripple did not act on the config changes within %v: %s", caseTimeout, strings.Join(o.pending, "; "))
						}
					})
				})
				for _, rm := range removals {
					subtests.Go(func() {
						t.Run("without "+rm.desc, func(t *testing.T) {
							o := runRBACCase(t, mode, &rm)
							if o.acted && len(o.forbiddenRemoved) == 0 {
								t.Errorf("ripple acted and logged no forbidden error without this rule: it is not needed (other forbidden errors: %q)", o.forbidden)
							}
							if len(o.forbiddenRemoved) > 0 {
								t.Logf("as expected: %s", firstLine(o.forbiddenRemoved[0]))
							} else {
								t.Log("as expected: ripple did not act")
							}
						})
					})
				}
				subtests.Wait()
			})
		})
	}
	modes.Wait()
}

// caseTimeout bounds one case: Ripple starts, syncs, sees a change and acts
// well within it when it can.
const caseTimeout = 30 * time.Second

// cases limits how many Ripples run at once.
var cases = make(chan struct{}, 6)

type outcome struct {
	acted bool
	// pending says which workloads had not been reloaded, when not acted.
	pending []string
	// forbidden holds every forbidden error of this Ripple;
	// forbiddenRemoved those about the removed rule's resources.
	forbidden, forbiddenRemoved []string
}

func runRBACCase(t *testing.T, mode rbacMode, remove *ruleRef) outcome {
	cases <- struct{}{}
	defer func() { <-cases }()
	ctx := t.Context()
	cs := kubernetes.NewForConfigOrDie(api.Config)

	// The release: its namespace names it, so every case is apart.
	relNS := kit.NewNamespace(t, cs, "rbac-", nil)
	release := relNS
	var watched, apps []string
	switch {
	case mode.scoped:
		watched = []string{relNS + "-a", relNS + "-b"}
		for _, ns := range watched {
			ensureNamespace(t, cs, ns, nil)
			t.Cleanup(func() {
				_ = cs.CoreV1().Namespaces().Delete(context.WithoutCancel(t.Context()), ns, metav1.DeleteOptions{})
			})
		}
		apps = append([]string{relNS}, watched...)
	case mode.single:
		apps = []string{relNS}
	default:
		var labels map[string]string
		if mode.selector {
			labels = map[string]string{"ripple-rbac-test": relNS}
		}
		apps = []string{kit.NewNamespace(t, cs, "rbac-app-", labels)}
	}

	hook := &webhookRecorder{}
	srv := httptest.NewServer(hook)
	t.Cleanup(srv.Close)

	// Global Ripples of other cases run beside this one: an auto
	// annotation of this case's own keeps them off its workloads, and an
	// annotation prefix of its own keeps them off its applied records
	// (each Ripple rewrites the record to what its own keys track).
	autoKey := release + ".rbac.test/auto"
	values := deepMerge(map[string]any{
		"reloader": map[string]any{"custom_annotations": map[string]any{"auto": autoKey}},
		"ripple":   map[string]any{"annotationPrefix": release + ".rbac.test"},
	}, mode.values(relNS, watched, srv.URL+"/hook"))
	if mode.limitDelete {
		values = limitDelete(values, apps)
	}
	_, objs := render(t, helmchart.Release{Name: release, Namespace: relNS, Values: []map[string]any{values}})

	var removed, complete *unstructured.Unstructured
	var removedRule map[string]any
	if remove != nil {
		removed = roles(objs)[remove.role]
		complete = removed.DeepCopy()
		rules, _, _ := unstructured.NestedSlice(removed.Object, "rules")
		removedRule, _ = rules[remove.rule].(map[string]any)
		rules = slices.Delete(rules, remove.rule, remove.rule+1)
		if err := unstructured.SetNestedSlice(removed.Object, rules, "rules"); err != nil {
			t.Fatal(err)
		}
	}
	a := newApplier(t, api.Config)
	sa := applyRBAC(t, a, objs)
	user := "system:serviceaccount:" + relNS + ":" + sa
	waitAuthorized(t, cs, relNS, sa, roles(objs), apps)
	if mode.limitDelete && remove == nil && allowed(t, cs, relNS, sa, authorizationv1.ResourceAttributes{Namespace: relNS, Verb: "delete", Resource: "pods"}) {
		// Outside the listed namespaces Ripple deletes no pods.
		t.Errorf("the chart lets Ripple delete pods in %s, which restartDeleteNamespaces does not list", relNS)
	}
	if mode.ignoreSecrets && remove == nil {
		// Its own Secrets by name, and no other.
		for _, v := range []string{"get", "list", "watch", "update", "delete"} {
			if allowed(t, cs, relNS, sa, authorizationv1.ResourceAttributes{Namespace: relNS, Verb: v, Resource: "secrets", Name: "tenant-secret"}) {
				t.Errorf("with ignoreSecrets the chart lets Ripple %s the Secret tenant-secret in its namespace %s", v, relNS)
			}
		}
	}

	// The workloads, in each namespace: a Deployment, a CronJob and a Job
	// using a ConfigMap, and with the optional kinds a Rollout and a
	// DeploymentConfig using it, and a Deployment mounting a
	// SecretProviderClass.
	w := newRBACWorkloads(t, cs, mode, relNS, apps, autoKey)

	d, c := rippleDeployment(t, objs)
	rip := startRipple(t, user, relNS, sa, c.Args, envLookup(objs, d, c))
	logs := rip.Log
	defer func() {
		// Not t.Context(): this runs even when the test stops with Fatal.
		ctx := context.WithoutCancel(t.Context())
		if complete != nil {
			// controller-runtime's manager never returns from Start if it
			// is stopped before its caches sync (it spins on the done
			// context): give the rule back and let them sync first.
			if err := a.apply(ctx, complete, false); err != nil {
				t.Error(err)
			}
			syncCtx, cancel := context.WithTimeout(ctx, time.Minute)
			rip.Manager.GetCache().WaitForCacheSync(syncCtx)
			cancel()
		}
		// A Ripple without its rights may stop with an error; only a hang fails.
		if err := rip.Stop(); err != nil && strings.Contains(err.Error(), "did not stop") {
			t.Error(err)
		}
	}()

	// Change the configs until Ripple acts: a change it sees before its
	// caches have synced is its baseline, not a change.
	o := outcome{}
	acted := func() bool {
		if mode.webhook {
			for _, ns := range apps {
				if !hook.seen(ns, "cfg") {
					o.pending = []string{"no POST for " + ns + "/cfg"}
					return false
				}
			}
			o.pending = nil
			return true
		}
		o.pending = w.pending(ctx)
		return len(o.pending) == 0
	}
	forbidden := func() {
		o.forbidden = append(logs.Lines("forbidden"), klogs.Lines("forbidden", `"`+user+`"`)...)
		o.forbiddenRemoved = nil
		if removedRule != nil {
			for _, line := range o.forbidden {
				if mentionsRule(line, removedRule) {
					o.forbiddenRemoved = append(o.forbiddenRemoved, line)
				}
			}
		}
	}
	deadline := time.Now().Add(caseTimeout)
	for i := 1; time.Now().Before(deadline); i++ {
		w.change(ctx, i)
		step := time.Now().Add(1500 * time.Millisecond)
		for time.Now().Before(step) && !o.acted {
			o.acted = acted()
			time.Sleep(100 * time.Millisecond)
		}
		forbidden()
		if o.acted || len(o.forbiddenRemoved) > 0 {
			break
		}
	}
	if o.acted && removedRule != nil && len(o.forbiddenRemoved) == 0 {
		// An event or a Lease renewal may fail just after the rollout.
		time.Sleep(2 * time.Second)
		forbidden()
	}
	return o
}

// applyRBAC applies the rendered ServiceAccount, (Cluster)Roles and their
// bindings, deleting the cluster-wide ones when the test ends, and returns
// the ServiceAccount's name.
func applyRBAC(t *testing.T, a *applier, objs []*unstructured.Unstructured) string {
	t.Helper()
	var sa string
	for _, o := range objs {
		switch o.GetKind() {
		case "ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding":
			if err := a.apply(t.Context(), o, false); err != nil {
				t.Fatal(err)
			}
			if o.GetKind() == "ServiceAccount" {
				sa = o.GetName()
			}
			if strings.HasPrefix(o.GetKind(), "Cluster") {
				t.Cleanup(func() { _ = a.delete(context.WithoutCancel(t.Context()), o) })
			}
		}
	}
	if sa == "" {
		t.Fatal("the chart rendered no ServiceAccount")
	}
	return sa
}

// roles returns the rendered Roles and ClusterRoles, in order.
func roles(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if _, users := o.GetLabels()["rbac.authorization.k8s.io/aggregate-to-view"]; users {
			continue // the users' read of ConfigRollouts, bound to no one of Ripple's (test/hostile proves it)
		}
		if strings.HasSuffix(o.GetName(), "-meta-info-reader") {
			continue // the users' read of Ripple's settings, for their commands (test/e2e's TestTenantCommands proves it)
		}
		if o.GetKind() == "Role" || o.GetKind() == "ClusterRole" {
			out = append(out, o)
		}
	}
	return out
}

func describeRule(x any) string {
	rule, _ := x.(map[string]any)
	groups, _, _ := unstructured.NestedStringSlice(rule, "apiGroups")
	resources, _, _ := unstructured.NestedStringSlice(rule, "resources")
	verbs, _, _ := unstructured.NestedStringSlice(rule, "verbs")
	names, _, _ := unstructured.NestedStringSlice(rule, "resourceNames")
	for i, g := range groups {
		if g == "" {
			groups[i] = "core"
		}
	}
	s := strings.Join(groups, ",") + "/" + strings.Join(resources, ",")
	if len(names) > 0 {
		s += "[" + strings.Join(names, ",") + "]"
	}
	return s + " " + strings.Join(verbs, ",")
}

// mentionsRule reports whether a forbidden error is about one of the rule's
// resources, as the API server words it.
func mentionsRule(line string, rule map[string]any) bool {
	groups, _, _ := unstructured.NestedStringSlice(rule, "apiGroups")
	resources, _, _ := unstructured.NestedStringSlice(rule, "resources")
	for _, g := range groups {
		for _, res := range resources {
			// The OwnerReferencesPermissionEnforcement admission plugin's
			// words for a missing finalizers right on an owner.
			if strings.HasSuffix(res, "/finalizers") && strings.Contains(line, "cannot set blockOwnerDeletion") {
				return true
			}
			if strings.Contains(line, fmt.Sprintf(`resource %q in API group %q`, res, g)) {
				return true
			}
		}
	}
	return false
}

func firstLine(s string) string {
	if len(s) > 400 {
		s = s[:400] + "..."
	}
	return s
}

// allowed reports whether the API server's authorizer lets the
// ServiceAccount ns/sa do what ra describes.
func allowed(t *testing.T, cs kubernetes.Interface, ns, sa string, ra authorizationv1.ResourceAttributes) bool {
	t.Helper()
	ok, err := access(t.Context(), cs, ns, sa, ra)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// access asks the API server's authorizer whether the ServiceAccount ns/sa
// may do what ra describes.
func access(ctx context.Context, cs kubernetes.Interface, ns, sa string, ra authorizationv1.ResourceAttributes) (bool, error) {
	sar, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:               "system:serviceaccount:" + ns + ":" + sa,
		Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
		ResourceAttributes: &ra,
	}}, metav1.CreateOptions{})
	if err != nil {
		return false, err
	}
	return sar.Status.Allowed, nil
}

// waitAuthorized waits until the ServiceAccount holds every rendered rule
// that is left, as the authorizer sees it: so a forbidden error in a case
// comes from the removed rule, not from bindings still propagating.
func waitAuthorized(t *testing.T, cs kubernetes.Interface, ns, sa string, objs []*unstructured.Unstructured, apps []string) {
	t.Helper()
	var checks []authorizationv1.ResourceAttributes
	for _, role := range objs {
		r := &rbacv1.Role{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(role.Object, r); err != nil {
			t.Fatal(err)
		}
		namespace := role.GetNamespace()
		if role.GetKind() == "ClusterRole" {
			namespace = apps[0]
		}
		for _, rule := range r.Rules {
			for _, g := range rule.APIGroups {
				for _, res := range rule.Resources {
					for _, v := range rule.Verbs {
						resource, sub, _ := strings.Cut(res, "/")
						ra := authorizationv1.ResourceAttributes{Namespace: namespace, Verb: v, Group: g, Resource: resource, Subresource: sub}
						if len(rule.ResourceNames) > 0 {
							ra.Name = rule.ResourceNames[0]
						}
						if res == "namespaces" {
							ra.Namespace = ""
						}
						checks = append(checks, ra)
					}
				}
			}
		}
	}
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 15*time.Second, true, func(ctx context.Context) (bool, error) {
		for _, ra := range checks {
			if ok, err := access(ctx, cs, ns, sa, ra); err != nil || !ok {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("the rendered RBAC never took effect: %v", err)
	}
}

// testDeployment uses the config cfg and reloads on it through the case's
// auto annotation.
func testDeployment(autoKey string, envFrom []corev1.EnvFromSource) *appsv1.Deployment {
	labels := map[string]string{"app": "app"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Annotations: map[string]string{autoKey: "true"}},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "app", Image: "registry.example/app:1",
					EnvFrom: envFrom,
				}}},
			},
		},
	}
}

// startRipple runs Ripple in-process as the ServiceAccount, configured by
// the rendered arguments and environment exactly as cmd/ripple parses them
// (plus no listening ports: many run in this process).
func startRipple(t *testing.T, user, ns, sa string, args []string, env func(string) string) *inproc.Ripple {
	t.Helper()
	rc := api.ServiceAccountConfig(ns, sa)
	if rc.Impersonate.UserName != user {
		t.Fatalf("impersonating %q, want %q", rc.Impersonate.UserName, user)
	}
	args = append(slices.Clone(args), "--metrics-bind-address=0", "--health-probe-bind-address=0")
	// Only its caller's Stop stops it, not the end of the test's context.
	rip, err := inproc.Start(context.WithoutCancel(t.Context()), inproc.Options{REST: rc, Args: args, Env: env})
	if err != nil {
		t.Fatalf("ripple rejects the rendered arguments %q: %v", args, err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("ripple's log:\n%s", rip.Log.String())
		}
	})
	return rip
}

// webhookRecorder records the changes posted to it.
type webhookRecorder struct {
	mu     sync.Mutex
	posted map[string]bool
}

func (h *webhookRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var b struct{ Namespace, Name string }
	_ = json.Unmarshal(body, &b)
	h.mu.Lock()
	if h.posted == nil {
		h.posted = map[string]bool{}
	}
	h.posted[b.Namespace+"/"+b.Name] = true
	h.mu.Unlock()
}

func (h *webhookRecorder) seen(ns, name string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.posted[ns+"/"+name]
}

// TestLeaseWatch: with HA, a standby replica watches the Lease by name (a
// metadata.name field selector) to take it over the moment the leader
// releases it. The Role lets the ServiceAccount watch that Lease, and no
// other. (A forbidden watch only slows the handover down to the retry
// period, which TestRBAC, running one replica, cannot see.)
func TestLeaseWatch(t *testing.T) {
	t.Parallel()
	cs := kubernetes.NewForConfigOrDie(api.Config)
	ns := kit.NewNamespace(t, cs, "lease-", nil)
	_, objs := render(t, helmchart.Release{Name: ns, Namespace: ns, Values: []map[string]any{r(map[string]any{"enableHA": true})}})
	sa := applyRBAC(t, newApplier(t, api.Config), objs)
	leases := kubernetes.NewForConfigOrDie(api.ServiceAccountConfig(ns, sa)).CoordinationV1().Leases(ns)
	watch := func(name string) error {
		w, err := leases.Watch(t.Context(), metav1.ListOptions{FieldSelector: "metadata.name=" + name})
		if err == nil {
			w.Stop()
		}
		return err
	}
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 15*time.Second, true, func(context.Context) (bool, error) {
		return watch("stakater-reloader-lock") == nil, nil
	})
	if err != nil {
		t.Fatalf("the ServiceAccount cannot watch its Lease: %v", watch("stakater-reloader-lock"))
	}
	if err := watch("other-lock"); !apierrors.IsForbidden(err) {
		t.Errorf("watching another Lease: %v, want forbidden", err)
	}
}
