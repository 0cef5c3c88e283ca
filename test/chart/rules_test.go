package chart

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/ripple-dev/ripple/hack/helmchart"
	"github.com/ripple-dev/ripple/internal/digestkey"
	"github.com/ripple-dev/ripple/internal/workload"
)

// grant is what a rendered Role or ClusterRole must grant on a resource:
// exactly verbs (over all its rules), or nothing when verbs is nil.
type grant struct {
	group, resource string
	verbs           []string
}

var (
	readVerbs  = []string{"get", "list", "watch"}
	patchVerbs = []string{"get", "list", "patch", "watch"}
)

// TestWorkloadKindRules renders the chart in global, single-namespace and
// scoped mode for each way of choosing the workload kinds, and checks the
// exact verbs every Ripple (Cluster)Role grants on each workload kind's
// resources: the Job and CronJob rules come and go with ignoreJobs and
// ignoreCronJobs, the optional kinds' with their values, and webhook mode
// reads only. ConfigMaps are only read there: the Job re-create records
// are written by the job-records Role in the release namespace, which
// comes and goes with the Job rule; its rules and the digest-key Role's
// are exactly what the code needs (the Secrets it reads named).
func TestWorkloadKindRules(t *testing.T) {
	cronJobs := grant{"batch", "cronjobs", patchVerbs}
	cronJobFinalizers := grant{"batch", "cronjobs/finalizers", []string{"update"}}
	jobs := grant{"batch", "jobs", []string{"create", "delete", "get", "list", "patch", "watch"}}
	noCronJobs := grant{"batch", "cronjobs", nil}
	noCronJobFinalizers := grant{"batch", "cronjobs/finalizers", nil}
	noJobs := grant{"batch", "jobs", nil}
	configMapsRead := grant{"", "configmaps", readVerbs}
	noConfigMaps := grant{"", "configmaps", nil}
	// The job-records Role: the records written, read with the config
	// rule (by the Role itself when ConfigMaps are ignored), and the record
	// key created, read by name when Secrets are ignored.
	recordsWrite := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"create", "delete"}}
	recordsRead := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list"}}
	secretCreate := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"create"}}
	recordKeyGet := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{workload.RecordKeySecret}, Verbs: []string{"get"}}
	records := []rbacv1.PolicyRule{recordsWrite, secretCreate}
	// The digest-key Role: what the other rules do not grant.
	digestKeyGet := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{digestkey.Secret}, Verbs: []string{"get"}}
	noOptional := []grant{
		{"argoproj.io", "rollouts", nil},
		{"apps.openshift.io", "deploymentconfigs", nil},
		{"secrets-store.csi.x-k8s.io", "secretproviderclasspodstatuses", nil},
		{"secrets-store.csi.x-k8s.io", "secretproviderclasses", nil},
	}
	optional := map[string]any{"isArgoRollouts": true, "isOpenshift": true, "enableCSIIntegration": true}
	with := func(gs ...[]grant) []grant { return slices.Concat(gs...) }

	for _, tc := range []struct {
		name   string
		values map[string]any
		want   []grant
		// recordRules are the job-records Role's rules, keyRules the
		// digest-key Role's; nil: no such Role.
		recordRules, keyRules []rbacv1.PolicyRule
	}{
		{"defaults", nil, with([]grant{cronJobs, cronJobFinalizers, jobs, configMapsRead}, noOptional), records, nil},
		{"ignoreJobs", map[string]any{"ignoreJobs": true},
			with([]grant{cronJobs, cronJobFinalizers, {"batch", "jobs", []string{"create"}}, configMapsRead}, noOptional), nil, []rbacv1.PolicyRule{secretCreate}},
		{"ignoreCronJobs", map[string]any{"ignoreCronJobs": true},
			with([]grant{noCronJobs, noCronJobFinalizers, jobs, configMapsRead}, noOptional), records, nil},
		{"ignoreJobs and ignoreCronJobs", map[string]any{"ignoreJobs": true, "ignoreCronJobs": true},
			with([]grant{noCronJobs, noCronJobFinalizers, noJobs, configMapsRead}, noOptional), nil, []rbacv1.PolicyRule{secretCreate}},
		// The re-create records are read around the cache: without the
		// ConfigMap informer their Role reads them itself.
		{"ignoreConfigMaps", map[string]any{"ignoreConfigMaps": true},
			with([]grant{cronJobs, jobs, noConfigMaps}, noOptional), []rbacv1.PolicyRule{recordsWrite, recordsRead, secretCreate}, nil},
		// The record key and the digest key are then read by name, and no
		// other Secret of the release namespace.
		{"ignoreSecrets", map[string]any{"ignoreSecrets": true},
			with([]grant{cronJobs, cronJobFinalizers, jobs, configMapsRead, {"", "secrets", nil}}, noOptional),
			[]rbacv1.PolicyRule{recordsWrite, secretCreate, recordKeyGet}, []rbacv1.PolicyRule{digestKeyGet}},
		{"ignoreSecrets and ignoreJobs", map[string]any{"ignoreSecrets": true, "ignoreJobs": true},
			[]grant{cronJobs, {"batch", "jobs", []string{"create"}}, {"", "secrets", nil}}, nil, []rbacv1.PolicyRule{secretCreate, digestKeyGet}},
		{"ignoreConfigMaps and ignoreJobs", map[string]any{"ignoreConfigMaps": true, "ignoreJobs": true},
			[]grant{cronJobs, {"batch", "jobs", []string{"create"}}, noConfigMaps}, nil, []rbacv1.PolicyRule{secretCreate}},
		{"optional kinds", optional, []grant{
			cronJobs, jobs, configMapsRead,
			{"argoproj.io", "rollouts", patchVerbs},
			{"apps.openshift.io", "deploymentconfigs", patchVerbs},
			{"secrets-store.csi.x-k8s.io", "secretproviderclasspodstatuses", readVerbs},
			{"secrets-store.csi.x-k8s.io", "secretproviderclasses", readVerbs},
		}, records, nil},
		{"webhook with the optional kinds", deepMerge(map[string]any{"webhookUrl": "https://hooks.example.com/ripple"}, optional),
			with([]grant{{"batch", "cronjobs", readVerbs}, noCronJobFinalizers, {"batch", "jobs", readVerbs}, configMapsRead}, noOptional), nil, nil},
		{"webhook without Jobs", map[string]any{"webhookUrl": "https://hooks.example.com/ripple", "ignoreJobs": true},
			[]grant{{"batch", "cronjobs", readVerbs}, noCronJobFinalizers, noJobs, configMapsRead}, nil, nil},
	} {
		for _, mode := range []struct {
			name   string
			values map[string]any
			// roles: how many Ripple Roles (or ClusterRoles) are rendered.
			roles int
			kind  string
		}{
			{"global", nil, 1, "ClusterRole"},
			{"single namespace", map[string]any{"watchGlobally": false}, 1, "Role"},
			{"scoped", map[string]any{"watchGlobally": false, "namespaces": []any{"team-a", "team-b"}}, 3, "Role"},
		} {
			t.Run(tc.name+"/"+mode.name, func(t *testing.T) {
				t.Parallel()
				values := deepMerge(deepMerge(map[string]any{}, tc.values), mode.values)
				_, objs := render(t, helmchart.Release{Name: relName, Namespace: relNS, Values: []map[string]any{r(values)}})
				var roles []*unstructured.Unstructured
				for _, o := range objs {
					// The rules Roles, not the meta-info's <fullname>-metadata-role.
					if (o.GetKind() == "Role" || o.GetKind() == "ClusterRole") && strings.HasSuffix(o.GetName(), "-role") &&
						!strings.HasSuffix(o.GetName(), "-metadata-role") {
						roles = append(roles, o)
					}
				}
				if len(roles) != mode.roles {
					t.Fatalf("%d Ripple Roles and ClusterRoles, want %d", len(roles), mode.roles)
				}
				checkReleaseRole(t, objs, "-job-records", tc.recordRules)
				checkReleaseRole(t, objs, "-digest-key", tc.keyRules)
				for _, role := range roles {
					if role.GetKind() != mode.kind {
						t.Errorf("%s %s rendered, want only %ss", role.GetKind(), role.GetName(), mode.kind)
					}
					for _, g := range tc.want {
						got := grantedVerbs(role, g.group, g.resource)
						if !slices.Equal(got, g.verbs) {
							t.Errorf("%s %s in %q: %s/%s verbs %q, want %q", role.GetKind(), role.GetName(), role.GetNamespace(), g.group, g.resource, got, g.verbs)
						}
					}
				}
			})
		}
	}
}

