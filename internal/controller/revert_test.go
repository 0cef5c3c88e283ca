package controller

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ripple-dev/ripple/internal/reason"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/internal/workload"
)

// An operator that owns the Deployment rewrites its pod template without
// the env var Ripple wrote: Ripple warns once, naming the operator, counts
// it, and does not write the env var back; the next change rolls as usual.
func TestRevertIsReportedNotFought(t *testing.T) {
	w := newWorld(t, []workload.Kind{workload.Deployment}, noSettle)
	w.create(configMap(), deployment("web"))
	w.baseline("web")
	v2 := w.change("Deployment", "v2")
	w.reconcile("Deployment", "web")
	if w.applied("web") != v2 {
		t.Fatalf("applied %q, want %q", w.applied("web"), v2)
	}
	w.drain()

	d := w.web()
	c := &d.Spec.Template.Spec.Containers[0]
	c.Env = slices.DeleteFunc(c.Env, func(e corev1.EnvVar) bool { return strings.HasPrefix(e.Name, "STAKATER_") })
	if err := w.c.Update(t.Context(), d, client.FieldOwner("shop-operator")); err != nil {
		t.Fatal(err)
	}
	w.reconcile("Deployment", "web")
	if got := w.applied("web"); got != "" {
		t.Fatalf("Ripple wrote %q back over the operator's template", got)
	}
	ev := w.wantEvent(w.drain(), string(reason.ReloadReverted))
	// The fake client records its own manager name for an update
	// ("unknown"); the real API server's is in test/e2e.
	if !strings.Contains(ev, "by "+workload.LastWriter(w.web())) || !strings.Contains(ev, `ConfigMap "cfg" `+v2[:12]) || !strings.Contains(ev, "evict") {
		t.Errorf("ReloadReverted %q does not name the operator, the config and what to do", ev)
	}
	if got := w.metric("ripple_reloads_reverted_total", "kind=Deployment"); got != 1 {
		t.Errorf("ripple_reloads_reverted_total = %v, want 1", got)
	}
	w.reconcile("Deployment", "web")
	if got := w.drain(); len(got) != 0 || w.applied("web") != "" {
		t.Errorf("reconciled again: Events %q, applied %q; want none and nothing", got, w.applied("web"))
	}

	v3 := w.change("Deployment", "v3")
	w.reconcile("Deployment", "web")
	if got := w.applied("web"); got != v3 {
		t.Errorf("the next change: applied %q, want %q", got, v3)
	}
}

// The manager named is the last one to write the workload's spec or
// metadata, never Ripple or a status writer.
func TestLastWriter(t *testing.T) {
	at := func(s int) *metav1.Time { return &metav1.Time{Time: time.Date(2026, 1, 1, 0, 0, s, 0, time.UTC)} }
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{ManagedFields: []metav1.ManagedFieldsEntry{
		{Manager: "argocd-controller", Operation: metav1.ManagedFieldsOperationApply, Time: at(1)},
		{Manager: "shop-operator", Operation: metav1.ManagedFieldsOperationUpdate, Time: at(3)},
		{Manager: "ripple", Operation: metav1.ManagedFieldsOperationApply, Time: at(4)},
		{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", Time: at(5)},
	}}}
	if got := workload.LastWriter(d); got != `"shop-operator" (update)` {
		t.Errorf("LastWriter = %s", got)
	}
	if got := workload.LastWriter(&appsv1.Deployment{}); got != "another manager" {
		t.Errorf("LastWriter of no managed fields = %s", got)
	}
}
