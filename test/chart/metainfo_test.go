package chart

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ripple-dev/ripple/hack/helmchart"
)

// The Role a tenant's commands read Ripple's settings with: get on
// reloader-meta-info alone, by name, in the release namespace, bound to
// the groups of ripple.metaInfo.readers (every authenticated user by
// default); none for readers: [] or without the meta-info. That the
// commands need it is test/e2e's TestTenantCommands.
func TestMetaInfoReaders(t *testing.T) {
	for _, tc := range []struct {
		metaInfo map[string]any
		groups   []string
	}{
		{nil, []string{"system:authenticated"}},
		{map[string]any{"readers": []any{"tenants", "auditors"}}, []string{"tenants", "auditors"}},
		{map[string]any{"readers": []any{}}, nil},
		{map[string]any{"enabled": false}, nil},
	} {
		t.Run(fmt.Sprint(tc.metaInfo), func(t *testing.T) {
			t.Parallel()
			values := map[string]any{}
			if tc.metaInfo != nil {
				values["ripple"] = map[string]any{"metaInfo": tc.metaInfo}
			}
			_, objs := render(t, helmchart.Release{Name: relName, Namespace: relNS, Values: []map[string]any{values}})
			var roles, bindings []*unstructured.Unstructured
			for _, o := range objs {
				if strings.HasSuffix(o.GetName(), "-meta-info-reader") {
					switch o.GetKind() {
					case "Role":
						roles = append(roles, o)
					case "RoleBinding":
						bindings = append(bindings, o)
					default:
						t.Errorf("%s %s: want a Role or a RoleBinding", o.GetKind(), o.GetName())
					}
				}
			}
			if tc.groups == nil {
				if len(roles)+len(bindings) > 0 {
					t.Errorf("rendered %d Roles and %d RoleBindings, want none", len(roles), len(bindings))
				}
				return
			}
			if len(roles) != 1 || len(bindings) != 1 {
				t.Fatalf("rendered %d Roles and %d RoleBindings, want one each", len(roles), len(bindings))
			}
			checkReaderRole(t, roles[0])
			var groups []string
			subjects, _, _ := unstructured.NestedSlice(bindings[0].Object, "subjects")
			for _, x := range subjects {
				s, _ := x.(map[string]any)
				if s["kind"] != "Group" {
					t.Errorf("subject %v: want a Group", s)
				}
				groups = append(groups, fmt.Sprint(s["name"]))
			}
			if !slices.Equal(groups, tc.groups) || bindings[0].GetNamespace() != relNS {
				t.Errorf("bound in %q to %v, want %q and %v", bindings[0].GetNamespace(), groups, relNS, tc.groups)
			}
		})
	}
}

// checkReaderRole checks that role grants get on reloader-meta-info and
// nothing else, in the release namespace.
func checkReaderRole(t *testing.T, role *unstructured.Unstructured) {
	t.Helper()
	rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
	if len(rules) != 1 || describeRule(rules[0]) != "core/configmaps[reloader-meta-info] get" || role.GetNamespace() != relNS {
		t.Errorf("Role %s in %q grants %v, want only core/configmaps[reloader-meta-info] get in %q", role.GetName(), role.GetNamespace(), rules, relNS)
	}
}