// checkReleaseRole checks that the Role whose name ends in suffix, in the
// release namespace, has exactly the rules want (no more verbs, no fewer
// resourceNames), or is not rendered when want is nil.
func checkReleaseRole(t *testing.T, objs []*unstructured.Unstructured, suffix string, want []rbacv1.PolicyRule) {
	t.Helper()
	var found []*unstructured.Unstructured
	for _, o := range objs {
		if (o.GetKind() == "Role" || o.GetKind() == "ClusterRole") && strings.HasSuffix(o.GetName(), suffix) {
			found = append(found, o)
		}
	}
	switch {
	case want == nil && len(found) > 0:
		t.Errorf("%s %s rendered, want no %s Role", found[0].GetKind(), found[0].GetName(), suffix)
	case want == nil:
	case len(found) != 1 || found[0].GetKind() != "Role" || found[0].GetNamespace() != relNS:
		t.Errorf("%d %s (Cluster)Roles rendered, want one Role in %s", len(found), suffix, relNS)
	default:
		role := &rbacv1.Role{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(found[0].Object, role); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(role.Rules, want) {
			t.Errorf("Role %s rules:\n%+v\nwant exactly:\n%+v", role.Name, role.Rules, want)
		}
	}
}

// grantedVerbs returns the sorted verbs a role grants on group/resource
// over all its rules, or nil.
func grantedVerbs(role *unstructured.Unstructured, group, resource string) []string {
	var verbs []string
	rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
	for _, x := range rules {
		rule, _ := x.(map[string]any)
		groups, _, _ := unstructured.NestedStringSlice(rule, "apiGroups")
		resources, _, _ := unstructured.NestedStringSlice(rule, "resources")
		vs, _, _ := unstructured.NestedStringSlice(rule, "verbs")
		if slices.Contains(groups, group) && slices.Contains(resources, resource) {
			for _, v := range vs {
				if !slices.Contains(verbs, v) {
					verbs = append(verbs, v)
				}
			}
		}
	}
	slices.Sort(verbs)
	return verbs
}

// writeVerbs are the verbs that change objects.
var writeVerbs = []string{"create", "update", "patch", "delete", "deletecollection", "*"}

// TestNoClusterWideConfigWrites renders the chart in every mode the RBAC
// tests run and with each option that changes the rules, and checks that
// no ClusterRole rule grants a write on ConfigMaps or Secrets, and no Role
// does outside the release namespace: Ripple writes ConfigMaps only in its
// own namespace (the Job re-create records, the meta-info).
func TestNoClusterWideConfigWrites(t *testing.T) {
	values := []map[string]any{
		r(map[string]any{"ignoreSecrets": true}),
		r(map[string]any{"ignoreCronJobs": true}),
		r(map[string]any{"ignoreConfigMaps": true, "watchGlobally": false}),
		r(map[string]any{"enableHA": true, "watchGlobally": false, "namespaces": []any{"team-a"}}),
		{"ripple": map[string]any{"metaInfo": map[string]any{"enabled": true}}},
	}
	for _, mode := range rbacModes() {
		values = append(values, mode.values(relNS, []string{"team-a", "team-b"}, "http://127.0.0.1:1/hook"))
	}
	for i, v := range values {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			_, objs := render(t, helmchart.Release{Name: relName, Namespace: relNS, Values: []map[string]any{v}})
			for _, role := range roles(objs) {
				if role.GetKind() == "Role" && role.GetNamespace() == relNS {
					continue
				}
				for _, res := range []string{"configmaps", "secrets"} {
					for _, verb := range grantedVerbs(role, "", res) {
						if slices.Contains(writeVerbs, verb) {
							t.Errorf("%s %s in %q grants %s on %s (values %v)", role.GetKind(), role.GetName(), role.GetNamespace(), verb, res, v)
						}
					}
				}
			}
		})
	}
}
