package workload

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
)

// A Job's re-create record is named after the Job's namespace and name, so
// that records of Jobs of one name in two namespaces, kept side by side in
// Ripple's namespace, never meet; names too long for an object are hashed.
func TestRecordName(t *testing.T) {
	long := strings.Repeat("j", 240)
	for _, tc := range []struct {
		key  types.NamespacedName
		want string
	}{
		{types.NamespacedName{Namespace: "team-a", Name: "migrate"}, "team-a.migrate.ripple-recreate"},
		{types.NamespacedName{Namespace: "team-b", Name: "migrate"}, "team-b.migrate.ripple-recreate"},
		{types.NamespacedName{Namespace: "team-a", Name: "db.migrate"}, "team-a.db.migrate.ripple-recreate"},
		{types.NamespacedName{Namespace: "team-a", Name: long}, ""},
		{types.NamespacedName{Namespace: "team-b", Name: long}, ""},
	} {
		got := recordName(tc.key)
		if tc.want != "" && got != tc.want {
			t.Errorf("recordName(%s) = %q, want %q", tc.key, got, tc.want)
		}
		if msgs := validation.IsDNS1123Subdomain(got); len(msgs) > 0 {
			t.Errorf("recordName(%s) = %q is not an object name: %v", tc.key, got, msgs)
		}
		if !strings.HasPrefix(got, tc.key.Namespace+".") || !strings.HasSuffix(got, recordSuffix) {
			t.Errorf("recordName(%s) = %q does not name the namespace and end in %s", tc.key, got, recordSuffix)
		}
	}
	a := recordName(types.NamespacedName{Namespace: "team-a", Name: long})
	b := recordName(types.NamespacedName{Namespace: "team-a", Name: long + "x"})
	if a == b {
		t.Errorf("two long names share the record %q", a)
	}
}
