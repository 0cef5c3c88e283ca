package explain

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/ripple-dev/ripple/internal/annotation"
	"github.com/ripple-dev/ripple/internal/metainfo"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/strategy"
	"github.com/ripple-dev/ripple/internal/workload"
)

// The GitOps tools `explain --gitops` writes settings for.
const (
	GitOpsArgoCD = "argocd"
	GitOpsFlux   = "flux"
)

// GitOpsTools are the accepted --gitops values.
var GitOpsTools = []string{GitOpsArgoCD, GitOpsFlux}

// groups are the API groups of the workload kinds, for Argo CD's
// ignoreDifferences.
var groups = map[string]string{
	"Deployment": "apps", "StatefulSet": "apps", "DaemonSet": "apps",
	"CronJob": "batch", "Job": "batch",
	"Rollout": "argoproj.io", "DeploymentConfig": "apps.openshift.io",
}

// Writes lists the fields Ripple writes on the workload of r, under the
// field manager "ripple": the strategy's value for each source that
// reloads it, and its metadata records. Under the evict and delete restart
// methods a reload writes no pod-template field and no pause: only the
// records and the restart time (workload/restart.go).
func Writes(r Report, s metainfo.Settings) []string {
	keys := s.Plan.Keys
	records := "annotations " + keys.Applied + ", " + keys.AppliedAlias
	if r.Restart != nil {
		return []string{records, "while a restart runs (restart method " + r.Restart.Method + "): annotation " +
			keys.RestartedAt, "no pod-template field"}
	}
	var out []string
	annotations := s.Plan.Strategy != nil && s.Plan.Strategy.Name() == (strategy.Annotations{}).Name()
	for _, src := range r.Sources {
		if src.Reload && !annotations {
			out = append(out, "env "+strategy.EnvVarName(refs.Ref{Kind: refs.Kind(src.Kind), Name: src.Name}))
		}
	}
	if annotations {
		out = append(out, "pod-template annotation "+annotation.LastReloadedFrom)
	}
	out = slices.Compact(out)
	out = append(out, records)
	if r.Workload.Kind == "Deployment" {
		out = append(out, "with "+keys.PausePeriod+": spec.paused, annotation "+keys.PausedAt)
	}
	return out
}

// PrintGitOps writes the settings tool needs for the workloads of reports
// (those that reload on something), ready to paste, with what Ripple
// writes on each as comments.
func PrintGitOps(w io.Writer, tool string, reports []Report, s metainfo.Settings) error {
	var b strings.Builder
	var ws []workload.Ref
	fmt.Fprintf(&b, "# %s settings for the workloads Ripple reloads (ripple explain --gitops %s).\n", toolName(tool), tool)
	fmt.Fprintf(&b, "# Ripple writes each reload by server-side apply under the field manager %q:\n", workload.FieldManager)
	for _, r := range reports {
		if !slices.ContainsFunc(r.Sources, func(s Source) bool { return s.Reload }) {
			continue
		}
		ws = append(ws, r.Workload)
		fmt.Fprintf(&b, "#   %s %s/%s: %s\n", r.Workload.Kind, r.Workload.Namespace, r.Workload.Name, strings.Join(Writes(r, s), "; "))
	}
	if len(ws) == 0 {
		b.WriteString("#   (no workload in scope reloads on anything)\n")
	}
	switch tool {
	case GitOpsArgoCD:
		argoCD(&b, ws)
	case GitOpsFlux:
		b.WriteString(`# Flux needs no setting: kustomize-controller and helm-controller apply
# server-side and neither remove nor report as drift the fields another
# manager owns. Keep them applying server-side (the default); a
# Kustomization or HelmRelease with force: true still keeps Ripple's fields.
`)
	default:
		return fmt.Errorf("--gitops: %q is not a GitOps tool; use %s", tool, strings.Join(GitOpsTools, ", "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func toolName(tool string) string {
	if tool == GitOpsArgoCD {
		return "Argo CD"
	}
	return "Flux"
}

// argoCD writes the Application fields: server-side diff, or
// ignoreDifferences by the manager "ripple", and server-side sync.
func argoCD(b *strings.Builder, ws []workload.Ref) {
	b.WriteString(`# Paste into the Application (or ApplicationSet template) that deploys them.
# Server-side diff (Argo CD 2.10+) shows no drift for fields another
# manager owns; the ignoreDifferences below do the same with the
# client-side diff. Sync server-side, so that a sync keeps Ripple's fields.
metadata:
  annotations:
    argocd.argoproj.io/compare-options: ServerSideDiff=true
spec:
`)
	if len(ws) > 0 {
		b.WriteString("  ignoreDifferences:\n")
		for _, w := range ws {
			fmt.Fprintf(b, "    - group: %s\n      kind: %s\n      namespace: %s\n      name: %s\n      managedFieldsManagers:\n        - %s\n",
				groups[w.Kind], w.Kind, w.Namespace, w.Name, workload.FieldManager)
		}
	}
	b.WriteString(`  syncPolicy:
    syncOptions:
      - ServerSideApply=true
      - RespectIgnoreDifferences=true
`)
}
