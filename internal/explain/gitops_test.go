package explain

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/ripple-dev/ripple/internal/metainfo"
	"github.com/ripple-dev/ripple/internal/plan"
	"github.com/ripple-dev/ripple/internal/strategy"
	"github.com/ripple-dev/ripple/internal/workload"
)

// The Argo CD settings are YAML an Application takes: one ignoreDifferences
// entry by the manager "ripple" per workload that reloads, none for one
// that reloads on nothing; an unknown tool is an error naming the flag.
func TestPrintGitOps(t *testing.T) {
	s := metainfo.Settings{Plan: plan.Settings{Strategy: strategy.EnvVars{}}}
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

// update rewrites the golden files of this package instead of comparing
// with them: go test ./internal/explain -run TestPrintGitOpsGolden -update.
var update = flag.Bool("update", false, "rewrite testdata/gitops from the current output")

// Under the evict and delete restart methods Ripple writes no pod-template
// field: the settings list only the records and the restart time for
// those workloads, and the strategy's env var for the one with the
// template method (docs/restart-methods.md).
func TestPrintGitOpsGolden(t *testing.T) {
	s := defaults(t)
	current := strings.Repeat("c", 40)
	kind := Kind{Kind: workload.WithRestarts(workload.Deployment)}
	var reports []Report
	for name, method := range map[string]string{"web": "", "worker": "evict", "cache": "delete"} {
		meta := map[string]string{"reloader.stakater.com/auto": "true"}
		if method != "" {
			meta[s.Plan.Keys.RestartMethod] = method
		}
		f := facts(t, meta, current, current, time.Now(), s)
		f.Kind = kind
		f.Object.SetName(name)
		r := Build(f)
		if (r.Restart == nil) != (method == "") {
			t.Fatalf("%s: restart %+v, want method %q", name, r.Restart, method)
		}
		reports = append(reports, r)
	}
	slices.SortFunc(reports, func(a, b Report) int { return strings.Compare(a.Workload.Name, b.Workload.Name) })
	for _, tool := range GitOpsTools {
		var b strings.Builder
		if err := PrintGitOps(&b, tool, reports, s); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join("testdata", "gitops", tool+".golden")
		if *update {
			if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(filepath.Clean(path))
		if err != nil {
			t.Fatalf("%v (run with -update to write it)", err)
		}
		if b.String() != string(want) {
			t.Errorf("output differs from %s (rerun with -update and review the diff); got:\n%s", path, b.String())
		}
	}
}
