package app

import (
	"errors"
	"testing"

	apimeta "k8s.io/apimachinery/pkg/api/meta"

	"github.com/ripple-dev/ripple/api/v1alpha1"
	"github.com/ripple-dev/ripple/internal/gather"
	"github.com/ripple-dev/ripple/internal/plan"
)

// The admission webhook's verdicts are told no canary can be kept when
// ConfigRollouts are off or their CRD is not served, as the controller's
// reconciles are; with the CRD served a new change has no canary yet.
func TestKeptCanaries(t *testing.T) {
	served := apimeta.NewDefaultRESTMapper(nil)
	served.Add(v1alpha1.GroupVersion.WithKind("ConfigRollout"), apimeta.RESTScopeNamespace)
	for name, tc := range map[string]struct {
		k    keptCanaries
		want error
	}{
		"served":     {keptCanaries{mapper: served}, nil},
		"not served": {keptCanaries{mapper: apimeta.NewDefaultRESTMapper(nil)}, gather.UnkeptNotServed},
		"off":        {keptCanaries{off: true, mapper: served}, gather.UnkeptOff},
	} {
		_, ok, err := tc.k.Canary(t.Context(), "shop", plan.Source{})
		if ok || !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, %v; want none, %v", name, ok, err, tc.want)
		}
	}
}
