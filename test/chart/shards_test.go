package chart

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"

	"github.com/ripple-dev/ripple/hack/helmchart"
	"github.com/ripple-dev/ripple/hack/kit"
	"github.com/ripple-dev/ripple/internal/config"
	"github.com/ripple-dev/ripple/test/inproc"
)

// ripple.shards renders one Deployment per shard, each parsed by Ripple as
// its own shard of the count, with disjoint selectors, HA inside it and a
// Lease the leader-election Role grants, shard 0 alone publishing the
// meta-info; the API server accepts them all.
func TestShardsRender(t *testing.T) {
	values := map[string]any{"ripple": map[string]any{"shards": 3}, "reloader": map[string]any{"deployment": map[string]any{"replicas": 2}}}
	_, objs := render(t, helmchart.Release{Name: relName, Namespace: relNS, Values: []map[string]any{values}})
	deps := find(objs, "Deployment")
	if len(deps) != 3 {
		t.Fatalf("rendered %d Deployments, want 3", len(deps))
	}
	leases := leaseNames(t, objs)
	for i, u := range deps {
		d := &appsv1.Deployment{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, d); err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("%s-shard-%d", relName, i); d.Name != want {
			t.Errorf("Deployment %d is %s, want %s", i, d.Name, want)
		}
		if got := d.Spec.Selector.MatchLabels["ripple.dev/shard"]; got != fmt.Sprint(i) {
			t.Errorf("%s selects shard %q, want %d: the shards' selectors must not overlap", d.Name, got, i)
		}
		c := d.Spec.Template.Spec.Containers[0]
		_, cfg, err := inproc.ParseFlags(c.Args, envLookup(objs, d, c))
		if err != nil {
			t.Fatalf("%s: ripple rejects %q: %v", d.Name, c.Args, err)
		}
		if cfg.Shard != (config.Shard{Count: 3, Index: i}) || !cfg.LeaderElection {
			t.Errorf("%s: shard %+v, leader election %v; want shard %d of 3 with HA", d.Name, cfg.Shard, cfg.LeaderElection, i)
		}
		if !slices.Contains(leases, cfg.LeaderElectionID) {
			t.Errorf("%s: Lease %s is not among the Role's %v", d.Name, cfg.LeaderElectionID, leases)
		}
		// One reloader-meta-info ConfigMap (on by default, as in
		// Reloader's chart): shard 0 publishes it, the others do not.
		if published := cfg.MetaInfo.Namespace != ""; published != (i == 0) {
			t.Errorf("%s: publishes reloader-meta-info: %v, want only shard 0 to", d.Name, published)
		}
	}
	// A dry run needs the release's namespace, which no other test may
	// have made yet.
	ensureNamespace(t, kubernetes.NewForConfigOrDie(api.Config), relNS, nil)
	a := newApplier(t, api.Config)
	for _, o := range objs {
		if err := a.apply(t.Context(), o, true); err != nil {
			t.Errorf("the API server rejects the chart's object: %v", err)
		}
	}
}

// leaseNames returns the Lease names the leader-election Role grants.
func leaseNames(t *testing.T, objs []*unstructured.Unstructured) []string {
	t.Helper()
	for _, u := range find(objs, "Role") {
		if !strings.HasSuffix(u.GetName(), "-leader-election") {
			continue
		}
		role := &rbacv1.Role{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, role); err != nil {
			t.Fatal(err)
		}
		for _, r := range role.Rules {
			if len(r.ResourceNames) > 0 {
				return r.ResourceNames
			}
		}
	}
	t.Fatal("no leader-election Role grants a Lease by name")
	return nil
}

// Values that cannot work with shards are refused with what to change.
func TestShardsRejects(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values map[string]any
		want   string
	}{
		{"no shards", map[string]any{"ripple": map[string]any{"shards": 0}}, "at '/ripple/shards'"},
		{"with a VerticalPodAutoscaler", map[string]any{"ripple": map[string]any{"shards": 2}, "reloader": map[string]any{"verticalPodAutoscaler": map[string]any{"enabled": true}}}, "ripple.shards > 1 with reloader.verticalPodAutoscaler.enabled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := helmchart.Template(helmchart.Release{Name: relName, Namespace: relNS, Values: []map[string]any{tc.values}})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// Changing ripple.shards is a helm upgrade: from one Deployment to three
// shards and then two, each upgrade leaves exactly the Deployments of the
// new count, and the notes say how the namespaces are split.
func TestShardsUpgrade(t *testing.T) {
	t.Parallel()
	chart, err := helmchart.Dir()
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(api.Config)
	ns := kit.NewNamespace(t, cs, "shards-", nil)
	env := []string{"KUBECONFIG=" + api.Kubeconfig}
	for _, n := range []int{1, 3, 2} {
		verb := map[bool]string{true: "install", false: "upgrade"}[n == 1]
		out, err := helmchart.HelmEnv(env, onShared([]string{verb, "r", chart, "--namespace", ns, "--set", fmt.Sprintf("ripple.shards=%d", n)})...)
		if err != nil {
			t.Fatal(err)
		}
		if notes := fmt.Sprintf("Shards: %d Deployments", n); (n > 1) != strings.Contains(string(out), notes) {
			t.Errorf("%s to %d shards: notes %q:\n%s", verb, n, notes, out)
		}
		want := []string{"r-reloader"}
		if n > 1 {
			want = nil
			for i := range n {
				want = append(want, fmt.Sprintf("r-reloader-shard-%d", i))
			}
		}
		list, err := cs.AppsV1().Deployments(ns).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, d := range list.Items {
			got = append(got, d.Name)
		}
		if slices.Sort(got); !slices.Equal(got, want) {
			t.Errorf("%s to %d shards: Deployments %v, want %v", verb, n, got, want)
		}
	}
	if _, err := helmchart.HelmEnv(env, "uninstall", "r", "--namespace", ns); err != nil {
		t.Error(err)
	}
}
