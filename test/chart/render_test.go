package chart

import (
	"bytes"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/ripple-dev/ripple/hack/helmchart"
	"github.com/ripple-dev/ripple/internal/config"
	"github.com/ripple-dev/ripple/internal/digest"
	"github.com/ripple-dev/ripple/internal/refs"
)

// The release the value-set tests render.
const (
	relName = "ripple"
	relNS   = "ripple-system"
)

// valueSet is one configuration of the chart: Reloader's default values
// file (as a migrating user has it) or the chart's own defaults, plus
// overrides, and what Ripple must make of it.
type valueSet struct {
	name string
	// reloader starts from Reloader's default values.yaml.
	reloader bool
	values   map[string]any
	// golden names testdata/golden/<golden>.yaml, compared byte for byte.
	golden string
	// check inspects the rendered objects and Ripple's parsed configuration.
	check func(t *testing.T, objs []*unstructured.Unstructured, opts *config.Options, cfg config.Config)
}

func r(kv map[string]any) map[string]any { return map[string]any{"reloader": kv} }

// valueSets are Reloader's documented configurations, each on top of its
// default values file, plus Ripple's defaults and a production setup.
func valueSets() []valueSet {
	return []valueSet{
		{name: "chart defaults", golden: "default", check: func(t *testing.T, objs []*unstructured.Unstructured, _ *config.Options, cfg config.Config) {
			// The Role: the Job re-create records in the release namespace.
			wantKinds(t, objs, "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition", "Deployment", "Role", "RoleBinding", "ServiceAccount",
				"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")
			if len(cfg.Namespaces) != 0 || cfg.LeaderElection {
				t.Errorf("namespaces %v, leader election %v: want global mode without HA", cfg.Namespaces, cfg.LeaderElection)
			}
			if cfg.Namespace != relNS {
				t.Errorf("Ripple's own namespace %q, want the release namespace %q ($POD_NAMESPACE)", cfg.Namespace, relNS)
			}
		}},
		{name: "Reloader's default values", reloader: true, golden: "reloader-defaults", check: func(t *testing.T, objs []*unstructured.Unstructured, _ *config.Options, cfg config.Config) {
			wantKinds(t, objs, "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition", "Deployment", "Role", "RoleBinding", "ServiceAccount",
				"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")
			_, c := rippleDeployment(t, objs)
			if !strings.HasPrefix(c.Image, "ghcr.io/ripple-dev/ripple:") {
				t.Errorf("image %q: Reloader's image must be replaced by Ripple's", c.Image)
			}
			if len(cfg.Kinds) != 2 || cfg.AutoReloadAll || cfg.ReloadOnCreate {
				t.Errorf("config %+v: want Reloader's defaults", cfg)
			}
		}},
		{name: "watchGlobally false", reloader: true, values: r(map[string]any{"watchGlobally": false}), check: func(t *testing.T, objs []*unstructured.Unstructured, _ *config.Options, cfg config.Config) {
			wantKinds(t, objs, "Deployment", "Role", "RoleBinding", "ServiceAccount")
			if !slices.Equal(cfg.Namespaces, []string{relNS}) {
				t.Errorf("namespaces %v, want only the release namespace (KUBERNETES_NAMESPACE)", cfg.Namespaces)
			}
		}},
		{name: "namespaces list", reloader: true, golden: "scoped", values: r(map[string]any{"watchGlobally": false, "namespaces": []any{"team-b", "team-a", "team-a"}}), check: func(t *testing.T, objs []*unstructured.Unstructured, _ *config.Options, cfg config.Config) {
			wantKinds(t, objs, "Deployment", "Role", "RoleBinding", "ServiceAccount")
			if want := []string{relNS, "team-a", "team-b"}; !slices.Equal(cfg.Namespaces, want) {
				t.Errorf("namespaces %v, want %v", cfg.Namespaces, want)
			}
			wantRoleNamespaces(t, objs, relNS, "team-a", "team-b")
		}},
		{name: "namespaces string without watchGlobally", reloader: true, values: r(map[string]any{"namespaces": "team-a, team-b"}), check: func(t *testing.T, objs []*unstructured.Unstructured, _ *config.Options, cfg config.Config) {
			if want := []string{relNS, "team-a", "team-b"}; !slices.Equal(cfg.Namespaces, want) {
				t.Errorf("namespaces %v, want %v (a namespaces list selects scoped mode by itself)", cfg.Namespaces, want)
			}
			wantRoleNamespaces(t, objs, relNS, "team-a", "team-b")
		}},
		{name: "ignoreSecrets", reloader: true, values: r(map[string]any{"ignoreSecrets": true}), check: func(t *testing.T, objs []*unstructured.Unstructured, _ *config.Options, cfg config.Config) {
			if !slices.Equal(cfg.Kinds, []refs.Kind{refs.ConfigMap}) {
				t.Errorf("kinds %v, want ConfigMaps only", cfg.Kinds)
			}
			if hasRule(objs, "ClusterRole", "", "secrets") {
				t.Error("the ClusterRole grants Secrets although they are ignored")
			}
		}},
		{name: "ignoreConfigMaps", reloader: true, values: r(map[string]any{"ignoreConfigMaps": true}), check: func(t *testing.T, objs []*unstructured.Unstructured, _ *config.Options, cfg config.Config) {
			if !slices.Equal(cfg.Kinds, []refs.Kind{refs.Secret}) {
				t.Errorf("kinds %v, want Secrets only", cfg.Kinds)
			}
			// The Job re-create records are read around the cache, by the
			// job-records Role in the release namespace.
			if hasRule(objs, "ClusterRole", "", "configmaps") {
				t.Error("the ClusterRole grants ConfigMaps although they are ignored")
			}
			if hasVerb(objs, "ClusterRole", "", "configmaps", "watch") {
				t.Error("the ClusterRole grants watching ConfigMaps although they are ignored")
			}
		}},
		{name: "enableHA", reloader: true, golden: "ha", values: r(map[string]any{"enableHA": true, "deployment": map[string]any{"replicas": 2}}), check: func(t *testing.T, objs []*unstructured.Unstructured, _ *config.Options, cfg config.Config) {
			wantHA(t, objs, cfg, 2)
		}},
		{name: "replicas without enableHA", reloader: true, values: r(map[string]any{"deployment": map[string]any{"replicas": 3}}), check: func(t *testing.T, objs []*unstructured.Unstructured, _ *config.Options, cfg config.Config) {
			// Reloader's chart renders --enable-ha without POD_NAME here
			// and the pod crash-loops; this chart turns on HA.
			wantHA(t, objs, cfg, 3)
		}},
		{name: "isArgoRollouts", reloader: true, values: r(map[string]any{"isArgoRollouts": true}), check: func(t *testing.T, objs []*unstructured.Unstructured, opts *config.Options, cfg config.Config) {
			if !opts.ArgoRollouts || !cfg.ArgoRollouts || !hasRule(objs, "ClusterRole", "argoproj.io", "rollouts") {
				t.Error("isArgoRollouts must pass --is-Argo-Rollouts and grant rollouts")
			}
		}},
		{name: "isOpenshift", reloader: true, values: r(map[string]any{"isOpenshift": true}), check: func(t *testing.T, objs []*unstructured.Unstructured, opts *config.Options, cfg config.Config) {
			// Reloader's chart only grants the rights; Ripple reloads
			// DeploymentConfigs with --is-openshift.
			if !opts.OpenShift || !cfg.OpenShift || !hasVerb(objs, "ClusterRole", "apps.openshift.io", "deploymentconfigs", "patch") {
				t.Error("isOpenshift must pass --is-openshift and grant deploymentconfigs")
			}
		}},
		{name: "cronJobReload template", values: map[string]any{"ripple": map[string]any{"cronJobReload": "template"}}, check: func(t *testing.T, objs []*unstructured.Unstructured, _ *config.Options, cfg config.Config) {
			_, c := rippleDeployment(t, objs)
			if cfg.CronJobReload != "template" || !slices.Contains(c.Args, "--cronjob-reload=template") {
				t.Errorf("--cronjob-reload %q, args %q: want template", cfg.CronJobReload, c.Args)
			}
		}},
		{name: "cronJobReload run", values: map[string]any{"ripple": map[string]any{"cronJobReload": "run"}}, check: func(t *testing.T, objs []*unstructured.Unstructured, _ *config.Options, cfg config.Config) {
			_, c := rippleDeployment(t, objs)
			if cfg.CronJobReload != "run" || slices.ContainsFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, "--cronjob-reload") }) {
				t.Errorf("--cronjob-reload %q, args %q: want the default, not passed", cfg.CronJobReload, c.Args)
			}
		}},
		{name: "dryRun", values: map[string]any{"ripple": map[string]any{"dryRun": true}}, check: func(t *testing.T, objs []*unstructured.Unstructured, _ *config.Options, cfg config.Config) {
			_, c := rippleDeployment(t, objs)
			if !cfg.DryRun || !slices.Contains(c.Args, "--dry-run=true") {
				t.Errorf("dry run %v, args %q: want --dry-run=true", cfg.DryRun, c.Args)
			}
		}},
		{name: "dryRun off renders nothing", values: map[string]any{"ripple": map[string]any{"dryRun": false}}, check: func(t *testing.T, objs []*unstructured.Unstructured, _ *config.Options, cfg config.Config) {
			_, c := rippleDeployment(t, objs)
			if cfg.DryRun || slices.ContainsFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, "--dry-run") }) {
				t.Errorf("dry run %v, args %q: want the default, not passed", cfg.DryRun, c.Args)
			}
		}},
		{name: "keyed digests", values: map[string]any{"ripple": map[string]any{"digest": "hmac-sha256"}}, check: func(t *testing.T, _ []*unstructured.Unstructured, _ *config.Options, cfg config.Config) {
			if cfg.Digest != digest.HMACSHA256 {
				t.Errorf("digest %q: not passed on", cfg.Digest)
			}
		}},
		{name: "change policies", values: map[string]any{"ripple": map[string]any{"reloadWindow": "Mon-Fri 02:00-04:00 Europe/Berlin", "reloadPolicy": "notify", "namespaceDefaults": true}}, check: func(t *testing.T, objs []*unstructured.Unstructured, _ *config.Options, cfg config.Config) {
			if cfg.ReloadWindow != "Mon-Fri 02:00-04:00 Europe/Berlin" || cfg.ReloadPolicy != "notify" || !cfg.NamespaceDefaults {
				t.Errorf("window %q, policy %q, namespace defaults %v: not passed on", cfg.ReloadWindow, cfg.ReloadPolicy, cfg.NamespaceDefaults)
			}
			if !hasVerb(objs, "ClusterRole", "", "namespaces", "watch") {
				t.Error("namespaceDefaults must grant watch on namespaces")
			}
		}},
		{name: "namespaceDefaults in one namespace renders nothing", reloader: true, values: deepMerge(r(map[string]any{"watchGlobally": false}), map[string]any{"ripple": map[string]any{"namespaceDefaults": true}}), check: func(t *testing.T, objs []*unstructured.Unstructured, _ *config.Options, cfg config.Config) {
			if cfg.NamespaceDefaults || hasVerb(objs, "ClusterRole", "", "namespaces", "watch") {
				t.Errorf("namespace defaults %v in a namespace-scoped install, want off and no namespace rule", cfg.NamespaceDefaults)
			}
		}},
		{name: "reloadOnCreate and syncAfterRestart", reloader: true, values: r(map[string]any{"reloadOnCreate": true, "syncAfterRestart": true}), check: func(t *testing.T, _ []*unstructured.Unstructured, _ *config.Options, cfg config.Config) {
			if !cfg.ReloadOnCreate || !cfg.SyncAfterRestart {
				t.Errorf("reloadOnCreate %v, syncAfterRestart %v: want both", cfg.ReloadOnCreate, cfg.SyncAfterRestart)
			}
		}},
		{name: "reloadOnDelete", reloader: true, values: r(map[string]any{"reloadOnDelete": true}), check: func(t *testing.T, _ []*unstructured.Unstructured, _ *config.Options, cfg config.Config) {
			if !cfg.ReloadOnDelete {
				t.Error("reloadOnDelete is not passed on")
			}
		}},
		{name: "webhookUrl without custom_annotations", reloader: true, golden: "webhook", values: r(map[string]any{"webhookUrl": "https://hooks.example.com/ripple"}), check: func(t *testing.T, objs []*unstructured.Unstructured, _ *config.Options, cfg config.Config) {
			// Reloader's chart drops webhookUrl unless a custom annotation is set.
			if cfg.WebhookURL != "https://hooks.example.com/ripple" {
				t.Errorf("webhook URL %q, want the value's", cfg.WebhookURL)
			}
			if hasRule(objs, "ClusterRole", "", "events") || hasVerb(objs, "ClusterRole", "apps", "deployments", "patch") {
				t.Error("webhook mode writes nothing: the ClusterRole must not grant events or patch")
			}
		}},
		{name: "custom_annotations", reloader: true, values: r(map[string]any{"custom_annotations": map[string]any{
			"configmap": "my.company.com/configmap", "secret": "my.company.com/secret", "auto": "my.company.com/auto",
			"configmap_auto": "my.company.com/configmap-auto", "secret_auto": "my.company.com/secret-auto",
			"search": "my.company.com/search", "match": "my.company.com/match", "ignore": "my.company.com/reloader-ignore",
			"pausePeriod": "my.company.com/pause-period", "pauseTime": "my.company.com/paused-at",
		}}), check: func(t *testing.T, _ []*unstructured.Unstructured, _ *config.Options, cfg config.Config) {
			k := cfg.Keys
			got := []string{k.ConfigMapReload, k.SecretReload, k.Auto, k.ConfigMapAuto, k.SecretAuto, k.Search, k.Match, k.Ignore, k.PausePeriod, k.PausedAt}
			want := []string{"my.company.com/configmap", "my.company.com/secret", "my.company.com/auto", "my.company.com/configmap-auto", "my.company.com/secret-auto",
				"my.company.com/search", "my.company.com/match", "my.company.com/reloader-ignore", "my.company.com/pause-period", "my.company.com/paused-at"}
			if !slices.Equal(got, want) {
				t.Errorf("annotation keys %q, want %q", got, want)
			}
		}},
		{name: "namespaceSelector", reloader: true, values: r(map[string]any{"namespaceSelector": "environment in (prod,staging),team:platform", "ignoreNamespaces": "kube-system,kube-public"}), check: func(t *testing.T, objs []*unstructured.Unstructured, _ *config.Options, cfg config.Config) {
			if cfg.NamespaceSelector == nil || cfg.NamespaceSelector.String() != "environment in (prod,staging),team=platform" {
				t.Errorf("namespace selector %v", cfg.NamespaceSelector)
			}
			if !slices.Equal(cfg.NamespacesToIgnore, []string{"kube-system", "kube-public"}) {
				t.Errorf("namespaces to ignore %v", cfg.NamespacesToIgnore)
			}
			if !hasRule(objs, "ClusterRole", "", "namespaces") {
				t.Error("a namespace selector needs namespaces list/watch")
			}
		}},
		{name: "resourceLabelSelector", reloader: true, values: r(map[string]any{"resourceLabelSelector": "reloader=enabled,tier in (a,b)"}), check: func(t *testing.T, _ []*unstructured.Unstructured, _ *config.Options, cfg config.Config) {
			if cfg.ResourceSelector == nil || cfg.ResourceSelector.String() != "reloader=enabled,tier in (a,b)" {
				t.Errorf("resource selector %v", cfg.ResourceSelector)
			}
		}},
		{name: "annotations strategy and logging", reloader: true, values: r(map[string]any{"reloadStrategy": "annotations", "logFormat": "json", "logLevel": "debug", "autoReloadAll": true, "ignoreJobs": true, "ignoreCronJobs": true}), check: func(t *testing.T, _ []*unstructured.Unstructured, _ *config.Options, cfg config.Config) {
			if cfg.Strategy.Name() != "annotations" || !cfg.LogJSON || cfg.LogLevel != 1 || !cfg.AutoReloadAll || !cfg.IgnoreJobs || !cfg.IgnoreCronJobs {
				t.Errorf("config %+v", cfg)
			}
		}},
		{name: "netpol with a webhook", reloader: true, values: r(map[string]any{"webhookUrl": "http://hooks.example.com:8080/ripple", "netpol": map[string]any{"enabled": true}}), check: func(t *testing.T, objs []*unstructured.Unstructured, _ *config.Options, _ config.Config) {
			wantNetpol(t, objs, "443/TCP 6443/TCP", "53/UDP 53/TCP", "8080/TCP")
		}},
		{name: "Reloader's commented-out options", reloader: true, values: map[string]any{
			"global": map[string]any{"imageRegistry": "", "imagePullSecrets": []any{"my-pull-secret", map[string]any{"name": "other-secret"}}},
			"image":  map[string]any{"repository": "registry.example.com/mirror/ripple", "digest": "sha256:" + strings.Repeat("ab", 32)},
			"reloader": map[string]any{
				"deployment": map[string]any{
					"dnsConfig":                    map[string]any{"options": []any{map[string]any{"name": "ndots", "value": "1"}}},
					"hostUsers":                    false,
					"runtimeClassName":             "",
					"schedulerName":                "default-scheduler",
					"imagePullSecrets":             []any{map[string]any{"name": "myregistrykey"}},
					"automountServiceAccountToken": true,
					"annotations":                  map[string]any{"example.com/a": "b"},
					"volumes":                      []any{map[string]any{"name": "extra", "emptyDir": map[string]any{}}},
					"volumeMounts":                 []any{map[string]any{"name": "extra", "mountPath": "/extra"}},
					"gomaxprocsOverride":           "2",
					"gomemlimitOverride":           "200MiB",
					"livenessProbe":                map[string]any{"timeoutSeconds": 5, "failureThreshold": 5, "periodSeconds": 10, "successThreshold": 1},
					"readinessProbe":               map[string]any{"timeoutSeconds": 15, "failureThreshold": 5, "periodSeconds": 10, "successThreshold": 1},
					"env":                          map[string]any{"existing": map[string]any{"existing-secret-name": map[string]any{"ALERT_SINK": "alert_sink_key"}}},
				},
				"service":        map[string]any{"labels": map[string]any{"a": "b"}, "annotations": map[string]any{"c": "d"}, "port": 9090, "ipFamilyPolicy": "PreferDualStack", "ipFamilies": []any{"IPv4"}},
				"rbac":           map[string]any{"labels": map[string]any{"rbac": "yes"}},
				"serviceAccount": map[string]any{"labels": map[string]any{"sa": "yes"}, "annotations": map[string]any{"eks.amazonaws.com/role-arn": "arn:aws:iam::1:role/x"}, "name": "custom-sa"},
				"serviceMonitor": map[string]any{"enabled": true, "namespace": "monitoring", "interval": "10s", "scheme": "https", "tlsConfig": map[string]any{"insecureSkipVerify": true}, "bearerTokenFile": "/var/run/token", "timeout": "30s",
					"metricRelabelings": []any{map[string]any{"action": "keep", "regex": "reloader_.+", "sourceLabels": []any{"__name__"}}}, "relabelings": []any{map[string]any{"targetLabel": "nodename", "replacement": "$1", "action": "replace"}}, "targetLabels": []any{"app"}},
				"podMonitor":            map[string]any{"enabled": true, "scheme": "http", "tlsConfig": map[string]any{}, "bearerTokenSecret": map[string]any{"name": "tok", "key": "token"}, "podTargetLabels": []any{"app"}},
				"podDisruptionBudget":   map[string]any{"enabled": true, "maxUnavailable": 1, "minAvailable": 1},
				"verticalPodAutoscaler": map[string]any{"enabled": true, "recommenders": []any{map[string]any{"name": "custom-recommender-performance"}}, "minAllowed": map[string]any{"cpu": "10m"}, "updatePolicy": map[string]any{"minReplicas": 1, "updateMode": "Auto"}},
			},
		}, check: func(t *testing.T, objs []*unstructured.Unstructured, opts *config.Options, cfg config.Config) {
			d, c := rippleDeployment(t, objs)
			if want := "registry.example.com/mirror/ripple@sha256:" + strings.Repeat("ab", 32); c.Image != want {
				t.Errorf("image %q, want %q", c.Image, want)
			}
			var secrets []string
			for _, s := range d.Spec.Template.Spec.ImagePullSecrets {
				secrets = append(secrets, s.Name)
			}
			if want := []string{"my-pull-secret", "other-secret", "myregistrykey"}; !slices.Equal(secrets, want) {
				t.Errorf("image pull secrets %q, want %q", secrets, want)
			}
			if d.Spec.Template.Spec.ServiceAccountName != "custom-sa" {
				t.Errorf("service account %q", d.Spec.Template.Spec.ServiceAccountName)
			}
			if pdb := find(objs, "PodDisruptionBudget"); len(pdb) != 1 || pdb[0].Object["spec"].(map[string]any)["minAvailable"] != nil {
				t.Error("maxUnavailable must win over minAvailable")
			}
		}},
		{name: "production", golden: "production", values: productionValues(), check: func(t *testing.T, objs []*unstructured.Unstructured, opts *config.Options, cfg config.Config) {
			wantKinds(t, objs, "ClusterRole", "ClusterRoleBinding", "ConfigMap", "CustomResourceDefinition", "Deployment", "NetworkPolicy", "PodDisruptionBudget", "PodMonitor",
				"PrometheusRule", "Role", "RoleBinding", "Secret", "Service", "ServiceAccount", "ServiceMonitor", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "VerticalPodAutoscaler")
			if cfg.SettleWindow.String() != "5s" || cfg.KubeAPIQPS != 50 || cfg.KubeAPIBurst != 100 || cfg.PprofAddr != ":6061" || !opts.CSIIntegration || !cfg.MetricsByNamespace {
				t.Errorf("config %+v", cfg)
			}
			if !cfg.OpenShift || cfg.CronJobReload != "template" {
				t.Errorf("OpenShift %v, --cronjob-reload %q: want on and template", cfg.OpenShift, cfg.CronJobReload)
			}
			if cfg.MinRolloutInterval != 2*time.Minute || cfg.FlapThreshold != 0 || cfg.FlapWindow != 30*time.Second || cfg.FlapQuietPeriod != 20*time.Second {
				t.Errorf("storm breaker: interval %v, flap %d/%v/%v; want 2m, 0, 30s, 20s", cfg.MinRolloutInterval, cfg.FlapThreshold, cfg.FlapWindow, cfg.FlapQuietPeriod)
			}
			if cfg.Keys.Applied != "ripple.example.com/applied" {
				t.Errorf("applied key %q: want the annotation prefix applied", cfg.Keys.Applied)
			}
			wantNetpol(t, objs, "443/TCP 6443/TCP", "53/UDP 53/TCP")
		}},
		// The query gate's values reach Ripple's flags as it parses them;
		// TestQueryGateValues holds the Deployment to them.
		{name: "query gate", values: queryGateValues(), check: func(t *testing.T, objs []*unstructured.Unstructured, opts *config.Options, _ config.Config) {
			o := opts.ReloadOptions
			if !slices.Equal(o.CanaryGates, []string{"pods", "query"}) || o.PrometheusURL != queryGateURL || o.CanaryQuery != queryGateCondition ||
				o.CanaryQueryInterval != 15*time.Second || o.CanaryQueryInconclusive != "pass" || o.PrometheusCredentialsDir != queryGateDir {
				t.Errorf("Ripple's query gate: gates %v, url %q, query %q, interval %v, inconclusive %q, credentials %q",
					o.CanaryGates, o.PrometheusURL, o.CanaryQuery, o.CanaryQueryInterval, o.CanaryQueryInconclusive, o.PrometheusCredentialsDir)
			}
		}},
		// Traces (docs/tracing.md): the endpoint and the headers' Secret
		// reach Ripple as the OTEL_* variables it reads, and the
		// NetworkPolicy lets it reach the collector's port.
		{name: "tracing", values: map[string]any{
			"reloader": map[string]any{"netpol": map[string]any{"enabled": true}},
			"ripple":   map[string]any{"tracing": map[string]any{"endpoint": "http://otel-collector.monitoring:4318", "headersSecret": map[string]any{"name": "otlp-auth"}}},
		}, check: func(t *testing.T, objs []*unstructured.Unstructured, _ *config.Options, cfg config.Config) {
			if !cfg.Tracing {
				t.Error("ripple.tracing.endpoint did not turn tracing on")
			}
			_, c := rippleDeployment(t, objs)
			var endpoint string
			var headers *corev1.SecretKeySelector
			for _, e := range c.Env {
				switch e.Name {
				case "OTEL_EXPORTER_OTLP_ENDPOINT":
					endpoint = e.Value
				case "OTEL_EXPORTER_OTLP_HEADERS":
					if e.ValueFrom != nil {
						headers = e.ValueFrom.SecretKeyRef
					}
				}
			}
			if endpoint != "http://otel-collector.monitoring:4318" || headers == nil || headers.Name != "otlp-auth" || headers.Key != "headers" {
				t.Errorf("env: endpoint %q, headers from %+v; want the endpoint and the Secret otlp-auth's key headers", endpoint, headers)
			}
			wantNetpol(t, objs, "443/TCP 6443/TCP", "53/UDP 53/TCP", "4318/TCP")
		}},
		// The admission webhook with cert-manager (a golden file: no
		// generated key in it), the guard, reloadOnCreate and the
		// NetworkPolicy; TestAdmission* hold the webhook to its rules.
		{name: "admission webhook", golden: "admission", values: admissionValues(deepMerge(admissionCM(map[string]any{"enabled": true}), map[string]any{
			"reloader": map[string]any{"reloadOnCreate": true, "netpol": map[string]any{"enabled": true}},
			"ripple":   map[string]any{"admission": map[string]any{"maxRollouts": 40, "timeoutSeconds": 1}},
		})), check: func(t *testing.T, objs []*unstructured.Unstructured, _ *config.Options, cfg config.Config) {
			if cfg.Admission != (config.Admission{Addr: ":9443", CertDir: config.DefaultAdmissionCertDir, MaxRollouts: 40}) {
				t.Errorf("Ripple's admission config %+v", cfg.Admission)
			}
			wantKinds(t, objs, "Certificate", "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition", "Deployment", "Issuer", "NetworkPolicy",
				"Role", "RoleBinding", "Service", "ServiceAccount", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "ValidatingWebhookConfiguration")
			wantNetpol(t, objs, "443/TCP 6443/TCP", "53/UDP 53/TCP")
		}},
		// With the generated certificate and HA: every replica serves it.
		{name: "admission webhook with a generated certificate", reloader: true, values: admissionValues(r(map[string]any{"reloadOnDelete": true, "enableHA": true, "deployment": map[string]any{"replicas": 2}})), check: func(t *testing.T, objs []*unstructured.Unstructured, _ *config.Options, cfg config.Config) {
			if cfg.Admission != (config.Admission{Addr: ":9443", CertDir: config.DefaultAdmissionCertDir}) || !cfg.LeaderElection {
				t.Errorf("Ripple's admission config %+v, leader election %v", cfg.Admission, cfg.LeaderElection)
			}
			if renderedSecret(t, objs, "ripple-admission-tls") == nil {
				t.Error("no generated Secret")
			}
		}},
	}
}

