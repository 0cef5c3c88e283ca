package integration

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/api/v1alpha1"
	"github.com/ripple-dev/ripple/hack/cluster"
	"github.com/ripple-dev/ripple/hack/kit"
	"github.com/ripple-dev/ripple/internal/refs"
)

// Ripple run against an API server that does not serve ConfigRollouts
// says so once, naming the resource, and reloads as before; once the CRD
// is installed it starts the change controller, and a change gets its
// ConfigRollout, labelled, owned by its config, counting its consumer.
// The change before it may get one too: without a controller-manager its
// rollout never completes, so it is still in flight when the controller
// starts, and whether the controller looks before the next write is a
// race; the test waits for the one its own write made.
func TestConfigRolloutsFollowTheCRD(t *testing.T) {
	t.Parallel()
	own, e := ownAPI(t)
	e.run(t)
	missing := []string{"enabled, but the API server does not serve it", `"kind": "ConfigRollout"`, `"flag": "--config-rollouts"`}
	e.waitLog(t, 5*time.Second, missing...)

	cm := refs.Ref{Kind: refs.ConfigMap, Name: "app"}
	e.newConfig(t, cm)
	d := e.newWorkload(t, kit.Deployment, "web", ann(autoKey, "true"), envFrom(cm.Kind, cm.Name))
	e.waitFor(t, d, "the baseline record", hasBaseline)
	e.waitApplied(t, kit.Deployment, d, cm, e.setConfig(t, cm, "v2"))
	if n := len(e.logs.Lines(missing...)); n != 1 {
		t.Errorf("the missing ConfigRollout API was logged %d times, want once", n)
	}

	if err := own.InstallCRDs(t.Context(), cluster.ConfigRolloutCRD); err != nil {
		t.Fatal(err)
	}
	e.waitWatching(t, "ConfigRollout")
	e.waitApplied(t, kit.Deployment, d, cm, e.setConfig(t, cm, "v3"))
	written := configObject(e.ns, cm, nil, "")
	if err := e.c.Get(t.Context(), client.ObjectKeyFromObject(written), written); err != nil {
		t.Fatal(err)
	}

	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(own.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	var cr v1alpha1.ConfigRollout
	err = wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		var l v1alpha1.ConfigRolloutList
		if err := c.List(ctx, &l, client.InNamespace(e.ns), client.MatchingLabels{
			v1alpha1.LabelConfigName: "app", v1alpha1.LabelConfigKind: "configmap", v1alpha1.LabelLatest: "true",
		}); err != nil {
			return false, err
		}
		if len(l.Items) == 1 && l.Items[0].Spec.Config.ResourceVersion == written.GetResourceVersion() && l.Items[0].Status.Counts.Managed == 1 {
			cr = l.Items[0]
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no latest ConfigRollout of the change at resourceVersion %s counting the Deployment: %v", written.GetResourceVersion(), err)
	}
	// Without a controller-manager the Deployment's rollout never
	// completes: the change stays in flight.
	if cr.Status.Phase != v1alpha1.PhaseRolling || len(cr.OwnerReferences) != 1 || cr.OwnerReferences[0].Name != "app" || cr.Spec.Revision == "" {
		t.Errorf("ConfigRollout %s: phase %s, owners %+v, revision %q", cr.Name, cr.Status.Phase, cr.OwnerReferences, cr.Spec.Revision)
	}
}

// ownAPI starts an API server of the test's own, with none of the CRDs
// the shared one serves, and an env of a namespace of it.
func ownAPI(t *testing.T) (*cluster.API, *env) {
	t.Helper()
	own, err := cluster.StartAPI(cluster.APIOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := own.Stop(); err != nil {
			t.Errorf("stopping the test's own API server: %v", err)
		}
	})
	cs := kubernetes.NewForConfigOrDie(own.Config)
	e := &env{ns: kit.NewNamespace(t, cs, "it-", nil), cs: cs, rc: own.Config}
	if e.c, err = client.New(own.Config, client.Options{}); err != nil {
		t.Fatal(err)
	}
	return own, e
}
