package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/hack/kit"
	"github.com/ripple-dev/ripple/internal/digest"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/strategy"
)

// rippleRules is what Ripple needs in a namespace it watches.
var rippleRules = []rbacv1.PolicyRule{
	{APIGroups: []string{""}, Resources: []string{"configmaps", "secrets"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{"apps"}, Resources: []string{"deployments", "statefulsets", "daemonsets"}, Verbs: []string{"get", "list", "watch", "patch"}},
	{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
	// CronJobs start Jobs; Jobs are re-created, through a ConfigMap record.
	{APIGroups: []string{"batch"}, Resources: []string{"cronjobs"}, Verbs: []string{"get", "list", "watch", "patch"}},
	{APIGroups: []string{"batch"}, Resources: []string{"jobs"}, Verbs: []string{"get", "list", "watch", "patch", "create", "delete"}},
	{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"create", "update", "delete"}},
	// ConfigRollouts (docs/config-rollouts.md), which the shared API server serves.
	{APIGroups: []string{"ripple.dev"}, Resources: []string{"configrollouts"}, Verbs: []string{"get", "list", "watch", "create", "patch", "delete"}},
	{APIGroups: []string{"ripple.dev"}, Resources: []string{"configrollouts/status"}, Verbs: []string{"update"}},
}

// grant binds rippleRules in ns to the ServiceAccount saNS/sa.
func (e *env) grant(t *testing.T, ns, saNS, sa string) {
	t.Helper()
	e.grantRules(t, ns, saNS, sa, rippleRules)
}

// grantRules binds rules in ns to the ServiceAccount saNS/sa.
func (e *env) grantRules(t *testing.T, ns, saNS, sa string, rules []rbacv1.PolicyRule) {
	t.Helper()
	ctx := t.Context()
	if _, err := e.cs.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "ripple"}, Rules: rules}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := e.cs.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "ripple"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "ripple"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: saNS, Name: sa}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

