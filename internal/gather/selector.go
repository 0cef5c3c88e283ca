package gather

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/internal/annotation"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/source"
)

// selected lists the names of the configs of kind in the workload's
// namespace that its label-selector annotation selects (none without a
// valid one: the plan warns of an invalid one). One that selects more
// than annotation.MaxSelected selects none, and broad says why, naming
// the annotation and the count. A config it selected that is gone is a
// candidate through the applied record.
func (g Gatherer) selected(ctx context.Context, kind refs.Kind, obj client.Object, tpl *corev1.PodTemplateSpec) (names []string, broad, _ error) {
	p := annotation.Parse(g.Settings.Keys, kind, obj.GetAnnotations(), tpl.Annotations)
	if p.Selector == nil {
		return nil, nil, nil
	}
	list := source.List(kind)
	// The cache matches the labels in memory over the namespace's
	// configs, which it keeps without their data; explain asks the API
	// server, which matches them there.
	if err := g.Reader.List(ctx, list, client.InNamespace(obj.GetNamespace()), client.MatchingLabelsSelector{Selector: p.Selector}); err != nil {
		return nil, nil, err
	}
	names = source.Names(list)
	if broad = p.CheckSelected(len(names)); broad != nil {
		return nil, broad, nil
	}
	return names, nil, nil
}
