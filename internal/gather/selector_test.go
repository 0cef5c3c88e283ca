package gather

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/internal/annotation"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/workload"
)

// Input reads the configs a workload's label selector selects, of its
// namespace only; up to annotation.MaxSelected of them, past which it
// selects none and says why, naming the annotation and the count.
func TestInputSelected(t *testing.T) {
	labelled := func(ns, name string, labels map[string]string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}}
	}
	selecting := func(n int) ([]string, []string) {
		objs := []client.Object{labelled("shop", "other", map[string]string{"team": "b"}), labelled("elsewhere", "dash-0", map[string]string{"team": "a"})}
		for i := range n {
			objs = append(objs, labelled("shop", fmt.Sprintf("dash-%03d", i), map[string]string{"team": "a"}))
		}
		d := web()
		d.Annotations = map[string]string{keys.ConfigMapSelector: "team=a"}
		in, err := gatherer(objs, nil, nil).Input(t.Context(), workload.Deployment, d, &d.Spec.Template)
		if err != nil {
			t.Fatal(err)
		}
		var broad []string
		for _, tb := range in.Workload.TooBroad {
			broad = append(broad, string(tb.Kind)+": "+tb.Message)
		}
		return refsOf(in), broad
	}
	got, broad := selecting(2)
	if want := []string{"ConfigMap/cfg", "ConfigMap/dash-000", "ConfigMap/dash-001"}; !slices.Equal(got, want) || broad != nil {
		t.Errorf("sources %v, refused %v; want %v", got, broad, want)
	}
	if got, broad = selecting(annotation.MaxSelected); len(got) != annotation.MaxSelected+1 || broad != nil {
		t.Errorf("%d selected: %d sources, refused %v", annotation.MaxSelected, len(got), broad)
	}
	got, broad = selecting(annotation.MaxSelected + 1)
	if !slices.Equal(got, []string{"ConfigMap/cfg"}) || len(broad) != 1 ||
		!strings.Contains(broad[0], string(refs.ConfigMap)+`: annotation "ripple.dev/configmap-selector" selects 101 ConfigMaps`) {
		t.Errorf("%d selected: sources %v, refused %v; want the referenced one only, and a refusal naming the annotation and the count", annotation.MaxSelected+1, got, broad)
	}
}
