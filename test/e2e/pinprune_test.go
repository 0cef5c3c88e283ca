package e2e

import (
	"context"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/ripple-dev/ripple/hack/kit"
	"github.com/ripple-dev/ripple/internal/pin"
)

// A pinned Deployment with revisionHistoryLimit 2 and six changes of its
// ConfigMap keeps at most 3 copies of it: each rollout's copies are
// handed to the ReplicaSet of its template once it completes, and the
// garbage collector deletes them with the ReplicaSets the Deployment
// controller prunes. The copy the running revision names is kept.
// Deleting the Deployment deletes its ReplicaSets, and so its copies.
func TestPinnedCopiesFollowTheRevisionHistory(t *testing.T) {
	t.Parallel()
	cs := kubernetes.NewForConfigOrDie(kc.Config)
	ns := newNamespace(t, cs)
	startRipple(t, ns, "--pinning")
	w := workload{kind: kit.Deployment, ns: ns, name: "web"}
	createConfigMap(t, cs, ns, configName, "v1")
	w.create(t, cs, spec{configMaps: []string{configName}, annotations: map[string]string{autoAnnotation: "true", "ripple.dev/pin": "true"}})
	if _, err := cs.AppsV1().Deployments(ns).Patch(t.Context(), "web", types.MergePatchType,
		[]byte(`{"spec":{"revisionHistoryLimit":2}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRolledOut(t, cs, w)
	waitBaselineRecord(t, func(ctx context.Context) (metav1.Object, error) {
		return cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
	})

	// The ReplicaSets do not count the rollouts here (the limit prunes
	// them): each change is waited for by its record, rolled out.
	var last string
	for i := 2; i <= 7; i++ {
		sum := setConfigMapValue(t, cs, ns, configName, fmt.Sprintf("v%d", i))
		last = fmt.Sprintf("configmap/%s=%s", configName, sum[:pin.DigestLen])
		waitFor(t, "the rollout pinning "+last, func(ctx context.Context) (bool, error) {
			s, err := w.observe(ctx, cs)
			return err == nil && s.complete && s.template.Annotations["ripple.dev/pinned"] == last, err
		})
	}
	copies := func(ctx context.Context) (map[string]string, error) {
		l, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{LabelSelector: pin.CopyLabel + "=true"})
		if err != nil {
			return nil, err
		}
		out := map[string]string{}
		for _, c := range l.Items {
			owner := "none"
			if len(c.OwnerReferences) == 1 {
				owner = c.OwnerReferences[0].Kind
			}
			out[c.Name] = owner
		}
		return out, nil
	}
	pins, err := pin.Parse(last)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]string
	waitFor(t, "at most 3 copies, each owned by a ReplicaSet", func(ctx context.Context) (bool, error) {
		got, err = copies(ctx)
		if err != nil || len(got) > 3 || got[pins[0].Name()] == "" {
			return false, err
		}
		for _, owner := range got {
			if owner != "ReplicaSet" {
				return false, nil
			}
		}
		return true, nil
	})
	t.Logf("copies after 6 changes with revisionHistoryLimit 2: %v", got)

	if err := cs.AppsV1().Deployments(ns).Delete(t.Context(), "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "no copy once the Deployment is deleted", func(ctx context.Context) (bool, error) {
		got, err = copies(ctx)
		return err == nil && len(got) == 0, err
	})
}
