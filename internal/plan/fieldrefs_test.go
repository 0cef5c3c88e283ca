package plan

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/ripple-dev/ripple/internal/decide"
	"github.com/ripple-dev/ripple/internal/refs"
)

// fieldRefs makes the workload a restart kind's (one empty container, its
// template kept) whose own field names ConfigMap "app" and nothing else.
func fieldRefs(i *Input) {
	i.Workload.KeepsTemplate = true
	i.Workload.Template = &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "restart"}}}}
	i.Workload.FieldRefs = []refs.FieldRef{{Ref: cmApp, Path: "spec.from[].configMap.name"}}
}

// A config a workload's own field names (a declared kind's refs) is
// followed by auto as a config its pod template references: it rolls,
// on the first container, reading every key; a config no field names
// is not referenced.
func TestFieldRefsAreReferences(t *testing.T) {
	p := For(in(fieldRefs, both, digestOf(cmApp, "cm2"), digestOf(secDB, "s2")))
	if got := changed(p); !slices.Equal(got, []string{"ConfigMap/app=cm2"}) {
		t.Fatalf("changes %v, want the field's ConfigMap only", got)
	}
	for _, sp := range p.Sources {
		switch sp.Ref {
		case cmApp:
			if sp.Decision.Reason != decide.AutoMatch || !strings.Contains(sp.Decision.Message, "referenced by the workload's field spec.from[].configMap.name") {
				t.Errorf("the field's ConfigMap: %s %q, want AutoMatch naming the field", sp.Decision.Reason, sp.Decision.Message)
			}
		case secDB:
			if sp.Decision.Reason != decide.NotReferenced {
				t.Errorf("a Secret no field names: %s, want NotReferenced", sp.Decision.Reason)
			}
		}
	}
	if _, ok := envOf(p, cmApp); !ok {
		t.Error("the change is not written on the first container")
	}
	read, all := refs.Keys(Uses(in(fieldRefs).Workload), cmApp)
	if !all || read != nil {
		t.Errorf("a field's config reads keys %v, all %v; want every key", read, all)
	}
	noAuto := func(i *Input) { delete(i.Workload.Annotations, keys.Auto) }
	if p := For(in(fieldRefs, noAuto, both, digestOf(cmApp, "cm2"))); len(changed(p)) != 0 {
		t.Errorf("without auto a field's config rolls: %v", changed(p))
	}
}