// productionValues turns on every optional object and most settings.
func productionValues() map[string]any {
	return map[string]any{
		"reloader": map[string]any{
			"enableHA": true, "enablePProf": true, "pprofAddr": ":6061", "enableCSIIntegration": true, "isOpenshift": true,
			"readOnlyRootFileSystem": true, "enableMetricsByNamespace": true, "logFormat": "json",
			"matchLabels": map[string]any{"team": "platform"},
			"deployment": map[string]any{
				"replicas": 2, "priorityClassName": "system-cluster-critical",
				"resources":                 map[string]any{"limits": map[string]any{"cpu": "1", "memory": "256Mi"}, "requests": map[string]any{"cpu": "50m", "memory": "128Mi"}},
				"topologySpreadConstraints": []any{map[string]any{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "ScheduleAnyway"}},
				"tolerations":               []any{map[string]any{"key": "node-role.kubernetes.io/infra", "operator": "Exists", "effect": "NoSchedule"}},
				"nodeSelector":              map[string]any{"kubernetes.io/os": "linux"},
				"pod":                       map[string]any{"annotations": map[string]any{"example.com/owner": "platform"}},
				"env": map[string]any{
					"open":     map[string]any{"ALERT_ON_RELOAD": "true", "ALERT_SINK": "slack"},
					"secret":   map[string]any{"ALERT_WEBHOOK_URL": "https://hooks.slack.com/services/x"},
					"field":    map[string]any{"MY_NODE": "spec.nodeName"},
					"existing": map[string]any{"alert-secret": map[string]any{"ALERT_ADDITIONAL_INFO": "info"}},
				},
				"livenessProbe":  map[string]any{"initialDelaySeconds": 0, "periodSeconds": 20},
				"readinessProbe": map[string]any{"failureThreshold": 3},
			},
			"service":             map[string]any{"port": 8080, "ipFamilyPolicy": "SingleStack", "ipFamilies": []any{"IPv4"}, "annotations": map[string]any{"release": "{{ .Release.Name }}"}},
			"serviceMonitor":      map[string]any{"enabled": true, "interval": "30s", "labels": map[string]any{"release": "prometheus"}},
			"podMonitor":          map[string]any{"enabled": true, "namespace": "monitoring", "interval": "30s", "timeout": "10s"},
			"podDisruptionBudget": map[string]any{"enabled": true, "minAvailable": 1},
			"netpol": map[string]any{"enabled": true,
				"from": []any{map[string]any{"namespaceSelector": map[string]any{"matchLabels": map[string]any{"kubernetes.io/metadata.name": "monitoring"}}}},
				"to":   []any{map[string]any{"ipBlock": map[string]any{"cidr": "10.0.0.1/32"}}}},
			"verticalPodAutoscaler": map[string]any{"enabled": true, "controlledResources": []any{"cpu", "memory"}, "controlledValues": "RequestsOnly",
				"maxAllowed": map[string]any{"memory": "1Gi"}, "updatePolicy": map[string]any{"updateMode": "Initial"}},
			"webhookUrl": "",
		},
		"ripple": map[string]any{
			"settleWindow": "5s", "cronJobReload": "template", "annotationPrefix": "ripple.example.com", "kubeApiQps": 50, "kubeApiBurst": 100, "maxConcurrentReconciles": 16,
			"maxConcurrentRollouts": 20, "maxConcurrentRolloutsPerNamespace": 5, "rolloutTimeout": "15m",
			"reloadWindow": "Mon-Fri 02:00-04:00 Europe/Berlin; Sat,Sun 00:00-24:00 Europe/Berlin", "reloadPolicy": "auto", "namespaceDefaults": true,
			"minRolloutInterval": "2m", "flapBreaker": map[string]any{"threshold": 0, "window": "30s", "quietPeriod": "20s"},
			"leaderElection": map[string]any{"leaseDuration": "20s", "renewDeadline": "15s", "retryPeriod": "3s"},
			"metaInfo":       map[string]any{"enabled": true},
			"dashboards":     map[string]any{"enabled": true},
			"alerts":         map[string]any{"enabled": true, "additionalLabels": map[string]any{"team": "platform"}},
		},
	}
}

