package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/hack/kit"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/standing"
)

const reloadWindowKey = "ripple.dev/reload-window"

// closedWindow is a daily one-minute window 12 hours from now, in UTC.
func closedWindow() string {
	at := time.Now().UTC().Add(12 * time.Hour)
	return fmt.Sprintf("%s-%s UTC", at.Format("15:04"), at.Add(time.Minute).Format("15:04"))
}

// With --namespace-defaults the Namespace's reload window governs its
// workloads, read from Ripple's metadata-only cache of Namespaces: a change
// outside it is a ReloadDeferred Event naming the window's origin and rolls
// nothing, while a workload whose own empty annotation opts it out rolls.
// Without the flag the Namespace's annotation is ignored.
func TestReloadWindowNamespaceDefault(t *testing.T) {
	t.Parallel()
	for _, defaults := range []bool{true, false} {
		t.Run(fmt.Sprintf("namespace-defaults=%v", defaults), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			ns := &corev1.Namespace{}
			if err := e.c.Get(t.Context(), client.ObjectKey{Name: e.ns}, ns); err != nil {
				t.Fatal(err)
			}
			window := closedWindow()
			ns.Annotations = map[string]string{reloadWindowKey: window}
			if err := e.c.Update(t.Context(), ns); err != nil {
				t.Fatal(err)
			}
			e.run(t, "--namespaces="+e.ns, fmt.Sprintf("--namespace-defaults=%v", defaults))
			e.newConfig(t, cm1)
			web := e.newWorkload(t, kit.Deployment, "web", ann(autoKey, "true"), envFrom(cm1.Kind, cm1.Name))
			out := e.newWorkload(t, kit.Deployment, "optout", ann(autoKey, "true", reloadWindowKey, ""), envFrom(cm1.Kind, cm1.Name))
			e.waitFor(t, web, "the baseline record", hasBaseline)
			e.waitFor(t, out, "the baseline record", hasBaseline)
			before := kit.Deployment.Template(web).DeepCopy()

			sum := e.setConfig(t, cm1, "v2")
			e.waitApplied(t, kit.Deployment, out, cm1, sum)
			if !defaults {
				e.waitApplied(t, kit.Deployment, web, cm1, sum)
				return
			}
			notes := e.waitEvent(t, "web", corev1.EventTypeNormal, "ReloadDeferred")
			if want := fmt.Sprintf("the reload window %q (from the namespace) is closed", window); !strings.Contains(notes[0], want) || !strings.Contains(notes[0], `ConfigMap "cm1"`) {
				t.Errorf("ReloadDeferred %q does not say %q and name the config", notes[0], want)
			}
			e.expectNoRollout(t, web, kit.Deployment, before)
		})
	}
}

// ripple explain, with the controller's --reload-window read from its
// reloader-meta-info, shows the window closed with its next opening and the
// change deferred, with the controller's ReloadDeferred event.
func TestExplainReloadDeferred(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.environ = map[string]string{"RELOADER_NAMESPACE": e.ns}
	e.newConfig(t, appConfig)
	w := e.newWorkload(t, kit.Deployment, "w", map[string]string{autoKey: "true"}, envFrom(refs.ConfigMap, "app"))
	window := closedWindow()
	e.run(t, "--reload-window="+window)
	e.waitFor(t, w, "the baseline", hasBaseline)
	e.waitMetaInfo(t)
	e.setConfig(t, appConfig, "v2")
	e.waitEvent(t, "w", corev1.EventTypeNormal, "ReloadDeferred")

	r := e.explainJSON(t, "deployment/w")
	if r.State != standing.Waiting || r.Reason != "ReloadDeferred" {
		t.Errorf("%s (%s): %s; want Waiting (ReloadDeferred)", r.State, r.Reason, r.Verdict)
	}
	rw := r.ReloadWindow
	if rw == nil || rw.Value != window || rw.From != "flag" || rw.Open || rw.NextOpening == nil {
		t.Fatalf("reload window %+v, want %q from the flag, closed, with its next opening", rw, window)
	}
	if d := time.Until(*rw.NextOpening); d < 11*time.Hour || d > 13*time.Hour {
		t.Errorf("next opening %s, want about 12h from now", rw.NextOpening)
	}
	if len(r.Events) == 0 || r.Events[0].Reason != "ReloadDeferred" {
		t.Errorf("events %+v, want ReloadDeferred first", r.Events)
	}
}
