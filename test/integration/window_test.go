package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/hack/kit"
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
