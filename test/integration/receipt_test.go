package integration

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/api/v1alpha1"
	"github.com/ripple-dev/ripple/hack/kit"
	"github.com/ripple-dev/ripple/internal/reason"
	"github.com/ripple-dev/ripple/internal/refs"
)

// The receipt on the API server: two changes of a config made by a Ripple
// with its documented rules leave the newer change alone labelled
// ripple.dev/latest, each labelled with the config's resourceVersion it
// was seen at; without patch on configrollouts (the one verb the label's
// move needs) Ripple logs the forbidden move and the older change keeps
// the label. This is the proof of the verb: the chart's RBAC test removes
// whole rules.
func TestLatestLabelNeedsPatch(t *testing.T) {
	t.Parallel()
	for _, withPatch := range []bool{true, false} {
		t.Run(map[bool]string{true: "with patch", false: "without patch"}[withPatch], func(t *testing.T) {
			t.Parallel()
			rules := slices.Clone(rippleRules)
			if !withPatch {
				for i, r := range rules {
					if slices.Contains(r.Resources, "configrollouts") {
						rules[i] = rbacv1.PolicyRule{APIGroups: r.APIGroups, Resources: r.Resources,
							Verbs: slices.DeleteFunc(slices.Clone(r.Verbs), func(v string) bool { return v == "patch" })}
					}
				}
			}
			latestLabelCase(t, rules, withPatch)
		})
	}
}

func latestLabelCase(t *testing.T, rules []rbacv1.PolicyRule, withPatch bool) {
	e := newEnv(t)
	e.grantRules(t, e.ns, e.ns, "ripple", rules)
	e.rc = api.ServiceAccountConfig(e.ns, "ripple")
	e.environ = map[string]string{"POD_NAMESPACE": e.ns}
	waitAuthorized(t, e, e.ns)
	e.run(t, "--namespaces="+e.ns)
	e.waitWatching(t, "ConfigRollout")

	cm := refs.Ref{Kind: refs.ConfigMap, Name: "app"}
	e.newConfig(t, cm)
	d := e.newWorkload(t, kit.Deployment, "web", ann(autoKey, "true"), envFrom(cm.Kind, cm.Name))
	e.waitFor(t, d, "the baseline record", hasBaseline)
	e.waitApplied(t, kit.Deployment, d, cm, e.setConfig(t, cm, "v2"))
	first := e.configVersion(t, cm)
	e.changeAt(t, first)
	e.waitApplied(t, kit.Deployment, d, cm, e.setConfig(t, cm, "v3"))
	second := e.configVersion(t, cm)
	newest := e.changeAt(t, second)
	if newest.Labels[v1alpha1.LabelLatest] != "true" {
		t.Errorf("the newest change %s is not labelled latest: %v", newest.Name, newest.Labels)
	}
	if !withPatch {
		e.waitLog(t, 10*time.Second, "moving the latest label off ConfigRollout", "forbidden")
		return
	}
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		return e.changeAt(t, first).Labels[v1alpha1.LabelLatest] == "", nil
	})
	if err != nil {
		t.Errorf("the older change kept the latest label: %v", err)
	}
	for line := range strings.Lines(e.logs.String()) {
		if strings.Contains(line, "forbidden") && strings.Contains(line, "configrollouts") {
			t.Errorf("ripple was forbidden a ConfigRollout write with its documented rules: %s", line)
		}
	}
}

func (e *env) configVersion(t *testing.T, r refs.Ref) string {
	t.Helper()
	cfg := configObject(e.ns, r, nil, "")
	if err := e.c.Get(t.Context(), client.ObjectKeyFromObject(cfg), cfg); err != nil {
		t.Fatal(err)
	}
	return cfg.GetResourceVersion()
}

// changeAt waits for the change of the config app seen at resourceVersion
// rv, found by its labels as a pipeline finds it.
func (e *env) changeAt(t *testing.T, rv string) v1alpha1.ConfigRollout {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(api.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	var cr v1alpha1.ConfigRollout
	err = wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		var l v1alpha1.ConfigRolloutList
		if err := c.List(ctx, &l, client.InNamespace(e.ns), client.MatchingLabels{v1alpha1.LabelConfigName: "app", v1alpha1.LabelConfigVersion: rv}); err != nil {
			return false, err
		}
		if len(l.Items) == 1 {
			cr = l.Items[0]
		}
		return len(l.Items) == 1, nil
	})
	if err != nil {
		t.Fatalf("no ConfigRollout of the config at resourceVersion %s: %v", rv, err)
	}
	return cr
}

// A Ripple that may list and watch ConfigRollouts but not create them (a
// Role that lost the verb, a namespace's quota of them) cannot keep a
// canaried change: neither workload rolls, and each is told why with a
// CanaryUnkept Warning naming the API server's refusal, rather than
// waiting in silence for a canary that will never be chosen.
func TestCanaryUnkeptWithoutCreate(t *testing.T) {
	t.Parallel()
	rules := slices.Clone(rippleRules)
	for i, r := range rules {
		if slices.Contains(r.Resources, "configrollouts") {
			rules[i] = rbacv1.PolicyRule{APIGroups: r.APIGroups, Resources: r.Resources,
				Verbs: slices.DeleteFunc(slices.Clone(r.Verbs), func(v string) bool { return v == "create" })}
		}
	}
	e := newEnv(t)
	e.grantRules(t, e.ns, e.ns, "ripple", rules)
	e.rc = api.ServiceAccountConfig(e.ns, "ripple")
	e.environ = map[string]string{"POD_NAMESPACE": e.ns}
	waitAuthorized(t, e, e.ns)
	e.run(t, "--namespaces="+e.ns, "--canary=1")
	e.waitWatching(t, "ConfigRollout")

	cm := refs.Ref{Kind: refs.ConfigMap, Name: "app"}
	e.newConfig(t, cm)
	var writes []func() int
	for _, name := range []string{"web", "api"} {
		d := e.newWorkload(t, kit.Deployment, name, ann(autoKey, "true"), envFrom(cm.Kind, cm.Name))
		e.waitFor(t, d, "the baseline record", hasBaseline)
		writes = append(writes, e.templateChanges(t, d))
	}
	e.setConfig(t, cm, "v2")
	for _, name := range []string{"web", "api"} {
		notes := e.waitEvent(t, name, corev1.EventTypeWarning, string(reason.CanaryUnkept))
		if !strings.Contains(notes[0], "refused Ripple a ConfigRollout") || !strings.Contains(notes[0], `cannot create resource "configrollouts"`) {
			t.Errorf("%s's CanaryUnkept Warning %q: want the API server's refusal named", name, notes[0])
		}
	}
	for i, stop := range writes {
		if n := stop(); n != 0 {
			t.Errorf("workload %d's template was written %d times: a change whose canary cannot be kept must not roll", i, n)
		}
	}
}
