package change

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"

	"github.com/ripple-dev/ripple/internal/gather"
	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/strategy"
)

// A change a workload's reconcile saw before the change controller
// started (its CRD is discovered later) is looked at when it starts, held
// changes included: a change that waits for an approval gets the
// ConfigRollout an approver without the digest key reads what waits from.
func TestChangesSeenBeforeTheStartAreLookedAt(t *testing.T) {
	c := &Controller{}
	awaiting := changeKey("shop", 0)
	deferred := changeKey("shop", 1)
	c.Touch("shop", plan.Plan{Awaiting: &plan.Awaiting{Changes: []strategy.Change{{Ref: awaiting.Config}}}})
	c.Touch("shop", plan.Plan{Changes: []strategy.Change{{Ref: deferred.Config}}, Deferred: &plan.Deferred{}})
	c.Touch("shop", plan.Plan{Changes: []strategy.Change{{Ref: refs.Ref{Kind: refs.SecretProviderClass, Name: "vault"}}}})

	q := priorityqueue.New[Key]("changes-test")
	defer q.ShutDown()
	if q.Len() != 0 {
		t.Fatal("the queue is not empty before the start")
	}
	if err := c.start(t.Context(), q); err != nil {
		t.Fatal(err)
	}
	late := changeKey("bank", 0)
	c.look(late)

	var got []Key
	for q.Len() > 0 {
		k, _ := q.Get()
		q.Done(k)
		got = append(got, k)
	}
	for _, want := range []Key{awaiting, deferred, late} {
		if !slices.Contains(got, want) {
			t.Errorf("%v was not looked at; looked at %v", want, got)
		}
	}
	if len(got) != 3 {
		t.Errorf("looked at %v, want only the ConfigMap changes %v, %v and %v (a SecretProviderClass has no ConfigRollout)", got, awaiting, deferred, late)
	}
	if c.early != nil {
		t.Errorf("the early looks are kept after the start: %v", c.early)
	}
}

// Before the change controller runs, a canaried change waits; it rolls
// without a canary (gather.Unkept) only once ConfigRollouts are known to
// be missing or forbidden, never for a watch that was slow to start.
func TestCanaryBeforeTheChangeController(t *testing.T) {
	src := plan.Source{Ref: refs.Ref{Kind: refs.ConfigMap, Name: "cfg"}, Found: true, Digest: "d1"}
	var unkept gather.Unkept
	for _, tc := range []struct {
		name   string
		err    error
		unkept bool
	}{
		{"not asked yet", nil, false},
		{"a cache slow to sync", errors.New("indexing ConfigRollouts: Timeout: failed waiting for *v1alpha1.ConfigRollout Informer to sync"), false},
		{"forbidden", apierrors.NewForbidden(schema.GroupResource{Group: "ripple.dev", Resource: "configrollouts"}, "", errors.New("no rule")), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Controller{}
			if tc.name != "not asked yet" {
				c.missing(tc.err)
			}
			_, ok, err := c.Canary(t.Context(), "shop", src)
			if ok || errors.As(err, &unkept) != tc.unkept || (!tc.unkept && err != nil) {
				t.Errorf("Canary: %v, %v; want unkept %v", ok, err, tc.unkept)
			}
		})
	}
	c := &Controller{}
	c.missing(nil)
	if _, _, err := c.Canary(t.Context(), "shop", src); !errors.As(err, &unkept) || !strings.Contains(err.Error(), "does not serve ConfigRollouts") {
		t.Errorf("CRD not served: %v, want it named", err)
	}
	// As enable reports it: the rights to grant, not the advice to
	// turn ConfigRollouts off, which would hold the change for good.
	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: "ripple.dev", Resource: "configrollouts"}, "", errors.New("no rule"))
	c.missing(fmt.Errorf("listing ConfigRollouts (grant get, list and watch on configrollouts.ripple.dev, or turn them off with --config-rollouts=false): %w", forbidden))
	_, _, err := c.Canary(t.Context(), "shop", src)
	if why := fmt.Sprint(err); !strings.Contains(why, "may not list ConfigRollouts") || !strings.Contains(why, "grant it get, list, watch, create and delete") ||
		strings.Contains(why, "--config-rollouts=false") {
		t.Errorf("forbidden: %q, want the rights to grant", why)
	}
}
