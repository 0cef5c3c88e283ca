package config

import (
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/ripple-dev/ripple/internal/plan"
)

// WorkloadOptions say which workload kinds Ripple rolls, and how.
type WorkloadOptions struct {
	IgnoredWorkloadTypes []string
	ArgoRollouts         bool
	OpenShift            bool
	CSIIntegration       bool
	CronJobReload        string
	RestartMethod        string
	// RestartDeleteNamespaces are the namespaces where the delete restart
	// method is allowed; empty: everywhere.
	RestartDeleteNamespaces []string
	// argoRolloutsRaw is the value given to --is-Argo-Rollouts, for looseBool.
	argoRolloutsRaw string
}

// Workloads are the validated workload kind settings.
type Workloads struct {
	// IgnoreJobs and IgnoreCronJobs come from --ignored-workload-types.
	IgnoreJobs, IgnoreCronJobs bool
	// ArgoRollouts, OpenShift and CSI enable the optional kinds.
	ArgoRollouts, OpenShift, CSI bool
	// CronJobReload is "run" or "template".
	CronJobReload string
	// RestartMethod is "template", "evict", "delete" or "in-place".
	RestartMethod string
	// DeleteNamespaces allow the delete method only in those namespaces;
	// empty allows it everywhere.
	DeleteNamespaces []string
}

// BindFlags registers the workload kind flags.
func (o *WorkloadOptions) BindFlags(fs *pflag.FlagSet) {
	fs.StringSliceVar(&o.IgnoredWorkloadTypes, "ignored-workload-types", o.IgnoredWorkloadTypes, `Workload kinds never to reload: "jobs", "cronjobs" or both (case-insensitive).`)
	bindReloaderBool(fs, &o.ArgoRollouts, &o.argoRolloutsRaw, "is-Argo-Rollouts", "Also reload Argo Rollouts (argoproj.io/v1alpha1), once their API is served. The reloader.stakater.com/rollout-strategy: restart annotation sets spec.restartAt instead of changing the template.")
	fs.BoolVar(&o.OpenShift, "is-openshift", o.OpenShift, "Also reload OpenShift DeploymentConfigs (apps.openshift.io/v1), once their API is served.")
	fs.BoolVar(&o.CSIIntegration, "enable-csi-integration", o.CSIIntegration, "Also reload on Secrets Store CSI driver changes: the SecretProviderClassPodStatus objects of a SecretProviderClass a workload mounts, once their API is served.")
	fs.StringVar(&o.CronJobReload, "cronjob-reload", o.CronJobReload, `How a CronJob takes a reload: "run" starts a Job from its template now (Reloader's behaviour, except that a suspended CronJob starts nothing; Reloader starts one anyway), "template" patches its job template so the next scheduled runs carry the change. The <annotation-prefix>/cronjob-reload annotation overrides it per CronJob.`)
	fs.StringVar(&o.RestartMethod, "restart-method", o.RestartMethod, `How a reload restarts a Deployment, StatefulSet or DaemonSet: "template" writes the change on its pod template and its controller rolls it out (Reloader's behaviour); "evict" leaves the template alone and evicts its pods through the Eviction API, honouring PodDisruptionBudgets; "delete" deletes them (OnDelete workloads without a PodDisruptionBudget); "in-place" keeps the pods and restarts their containers, by resizing a resource whose resizePolicy is RestartContainer through pods/resize (Kubernetes 1.35+; environment values only, not subPath files). evict and delete need the pod permissions the Helm chart grants with ripple.restartMethods.evict and ripple.restartMethods.delete; in-place needs list pods and patch pods/resize (docs/restart-methods.md, Permissions). The <annotation-prefix>/restart-method annotation overrides it per workload; other kinds always use their own method. A workload with a <annotation-prefix>/reload-action annotation is not restarted: each of its pods is reloaded by an HTTP call to its reload endpoint (list pods; ripple.restartMethods.reloadAction), and this method applies only when the action cannot deliver a change. See docs/restart-methods.md.`)
	fs.StringSliceVar(&o.RestartDeleteNamespaces, "restart-delete-namespaces", o.RestartDeleteNamespaces, `Namespaces where the delete restart method is allowed (comma-separated). A workload elsewhere that asks for delete, by its annotation, its Namespace's or --restart-method, is refused: an InvalidAnnotation Warning names this flag, and it reloads with the template method. Empty allows delete in every namespace. Helm: ripple.governance.restartDeleteNamespaces.`)
}

func (o *WorkloadOptions) validate(errs *problems) Workloads {
	w := Workloads{ArgoRollouts: o.ArgoRollouts, OpenShift: o.OpenShift, CSI: o.CSIIntegration}
	for _, t := range trimmed(o.IgnoredWorkloadTypes) {
		switch strings.ToLower(t) {
		case "jobs":
			w.IgnoreJobs = true
		case "cronjobs":
			w.IgnoreCronJobs = true
		default:
			errs.bad("ignored-workload-types", "%q is not a workload type; use jobs, cronjobs or both", t)
		}
	}
	switch v := strings.ToLower(strings.TrimSpace(o.CronJobReload)); v {
	case "run", "template":
		w.CronJobReload = v
	default:
		errs.bad("cronjob-reload", "%q is not a mode; use run or template", o.CronJobReload)
	}
	if m, err := plan.ParseRestartMethod(o.RestartMethod); err != nil {
		errs.bad("restart-method", "%v", err)
	} else {
		w.RestartMethod = m
	}
	for _, n := range trimmed(o.RestartDeleteNamespaces) {
		if msgs := validation.IsDNS1123Label(n); len(msgs) > 0 {
			errs.bad("restart-delete-namespaces", "%q is not a namespace name: %s", n, strings.Join(msgs, "; "))
		}
		w.DeleteNamespaces = append(w.DeleteNamespaces, n)
	}
	return w
}