func (v valueSet) release() helmchart.Release {
	rel := helmchart.Release{Name: relName, Namespace: relNS}
	if v.reloader {
		rel.ValuesFiles = []string{reloaderValues()}
	}
	if v.values != nil {
		rel.Values = []map[string]any{v.values}
	}
	return rel
}

// TestValueSets renders every value set, compares the golden ones, feeds
// the rendered arguments and environment to Ripple's flag parsing, and
// dry-runs every object on the API server: all must be accepted, with no
// warning (the release namespace enforces and warns at the restricted Pod
// Security level).
func TestValueSets(t *testing.T) {
	cs := kubernetes.NewForConfigOrDie(api.Config)
	psa := map[string]string{"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/warn": "restricted"}
	ensureNamespace(t, cs, relNS, psa)
	for _, ns := range []string{"team-a", "team-b", "monitoring"} {
		ensureNamespace(t, cs, ns, nil)
	}
	for _, v := range valueSets() {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			out, objs := render(t, v.release())
			if v.golden != "" {
				compareGolden(t, v.golden, out)
			}
			opts, cfg := parseRendered(t, objs)
			if v.check != nil {
				v.check(t, objs, opts, cfg)
			}
			checkSecureDefaults(t, objs)

			w := &warnings{}
			rc := rest.CopyConfig(api.Config)
			rc.WarningHandler = w
			a := newApplier(t, rc)
			for _, o := range objs {
				if err := a.apply(t.Context(), o, true); err != nil {
					t.Errorf("the API server rejects the chart's object: %v", err)
				}
			}
			if ws := w.all(); len(ws) > 0 {
				t.Errorf("the API server warned about the chart's objects:\n%s", strings.Join(ws, "\n"))
			}
		})
	}
}

