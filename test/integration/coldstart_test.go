package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/hack/kit"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/strategy"
)

// On a first start every workload's baseline is written by its own
// reconcile, queued at low priority. A change that arrives meanwhile is
// not queued behind them, and a workload whose baseline is not written yet
// still rolls for it: the data before the change counts as applied, not
// the changed data as its baseline. One worker and a backlog of 400
// workloads keep the target's baseline unwritten when the change comes.
// The change is made as soon as the caches have synced, with the default
// settle window: the controllers may not have started yet, and then see
// the changed ConfigMap in their initial list.
func TestFirstReloadDoesNotWaitForBaselines(t *testing.T) {
	e := newEnv(t)
	const backlog = 400
	shared, mine := refs.Ref{Kind: refs.ConfigMap, Name: "shared"}, refs.Ref{Kind: refs.ConfigMap, Name: "mine"}
	e.newConfig(t, shared)
	e.newConfig(t, mine)
	for i := range backlog {
		e.newWorkload(t, kit.Deployment, fmt.Sprintf("app-%03d", i), ann(autoKey, "true"), envFrom(refs.ConfigMap, shared.Name))
	}
	target := e.newWorkload(t, kit.Deployment, "zz-target", ann(autoKey, "true"), envFrom(refs.ConfigMap, mine.Name))

	// Creation times have one-second granularity: a change in the
	// target's second of creation may have been its first data.
	time.Sleep(time.Until(target.GetCreationTimestamp().Add(time.Second)))
	e.run(t, "--max-concurrent-reconciles=1", "--settle-window=1s")
	if err := e.c.Get(t.Context(), client.ObjectKeyFromObject(target), target); err != nil {
		t.Fatal(err)
	}
	if hasBaseline(target) {
		t.Fatal("the target's baseline was written before the change: the backlog is too short to test anything")
	}
	sum := e.setConfig(t, mine, "v2")
	e.waitApplied(t, kit.Deployment, target, mine, sum)

	var list appsv1.DeploymentList
	if err := e.c.List(t.Context(), &list, client.InNamespace(e.ns)); err != nil {
		t.Fatal(err)
	}
	waiting := 0
	for i := range list.Items {
		if !hasBaseline(&list.Items[i]) && list.Items[i].Name != target.GetName() {
			waiting++
		}
	}
	if waiting == 0 {
		t.Error("the change was applied only after every baseline: it waited behind the start-up backlog")
	}
	t.Logf("the change rolled the target with %d of %d baselines still to write", waiting, backlog)

	// The backlog completes, and rolls nothing: each records the shared
	// config's first data as its baseline.
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := e.c.List(ctx, &list, client.InNamespace(e.ns)); err != nil {
			return false, err
		}
		for i := range list.Items {
			if !hasBaseline(&list.Items[i]) && list.Items[i].Name != target.GetName() {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("the baselines were not all written: %v", err)
	}
	for i := range list.Items {
		d := &list.Items[i]
		if d.Name == target.GetName() {
			continue
		}
		if _, rolled := (strategy.EnvVars{}).Applied(&d.Spec.Template, shared); rolled {
			t.Errorf("%s rolled at start", d.Name)
		}
	}
}
