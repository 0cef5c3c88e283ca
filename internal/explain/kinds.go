package explain

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/internal/metainfo"
	"github.com/ripple-dev/ripple/internal/workload"
)

// Kind is a workload kind, reloaded by the Ripple explained or not.
type Kind struct {
	workload.Kind
	// Off names the setting that keeps Ripple from reloading the kind,
	// e.g. `--ignored-workload-types=cronjobs (given as a flag)`; empty
	// when Ripple reloads it.
	Off string
}

// Kinds returns every workload kind Ripple can reload, configured as s
// says, the declared kinds (--workload-kinds, --workload-kinds-preset)
// last. r reads a Rollout's workloadRef Deployment.
func Kinds(s metainfo.Settings, r client.Reader) []Kind {
	cfg := s.Config
	off := func(disabled bool, flag string) string {
		if disabled {
			return s.Flag(flag)
		}
		return ""
	}
	kinds := []Kind{
		{Kind: workload.WithRestarts(workload.Deployment)},
		{Kind: workload.WithRestarts(workload.StatefulSet)},
		{Kind: workload.WithRestarts(workload.DaemonSet)},
		{Kind: workload.NewCronJob(workload.CronJobOptions{Mode: cfg.CronJobReload, ModeKey: cfg.Keys.CronJobReload, PendingKey: cfg.Keys.PendingJob, Reader: r}),
			Off: off(cfg.IgnoreCronJobs, "ignored-workload-types")},
		{Kind: workload.NewJob(workload.JobOptions{Reader: r, RecordLabel: cfg.Keys.RecreateRecord, ReplacesKey: cfg.Keys.Replaces}),
			Off: off(cfg.IgnoreJobs, "ignored-workload-types")},
		{Kind: workload.NewRollout(workload.RolloutOptions{StrategyKey: cfg.Keys.RolloutStrategy, Reader: r, Now: time.Now}),
			Off: off(!cfg.ArgoRollouts, "is-Argo-Rollouts")},
		{Kind: workload.DeploymentConfig, Off: off(!cfg.OpenShift, "is-openshift")},
	}
	for _, k := range cfg.DeclaredKinds {
		kinds = append(kinds, Kind{Kind: workload.NewDeclared(k)})
	}
	return kinds
}

// kindNames are the names kubectl accepts for each kind, lower case.
var kindNames = [][]string{
	{"Deployment", "deployment", "deployments", "deploy"},
	{"StatefulSet", "statefulset", "statefulsets", "sts"},
	{"DaemonSet", "daemonset", "daemonsets", "ds"},
	{"CronJob", "cronjob", "cronjobs", "cj"},
	{"Job", "job", "jobs"},
	{"Rollout", "rollout", "rollouts", "ro"},
	{"DeploymentConfig", "deploymentconfig", "deploymentconfigs", "dc"},
}

// ParseKind returns the kind named as kubectl names it (deployment,
// deployments, deploy, Deployment, sts, cj, dc, ... in any case), as
// Kind.Name() names it.
func ParseKind(name string) (string, error) {
	n := strings.ToLower(name)
	var known []string
	for _, names := range kindNames {
		if slices.Contains(names[1:], n) {
			return names[0], nil
		}
		known = append(known, names[1])
	}
	return "", fmt.Errorf("unknown workload kind %q; use one of %s (or their plural or kubectl short names)", name, strings.Join(known, ", "))
}

// Find returns the kind of kinds named name (as Kind.Name() names it);
// a declared kind is also found by its kind or plural resource in any
// case (cloneset, clonesets), as ParseKind knows only the built-in ones,
// and either qualified by its group as kubectl takes them
// (statefulsets.apps.kruise.io).
func Find(kinds []Kind, name string) (Kind, bool) {
	i := slices.IndexFunc(kinds, func(k Kind) bool { return k.Name() == name })
	if i < 0 {
		i = slices.IndexFunc(kinds, func(k Kind) bool {
			d, ok := k.Kind.(workload.DeclaredKind)
			if !ok {
				return false
			}
			dk := d.Declared()
			return slices.ContainsFunc([]string{dk.Kind, dk.Resource, dk.String(), dk.Resource + "." + dk.Group},
				func(n string) bool { return strings.EqualFold(n, name) })
		})
	}
	if i < 0 {
		return Kind{}, false
	}
	return kinds[i], true
}