// In scoped mode Ripple works with namespaced Roles only: no cluster-wide
// list or watch, and no forbidden error anywhere in its log.
func TestScopedModeWithNamespacedRolesOnly(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	other := kit.NewNamespace(t, e.cs, "it-", nil)
	e.grant(t, e.ns, e.ns, "ripple")
	e.grant(t, other, e.ns, "ripple")
	e.rc = api.ServiceAccountConfig(e.ns, "ripple")
	// As installed, Ripple's own namespace (its Job re-create records, its
	// digest key) is its ServiceAccount's, where its Roles let it keep them:
	// the chart's digest-key Role adds the create the others lack.
	e.environ = map[string]string{"POD_NAMESPACE": e.ns}
	digestKey := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "ripple-digest-key"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"create"}}}}
	if _, err := e.cs.RbacV1().Roles(e.ns).Create(t.Context(), digestKey, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.cs.RbacV1().RoleBindings(e.ns).Create(t.Context(), &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "ripple-digest-key"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "ripple-digest-key"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: e.ns, Name: "ripple"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Role bindings reach the authorizer asynchronously.
	waitAuthorized(t, e, other)
	e.run(t, "--namespaces="+e.ns+","+other)

	deploy := kit.Deployment
	for _, ns := range []string{e.ns, other} {
		in := &env{ns: ns, c: e.c, cs: e.cs}
		r := refs.Ref{Kind: refs.ConfigMap, Name: "cfg"}
		in.newConfig(t, r)
		w := in.newWorkload(t, deploy, "app", ann(autoKey, "true"), envFrom(r.Kind, r.Name))
		in.waitFor(t, w, "the baseline record", hasBaseline)
		in.waitApplied(t, deploy, w, r, in.setConfig(t, r, "v2"))
	}
	if log := strings.ToLower(e.logs.String()); strings.Contains(log, "forbidden") {
		t.Fatalf("ripple logged a forbidden error with namespaced Roles:\n%s", log)
	}
}

func waitAuthorized(t *testing.T, e *env, namespaces ...string) {
	t.Helper()
	c, err := client.New(e.rc, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		for _, ns := range append(namespaces, e.ns) {
			if err := c.List(ctx, &corev1.SecretList{}, client.InNamespace(ns)); err != nil {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("the Role bindings never took effect: %v", err)
	}
}

// --namespace-selector: labelling a namespace at runtime brings it into
// scope without a restart, and unlabelling takes it out. (Global mode: not
// parallel with other tests.)
func TestNamespaceSelectorAtRuntime(t *testing.T) {
	e := newEnv(t)
	label := "ripple-test-" + rand.String(6)
	e.run(t, "--namespace-selector="+label+":yes")
	deploy := kit.Deployment
	r := refs.Ref{Kind: refs.ConfigMap, Name: "cfg"}
	e.newConfig(t, r)
	w := e.newWorkload(t, deploy, "app", ann(autoKey, "true"), envFrom(r.Kind, r.Name))
	before := deploy.Template(w).DeepCopy()

	e.setConfig(t, r, "out-of-scope")
	e.expectNoRollout(t, w, deploy, before)
	if hasBaseline(w) {
		t.Fatal("ripple recorded a baseline on a workload in an unselected namespace")
	}

	e.labelNamespace(t, label, "yes")
	e.waitFor(t, w, "the baseline record once the namespace is selected", hasBaseline)
	e.waitApplied(t, deploy, w, r, e.setConfig(t, r, "in-scope"))

	e.labelNamespace(t, label, "")
	before = deploy.Template(w).DeepCopy()
	// The cache drops the namespace asynchronously; give it a moment.
	time.Sleep(500 * time.Millisecond)
	e.setConfig(t, r, "out-again")
	e.expectNoRollout(t, w, deploy, before)
}

// labelNamespace sets (or, with an empty value, removes) a label on e's namespace.
func (e *env) labelNamespace(t *testing.T, key, value string) {
	t.Helper()
	ns := &corev1.Namespace{}
	if err := e.c.Get(t.Context(), client.ObjectKey{Name: e.ns}, ns); err != nil {
		t.Fatal(err)
	}
	if value == "" {
		delete(ns.Labels, key)
	} else {
		if ns.Labels == nil {
			ns.Labels = map[string]string{}
		}
		ns.Labels[key] = value
	}
	if err := e.c.Update(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
}

// --namespaces-to-ignore: nothing in an ignored namespace reloads, and its
// objects are not even cached. (Global mode: not parallel.)
func TestNamespacesToIgnoreAreNotCached(t *testing.T) {
	e := newEnv(t)
	watched := &env{ns: kit.NewNamespace(t, e.cs, "it-", nil), c: e.c, cs: e.cs}
	e.run(t, "--namespaces-to-ignore=kube-public,"+e.ns)
	deploy := kit.Deployment
	r := refs.Ref{Kind: refs.ConfigMap, Name: "cfg"}
	for _, x := range []*env{e, watched} {
		x.newConfig(t, r)
	}
	ignored := e.newWorkload(t, deploy, "app", ann(autoKey, "true"), envFrom(r.Kind, r.Name))
	w := watched.newWorkload(t, deploy, "app", ann(autoKey, "true"), envFrom(r.Kind, r.Name))
	watched.waitFor(t, w, "the baseline record", hasBaseline)
	before := deploy.Template(ignored).DeepCopy()

	e.setConfig(t, r, "v2")
	watched.waitApplied(t, deploy, w, r, watched.setConfig(t, r, "v2"))
	e.expectNoRollout(t, ignored, deploy, before)

	var cms corev1.ConfigMapList
	if err := e.cache.List(t.Context(), &cms, client.InNamespace(e.ns)); err != nil || len(cms.Items) != 0 {
		t.Fatalf("ripple's cache holds %d ConfigMaps of the ignored namespace (err %v), want none", len(cms.Items), err)
	}
}

// --resource-label-selector, in the current and the legacy syntax: only
// labelled configs are watched.
func TestResourceLabelSelector(t *testing.T) {
	for _, sel := range []string{"reload=yes", "reload:yes", "reload:*"} {
		t.Run(sel, func(t *testing.T) {
			t.Parallel()
			e := startRipple(t, "--resource-label-selector="+sel)
			deploy := kit.Deployment
			labelled, plain := refs.Ref{Kind: refs.ConfigMap, Name: "labelled"}, refs.Ref{Kind: refs.ConfigMap, Name: "plain"}
			cfg := configObject(e.ns, labelled, nil, "v1")
			cfg.SetLabels(map[string]string{"reload": "yes"})
			if err := e.c.Create(t.Context(), cfg); err != nil {
				t.Fatal(err)
			}
			e.newConfig(t, plain)
			a := e.newWorkload(t, deploy, "a", ann(autoKey, "true"), envFrom(labelled.Kind, labelled.Name))
			b := e.newWorkload(t, deploy, "b", ann(autoKey, "true"), envFrom(plain.Kind, plain.Name))
			e.waitFor(t, a, "the baseline record", hasBaseline)
			before := deploy.Template(b).DeepCopy()
			e.waitApplied(t, deploy, a, labelled, e.setConfig(t, labelled, "v2"))
			e.setConfig(t, plain, "v2")
			e.expectNoRollout(t, b, deploy, before)
		})
	}
}

// --resources-to-ignore (Reloader's F3-F6): the ignored kind reloads
// nothing, the other still does.
func TestResourcesToIgnore(t *testing.T) {
	for _, tc := range []struct{ flag, kept, ignored refs.Kind }{
		{"secrets", refs.ConfigMap, refs.Secret},
		{"configmaps", refs.Secret, refs.ConfigMap},
	} {
		t.Run(string(tc.flag), func(t *testing.T) {
			t.Parallel()
			e := startRipple(t, "--resources-to-ignore="+strings.ToLower(string(tc.flag)))
			deploy := kit.Deployment
			kept, ignored := refs.Ref{Kind: tc.kept, Name: "kept"}, refs.Ref{Kind: tc.ignored, Name: "ignored"}
			e.newConfig(t, kept)
			e.newConfig(t, ignored)
			a := e.newWorkload(t, deploy, "a", ann(autoKey, "true"), envFrom(kept.Kind, kept.Name))
			b := e.newWorkload(t, deploy, "b", ann(autoKey, "true"), envFrom(ignored.Kind, ignored.Name))
			e.waitFor(t, a, "the baseline record", hasBaseline)
			before := deploy.Template(b).DeepCopy()
			e.waitApplied(t, deploy, a, kept, e.setConfig(t, kept, "v2"))
			e.setConfig(t, ignored, "v2")
			e.expectNoRollout(t, b, deploy, before)
		})
	}
}

// --reload-on-create (Reloader's F14-F16): a config named by a workload and
// created after it reloads the workload only with the flag. With
// --resources-to-ignore set it still works for the other kind (Reloader's
// bug 2: create and delete never fired then).
func TestReloadOnCreate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   []string
		kind   refs.Kind
		reload bool
	}{
		{"ConfigMap with the flag", []string{"--reload-on-create=true"}, refs.ConfigMap, true},
		{"Secret with the flag", []string{"--reload-on-create"}, refs.Secret, true},
		{"ConfigMap with the flag and Secrets ignored", []string{"--reload-on-create=true", "--resources-to-ignore=secrets"}, refs.ConfigMap, true},
		{"without the flag", nil, refs.ConfigMap, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := startRipple(t, tc.args...)
			deploy := kit.Deployment
			r := refs.Ref{Kind: tc.kind, Name: "later"}
			key := cmReloadKey
			if tc.kind == refs.Secret {
				key = secretReload
			}
			w := e.newWorkload(t, deploy, "app", ann(key, r.Name), envFrom(r.Kind, r.Name))
			before := deploy.Template(w).DeepCopy()
			time.Sleep(1100 * time.Millisecond) // creation times have one-second granularity
			e.newConfig(t, r)
			if !tc.reload {
				e.expectNoRollout(t, w, deploy, before)
				return
			}
			e.waitApplied(t, deploy, w, r, configDigest(configObject(e.ns, r, nil, "v1")))
		})
	}
}

// --reload-on-delete (Reloader's F17-F19): deleting a config a workload
// reloads on rolls it: the annotations strategy records Reloader's delete
// marker, the env-vars strategy removes the env var.
func TestReloadOnDelete(t *testing.T) {
	t.Run("annotations", func(t *testing.T) {
		t.Parallel()
		e := startRipple(t, "--reload-on-delete=true", "--reload-strategy=annotations")
		deploy := kit.Deployment
		r := refs.Ref{Kind: refs.ConfigMap, Name: "gone"}
		e.newConfig(t, r)
		w := e.newWorkload(t, deploy, "app", ann(cmReloadKey, r.Name), envFrom(r.Kind, r.Name))
		e.waitFor(t, w, "the baseline record", hasBaseline)
		e.deleteConfig(t, r)
		st := strategy.Annotations{}
		e.waitFor(t, w, "the delete marker", func(o client.Object) bool {
			got, ok := st.Applied(deploy.Template(o), r)
			return ok && got == digest.DeleteMarker
		})
	})
	t.Run("env-vars", func(t *testing.T) {
		t.Parallel()
		e := startRipple(t, "--reload-on-delete")
		deploy := kit.Deployment
		r := refs.Ref{Kind: refs.Secret, Name: "gone"}
		e.newConfig(t, r)
		w := e.newWorkload(t, deploy, "app", ann(secretReload, r.Name), envFrom(r.Kind, r.Name))
		e.waitFor(t, w, "the baseline record", hasBaseline)
		e.waitApplied(t, deploy, w, r, e.setConfig(t, r, "v2"))
		e.deleteConfig(t, r)
		e.waitFor(t, w, "the env var to be removed", func(o client.Object) bool {
			_, ok := (strategy.EnvVars{}).Applied(deploy.Template(o), r)
			return !ok
		})
	})
	t.Run("without the flag", func(t *testing.T) {
		t.Parallel()
		e := startRipple(t)
		deploy := kit.Deployment
		r := refs.Ref{Kind: refs.ConfigMap, Name: "gone"}
		e.newConfig(t, r)
		w := e.newWorkload(t, deploy, "app", ann(cmReloadKey, r.Name), envFrom(r.Kind, r.Name))
		e.waitFor(t, w, "the baseline record", hasBaseline)
		before := deploy.Template(w).DeepCopy()
		e.deleteConfig(t, r)
		e.expectNoRollout(t, w, deploy, before)
	})
}

func (e *env) deleteConfig(t *testing.T, r refs.Ref) {
	t.Helper()
	if err := e.c.Delete(t.Context(), configObject(e.ns, r, nil, "")); err != nil {
		t.Fatal(err)
	}
}

// --sync-after-restart (with --reload-on-create): a config created while
// no Ripple ran, after the workload, counts as created on start; without
// the flag it is a baseline.
func TestSyncAfterRestart(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   []string
		reload bool
	}{
		{"with the flag", []string{"--reload-on-create=true", "--sync-after-restart=true"}, true},
		{"without the flag", []string{"--reload-on-create=true"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			deploy := kit.Deployment
			r := refs.Ref{Kind: refs.ConfigMap, Name: "made-while-down"}
			w := e.newWorkload(t, deploy, "app", ann(cmReloadKey, r.Name), envFrom(r.Kind, r.Name))
			before := deploy.Template(w).DeepCopy()
			time.Sleep(1100 * time.Millisecond) // creation times have one-second granularity
			e.newConfig(t, r)
			time.Sleep(1100 * time.Millisecond) // Ripple starts after the config exists
			e.run(t, tc.args...)
			if !tc.reload {
				e.waitFor(t, w, "the baseline record", hasBaseline)
				e.expectNoRollout(t, w, deploy, before)
				return
			}
			e.waitApplied(t, deploy, w, r, configDigest(configObject(e.ns, r, nil, "v1")))
		})
	}
}