// compareGolden compares out with testdata/golden/<name>.yaml, or writes it
// with -update.
func compareGolden(t *testing.T, name string, out []byte) {
	t.Helper()
	path := testdata("golden/" + name + ".yaml")
	if *update {
		if err := os.WriteFile(path, out, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run the test with -update to create it)", err)
	}
	if !bytes.Equal(want, out) {
		t.Errorf("the chart renders differently from %s; if the change is intended, rerun with -update and review the diff:\n%s", path, lineDiff(string(want), string(out)))
	}
}

// lineDiff shows the first lines where two texts differ, with context.
func lineDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	line := func(l []string, i int) (string, bool) {
		if i < len(l) {
			return l[i], true
		}
		return "", false
	}
	for i := 0; i < len(al) || i < len(bl); i++ {
		x, okx := line(al, i)
		y, oky := line(bl, i)
		if okx == oky && x == y {
			continue
		}
		var s strings.Builder
		for j := max(0, i-3); j < min(i+4, max(len(al), len(bl))); j++ {
			x, okx := line(al, j)
			y, oky := line(bl, j)
			switch {
			case okx && oky && x == y:
				s.WriteString("  " + x + "\n")
			default:
				if okx {
					s.WriteString("- " + x + "\n")
				}
				if oky {
					s.WriteString("+ " + y + "\n")
				}
			}
		}
		return "line " + strconv.Itoa(i+1) + " (- want, + got):\n" + s.String()
	}
	return "(identical)"
}

