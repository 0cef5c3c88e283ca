package controller

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/internal/plan"
)

// withTemplateMessage is why a change set applied by a change of the pod
// template rolls nothing (plan.TemplateApplied).
const withTemplateMessage = "the pod template was changed after the config (e.g. helm upgrade); its new pods read the new data"

// templateFirstNote is added to the Reloaded event of a plan that rolls
// although the pod template changed while its change set waited
// (plan.Plan.TemplateFirst).
const templateFirstNote = "; the pod template was changed before the config, so its new pods may have read the old data"

// reportWithTemplate tells of the sources plan p records as applied by a
// change of the pod template made after them, instead of rolling: a
// ReloadSkipped event naming them and their data. Its write recorded it,
// so it is told once.
func (r *Reconciler) reportWithTemplate(ctx context.Context, obj client.Object, p plan.Plan) {
	if len(p.WithTemplate) == 0 {
		return
	}
	names := make([]string, len(p.WithTemplate))
	for i, sp := range p.WithTemplate {
		names[i] = fmt.Sprintf("%s %q %s", sp.Ref.Kind, sp.Ref.Name, shortDigest(sp.Digest))
	}
	ctrl.LoggerFrom(ctx).Info("applied with the pod template", "workload", klog.KObj(obj), "kind", r.Kind.Name(), "configs", names)
	r.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, ReasonReloadSkipped, "Reload",
		"Changes in %s not reloaded: %s, so Ripple records them as applied", strings.Join(names, ", "), withTemplateMessage)
}
