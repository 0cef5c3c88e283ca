package dependents

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/workload"
)

// The workloads of other namespaces that name a config by a
// cross-namespace reference are found through the index (the fake client
// refuses a field selector no index serves), across namespaces, and only
// in the namespaces the grant admits.
func TestShared(t *testing.T) {
	named := func(ns, name, v string) client.Object {
		return deployment(ns, name, map[string]string{keys.ConfigMapReload: v}, corev1.PodSpec{})
	}
	objs := []client.Object{
		named("b", "web", "mesh/ca"),
		named("c", "api", "local, mesh/ca"),
		named("d", "tenant", "mesh/ca"),              // not granted
		named("b", "other", "mesh/ca-bundle"),        // another config
		named("mesh", "self", "mesh/ca"),             // the config's own namespace: not a cross reference
		named("e", "pattern", "mesh/.*"),             // a pattern is no reference
		deployment("b", "plain", nil, envFrom("ca")), // a same-namespace config of the same name
	}
	ix := newIndex(t, objs, workload.Deployment)
	granted := func(ns string) bool { return ns == "b" || ns == "c" || ns == "mesh" || ns == "e" }
	got, err := ix.Shared(t.Context(), workload.Deployment, "mesh", refs.Ref{Kind: refs.ConfigMap, Name: "ca"}, granted)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, obj := range got {
		names = append(names, obj.GetNamespace()+"/"+obj.GetName())
	}
	slices.Sort(names)
	if want := []string{"b/web", "c/api"}; !slices.Equal(names, want) {
		t.Errorf("Shared = %v, want %v", names, want)
	}
}