// wantKinds checks the set of rendered kinds.
func wantKinds(t *testing.T, objs []*unstructured.Unstructured, kinds ...string) {
	t.Helper()
	var got []string
	for _, o := range objs {
		if !slices.Contains(got, o.GetKind()) {
			got = append(got, o.GetKind())
		}
	}
	slices.Sort(got)
	slices.Sort(kinds)
	if !slices.Equal(got, kinds) {
		t.Errorf("rendered kinds %v, want %v", got, kinds)
	}
}

// wantRoleNamespaces checks that the Ripple Roles are exactly in namespaces.
func wantRoleNamespaces(t *testing.T, objs []*unstructured.Unstructured, namespaces ...string) {
	t.Helper()
	var got []string
	for _, o := range find(objs, "Role") {
		// The rules Roles, not the meta-info's <fullname>-metadata-role.
		if strings.HasSuffix(o.GetName(), "-role") && !strings.HasSuffix(o.GetName(), "-metadata-role") {
			got = append(got, o.GetNamespace())
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, namespaces) {
		t.Errorf("Roles in %v, want %v", got, namespaces)
	}
	if len(find(objs, "ClusterRole")) > 0 {
		t.Error("scoped mode must not render a ClusterRole")
	}
}

// wantHA checks leader election: the flag, the downward-API identity, the
// replicas and the Lease rights.
func wantHA(t *testing.T, objs []*unstructured.Unstructured, cfg config.Config, replicas int32) {
	t.Helper()
	d, _ := rippleDeployment(t, objs)
	if !cfg.LeaderElection || cfg.LeaderElectionNamespace != relNS || cfg.LeaderElectionID != "stakater-reloader-lock" {
		t.Errorf("leader election %v in %q (%q): want on, in the release namespace, Reloader's Lease", cfg.LeaderElection, cfg.LeaderElectionNamespace, cfg.LeaderElectionID)
	}
	if d.Spec.Replicas == nil || *d.Spec.Replicas != replicas {
		t.Errorf("replicas %v, want %d", d.Spec.Replicas, replicas)
	}
	if !hasRule(objs, "Role", "coordination.k8s.io", "leases") {
		t.Error("no Lease rights")
	}
	if d.Spec.Template.Spec.Affinity == nil || d.Spec.Template.Spec.Affinity.PodAntiAffinity == nil {
		t.Error("replicas should prefer distinct nodes")
	}
}

// wantNetpol checks the NetworkPolicy: ingress only to the metrics port
// (and, with the admission webhook, to its port from anywhere: the API
// server calls it), and egress rules with exactly these ports, in order (the API server
// first, then DNS, then any other).
func wantNetpol(t *testing.T, objs []*unstructured.Unstructured, egress ...string) {
	t.Helper()
	nps := find(objs, "NetworkPolicy")
	if len(nps) != 1 {
		t.Fatalf("%d NetworkPolicies, want 1", len(nps))
	}
	np := &networkingv1.NetworkPolicy{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(nps[0].Object, np); err != nil {
		t.Fatal(err)
	}
	ports := func(ps []networkingv1.NetworkPolicyPort) string {
		var out []string
		for _, p := range ps {
			out = append(out, p.Port.String()+"/"+string(*p.Protocol))
		}
		return strings.Join(out, " ")
	}
	var ingress []string
	for _, i := range np.Spec.Ingress {
		ingress = append(ingress, ports(i.Ports))
	}
	wantIngress := []string{"http/TCP"}
	if len(find(objs, "ValidatingWebhookConfiguration")) > 0 {
		wantIngress = append(wantIngress, "admission/TCP")
		if len(np.Spec.Ingress) == 2 && len(np.Spec.Ingress[1].From) > 0 {
			t.Errorf("the admission port admits only %+v; the API server's address is no pod's", np.Spec.Ingress[1].From)
		}
	}
	if !slices.Equal(ingress, wantIngress) {
		t.Errorf("ingress ports %q, want %q", ingress, wantIngress)
	}
	var got []string
	for _, e := range np.Spec.Egress {
		got = append(got, ports(e.Ports))
	}
	if !slices.Equal(got, egress) {
		t.Errorf("egress ports %q, want %q", got, egress)
	}
	if !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}) {
		t.Errorf("policy types %v", np.Spec.PolicyTypes)
	}
}

