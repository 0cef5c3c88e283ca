package gather

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/internal/annotation"
	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/strategy"
	"github.com/ripple-dev/ripple/internal/workload"
)

// A named-reload annotation whose patterns would cost more than the match
// budget against the namespace's Secrets matches none of them: the gather
// lists only the referenced and literal ones, says why naming the
// annotation, and the plan ignores the annotation whole, so that the
// Secret a pattern would match does not reload; the ConfigMap annotation,
// within the budget, still matches. Before, each gather ran the 2,000
// matches, at up to 0.9 ms each.
func TestInputPatternsOverBudget(t *testing.T) {
	items := make([]string, 20)
	for i := range items {
		items[i] = fmt.Sprintf(".*a.*a.*a.*a%d", i)
	}
	d := web()
	d.Annotations[keys.ReloadKey(refs.Secret)] = strings.Join(items, ",") + ",app-1"
	d.Annotations[keys.ReloadKey(refs.ConfigMap)] = "un.*"
	objs := []client.Object{d, cm("cfg", "v1"), cm("unused", "v1"), secret("app-1")}
	for i := range 100 {
		name := fmt.Sprintf("s%d-", i)
		objs = append(objs, secret(name+strings.Repeat("a", annotation.MaxItemLen-len(name)-1)+"0"))
	}
	g := gatherer(objs, nil, nil)
	in, err := g.Input(t.Context(), workload.Deployment, d, &d.Spec.Template)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"ConfigMap/cfg", "ConfigMap/gone", "ConfigMap/unused", "Secret/app-1"}
	if got := refsOf(in); !slices.Equal(got, want) {
		t.Errorf("%d sources (%.200q...), want %v", len(got), got, want)
	}
	if !slices.Equal(in.Workload.OverBudget, []refs.Kind{refs.Secret}) {
		t.Errorf("over budget: %v, want the Secrets' annotation", in.Workload.OverBudget)
	}
	msg := `annotation "` + keys.ReloadKey(refs.Secret) + `": matching its patterns against the 101 Secrets of the namespace costs more than`
	if !slices.ContainsFunc(in.Workload.Invalid, func(s string) bool { return strings.HasPrefix(s, msg) }) {
		t.Errorf("invalid = %q, want %q...", in.Workload.Invalid, msg)
	}

	// The plan: the Secret named literally in the ignored annotation
	// does not reload, and the Warning is told.
	in.Strategy = strategy.EnvVars{}
	p := plan.For(in)
	for _, sp := range p.Sources {
		if sp.Ref.Kind == refs.Secret && sp.Decision.Reload {
			t.Errorf("%.40s... reloads under an annotation over the budget", sp.Ref)
			break
		}
	}
	if !slices.ContainsFunc(p.Warnings, func(s string) bool { return strings.HasPrefix(s, msg) }) {
		t.Errorf("warnings = %q, want %q...", p.Warnings, msg)
	}
}
