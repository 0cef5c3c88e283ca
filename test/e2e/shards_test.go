package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/ripple-dev/ripple/internal/dependents"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/strategy"
)

// shardNamespaces is how many namespaces the shards test splits.
const shardNamespaces = 30

// shardedDeployment is a Deployment "app" using ConfigMap "cfg" in a
// namespace of its own; want is the digest its last change must apply.
type shardedDeployment struct {
	ns   string
	uid  types.UID
	want string
}

// Three Ripple shards split 30 namespaces: a change in every namespace
// rolls each Deployment exactly once (one new ReplicaSet), by the shard
// that owns the namespace alone. Then the count goes from 3 to 2 as a
// rolling update does it, the new shards started before the old ones stop,
// during a burst of one change per namespace made before, during and after
// the overlap: every change rolls once, none is lost.
func TestShards(t *testing.T) {
	t.Parallel()
	cs := kubernetes.NewForConfigOrDie(kc.Config)
	apps := make([]*shardedDeployment, shardNamespaces)
	names := make([]string, shardNamespaces)
	for i := range apps {
		apps[i] = newShardedDeployment(t, cs)
		names[i] = apps[i].ns
	}
	shards := func(count int) []*ripple {
		var out []*ripple
		for i := range count {
			r := newRipple(t, names[0], "--namespaces="+strings.Join(names[1:], ","),
				fmt.Sprintf("--shard-count=%d", count), fmt.Sprintf("--shard-index=%d", i))
			r.Start()
			out = append(out, r)
		}
		return out
	}
	old := shards(3)
	waitRolled(t, cs, apps, 1, "a baseline and one ReplicaSet")
	for _, a := range apps {
		a.want = setConfigMapValue(t, cs, a.ns, "cfg", "v2")
	}
	waitRolled(t, cs, apps, 2, "the change rolled once")
	for _, a := range apps {
		owner := dependents.ShardOf(a.ns, 3)
		// The owner's log line comes through a pipe, behind the rollout
		// seen above: wait for it before counting every shard's.
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		_, err := old[owner].Out.WaitLines(ctx, 1, "\treloaded\t", `"`+a.ns+`"`)
		cancel()
		if err != nil {
			t.Errorf("shard %d of 3: %v", owner, err)
		}
		for i, r := range old {
			n := len(r.Out.Lines("\treloaded\t", `"`+a.ns+`"`))
			if want := map[bool]int{true: 1, false: 0}[i == owner]; n != want {
				t.Errorf("shard %d of 3 logged %d reloads in %s (shard %d's), want %d", i, n, a.ns, owner, want)
			}
		}
	}

	third := len(apps) / 3
	for _, a := range apps[:third] {
		a.want = setConfigMapValue(t, cs, a.ns, "cfg", "v3")
	}
	shards(2)
	for _, a := range apps[third : 2*third] {
		a.want = setConfigMapValue(t, cs, a.ns, "cfg", "v3") // two owners may act here
	}
	for _, r := range old {
		r.Stop()
	}
	for _, a := range apps[2*third:] {
		a.want = setConfigMapValue(t, cs, a.ns, "cfg", "v3")
	}
	waitRolled(t, cs, apps, 3, "the burst rolled once per change")
}

// newShardedDeployment creates a namespace with ConfigMap "cfg" and a
// Deployment "app" (no pods: the Deployment controller still makes one
// ReplicaSet per template, which is what is counted) that reloads on it.
func newShardedDeployment(t *testing.T, cs kubernetes.Interface) *shardedDeployment {
	t.Helper()
	ns := newNamespace(t, cs)
	createConfigMap(t, cs, ns, "cfg", "v1")
	d, err := cs.AppsV1().Deployments(ns).Create(t.Context(), &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Annotations: auto()},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](0),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "app"}},
			Template: spec{configMaps: []string{"cfg"}}.template("app"),
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return &shardedDeployment{ns: ns, uid: d.UID}
}

// waitRolled waits until every Deployment has its baseline, carries its
// wanted digest (once a change was made) and has rss ReplicaSets; then, past the time a duplicate
// rollout would take to show, checks it still has exactly rss.
func waitRolled(t *testing.T, cs kubernetes.Interface, apps []*shardedDeployment, rss int, what string) {
	t.Helper()
	st := strategy.EnvVars{}
	waitFor(t, what, func(ctx context.Context) (bool, error) {
		for _, a := range apps {
			d, err := cs.AppsV1().Deployments(a.ns).Get(ctx, "app", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			got, _ := st.Applied(&d.Spec.Template, refs.Ref{Kind: refs.ConfigMap, Name: "cfg"})
			if d.Annotations["ripple.dev/applied"] == "" || (a.want != "" && got != a.want) || len(replicaSets(t, cs, a.ns, a.uid)) < rss {
				return false, nil
			}
		}
		return true, nil
	})
	time.Sleep(3 * time.Second) // a settle window and then some
	for _, a := range apps {
		if n := len(replicaSets(t, cs, a.ns, a.uid)); n != rss {
			t.Errorf("%s: %d ReplicaSets, want %d: one rollout per change", a.ns, n, rss)
		}
	}
}
