package controller

import (
	"slices"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"

	"github.com/ripple-dev/ripple/internal/change"
	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/strategy"
)

// A change a workload's reconcile saw before the change controller
// started (its CRD is discovered later) is looked at when it starts, held
// changes included: a change that waits for an approval gets the
// ConfigRollout an approver without the digest key reads what waits from.
func TestChangesSeenBeforeTheStartAreLookedAt(t *testing.T) {
	c := &changes{}
	awaiting := changeKey("shop", 0)
	deferred := changeKey("shop", 1)
	c.touch("shop", plan.Plan{Awaiting: &plan.Awaiting{Changes: []strategy.Change{{Ref: awaiting.Config}}}})
	c.touch("shop", plan.Plan{Changes: []strategy.Change{{Ref: deferred.Config}}, Deferred: &plan.Deferred{}})
	c.touch("shop", plan.Plan{Changes: []strategy.Change{{Ref: refs.Ref{Kind: refs.SecretProviderClass, Name: "vault"}}}})

	q := priorityqueue.New[change.Key]("changes-test")
	defer q.ShutDown()
	if q.Len() != 0 {
		t.Fatal("the queue is not empty before the start")
	}
	if err := c.start(t.Context(), q); err != nil {
		t.Fatal(err)
	}
	late := changeKey("bank", 0)
	c.look(late)

	var got []change.Key
	for q.Len() > 0 {
		k, _ := q.Get()
		q.Done(k)
		got = append(got, k)
	}
	for _, want := range []change.Key{awaiting, deferred, late} {
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
