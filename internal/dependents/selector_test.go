package dependents

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/workload"
)

// Of finds the workloads whose label selector matches a config's labels,
// as the cache holds them (on the metadata or the pod template), besides
// those that name or reference it; not those selecting other labels,
// another kind, or with an invalid selector, nor another namespace's. A
// config gone from the cache may be any selecting workload's.
func TestOfSelector(t *testing.T) {
	sel := func(v string) map[string]string { return map[string]string{keys.ConfigMapSelector: v} }
	tplSel := deployment("shop", "tpl-a", nil, corev1.PodSpec{})
	tplSel.Spec.Template.Annotations = sel("team=a")
	objs := []client.Object{
		deployment("shop", "a", sel("team=a"), corev1.PodSpec{}),
		deployment("shop", "a-or-b", sel("team in (a,b)"), corev1.PodSpec{}),
		deployment("shop", "b", sel("team=b"), corev1.PodSpec{}),
		deployment("shop", "invalid", sel("team in (a"), corev1.PodSpec{}),
		deployment("shop", "secret-a", map[string]string{keys.SecretSelector: "team=a"}, corev1.PodSpec{}),
		deployment("shop", "env", nil, envFrom("dash")),
		deployment("other", "a", sel("team=a"), corev1.PodSpec{}),
		tplSel,
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "dash", Labels: map[string]string{"team": "a"}}},
	}
	ix := newIndex(t, objs, workload.Deployment)
	dash := refs.Ref{Kind: refs.ConfigMap, Name: "dash"}
	got, err := ix.Of(t.Context(), workload.Deployment, "shop", dash)
	if want := []string{"a", "a-or-b", "env", "tpl-a"}; err != nil || !slices.Equal(names(got), want) {
		t.Errorf("Of(ConfigMap/dash labelled team=a) = %v, %v; want %v", names(got), err, want)
	}
	got, err = ix.OfLabelled(t.Context(), workload.Deployment, "shop", dash, []map[string]string{{"team": "b"}})
	if want := []string{"a-or-b", "b", "env"}; err != nil || !slices.Equal(names(got), want) {
		t.Errorf("OfLabelled(team=b) = %v, %v; want %v", names(got), err, want)
	}
	got, err = ix.Of(t.Context(), workload.Deployment, "shop", refs.Ref{Kind: refs.ConfigMap, Name: "gone"})
	if want := []string{"a", "a-or-b", "b", "invalid", "tpl-a"}; err != nil || !slices.Equal(names(got), want) {
		t.Errorf("Of(a ConfigMap not in the cache) = %v, %v; want every selecting workload %v", names(got), err, want)
	}
	got, err = ix.Selecting(t.Context(), workload.Deployment, "shop", refs.SecretProviderClass, nil)
	if err != nil || len(got) != 0 {
		t.Errorf("Selecting(SecretProviderClass) = %v, %v; want none: no selector selects them", names(got), err)
	}
}