// A delete Ripple never saw as an event (it happened while Ripple was
// down, as a delete lost in a watch gap) is still rolled, on its dependent
// only. Reloader's bug 5: such tombstones became an empty name that matched
// every workload cluster-wide.
func TestMissedDeleteRollsOnlyItsDependents(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	stop := e.run(t, "--reload-on-delete=true", "--reload-strategy=annotations")
	deploy := kit.Deployment
	gone, kept := refs.Ref{Kind: refs.ConfigMap, Name: "gone"}, refs.Ref{Kind: refs.ConfigMap, Name: "kept"}
	e.newConfig(t, gone)
	e.newConfig(t, kept)
	dependent := e.newWorkload(t, deploy, "dependent", ann(cmReloadKey, "gone"), envFrom(gone.Kind, gone.Name))
	bystander := e.newWorkload(t, deploy, "bystander", ann(autoKey, "true"), envFrom(kept.Kind, kept.Name))
	e.waitFor(t, dependent, "the baseline record", hasBaseline)
	e.waitFor(t, bystander, "the baseline record", hasBaseline)
	before := deploy.Template(bystander).DeepCopy()

	stop()
	e.deleteConfig(t, gone)
	e.run(t, "--reload-on-delete=true", "--reload-strategy=annotations")

	st := strategy.Annotations{}
	e.waitFor(t, dependent, "the delete marker", func(o client.Object) bool {
		got, ok := st.Applied(deploy.Template(o), gone)
		return ok && got == digest.DeleteMarker
	})
	e.expectNoRollout(t, bystander, deploy, before)
}

// RBAC made without the digest key's rights (Reloader's, or a plain
// install's own): with Reloader's digests Ripple still starts and
// reloads, and says in its log that its per-key digests are not keyed.
func TestStartsWithoutTheDigestKeyRights(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.grant(t, e.ns, e.ns, "ripple")
	e.rc = api.ServiceAccountConfig(e.ns, "ripple")
	e.environ = map[string]string{"POD_NAMESPACE": e.ns}
	waitAuthorized(t, e, e.ns)
	e.run(t, "--namespaces="+e.ns)

	r := refs.Ref{Kind: refs.ConfigMap, Name: "cfg"}
	e.newConfig(t, r)
	w := e.newWorkload(t, kit.Deployment, "app", ann(autoKey, "true"), envFrom(r.Kind, r.Name))
	e.waitFor(t, w, "the baseline record", hasBaseline)
	e.waitApplied(t, kit.Deployment, w, r, e.setConfig(t, r, "v2"))
	if log := e.logs.String(); !strings.Contains(log, "per-key digests are not keyed") || !strings.Contains(log, "ripple-digest-key") {
		t.Fatalf("ripple's log does not say its per-key digests are not keyed, naming the Secret:\n%s", log)
	}
}
