package chart

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
// ignoreCronJobs (the Job re-create records' ConfigMap writes with them),
// the optional kinds' with their values, and webhook mode reads only.
func TestWorkloadKindRules(t *testing.T) {
	cronJobs := grant{"batch", "cronjobs", patchVerbs}
	cronJobFinalizers := grant{"batch", "cronjobs/finalizers", []string{"update"}}
	jobs := grant{"batch", "jobs", []string{"create", "delete", "get", "list", "patch", "watch"}}
	noCronJobs := grant{"batch", "cronjobs", nil}
	noCronJobFinalizers := grant{"batch", "cronjobs/finalizers", nil}
	noJobs := grant{"batch", "jobs", nil}
	// ConfigMaps: watched as configs, written as Job re-create records.
	configMaps := grant{"", "configmaps", []string{"create", "delete", "get", "list", "update", "watch"}}
	configMapsRead := grant{"", "configmaps", readVerbs}
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
	}{
		{"defaults", nil, with([]grant{cronJobs, cronJobFinalizers, jobs, configMaps}, noOptional)},
		{"ignoreJobs", map[string]any{"ignoreJobs": true},
			with([]grant{cronJobs, cronJobFinalizers, {"batch", "jobs", []string{"create"}}, configMapsRead}, noOptional)},
		{"ignoreCronJobs", map[string]any{"ignoreCronJobs": true},
			with([]grant{noCronJobs, noCronJobFinalizers, jobs, configMaps}, noOptional)},
		{"ignoreJobs and ignoreCronJobs", map[string]any{"ignoreJobs": true, "ignoreCronJobs": true},
			with([]grant{noCronJobs, noCronJobFinalizers, noJobs, configMapsRead}, noOptional)},
		// The re-create records are read around the cache: without the
		// ConfigMap informer their rule reads them itself.
		{"ignoreConfigMaps", map[string]any{"ignoreConfigMaps": true},
			with([]grant{cronJobs, jobs, {"", "configmaps", []string{"create", "delete", "get", "list", "update"}}}, noOptional)},
		{"ignoreConfigMaps and ignoreJobs", map[string]any{"ignoreConfigMaps": true, "ignoreJobs": true},
			[]grant{cronJobs, {"batch", "jobs", []string{"create"}}, {"", "configmaps", nil}}},
		{"optional kinds", optional, []grant{
			cronJobs, jobs, configMaps,
			{"argoproj.io", "rollouts", patchVerbs},
			{"apps.openshift.io", "deploymentconfigs", patchVerbs},
			{"secrets-store.csi.x-k8s.io", "secretproviderclasspodstatuses", readVerbs},
			{"secrets-store.csi.x-k8s.io", "secretproviderclasses", readVerbs},
		}},
		{"webhook with the optional kinds", deepMerge(map[string]any{"webhookUrl": "https://hooks.example.com/ripple"}, optional),
			with([]grant{{"batch", "cronjobs", readVerbs}, noCronJobFinalizers, {"batch", "jobs", readVerbs}, configMapsRead}, noOptional)},
		{"webhook without Jobs", map[string]any{"webhookUrl": "https://hooks.example.com/ripple", "ignoreJobs": true},
			[]grant{{"batch", "cronjobs", readVerbs}, noCronJobFinalizers, noJobs, configMapsRead}},
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
				_, objs := render(t, Release{Name: relName, Namespace: relNS, Values: []map[string]any{r(values)}})
				var roles []*unstructured.Unstructured
				for _, o := range objs {
					if (o.GetKind() == "Role" || o.GetKind() == "ClusterRole") && strings.HasSuffix(o.GetName(), "-role") {
						roles = append(roles, o)
					}
				}
				if len(roles) != mode.roles {
					t.Fatalf("%d Ripple Roles and ClusterRoles, want %d", len(roles), mode.roles)
				}
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