// hasRule reports whether a rendered object of kind grants group/resource.
func hasRule(objs []*unstructured.Unstructured, kind, group, resource string) bool {
	return hasVerb(objs, kind, group, resource, "")
}

// hasVerb reports whether a rendered object of kind grants verb (any verb
// when empty) on group/resource.
func hasVerb(objs []*unstructured.Unstructured, kind, group, resource, verb string) bool {
	for _, o := range find(objs, kind) {
		rules, _, _ := unstructured.NestedSlice(o.Object, "rules")
		for _, x := range rules {
			rule, _ := x.(map[string]any)
			groups, _, _ := unstructured.NestedStringSlice(rule, "apiGroups")
			resources, _, _ := unstructured.NestedStringSlice(rule, "resources")
			verbs, _, _ := unstructured.NestedStringSlice(rule, "verbs")
			if slices.Contains(groups, group) && slices.Contains(resources, resource) && (verb == "" || slices.Contains(verbs, verb)) {
				return true
			}
		}
	}
	return false
}

// checkSecureDefaults checks what every rendering must keep: a non-root,
// read-only, capability-free container with RuntimeDefault seccomp, the
// token mounted only into Ripple's pod, and the probes on port 9090.
func checkSecureDefaults(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	d, c := rippleDeployment(t, objs)
	pod := d.Spec.Template.Spec
	sc := c.SecurityContext
	switch {
	case pod.SecurityContext == nil || pod.SecurityContext.RunAsNonRoot == nil || !*pod.SecurityContext.RunAsNonRoot:
		t.Error("the pod must run as non-root")
	case pod.SecurityContext.SeccompProfile == nil || pod.SecurityContext.SeccompProfile.Type != "RuntimeDefault":
		t.Error("the pod must use the RuntimeDefault seccomp profile")
	case sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem:
		t.Error("the root filesystem must be read-only")
	case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
		t.Error("privilege escalation must be off")
	case sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") || len(sc.Capabilities.Add) > 0:
		t.Error("every capability must be dropped")
	case pod.AutomountServiceAccountToken == nil || !*pod.AutomountServiceAccountToken:
		t.Error("Ripple's pod must mount its token")
	}
	for _, sa := range find(objs, "ServiceAccount") {
		if v, ok, _ := unstructured.NestedBool(sa.Object, "automountServiceAccountToken"); !ok || v {
			t.Error("the ServiceAccount must not automount its token into other pods")
		}
	}
	if c.LivenessProbe == nil || c.LivenessProbe.HTTPGet == nil || c.LivenessProbe.HTTPGet.Path != "/live" ||
		c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
		t.Error("liveness must probe /live and readiness /readyz")
	}
	// With the admission webhook, its port as well, and nothing else.
	wantPorts := 1
	if len(find(objs, "ValidatingWebhookConfiguration")) > 0 {
		wantPorts = 2
	}
	if len(c.Ports) != wantPorts || c.Ports[0].ContainerPort != 9090 || c.Ports[0].Name != "http" || (wantPorts == 2 && c.Ports[1].Name != "admission") {
		t.Errorf("ports %+v: want http on 9090 (and admission with the webhook)", c.Ports)
	}
}
