package gather

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/internal/digest"
	"github.com/ripple-dev/ripple/internal/manifest"
	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/workload"
)

// sharedCM is ConfigMap mesh/name with the shared-with value grant (none
// when empty).
func sharedCM(name, grant string) *corev1.ConfigMap {
	c := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "mesh", Name: name}, Data: map[string]string{"k": name}}
	if grant != "" {
		c.Annotations = map[string]string{keys.SharedWith: grant}
	}
	return c
}

// A cross-namespace reference is read only when its config shares it with
// the workload's namespace; one that is not (or does not exist, or is in a
// namespace Ripple does not watch) is left out of the input whole, with
// why, in the same words for a missing config and one not shared.
func TestSharedInput(t *testing.T) {
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", Annotations: map[string]string{
		keys.ConfigMapReload: "mesh/granted, mesh/all, mesh/other, mesh/private, mesh/missing",
		// A record of a reference no longer named reads nothing.
		keys.Applied: `{"ConfigMap/mesh/old":"abc"}`,
	}}}
	objs := []client.Object{dep, sharedCM("granted", "a, shop"), sharedCM("all", "*"), sharedCM("other", "a"),
		sharedCM("private", ""), sharedCM("old", "shop")}
	g := Gatherer{Reader: manifest.NewReader(objs), Settings: plan.Settings{Keys: keys, SourceKinds: []refs.Kind{refs.ConfigMap}}}
	in, err := g.Input(t.Context(), workload.Deployment, dep, &dep.Spec.Template)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := refsOf(in), []string{"ConfigMap/mesh/all", "ConfigMap/mesh/granted"}; !slices.Equal(got, want) {
		t.Fatalf("sources = %v, want %v", got, want)
	}
	if src := in.Sources[1]; !src.Found || src.Digest != digest.ConfigMap(sharedCM("granted", "a, shop")) {
		t.Errorf("mesh/granted = %+v, want read", src)
	}
	var refused []string
	for i, name := range []string{"missing", "other", "private"} {
		if i < len(in.Workload.Invalid) {
			refused = append(refused, strings.Replace(in.Workload.Invalid[i], "mesh/"+name, "mesh/X", 1))
		}
	}
	if len(in.Workload.Invalid) != 3 || refused[0] != refused[1] || refused[0] != refused[2] ||
		!strings.Contains(in.Workload.Invalid[1], `annotation "configmap.reloader.stakater.com/reload": ConfigMap "mesh/other" is not shared with this namespace`) {
		t.Errorf("warnings = %q, want one per reference not followed, alike", in.Workload.Invalid)
	}

	// A namespace Ripple does not watch is refused by name, unread.
	g.Settings.Watched = []string{"shop"}
	in, err = g.Input(t.Context(), workload.Deployment, dep, &dep.Spec.Template)
	if err != nil || len(in.Sources) != 0 || len(in.Workload.Invalid) != 5 ||
		!strings.Contains(in.Workload.Invalid[0], `in namespace "mesh", which this Ripple does not watch`) {
		t.Errorf("unwatched: sources %v, warnings %q, %v", refsOf(in), in.Workload.Invalid, err)
	}
}
