package chart

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ripple-dev/ripple/hack/helmchart"
)

// The query gate's values in the tests: a condition with a space and a
// quote in it, which must reach Ripple as one argument.
const (
	queryGateURL       = "https://prometheus.monitoring.svc:9091"
	queryGateCondition = `sum(rate(http_requests_total{code=~"5..", pod=~"$pods"}[1m])) > 0.5`
	queryGateSecret    = "prometheus-token"
	queryGateDir       = "/etc/ripple/prometheus"
)

func queryGateValues() map[string]any {
	return map[string]any{"ripple": map[string]any{
		"canaryGates": []any{"pods", "query"},
		"prometheus": map[string]any{"url": queryGateURL, "query": queryGateCondition, "interval": "15s",
			"inconclusive": "pass", "secret": queryGateSecret},
	}}
}

// queryGateFlags are the rendered arguments of the query gate.
func queryGateFlags(args []string) []string {
	var out []string
	for _, a := range args {
		for _, f := range []string{"--prometheus-", "--canary-query"} {
			if strings.HasPrefix(a, f) {
				out = append(out, a)
			}
		}
	}
	return out
}

// TestQueryGateValues: with ripple.prometheus set, the Deployment passes
// each value as its flag and mounts the Secret read-only where
// --prometheus-credentials-dir points; with none set, neither flag nor
// volume; and no rule reads Secrets for it (the kubelet mounts it).
func TestQueryGateValues(t *testing.T) {
	t.Run("set", func(t *testing.T) {
		_, objs := render(t, helmchart.Release{Name: relName, Namespace: relNS, Values: []map[string]any{queryGateValues()}})
		d, c := rippleDeployment(t, objs)
		want := []string{"--prometheus-url=" + queryGateURL, "--prometheus-credentials-dir=" + queryGateDir,
			"--canary-query=" + queryGateCondition, "--canary-query-interval=15s", "--canary-query-inconclusive=pass"}
		if got := queryGateFlags(c.Args); !slices.Equal(got, want) {
			t.Errorf("the query gate's arguments %q, want %q", got, want)
		}
		vi := slices.IndexFunc(d.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool {
			return v.Secret != nil && v.Secret.SecretName == queryGateSecret
		})
		if vi < 0 {
			t.Fatalf("no volume of the Secret %s among %+v", queryGateSecret, d.Spec.Template.Spec.Volumes)
		}
		name := d.Spec.Template.Spec.Volumes[vi].Name
		if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool {
			return m.Name == name && m.MountPath == queryGateDir && m.ReadOnly
		}) {
			t.Errorf("volume %s is not mounted read-only at %s: %+v", name, queryGateDir, c.VolumeMounts)
		}
		_, plain := render(t, helmchart.Release{Name: relName, Namespace: relNS, Values: []map[string]any{{"ripple": map[string]any{"canaryGates": []any{"pods"}}}}})
		if a, b := describeRules(roles(objs)), describeRules(roles(plain)); !slices.Equal(a, b) {
			t.Errorf("the query gate changed the RBAC:\n%q\nwithout it:\n%q", a, b)
		}
	})
	t.Run("not set", func(t *testing.T) {
		_, objs := render(t, helmchart.Release{Name: relName, Namespace: relNS})
		d, c := rippleDeployment(t, objs)
		if got := queryGateFlags(c.Args); len(got) > 0 {
			t.Errorf("the chart's defaults pass %q", got)
		}
		for _, v := range d.Spec.Template.Spec.Volumes {
			if v.Secret != nil {
				t.Errorf("the chart's defaults mount the Secret %s", v.Secret.SecretName)
			}
		}
	})
}

// describeRules lists every rule of roles, sorted.
func describeRules(roles []*unstructured.Unstructured) []string {
	var out []string
	for _, role := range roles {
		rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
		for _, r := range rules {
			out = append(out, role.GetKind()+" "+describeRule(r))
		}
	}
	slices.Sort(out)
	return out
}
