package controller

import (
	"strings"
	"testing"

	"github.com/ripple-dev/ripple/internal/reason"

	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// An invalid restart method on one workload is a Warning naming the
// annotation on that workload, which still rolls by the flag's method;
// another workload of the namespace restarts its pods as it asks.
func TestInvalidRestartMethodBlocksNoOne(t *testing.T) {
	w := restartWorld(t, interceptor.Funcs{})
	keys := w.deps.Settings.Keys
	api := deployment("api")
	api.Annotations[keys.RestartMethod] = "evicted"
	w.create(api)
	w.baseline("api")
	sum := w.change("Deployment", "v2")
	w.reconcile("Deployment", "api")
	ev := w.wantEvent(w.drain(), string(reason.InvalidAnnotation))
	if !strings.Contains(ev, keys.RestartMethod) || !strings.Contains(ev, `"evicted"`) {
		t.Errorf("InvalidAnnotation %q does not name the annotation and its value", ev)
	}
	if w.applied("api") != sum {
		t.Errorf("api template %q, want the change written by --restart-method template", w.applied("api"))
	}
	w.reconcile("Deployment", "web")
	if _, ok := w.webAnnotations()[keys.RestartedAt]; !ok || w.applied("web") != "" {
		t.Errorf("web: restarted-at %v, template %q; want a restart and no template write", ok, w.applied("web"))
	}
}
