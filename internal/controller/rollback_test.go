package controller

import (
	"maps"
	"strings"
	"testing"

	"github.com/ripple-dev/ripple/internal/reason"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ripple-dev/ripple/internal/workload"
)

// `kubectl rollout undo` of a Deployment Ripple rolled twice: the template
// and the annotations (the applied record with them) return to those of
// revision 2. Ripple rolls nothing, reports the rollback once, and a
// restart after that rolls nothing either; the next change rolls once.
func TestRollbackIsKept(t *testing.T) {
	w := newWorld(t, []workload.Kind{workload.Deployment}, noSettle)
	w.create(configMap(), deployment("web"))
	w.baseline("web")
	v2 := w.change("Deployment", "v2")
	w.reconcile("Deployment", "web")
	rev2 := w.web()
	v3 := w.change("Deployment", "v3")
	w.reconcile("Deployment", "web")
	if w.applied("web") != v3 {
		t.Fatalf("applied %q, want %q", w.applied("web"), v3)
	}
	w.drain()

	d := w.web()
	d.Spec.Template, d.Annotations = rev2.Spec.Template, maps.Clone(rev2.Annotations)
	if err := w.c.Update(t.Context(), d); err != nil {
		t.Fatal(err)
	}
	w.reconcile("Deployment", "web")
	if got := w.applied("web"); got != v2 {
		t.Fatalf("after the undo: applied %q, want the rollback kept at %q", got, v2)
	}
	ev := w.wantEvent(w.drain(), string(reason.RolledBack))
	if !strings.Contains(ev, `ConfigMap "cfg" `+v2[:12]) || !strings.Contains(ev, `ConfigMap "cfg" `+v3[:12]+" (changed since)") {
		t.Errorf("RolledBack Event %q does not name the data the revision was built for and the data read now", ev)
	}

	w.reconcile("Deployment", "web")
	w.deps.Memory = &Store{Metrics: w.deps.Metrics} // a restart
	rv := w.web().ResourceVersion
	w.reconcile("Deployment", "web")
	if got := w.web(); got.ResourceVersion != rv || w.applied("web") != v2 {
		t.Errorf("reconciled again and after a restart: wrote %v, applied %q", got.ResourceVersion != rv, w.applied("web"))
	}
	if got := w.drain(); len(got) != 0 {
		t.Errorf("Events after the rollback was recorded: %q", got)
	}

	v4 := w.change("Deployment", "v4")
	w.reconcile("Deployment", "web")
	if got := w.applied("web"); got != v4 {
		t.Fatalf("a change after the rollback: applied %q, want %q", got, v4)
	}
	w.wantEvent(w.drain(), string(reason.Reloaded))
}

// web is Deployment web as it is now.
func (w *world) web() *appsv1.Deployment {
	w.t.Helper()
	d := &appsv1.Deployment{}
	if err := w.c.Get(w.t.Context(), types.NamespacedName{Namespace: ns, Name: "web"}, d); err != nil {
		w.t.Fatal(err)
	}
	return d
}
