package hostile

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/ripple-dev/ripple/hack/kit"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/strategy"
)

// reloadPolicy is the annotation a tenant writes to loosen its
// Namespace's policy.
const reloadPolicy = "ripple.dev/reload-policy"

var gatedRef = refs.Ref{Kind: refs.ConfigMap, Name: "gated"}

// loosened are the tenant's workloads in its governed namespace, each
// with its way of loosening the Namespace's manual policy.
var loosened = []string{"loosen-auto", "loosen-empty"}

// governed makes the tenant's second namespace, whose Namespace object
// the platform team annotates with the manual reload policy (Ripple runs
// with --namespace-defaults and --tighten-only, as docs/security.md
// advises for a shared cluster).
func governed(t *testing.T, admin kubernetes.Interface) string {
	t.Helper()
	ns := kit.NewNamespace(t, admin, "gated-", nil)
	n, err := admin.CoreV1().Namespaces().Get(t.Context(), ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Annotations = map[string]string{reloadPolicy: "manual"}
	if _, err := admin.CoreV1().Namespaces().Update(t.Context(), n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	return ns
}

// plantLoosened: a workload whose own annotation says auto, and one whose
// pod template's says "" (which, without tighten-only, overrides the
// Namespace's too), both reading the ConfigMap "gated".
func plantLoosened(t *testing.T, mallory kubernetes.Interface, ns string) {
	t.Helper()
	create(t, "a governed config", mallory.CoreV1().ConfigMaps(ns).Create,
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "gated"}, Data: map[string]string{"k": "v1"}})
	for _, name := range loosened {
		tpl := podTemplate(name)
		tpl.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "gated"}}}}
		ann := map[string]string{auto: "true"}
		if name == "loosen-auto" {
			ann[reloadPolicy] = "auto"
		} else {
			tpl.Annotations = map[string]string{reloadPolicy: ""}
		}
		create(t, "a loosening Deployment", mallory.AppsV1().Deployments(ns).Create, deployment(name, 0, ann, tpl))
	}
}

// checkLoosened: the tenant changes the config; each workload waits for
// an approval (ReloadPending) as its Namespace says, with a Warning naming
// the annotation that tried to loosen it, and does not roll.
func checkLoosened(t *testing.T, mallory, admin kubernetes.Interface, ns string) {
	t.Helper()
	ctx := t.Context()
	// A change before Ripple's first sight of a workload is its baseline.
	for _, name := range loosened {
		waitBaseline(t, admin, ns, name)
	}
	cm, err := mallory.CoreV1().ConfigMaps(ns).Get(ctx, "gated", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["k"] = "v2"
	if _, err := mallory.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range loosened {
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 15*time.Second, true, func(ctx context.Context) (bool, error) {
			pending, err := kit.EventNotes(ctx, admin, ns, kit.EventMatch{Name: name, Reason: "ReloadPending"})
			return len(pending) > 0, err
		})
		if err != nil {
			t.Errorf("%s: no ReloadPending within 15s of its config's change: its annotation loosened the Namespace's manual policy (%v)", name, err)
			continue
		}
		warned, err := kit.EventNotes(ctx, admin, ns, kit.EventMatch{Name: name, Reason: "InvalidAnnotation", Type: corev1.EventTypeWarning})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(strings.Join(warned, "\n"), `"`+reloadPolicy+`"`) {
			t.Errorf("%s: no Warning names %s: %q", name, reloadPolicy, warned)
		}
		d, err := admin.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// A Deployment's generation counts its annotations' writes too
		// (Ripple's records): a rollout is a reload on its pod template.
		if sum, rolled := (strategy.EnvVars{}).Applied(&d.Spec.Template, gatedRef); rolled {
			t.Errorf("%s rolled (its pod template shows %s) under its Namespace's manual policy", name, sum)
		}
	}
}
