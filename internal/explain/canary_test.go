package explain

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/ripple-dev/ripple/internal/gather"
	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/reason"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/standing"
)

// Explain finds that no canary can be kept as the controller does: the
// ConfigRollout CRD not served, or ConfigRollouts off in the published
// settings. A user who may not list them cannot tell: the change waits
// for its canaries as far as explain knows.
func TestCanariesUnkept(t *testing.T) {
	src := plan.Source{Ref: refs.Ref{Kind: refs.ConfigMap, Name: "app"}, Found: true, Digest: "d1"}
	listing := func(err error) client.Reader {
		return fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
			List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error { return err },
		}).Build()
	}
	for name, tc := range map[string]struct {
		c    canaries
		want error
	}{
		"not served":   {canaries{reader: listing(&apimeta.NoKindMatchError{GroupKind: schema.GroupKind{Group: "ripple.dev", Kind: "ConfigRollout"}})}, gather.UnkeptNotServed},
		"off":          {canaries{reader: listing(nil), off: true}, gather.UnkeptOff},
		"not listable": {canaries{reader: listing(errors.New("forbidden"))}, nil},
	} {
		t.Run(name, func(t *testing.T) {
			if _, ok, err := tc.c.Canary(t.Context(), "shop", src); ok || !errors.Is(err, tc.want) {
				t.Errorf("Canary: %v, %v; want none, %v", ok, err, tc.want)
			}
		})
	}
}

// A workload whose canaried change is held because no canary can be kept
// is waiting, not reloading, and the verdict says why in the words of
// its Event; with --canary-unkept=roll it reloads.
func TestBuildCanaryUnkept(t *testing.T) {
	old, current := strings.Repeat("a", 40), strings.Repeat("b", 40)
	meta := map[string]string{"reloader.stakater.com/auto": "true", "ripple.dev/settle-window": "0s"}
	for _, rolls := range []bool{false, true} {
		settings := defaults(t)
		settings.Plan.UnkeptRolls = rolls
		f := facts(t, meta, old, current, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), settings)
		f.Input.Sources[0].Annotations = map[string]string{"ripple.dev/canary": "1"}
		f.Input.CanaryUnkept = string(gather.UnkeptNotServed)
		f.Plan = plan.For(f.Input)
		r := Build(f)
		switch {
		case rolls && (r.State != standing.Pending || r.Reason != reason.ReloadDue):
			t.Errorf("--canary-unkept=roll: %s (%s): %s; want it to reload", r.State, r.Reason, r.Verdict)
		case !rolls && (r.State != standing.Waiting || r.Reason != reason.CanaryUnkept || !strings.HasPrefix(r.Verdict, "held: Reload held") ||
			!strings.Contains(r.Verdict, string(gather.UnkeptNotServed))):
			t.Errorf("held: %s (%s): %s; want Waiting, CanaryUnkept, naming the CRD", r.State, r.Reason, r.Verdict)
		}
	}
}
