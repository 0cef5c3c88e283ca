package controller

import (
	"strings"
	"testing"
	"time"

	"github.com/ripple-dev/ripple/internal/reason"

	"github.com/ripple-dev/ripple/internal/workload"
)

// A helm upgrade: the ConfigMap changes, then the Deployment's image
// within the settle window. The template change applied the data: Ripple
// writes no template, says so once in a ReloadSkipped Event, and the next
// config change rolls once. The other order (the image first, the
// ConfigMap afterwards) rolls as before.
func TestTemplateChangedWithTheConfig(t *testing.T) {
	w := newWorld(t, []workload.Kind{workload.Deployment})
	w.create(configMap(), deployment("web"))
	w.baseline("web")
	v2 := w.change("Deployment", "v2")
	w.clk.Step(100 * time.Millisecond)
	d := w.web()
	d.Spec.Template.Spec.Containers[0].Image = "app:2"
	if err := w.c.Update(t.Context(), d); err != nil {
		t.Fatal(err)
	}
	w.reconcile("Deployment", "web") // the Deployment's own event, inside the window
	w.clk.Step(time.Second)
	rv := w.web().ResourceVersion
	w.reconcile("Deployment", "web")
	got := w.web()
	if w.applied("web") != "" || got.Spec.Template.Spec.Containers[0].Image != "app:2" || len(got.Spec.Template.Spec.Containers[0].Env) != 0 {
		t.Fatalf("the template was written (applied %q): want the helm upgrade's pods to be the only rollout", w.applied("web"))
	}
	if got.ResourceVersion == rv {
		t.Error("nothing recorded: the next reconcile would roll")
	}
	ev := w.wantEvent(w.drain(), string(reason.ReloadSkipped))
	if !strings.Contains(ev, `ConfigMap "cfg" `+v2[:12]) || !strings.Contains(ev, "the pod template was changed after the config") {
		t.Errorf("ReloadSkipped Event %q does not name the config and the case", ev)
	}
	w.reconcile("Deployment", "web")
	if w.web().ResourceVersion != got.ResourceVersion || len(w.drain()) != 0 {
		t.Error("a later reconcile wrote or reported again")
	}

	// The other order: the template first, the config afterwards.
	d = w.web()
	d.Spec.Template.Spec.Containers[0].Image = "app:3"
	if err := w.c.Update(t.Context(), d); err != nil {
		t.Fatal(err)
	}
	w.reconcile("Deployment", "web")
	w.clk.Step(5 * time.Second)
	v3 := w.change("Deployment", "v3")
	w.clk.Step(time.Second)
	w.reconcile("Deployment", "web")
	if w.applied("web") != v3 {
		t.Fatalf("template first, config afterwards: applied %q, want a rollout to %q", w.applied("web"), v3)
	}
	w.wantEvent(w.drain(), string(reason.Reloaded))
}

// A config event that comes after Ripple saw the template change (while
// the first change set waited) rolls, and the Reloaded Event says the
// template changed first.
func TestTemplateFirstRolls(t *testing.T) {
	w := newWorld(t, []workload.Kind{workload.Deployment})
	w.create(configMap(), deployment("web"))
	w.baseline("web")
	w.change("Deployment", "v2")
	w.clk.Step(50 * time.Millisecond)
	w.setImage("app:2")
	w.reconcile("Deployment", "web") // the Deployment's own event
	w.clk.Step(50 * time.Millisecond)
	v3 := w.change("Deployment", "v3")
	w.clk.Step(time.Second)
	w.reconcile("Deployment", "web") // a new change set: a window from now
	w.clk.Step(time.Second)
	w.reconcile("Deployment", "web")
	if w.applied("web") != v3 {
		t.Fatalf("applied %q, want a rollout to %q", w.applied("web"), v3)
	}
	if ev := w.wantEvent(w.drain(), string(reason.Reloaded)); !strings.Contains(ev, "the pod template was changed before the config") {
		t.Errorf("Reloaded Event %q does not say the template changed first", ev)
	}
}

// The template and the configs come through separate watches: a config
// event that finds a template change Ripple had not seen yet counts it as
// made with the config (helm writes the ConfigMap first, but the
// Deployment's event may be delivered first).
func TestTemplateSeenWithTheConfigEvent(t *testing.T) {
	w := newWorld(t, []workload.Kind{workload.Deployment})
	w.create(configMap(), deployment("web"))
	w.baseline("web")
	w.setImage("app:2")
	w.change("Deployment", "v2")
	w.clk.Step(time.Second)
	w.reconcile("Deployment", "web")
	if w.applied("web") != "" {
		t.Fatalf("applied %q: want the template change to be the only rollout", w.applied("web"))
	}
	w.wantEvent(w.drain(), string(reason.ReloadSkipped))
}

// setImage changes the image of Deployment web: someone else's change of
// its pod template.
func (w *world) setImage(image string) {
	w.t.Helper()
	d := w.web()
	d.Spec.Template.Spec.Containers[0].Image = image
	if err := w.c.Update(w.t.Context(), d); err != nil {
		w.t.Fatal(err)
	}
}
