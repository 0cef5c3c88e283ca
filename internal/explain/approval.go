package explain

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/workload"
)

// Plan plans obj as the controller would now, through the same gather and
// planner as a report: `ripple approve` approves what it leaves waiting.
func (e Explainer) Plan(ctx context.Context, kind Kind, obj client.Object) (plan.Plan, error) {
	f := Facts{Kind: kind, Object: obj, Settings: e.Settings, Now: e.Now()}
	tpl, err := workload.Template(ctx, e.Reader, kind.Kind, obj)
	if err != nil {
		return plan.Plan{}, err
	}
	if tpl == nil {
		return plan.Plan{}, fmt.Errorf("%s %s/%s: %s", kind.Name(), obj.GetNamespace(), obj.GetName(), noTemplate(kind, obj))
	}
	f.Template = tpl
	if err := e.plan(ctx, &f); err != nil {
		return plan.Plan{}, err
	}
	return f.Plan, nil
}
