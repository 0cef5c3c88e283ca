package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/hack/kit"
	"github.com/ripple-dev/ripple/internal/dependents"
	"github.com/ripple-dev/ripple/internal/refs"
)

// shardedApp is one namespace of the shards test: a StatefulSet (whose
// generation counts template changes only, so rollouts) using a ConfigMap.
type shardedApp struct {
	e          *env
	w          client.Object
	generation int64
	sum        string // the digest of the last change to apply
}

var shardCfg = refs.Ref{Kind: refs.ConfigMap, Name: "cfg"}

// Three shards split the namespaces: a change in every namespace rolls
// each workload exactly once, by the shard that owns the namespace alone.
// Then the count goes from 3 to 2 as a rolling update does it (the new
// shards start, the old ones stop) during a burst of one change per
// namespace, made before, during and after the overlap: each is applied
// once. (Global mode: not parallel with other tests.)
func TestShards(t *testing.T) {
	label := "ripple-shards-" + rand.String(6)
	apps := shardedApps(t, label)
	logs := map[shardKey]*kit.LogBuffer{}
	shards := func(count int) []func() {
		var stops []func()
		for i := range count {
			stops = append(stops, apps[0].e.run(t, "--namespace-selector="+label+"=yes",
				fmt.Sprintf("--shard-count=%d", count), fmt.Sprintf("--shard-index=%d", i)))
			logs[shardKey{count, i}] = apps[0].e.logs
			lease := fmt.Sprintf("stakater-reloader-lock-shard-%d-of-%d", i, count)
			if len(apps[0].e.logs.Lines("acting only in this shard's namespaces", lease)) != 1 {
				t.Errorf("shard %d of %d did not log its shard and Lease %s at start", i, count, lease)
			}
		}
		return stops
	}
	old := shards(3)
	for _, a := range apps {
		a.e.waitFor(t, a.w, "the baseline record", hasBaseline)
		a.generation = a.w.GetGeneration()
	}
	for _, a := range apps {
		a.sum = a.e.setConfig(t, shardCfg, "v2")
	}
	expectOneRolloutEach(t, apps)
	for _, a := range apps {
		owner := dependents.ShardOf(a.e.ns, 3)
		// The owner's log line comes behind the rollout seen above: wait
		// for it before counting every shard's.
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		_, err := logs[shardKey{3, owner}].WaitLines(ctx, 1, "\treloaded\t", `"`+a.e.ns+`"`)
		cancel()
		if err != nil {
			t.Errorf("shard %d of 3: %v", owner, err)
		}
		for i := range 3 {
			want := 0
			if i == owner {
				want = 1
			}
			if got := len(logs[shardKey{3, i}].Lines("\treloaded\t", `"`+a.e.ns+`"`)); got != want {
				t.Errorf("shard %d of 3 logged %d reloads in namespace %s (shard %d's), want %d", i, got, a.e.ns, owner, want)
			}
		}
	}

	third := len(apps) / 3
	for _, a := range apps[:third] {
		a.sum = a.e.setConfig(t, shardCfg, "v3")
	}
	shards(2)
	for _, a := range apps[third : 2*third] {
		a.sum = a.e.setConfig(t, shardCfg, "v3") // two owners may act here
	}
	for _, stop := range old {
		stop()
	}
	for _, a := range apps[2*third:] {
		a.sum = a.e.setConfig(t, shardCfg, "v3")
	}
	expectOneRolloutEach(t, apps)
	moved := 0
	for _, a := range apps {
		if dependents.ShardOf(a.e.ns, 3) != dependents.ShardOf(a.e.ns, 2) {
			moved++
		}
	}
	t.Logf("%d of %d namespaces changed shard index", moved, len(apps))
}

type shardKey struct{ count, index int }

// shardedApps creates labelled namespaces, each with a ConfigMap and a
// StatefulSet that reloads on it, until every shard of 3 and of 2 owns at
// least two of them.
func shardedApps(t *testing.T, label string) []*shardedApp {
	t.Helper()
	base := newEnv(t) // its namespace is Ripple's own
	owned := map[shardKey]int{}
	var apps []*shardedApp
	for len(apps) < 30 && (len(apps) < 9 || len(owned) < 5 || minOf(owned) < 2) {
		e := &env{ns: kit.NewNamespace(t, base.cs, "it-shard-", map[string]string{label: "yes"}), c: base.c, cs: base.cs, rc: base.rc}
		e.newConfig(t, shardCfg)
		w := e.newWorkload(t, kit.StatefulSet, "app", ann(autoKey, "true"), envFrom(shardCfg.Kind, shardCfg.Name))
		apps = append(apps, &shardedApp{e: e, w: w})
		owned[shardKey{3, dependents.ShardOf(e.ns, 3)}]++
		owned[shardKey{2, dependents.ShardOf(e.ns, 2)}]++
	}
	return apps
}

func minOf(m map[shardKey]int) int {
	low := -1
	for _, n := range m {
		if low < 0 || n < low {
			low = n
		}
	}
	return low
}

// expectOneRolloutEach waits until each workload carries its last change,
// then, past the negative window, checks that its template changed exactly
// once since its generation was noted, and notes the new one.
func expectOneRolloutEach(t *testing.T, apps []*shardedApp) {
	t.Helper()
	for _, a := range apps {
		a.e.waitApplied(t, kit.StatefulSet, a.w, shardCfg, a.sum)
	}
	time.Sleep(negativeWindow) // a late second rollout would show
	for _, a := range apps {
		if err := a.e.c.Get(t.Context(), client.ObjectKeyFromObject(a.w), a.w); err != nil {
			t.Fatal(err)
		}
		if got := a.w.GetGeneration() - a.generation; got != 1 {
			t.Errorf("namespace %s: %d rollouts for one change, want 1", a.e.ns, got)
		}
		a.generation = a.w.GetGeneration()
	}
}
