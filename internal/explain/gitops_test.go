package explain

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/strategy"
	"github.com/ripple-dev/ripple/internal/workload"
)

// The Argo CD settings are YAML an Application takes: one ignoreDifferences
// entry by the manager "ripple" per workload that reloads, none for one
// that reloads on nothing; an unknown tool is an error naming the flag.
func TestPrintGitOps(t *testing.T) {
	s := Settings{Plan: plan.Settings{Strategy: strategy.EnvVars{}}}
	reports := []Report{
		{Workload: workload.Ref{Kind: "StatefulSet", Namespace: "edge", Name: "proxy"}, Sources: []Source{{Kind: "ConfigMap", Name: "proxy", Reload: true}}},
		{Workload: workload.Ref{Kind: "Deployment", Namespace: "shop", Name: "idle"}, Sources: []Source{{Kind: "ConfigMap", Name: "x"}}},
	}
	var b strings.Builder
	if err := PrintGitOps(&b, GitOpsArgoCD, reports, s); err != nil {
		t.Fatal(err)
	}
	var app struct {
		Spec struct {
			IgnoreDifferences []struct {
				Group, Kind, Namespace, Name string
				ManagedFieldsManagers        []string `json:"managedFieldsManagers"`
			} `json:"ignoreDifferences"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal([]byte(b.String()), &app); err != nil {
		t.Fatalf("not YAML: %v\n%s", err, b.String())
	}
	ids := app.Spec.IgnoreDifferences
	if len(ids) != 1 || ids[0].Group != "apps" || ids[0].Kind != "StatefulSet" || ids[0].Name != "proxy" ||
		len(ids[0].ManagedFieldsManagers) != 1 || ids[0].ManagedFieldsManagers[0] != "ripple" {
		t.Errorf("ignoreDifferences %+v, want the StatefulSet by the manager ripple", ids)
	}
	if !strings.Contains(b.String(), "env STAKATER_PROXY_CONFIGMAP") {
		t.Errorf("what Ripple writes is not named:\n%s", b.String())
	}
	if err := PrintGitOps(&b, "jenkins", reports, s); err == nil || !strings.Contains(err.Error(), "--gitops") {
		t.Errorf("unknown tool: %v", err)
	}
}
