package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/api/v1alpha1"
	"github.com/ripple-dev/ripple/internal/digest"
	"github.com/ripple-dev/ripple/internal/reason"
)

// A tenant cannot loosen the canary its platform set: with --canary=1 and
// --tighten-only, the config's own `canary: "0"` and `canary-bake: 0s` are
// not taken (InvalidAnnotation), and the Deployment it marks canary-first
// but scaled to zero is not chosen (it would pass at once). The bad change
// halts on d00, a Deployment with pods, and nothing else rolls.
func TestCanaryATenantCannotLoosen(t *testing.T) {
	t.Parallel()
	const fleet = 3
	cs := kubernetes.NewForConfigOrDie(kc.Config)
	ns := newNamespace(t, cs)
	cm := createCanaryFleet(t, cs, ns, fleet, "0s")
	cm.Annotations = map[string]string{"ripple.dev/canary": "0", "ripple.dev/canary-bake": "0s"}
	cm, err := cs.CoreV1().ConfigMaps(ns).Update(t.Context(), cm, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	patchDeployment(t, cs, ns, "d02", `{"metadata":{"annotations":{"ripple.dev/canary-first":"true"}},"spec":{"replicas":0}}`)
	r := newRipple(t, ns, "--canary=1", "--canary-bake=10s", "--tighten-only")
	r.Env = []string{"POD_NAMESPACE=" + ns}
	r.Start()
	waitFleetBaseline(t, cs, ns, "", fleet)

	blockNewPods(t, cs, ns, fleet-1)
	cm = updateConfig(t, cs, cm, "v2")
	bad := digest.ConfigMap(cm)
	halt := waitEvent(t, cs, ns, "ConfigMap", canaryConfig, reason.RolloutHalted)
	if !strings.Contains(halt.Note, `Deployment "d00" stalled`) {
		t.Errorf("RolloutHalted %q, want it to name the canary d00", halt.Note)
	}
	cr := newestChange(t, ns)
	if cr.Status.Canary == nil || len(cr.Status.Canary.Workloads) != 1 || cr.Status.Canary.Workloads[0].Name != "d00" ||
		cr.Status.Canary.Bake.Duration != 10*time.Second {
		t.Errorf("the change's canary %+v, want d00 alone (d02 runs no pods), baking the platform's 10s", cr.Status.Canary)
	}
	if rolled := fleetWith(t, cs, ns, canaryEnv, bad); !slices.Equal(rolled, []string{"d00"}) {
		t.Errorf("the Deployments written with the bad change are %v, want only the canary d00", rolled)
	}
	for _, key := range []string{"ripple.dev/canary", "ripple.dev/canary-bake"} {
		waitEventNamingConfig(t, cs, ns, reason.InvalidAnnotation, key+`"`)
	}
}

// A canary that never applies the change (its reload window stays closed)
// does not hold it forever: past --rollout-timeout the change halts, says
// why, and alerts as any halt does; the other workloads roll nothing.
func TestCanaryThatNeverAppliesHalts(t *testing.T) {
	t.Parallel()
	const fleet, timeout = 3, 20 * time.Second
	cs := kubernetes.NewForConfigOrDie(kc.Config)
	ns := newNamespace(t, cs)
	cm := createCanaryFleet(t, cs, ns, fleet, "0s")
	opens := time.Now().UTC().Add(3 * time.Hour)
	closed := fmt.Sprintf("%s-%s UTC", opens.Format("15:04"), opens.Add(time.Minute).Format("15:04"))
	patchDeployment(t, cs, ns, "d00", fmt.Sprintf(`{"metadata":{"annotations":{%q:%q,"ripple.dev/canary-first":"true"}}}`, reloadWindowKey, closed))
	r := newRipple(t, ns, "--rollout-timeout="+timeout.String())
	r.Env = []string{"POD_NAMESPACE=" + ns}
	r.Start()
	waitFleetBaseline(t, cs, ns, "", fleet)

	cm = updateConfig(t, cs, cm, "v2")
	changed := time.Now()
	halt := waitEvent(t, cs, ns, "ConfigMap", canaryConfig, reason.RolloutHalted)
	took := eventTime(halt).Sub(changed)
	if !strings.Contains(halt.Note, `Deployment "d00" did not apply the change within 20s`) || took < timeout {
		t.Errorf("RolloutHalted %s after the change: %q; want after the 20s timeout, naming d00", took, halt.Note)
	}
	if took > timeout+10*time.Second {
		t.Errorf("the halt came %s after the change, want within 10s of the %s timeout", took, timeout)
	}
	if rolled := fleetWith(t, cs, ns, canaryEnv, digest.ConfigMap(cm)); len(rolled) != 0 {
		t.Errorf("%v rolled a change whose canary never applied it", rolled)
	}
}

// patchDeployment merge-patches the Deployment name in ns.
func patchDeployment(t *testing.T, cs kubernetes.Interface, ns, name, patch string) {
	t.Helper()
	if _, err := cs.AppsV1().Deployments(ns).Patch(t.Context(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// newestChange is the newest ConfigRollout of canaryConfig in ns.
func newestChange(t *testing.T, ns string) v1alpha1.ConfigRollout {
	t.Helper()
	cr, ok, err := latestChange(t.Context(), t, ns)
	if err != nil || !ok {
		t.Fatalf("no ConfigRollout of %s (%v)", canaryConfig, err)
	}
	return cr
}

// latestChange is the newest ConfigRollout of canaryConfig in ns; false
// while there is none.
func latestChange(ctx context.Context, t *testing.T, ns string) (v1alpha1.ConfigRollout, bool, error) {
	var l v1alpha1.ConfigRolloutList
	if err := crClient(t).List(ctx, &l, client.InNamespace(ns), client.MatchingLabels{v1alpha1.LabelConfigName: canaryConfig}); err != nil || len(l.Items) == 0 {
		return v1alpha1.ConfigRollout{}, false, err
	}
	slices.SortFunc(l.Items, func(a, b v1alpha1.ConfigRollout) int { return b.CreationTimestamp.Compare(a.CreationTimestamp.Time) })
	return l.Items[0], true, nil
}

// waitEventNamingConfig waits for an Event of reason r on the ConfigMap
// canaryConfig, or on a workload that reads it, whose note holds s.
func waitEventNamingConfig(t *testing.T, cs kubernetes.Interface, ns string, r reason.Reason, s string) {
	t.Helper()
	waitFor(t, fmt.Sprintf("a %s event naming %s", r, s), func(ctx context.Context) (bool, error) {
		evs, err := cs.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		return slices.ContainsFunc(evs.Items, func(e eventsv1.Event) bool {
			return e.Reason == string(r) && e.Type == corev1.EventTypeWarning && strings.Contains(e.Note, s)
		}), nil
	})
}
