package e2e

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/ripple-dev/ripple/hack/cluster"
	"github.com/ripple-dev/ripple/internal/digest"
	"github.com/ripple-dev/ripple/internal/explain"
	"github.com/ripple-dev/ripple/internal/reason"
	"github.com/ripple-dev/ripple/internal/standing"
)

// unkeptFleet Deployments share the canaried ConfigMap of
// TestCanaryUnkeptHoldsUntilTheCRD.
const unkeptFleet = 20

// On a cluster of its own, without the ConfigRollout CRD (as the
// namespaced overlay installs Ripple): a canaried breaking change (a
// ResourceQuota lets no new pod start) of a ConfigMap shared by 20
// Deployments rolls none of them. A CanaryUnkept Warning on each
// Deployment and one on the ConfigMap name the CRD and what to do, every
// Deployment stays at revision 1, and explain shows each held. Then the
// CRD is applied: the change proceeds with its canary, d00 alone rolls,
// stalls at its progress deadline, and the change halts there; the other
// 19 are told so and stay at revision 1. The ConfigMap was told of the
// hold once.
func TestCanaryUnkeptHoldsUntilTheCRD(t *testing.T) {
	t.Parallel()
	fc := ownCluster(t, "a cluster without the ConfigRollout CRD")
	cs := kubernetes.NewForConfigOrDie(fc.Config)
	ns := newNamespace(t, cs)
	cm := createCanaryFleet(t, cs, ns, unkeptFleet, "5s")
	r := newRipple(t, ns)
	// newRipple points Ripple at the shared cluster, which has the CRD.
	r.Args[slices.Index(r.Args, "--kubeconfig="+kc.Kubeconfig)] = "--kubeconfig=" + fc.Kubeconfig
	r.Env = []string{"POD_NAMESPACE=" + ns, "RELOADER_NAMESPACE=" + ns} // its settings, for explain
	r.Start()
	waitFleetBaseline(t, cs, ns, "", unkeptFleet)

	blockNewPods(t, cs, ns, unkeptFleet)
	cm = updateConfig(t, cs, cm, "v2")
	changed := time.Now()
	bad := digest.ConfigMap(cm)
	const missing = "does not serve ConfigRollouts (the CRD configrollouts.ripple.dev)"
	held := map[string]string{}
	for i := range unkeptFleet {
		name := fmt.Sprintf("d%02d", i)
		held[name] = "1"
		// Told once its plan holds the change: each plan after it holds it too.
		if ev := waitEvent(t, cs, ns, "Deployment", name, reason.CanaryUnkept); ev.Type != "Warning" || !strings.Contains(ev.Note, missing) {
			t.Errorf("Deployment %s: %s %q, want a Warning naming the CRD", name, ev.Type, ev.Note)
		}
	}
	if ev := waitEvent(t, cs, ns, "ConfigMap", canaryConfig, reason.CanaryUnkept); !strings.Contains(ev.Note, missing) || !strings.Contains(ev.Note, "--canary-unkept=roll") {
		t.Errorf("the ConfigMap's Warning %q does not name the CRD and the flag", ev.Note)
	}
	if rolled := fleetWith(t, cs, ns, canaryEnv, bad); len(rolled) > 0 {
		t.Fatalf("without the CRD, Deployments %v rolled the canaried change", rolled)
	}
	checkFleetRevisions(t, cs, ns, held)
	t.Logf("every Deployment told of the hold %s after the change, none rolled", time.Since(changed).Round(100*time.Millisecond))
	out, err := runCommandOn(t, fc.Kubeconfig, ns, "explain", "deployment/d07", "-o", "json")
	var report explain.Report
	if err != nil || json.Unmarshal([]byte(out), &report) != nil || report.State != standing.Waiting ||
		report.Reason != reason.CanaryUnkept || !strings.Contains(report.Verdict, missing) {
		t.Errorf("ripple explain of a held Deployment (%v):\n%s\nwant it Waiting, CanaryUnkept, naming the CRD", err, out)
	}

	if err := fc.InstallCRDs(t.Context(), cluster.ConfigRolloutCRD); err != nil {
		t.Fatal(err)
	}
	served := time.Now()
	halt := waitEvent(t, cs, ns, "ConfigMap", canaryConfig, reason.RolloutHalted)
	t.Logf("with the CRD served, the canary's change halted %s later: %s", eventTime(halt).Sub(served).Round(100*time.Millisecond), halt.Note)
	if !strings.Contains(halt.Note, `Deployment "d00" stalled`) {
		t.Errorf("the halt %q does not name the canary d00", halt.Note)
	}
	for i := 1; i < unkeptFleet; i++ {
		waitEvent(t, cs, ns, "Deployment", fmt.Sprintf("d%02d", i), reason.RolloutHalted)
	}
	if rolled := fleetWith(t, cs, ns, canaryEnv, bad); !slices.Equal(rolled, []string{"d00"}) {
		t.Errorf("with the CRD, the Deployments that rolled the change are %v, want the canary d00 alone", rolled)
	}
	held["d00"] = "2"
	checkFleetRevisions(t, cs, ns, held)
	var told int32
	for _, e := range events(t.Context(), cs, ns, "ConfigMap", canaryConfig, reason.CanaryUnkept) {
		told += max(e.DeprecatedCount, 1) // the recorder counts a repeat in its Event
	}
	if told != 1 {
		t.Errorf("the ConfigMap was told of the hold %d times, want once", told)
	}
}
