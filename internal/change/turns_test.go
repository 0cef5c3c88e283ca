package change

import (
	"context"
	"fmt"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ripple-dev/ripple/internal/refs"
)

func changeKey(ns string, i int) Key {
	return Key{Namespace: ns, Config: refs.Ref{Kind: refs.ConfigMap, Name: fmt.Sprintf("c%d", i)}}
}

// A tenant's storm of changes waits behind itself: another namespace's
// change queued after 50 of the tenant's is looked at second, and the
// queue serves one key of each namespace in turn; a requeued key gets its
// namespace's next turn.
func TestTurnsServeEveryNamespaceInTurn(t *testing.T) {
	q := priorityqueue.New[Key]("turns-test")
	defer q.ShutDown()
	var tr turns
	for i := range 50 {
		tr.add(q, changeKey("tenant", i))
	}
	tr.add(q, changeKey("tenant", 3)) // queued again: keeps its turn
	tr.add(q, changeKey("shop", 0))
	tr.add(q, changeKey("bank", 0))
	tr.add(q, changeKey("shop", 1))

	var got []string
	looked := map[Key]bool{}
	r := tr.reconciler(reconcile.TypedFunc[Key](func(_ context.Context, k Key) (reconcile.Result, error) {
		looked[k] = true
		return reconcile.Result{}, nil
	}))
	for range 6 {
		k, _ := q.Get()
		if _, err := r.Reconcile(t.Context(), k); err != nil {
			t.Fatal(err)
		}
		q.Done(k)
		got = append(got, k.Namespace+"/"+k.Config.Name)
	}
	want := []string{"tenant/c0", "shop/c0", "bank/c0", "tenant/c1", "shop/c1", "tenant/c2"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("served %v, want %v", got, want)
	}
	if n := q.Len(); n != 47 {
		t.Errorf("%d keys left, want the tenant's 47", n)
	}
	if p := tr.enter(changeKey("tenant", 0)); p != -47 {
		t.Errorf("a tenant key queued again gets priority %d, want -47: behind the 47 the tenant has waiting", p)
	}
}
