package e2e

import (
	"context"
	"fmt"
	"testing"

	"k8s.io/client-go/kubernetes"

	"github.com/ripple-dev/ripple/hack/kit"
	"github.com/ripple-dev/ripple/internal/digest"
)

// --dry-run rolls nothing: 20 workloads that would roll each get a
// WouldReload Event, and no template changes and no ReplicaSet is made.
// Run again without --dry-run, Ripple rolls each of them exactly once,
// from the record dry-run kept.
func TestDryRunRollsNothingThenCatchesUp(t *testing.T) {
	t.Parallel()
	cs := kubernetes.NewForConfigOrDie(kc.Config)
	ns := newNamespace(t, cs)
	cm := createConfigMap(t, cs, ns, configName, "v1")
	var ws []workload
	for i := range 20 {
		w := workload{kit.Deployment, ns, fmt.Sprintf("web-%02d", i)}
		w.create(t, cs, spec{configMaps: []string{configName}, annotations: auto()})
		ws = append(ws, w)
	}
	before := waitRolledOut(t, cs, ws...)

	dry := startRipple(t, ns, "--dry-run")
	for _, w := range ws {
		waitBaseline(t, cs, w, digest.ConfigMap(cm))
	}
	sum := setConfigMapValue(t, cs, ns, configName, "v2")
	waitFor(t, "a WouldReload event on each of the 20 Deployments", func(ctx context.Context) (bool, error) {
		for _, w := range ws {
			notes, err := kit.EventNotes(ctx, cs, ns, kit.EventMatch{Kind: "Deployment", Name: w.name, Reason: "WouldReload", Type: "Normal"})
			if err != nil || len(notes) == 0 {
				return false, err
			}
		}
		return true, nil
	})
	before = expectNoRollout(t, cs, before)
	dry.Stop()

	startRipple(t, ns)
	expectRollouts(t, cs, oneEach(before, envIs(configEnv, sum)))
}
