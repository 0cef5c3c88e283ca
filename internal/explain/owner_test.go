package explain

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// explain flags a template another controller owns and a reverted reload,
// and names the restart method to use; a plain workload gets nothing.
func TestOwnership(t *testing.T) {
	owned := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{
		{Kind: "Shop", Name: "main", Controller: ptr.To(true)},
	}}}
	reverted := []Event{
		{Reason: "Reloaded", Message: "Reloaded for changes in ConfigMap \"app\""},
		{Reason: reasonReverted, Age: "2m", Message: `Reload reverted by "shop-operator" (update): the pod template no longer carries ConfigMap "app" 123456789abc.`},
	}
	for _, tc := range []struct {
		name   string
		events []Event
		want   []string // each note contains
	}{
		{name: "plain", events: nil},
		{name: "owned", want: []string{"owned by Shop main", "ripple.dev/restart-method"}},
		{name: "reverted", events: reverted, want: []string{`Reload reverted by "shop-operator" (update) (2m ago)`, "evict"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := &appsv1.Deployment{}
			if tc.name == "owned" {
				obj = owned
			}
			got := ownership(obj, tc.events)
			if len(got) != len(tc.want)/2 {
				t.Fatalf("notes %q, want %d", got, len(tc.want)/2)
			}
			for _, w := range tc.want {
				if !strings.Contains(strings.Join(got, "\n"), w) {
					t.Errorf("notes %q do not say %q", got, w)
				}
			}
		})
	}
}
