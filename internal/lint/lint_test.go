package lint

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ripple-dev/ripple/internal/annotation"
	"github.com/ripple-dev/ripple/internal/manifest"
)

// load reads manifests as `ripple explain -f` does, in namespace shop.
func load(t *testing.T, manifests string) []client.Object {
	t.Helper()
	objs, err := manifest.Load([]string{manifest.Stdin}, strings.NewReader(manifests), "shop")
	if err != nil {
		t.Fatalf("loading the test manifests: %v", err)
	}
	return objs
}

// web is Deployment web, whose metadata carries meta and whose pod
// template carries tpl (both YAML maps, "{}" for none) and refers to
// ConfigMap app-config through envFrom.
func web(meta, tpl string) string {
	return fmt.Sprintf(`---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  annotations: %s
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata:
      labels: {app: web}
      annotations: %s
    spec:
      containers:
        - name: app
          image: app
          envFrom: [{configMapRef: {name: app-config}}]
`, meta, tpl)
}

// fileKeyWeb is Deployment web, whose metadata carries meta, whose
// container app reads env var DB_URL by fileKeyRef from emptyDir volume
// env, which init container render writes from ConfigMap app-config.
func fileKeyWeb(meta string) string {
	return fmt.Sprintf(`---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  annotations: %s
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata:
      labels: {app: web}
    spec:
      volumes:
        - {name: env, emptyDir: {}}
      initContainers:
        - name: render
          image: render
          envFrom: [{configMapRef: {name: app-config}}]
          volumeMounts: [{name: env, mountPath: /out}]
      containers:
        - name: app
          image: app
          env:
            - name: DB_URL
              valueFrom: {fileKeyRef: {volumeName: env, path: app.env, key: DB_URL}}
          resources: {requests: {cpu: 100m}}
          resizePolicy: [{resourceName: cpu, restartPolicy: RestartContainer}]
`, meta)
}

// configs are the configs the test workloads use, in namespace shop.
const configs = `---
apiVersion: v1
kind: ConfigMap
metadata:
  name: app-config
  annotations: {reloader.stakater.com/match: "true"}
data: {url: http://example.com}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: app-1}
---
apiVersion: v1
kind: Secret
metadata:
  name: db-creds
  annotations: {reloader.stakater.com/ignore: "false"}
stringData: {password: hunter2}
---
apiVersion: secrets-store.csi.x-k8s.io/v1
kind: SecretProviderClass
metadata: {name: vault}
spec: {provider: vault}
`

// clean uses every key where it belongs, with valid values: no findings.
const clean = configs + `---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  annotations:
    reloader.stakater.com/auto: "true"
    configmap.reloader.stakater.com/reload: "app-.*, app-config"
    secret.reloader.stakater.com/reload: db-creds
    secretproviderclass.reloader.stakater.com/reload: vault
    configmaps.exclude.reloader.stakater.com/reload: other
    secrets.exclude.reloader.stakater.com/reload: other
    deployment.reloader.stakater.com/pause-period: 5m
    deployment.reloader.stakater.com/paused-at: "2026-01-01T00:00:00Z"
    ripple.dev/settle-window: 30s
    ripple.dev/applied: "{}"
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata:
      labels: {app: web}
      annotations: {reloader.stakater.com/last-reloaded-from: "{}"}
    spec:
      containers:
        - name: app
          image: app
          envFrom: [{configMapRef: {name: app-config}}]
          env:
            - name: PASSWORD
              valueFrom: {secretKeyRef: {name: db-creds, key: password}}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  selector: {matchLabels: {app: db}}
  template:
    metadata:
      labels: {app: db}
      annotations:
        reloader.stakater.com/search: "true"
        secret.reloader.stakater.com/auto: "true"
    spec:
      containers:
        - name: db
          image: postgres
          envFrom: [{configMapRef: {name: app-config}}, {secretRef: {name: db-creds}}]
---
apiVersion: batch/v1
kind: CronJob
metadata:
  name: nightly
  annotations:
    configmap.reloader.stakater.com/auto: "true"
    ripple.dev/cronjob-reload: template
    ripple.dev/pending-job: "{}"
spec:
  schedule: "0 3 * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: Never
          volumes: [{name: cfg, configMap: {name: app-config}}]
          containers: [{name: run, image: run, volumeMounts: [{name: cfg, mountPath: /cfg}]}]
---
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata:
  name: canary
  annotations:
    reloader.stakater.com/rollout-strategy: restart
    secretproviderclass.reloader.stakater.com/auto: "true"
spec:
  workloadRef: {apiVersion: apps/v1, kind: Deployment, name: canary-template}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: canary-template}
spec:
  selector: {matchLabels: {app: canary}}
  template:
    metadata: {labels: {app: canary}}
    spec:
      volumes:
        - name: secrets
          csi: {driver: secrets-store.csi.k8s.io, volumeAttributes: {secretProviderClass: vault}}
      containers: [{name: app, image: app, volumeMounts: [{name: secrets, mountPath: /mnt}]}]
---
apiVersion: v1
kind: Service
metadata:
  name: web
  annotations: {example.com/reloader: anything, internal.ripple.dev/sha1: abc}
spec:
  ports: [{port: 80}]
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: shared
  annotations: {ripple.dev/canary: "1", ripple.dev/canary-bake: 10m, ripple.dev/canary-resume: shared-0123456789}
---
apiVersion: v1
kind: Secret
metadata:
  name: shared-creds
  annotations: {ripple.dev/canary: 10%, ripple.dev/canary-resume: db-config-abcdef0123}
---
apiVersion: v1
kind: Namespace
metadata:
  name: shop
  annotations: {ripple.dev/canary: " 25% ", ripple.dev/canary-bake: 0s}
---
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: agent
  annotations: {reloader.stakater.com/auto: "true", ripple.dev/canary-first: "true"}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec: {containers: [{name: agent, image: agent, envFrom: [{configMapRef: {name: shared}}]}]}
`

func TestCheck(t *testing.T) {
	tests := []struct {
		name      string
		manifests string
		want      []Finding
	}{
		{name: "clean manifests", manifests: clean},
		{
			name: "unknown keys of the family, with the closest known key",
			manifests: configs + web(
				`{reloader.stakater.com/atuo: "true", ripple.dev/settle-windw: 5s, example.com/auto: "true"}`,
				`{configmap.reloader.stakater.com/relaod: app-config}`) + `---
apiVersion: v1
kind: ConfigMap
metadata:
  name: tuned
  annotations: {reloader.stakater.com/matc: "true"}
`,
			want: []Finding{
				{Error, "ConfigMap shop/tuned", "reloader.stakater.com/matc", `unknown annotation "reloader.stakater.com/matc"; did you mean "reloader.stakater.com/match"?`},
				{Error, "Deployment shop/web", "configmap.reloader.stakater.com/relaod", `unknown pod template annotation "configmap.reloader.stakater.com/relaod"; did you mean "configmap.reloader.stakater.com/reload"?`},
				{Error, "Deployment shop/web", "reloader.stakater.com/atuo", `unknown annotation "reloader.stakater.com/atuo"; did you mean "reloader.stakater.com/auto"?`},
				{Error, "Deployment shop/web", "ripple.dev/settle-windw", `unknown annotation "ripple.dev/settle-windw"; did you mean "ripple.dev/settle-window"?`},
			},
		},
		{
			name: "reload windows: invalid on a workload, its template or a Namespace is an error naming the position",
			manifests: configs + web(
				`{ripple.dev/reload-window: "Mon-Fry 02:00-04:00 Europe/Berlin", reloader.stakater.com/auto: "true"}`,
				`{ripple.dev/reload-window: "02:00-04:00 Mars/Base"}`) + `---
apiVersion: v1
kind: Namespace
metadata:
  name: shop
  annotations: {ripple.dev/reload-window: "Sat 25:00-03:00"}
---
apiVersion: v1
kind: Namespace
metadata:
  name: fine
  annotations: {ripple.dev/reload-window: "Sat,Sun 00:00-24:00 UTC"}
`,
			want: []Finding{
				{Error, "Deployment shop/web", "ripple.dev/reload-window", `annotation "ripple.dev/reload-window": "02:00-04:00 Mars/Base" is not a reload window: at character 13 (window 1): unknown time zone "Mars/Base": expected an IANA name such as UTC or Europe/Berlin; Ripple defers every reload until it is fixed`},
				{Error, "Deployment shop/web", "ripple.dev/reload-window", `annotation "ripple.dev/reload-window": "Mon-Fry 02:00-04:00 Europe/Berlin" is not a reload window: at character 5 (window 1): expected a day such as Fri after "Mon-", found "Fry"; Ripple defers every reload until it is fixed`},
				{Error, "Namespace shop", "ripple.dev/reload-window", `annotation "ripple.dev/reload-window": "Sat 25:00-03:00" is not a reload window: at character 5 (window 1): expected a time HH:MM such as 02:00, found "25:00"; Ripple defers every reload until it is fixed`},
			},
		},
		{
			name:      "in-place on a template whose pods cannot be restarted in place",
			manifests: configs + web(`{reloader.stakater.com/auto: "true", ripple.dev/restart-method: in-place}`, `{}`),
			want: []Finding{
				{Warning, "Deployment shop/web", "ripple.dev/restart-method", "restart method in-place, but a pod of this template cannot be restarted in place: no container has a resizePolicy of RestartContainer; such pods keep their old configuration at a reload"},
			},
		},
		{
			name: "in-place settings: an invalid container name or fallback is a warning naming the default",
			manifests: configs + web(
				`{reloader.stakater.com/auto: "true", ripple.dev/restart-method: in-place, ripple.dev/restart-containers: "app, Side_Car", ripple.dev/in-place-fallback: delete}`,
				`{}`),
			want: []Finding{
				{Warning, "Deployment shop/web", "ripple.dev/in-place-fallback", `annotation "ripple.dev/in-place-fallback": "delete" is not "none" or "evict", so Ripple uses "none"`},
				{Warning, "Deployment shop/web", "ripple.dev/restart-containers", `annotation "ripple.dev/restart-containers": "app, Side_Car" is not a list of container names ("Side_Car" is not a container name: a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')), so Ripple restarts the containers with a RestartContainer resizePolicy`},
				{Warning, "Deployment shop/web", "ripple.dev/restart-method", "restart method in-place, but a pod of this template cannot be restarted in place: no container has a resizePolicy of RestartContainer; such pods keep their old configuration at a reload"},
			},
		},
		{
			name:      "a reload action on a template that reads its config as environment variables",
			manifests: configs + web(`{reloader.stakater.com/auto: "true", ripple.dev/reload-action: ":9090/-/reload"}`, `{}`),
			want: []Finding{
				{Warning, "Deployment shop/web", "ripple.dev/reload-action", "a reload action cannot deliver a change of what this template reads: container app reads ConfigMap app-config as environment variables, which never change in a running container; Ripple reloads it by its restart method instead"},
			},
		},
		{
			name:      "in-place and a reload action on a template whose env var an init container writes from a config (fileKeyRef)",
			manifests: configs + fileKeyWeb(`{reloader.stakater.com/auto: "true", ripple.dev/restart-method: in-place, ripple.dev/reload-action: ":9090/-/reload"}`),
			want: []Finding{
				{Warning, "Deployment shop/web", "ripple.dev/reload-action", "a reload action cannot deliver a change of what this template reads: container app reads env var DB_URL from a file (fileKeyRef) in emptyDir volume env, which init container render writes from ConfigMap app-config; init containers run again only in a new pod; Ripple reloads it by its restart method instead"},
				{Warning, "Deployment shop/web", "ripple.dev/restart-method", "restart method in-place, but a restart in place cannot deliver a change of what this template reads: container app reads env var DB_URL from a file (fileKeyRef) in emptyDir volume env, which init container render writes from ConfigMap app-config; init containers run again only in a new pod; Ripple reloads it by writing the pod template instead"},
			},
		},
		{
			name:      "reload-action settings: an invalid action or delay is a warning naming the default",
			manifests: configs + web(`{reloader.stakater.com/auto: "true", ripple.dev/reload-action: "9090/-/reload", ripple.dev/reload-delay: 2h}`, `{}`),
			want: []Finding{
				{Warning, "Deployment shop/web", "ripple.dev/reload-action", `annotation "ripple.dev/reload-action": "9090/-/reload" is not a reload action ("9090/-/reload" is not a reload action such as ":9090/-/reload" or "PUT :http/reload" (a colon, the port, then the path)), so Ripple reloads by the restart method`},
				{Warning, "Deployment shop/web", "ripple.dev/reload-delay", `annotation "ripple.dev/reload-delay": "2h" is not a duration from 0 to 1h0m0s, so Ripple waits 2m0s`},
			},
		},
		{
			name: "named reloads that match nothing in the namespace",
			manifests: configs + web(
				`{configmap.reloader.stakater.com/reload: "app-config, missing, gone-.*", secret.reloader.stakater.com/reload: elsewhere}`, `{}`) + `---
apiVersion: v1
kind: Secret
metadata: {name: elsewhere, namespace: other}
`,
			want: []Finding{
				{Warning, "Deployment shop/web", "configmap.reloader.stakater.com/reload", `annotation "configmap.reloader.stakater.com/reload": "gone-.*" matches no ConfigMap in the files; Ripple reloads the workload when one is created`},
				{Warning, "Deployment shop/web", "configmap.reloader.stakater.com/reload", `annotation "configmap.reloader.stakater.com/reload": "missing" matches no ConfigMap in the files; Ripple reloads the workload when one is created`},
				{Warning, "Deployment shop/web", "secret.reloader.stakater.com/reload", `annotation "secret.reloader.stakater.com/reload": "elsewhere" matches no Secret in the files; Ripple reloads the workload when one is created`},
			},
		},
		{
			name: "cross-namespace references: found in their namespace, malformed ones flagged",
			manifests: configs + web(
				`{configmap.reloader.stakater.com/reload: "mesh/ca, mesh/gone, a/b/c", secret.reloader.stakater.com/reload: "Mesh/tls"}`, `{}`) + `---
apiVersion: v1
kind: ConfigMap
metadata: {name: ca, namespace: mesh, annotations: {ripple.dev/shared-with: shop}}
`,
			want: []Finding{
				{Error, "Deployment shop/web", "configmap.reloader.stakater.com/reload", `annotation "configmap.reloader.stakater.com/reload": malformed reference "a/b/c": a reference to another namespace is namespace/name, with one "/"`},
				{Error, "Deployment shop/web", "secret.reloader.stakater.com/reload", `annotation "secret.reloader.stakater.com/reload": malformed reference "Mesh/tls": "Mesh" is not a namespace name (lower-case letters, digits and "-", at most 63)`},
				{Warning, "Deployment shop/web", "configmap.reloader.stakater.com/reload", `annotation "configmap.reloader.stakater.com/reload": "mesh/gone" matches no ConfigMap in the files; Ripple reloads the workload when one is created`},
			},
		},
		{
			name: "named reloads read from the pod template",
			manifests: configs + web(`{}`,
				`{secretproviderclass.reloader.stakater.com/reload: vault-.*}`),
			want: []Finding{
				{Warning, "Deployment shop/web", "secretproviderclass.reloader.stakater.com/reload", `annotation "secretproviderclass.reloader.stakater.com/reload": "vault-.*" matches no SecretProviderClass in the files; Ripple reloads the workload when one is created`},
			},
		},
		{
			name:      "typed auto on a kind the template does not reference",
			manifests: configs + web(`{secret.reloader.stakater.com/auto: "true", configmap.reloader.stakater.com/auto: "true"}`, `{}`),
			want: []Finding{
				{Warning, "Deployment shop/web", "secret.reloader.stakater.com/auto", `annotation "secret.reloader.stakater.com/auto" is true but the pod template references no Secret`},
			},
		},
		{
			name:      "typed auto read from the template, and false typed auto",
			manifests: configs + web(`{}`, `{secretproviderclass.reloader.stakater.com/auto: "true", secret.reloader.stakater.com/auto: "false"}`),
			want: []Finding{
				{Warning, "Deployment shop/web", "secretproviderclass.reloader.stakater.com/auto", `annotation "secretproviderclass.reloader.stakater.com/auto" is true but the pod template references no SecretProviderClass`},
			},
		},
		{
			name: "trigger keys on the template that the metadata shadows, per kind",
			manifests: configs + web(`{secret.reloader.stakater.com/reload: db-creds}`,
				`{reloader.stakater.com/auto: "true", configmap.reloader.stakater.com/auto: "true", secret.reloader.stakater.com/auto: "true"}`),
			want: []Finding{
				{Warning, "Deployment shop/web", "reloader.stakater.com/auto", `pod template annotation "reloader.stakater.com/auto" is ignored for Secrets: the workload's metadata has reload annotations for them, and then only those count`},
				{Warning, "Deployment shop/web", "secret.reloader.stakater.com/auto", `pod template annotation "secret.reloader.stakater.com/auto" is ignored for Secrets: the workload's metadata has reload annotations for them, and then only those count`},
			},
		},
		{
			name:      "auto on the metadata shadows auto on the template for every kind",
			manifests: configs + web(`{reloader.stakater.com/auto: "false"}`, `{reloader.stakater.com/auto: "true"}`),
			want: []Finding{
				{Warning, "Deployment shop/web", "reloader.stakater.com/auto", `pod template annotation "reloader.stakater.com/auto" is ignored for ConfigMaps, Secrets and SecretProviderClasses: the workload's metadata has reload annotations for them, and then only those count`},
			},
		},
		{
			name: "auto on a template that references nothing",
			manifests: `---
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: agent
  annotations: {reloader.stakater.com/auto: "true"}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec: {containers: [{name: agent, image: agent}]}
`,
			want: []Finding{
				{Warning, "DaemonSet shop/agent", "reloader.stakater.com/auto", `annotation "reloader.stakater.com/auto" is true but the pod template references no ConfigMap, Secret or SecretProviderClass`},
			},
		},
		{
			name:      "patterns that do not compile",
			manifests: configs + web(`{configmap.reloader.stakater.com/reload: "app-config, app-(, [z-a], (a{30}b{30}){30}", ripple.dev/reload-on-keys: "app-config[(k{30}j{30}){30}]"}`, `{}`),
			want: []Finding{
				{Error, "Deployment shop/web", "configmap.reloader.stakater.com/reload", `annotation "configmap.reloader.stakater.com/reload": invalid pattern "(a{30}b{30}){30}": compiles to more than 300 instructions`},
				{Error, "Deployment shop/web", "configmap.reloader.stakater.com/reload", `annotation "configmap.reloader.stakater.com/reload": invalid pattern "[z-a]": error parsing regexp: invalid character class range: ` + "`z-a`"},
				{Error, "Deployment shop/web", "configmap.reloader.stakater.com/reload", `annotation "configmap.reloader.stakater.com/reload": invalid pattern "app-(": error parsing regexp: missing closing ): ` + "`app-(`"},
				{Warning, "Deployment shop/web", "ripple.dev/reload-on-keys", `annotation "ripple.dev/reload-on-keys": "app-config[(k{30}j{30}){30}]" is invalid ("app-config[(k{30}j{30}){30}]": invalid key pattern "(k{30}j{30}){30}": compiles to more than 300 instructions), so any data change reloads`},
			},
		},
		{
			name:      "an invalid label selector",
			manifests: configs + web(`{ripple.dev/configmap-selector: "team in (a"}`, `{ripple.dev/secret-selector: "team=a"}`),
			want: []Finding{
				{Warning, "Deployment shop/web", "ripple.dev/configmap-selector", `annotation "ripple.dev/configmap-selector": "team in (a" is not a valid label selector (unable to parse requirement: found '', expected: ',' or ')'), so it selects no config`},
			},
		},
		{
			name: "keys on the wrong kind of object",
			manifests: web(
				`{reloader.stakater.com/match: "true", reloader.stakater.com/rollout-strategy: restart}`,
				`{configmaps.exclude.reloader.stakater.com/reload: app-config, ripple.dev/settle-window: 5s}`) + `---
apiVersion: v1
kind: ConfigMap
metadata:
  name: app-config
  annotations: {reloader.stakater.com/auto: "true"}
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: db
  annotations: {deployment.reloader.stakater.com/pause-period: 5m, ripple.dev/cronjob-reload: run}
spec:
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: db, image: db}]}
---
apiVersion: v1
kind: Pod
metadata:
  name: one-off
  annotations: {reloader.stakater.com/auto: "true", reloader.stakater.com/atuo: "true"}
spec: {containers: [{name: app, image: app}]}
`,
			want: []Finding{
				{Warning, "ConfigMap shop/app-config", "reloader.stakater.com/auto", `annotation "reloader.stakater.com/auto" goes on the workload that uses the config, not on a ConfigMap`},
				{Warning, "Deployment shop/web", "configmaps.exclude.reloader.stakater.com/reload", `annotation "configmaps.exclude.reloader.stakater.com/reload" is read from the workload's metadata, not from its pod template`},
				{Warning, "Deployment shop/web", "reloader.stakater.com/match", `annotation "reloader.stakater.com/match" goes on a ConfigMap or Secret, not on a Deployment`},
				{Warning, "Deployment shop/web", "reloader.stakater.com/rollout-strategy", `annotation "reloader.stakater.com/rollout-strategy" has no effect on a Deployment, only on a Rollout`},
				{Warning, "Deployment shop/web", "ripple.dev/settle-window", `annotation "ripple.dev/settle-window" is read from the workload's metadata, not from its pod template`},
				// Unknown keys are for workloads and configs only, and the
				// namespace is defaulted for the kinds Ripple reads only.
				{Warning, "Pod one-off", "reloader.stakater.com/auto", `annotation "reloader.stakater.com/auto" has no effect: Ripple does not reload a Pod of v1`},
				{Warning, "StatefulSet shop/db", "deployment.reloader.stakater.com/pause-period", `annotation "deployment.reloader.stakater.com/pause-period" has no effect on a StatefulSet, only on a Deployment`},
				{Warning, "StatefulSet shop/db", "ripple.dev/cronjob-reload", `annotation "ripple.dev/cronjob-reload" has no effect on a StatefulSet, only on a CronJob`},
			},
		},
		{
			name: "a workload kind in a version Ripple does not read",
			manifests: `---
apiVersion: extensions/v1beta1
kind: Deployment
metadata:
  name: old
  annotations: {reloader.stakater.com/auto: "true"}
`,
			want: []Finding{
				{Warning, "Deployment old", "reloader.stakater.com/auto", `annotation "reloader.stakater.com/auto" has no effect: Ripple does not reload a Deployment of extensions/v1beta1`},
			},
		},
		{
			name: "values Ripple reads as false or ignores",
			manifests: configs + web(
				`{reloader.stakater.com/auto: "yes", reloader.stakater.com/search: "True", ripple.dev/settle-window: 5 minutes, deployment.reloader.stakater.com/pause-period: "-1s"}`, `{}`) + `---
apiVersion: batch/v1
kind: CronJob
metadata:
  name: nightly
  annotations: {ripple.dev/cronjob-reload: now}
spec:
  schedule: "0 3 * * *"
  jobTemplate: {spec: {template: {spec: {restartPolicy: Never, containers: [{name: run, image: run}]}}}}
`,
			want: []Finding{
				{Warning, "CronJob shop/nightly", "ripple.dev/cronjob-reload", `annotation "ripple.dev/cronjob-reload": "now" is not "run" or "template", so Ripple ignores it`},
				{Warning, "Deployment shop/web", "deployment.reloader.stakater.com/pause-period", `annotation "deployment.reloader.stakater.com/pause-period": "-1s" is not a duration such as 30s or 5m, so Ripple ignores it`},
				{Warning, "Deployment shop/web", "reloader.stakater.com/auto", `annotation "reloader.stakater.com/auto": "yes" is not true or false, so it means false`},
				{Warning, "Deployment shop/web", "reloader.stakater.com/search", `annotation "reloader.stakater.com/search": "True" is not "true", so it means false`},
				{Warning, "Deployment shop/web", "ripple.dev/settle-window", `annotation "ripple.dev/settle-window": "5 minutes" is not a duration such as 30s or 5m, so Ripple ignores it`},
			},
		},
		{
			name:      "an invalid reload policy is an error; a valid one on the pod template is fine",
			manifests: configs + web(`{reloader.stakater.com/auto: "true", ripple.dev/reload-policy: sometimes}`, `{ripple.dev/reload-policy: Manual}`),
			want: []Finding{
				{Error, "Deployment shop/web", "ripple.dev/reload-policy", `annotation "ripple.dev/reload-policy": "sometimes" is not a reload policy (auto, manual or notify), so every reload waits for an approval`},
			},
		},
		{
			name: "canary annotations: invalid values, and keys on the wrong kind of object",
			manifests: configs + web(`{reloader.stakater.com/auto: "true", ripple.dev/canary: "1", ripple.dev/canary-first: "yes"}`, `{ripple.dev/canary-first: "true"}`) + `---
apiVersion: v1
kind: ConfigMap
metadata:
  name: shared
  annotations: {ripple.dev/canary: ten, ripple.dev/canary-bake: 48h, ripple.dev/canary-resume: latest, ripple.dev/canary-first: "true"}
---
apiVersion: v1
kind: Namespace
metadata:
  name: shop
  annotations: {ripple.dev/canary: 0%, ripple.dev/canary-resume: shared-0123456789}
`,
			want: []Finding{
				{Warning, "ConfigMap shop/shared", "ripple.dev/canary", `annotation "ripple.dev/canary": "ten" is not a number of workloads (such as 1) or a percentage from 1% to 100%, so the next default applies (the Namespace's value, else --canary)`},
				{Warning, "ConfigMap shop/shared", "ripple.dev/canary-bake", `annotation "ripple.dev/canary-bake": "48h" is not a duration from 0s to 24h, so the next default applies (the Namespace's value, else --canary-bake)`},
				{Warning, "ConfigMap shop/shared", "ripple.dev/canary-first", `annotation "ripple.dev/canary-first" goes on the workload that uses the config, not on a ConfigMap`},
				{Warning, "ConfigMap shop/shared", "ripple.dev/canary-resume", `annotation "ripple.dev/canary-resume": "latest" does not name a ConfigRollout (<config>-<10 hex digits>, as ripple resume writes it), so it continues no halted change`},
				{Warning, "Deployment shop/web", "ripple.dev/canary", `annotation "ripple.dev/canary" goes on a ConfigMap or Secret, not on a Deployment`},
				{Warning, "Deployment shop/web", "ripple.dev/canary-first", `annotation "ripple.dev/canary-first" is read from the workload's metadata, not from its pod template`},
				{Warning, "Deployment shop/web", "ripple.dev/canary-first", `annotation "ripple.dev/canary-first": "yes" is not "true", so it means false`},
				{Warning, "Namespace shop", "ripple.dev/canary", `annotation "ripple.dev/canary": "0%" is not a number of workloads (such as 1) or a percentage from 1% to 100%, so the next default applies (the Namespace's value, else --canary)`},
				{Warning, "Namespace shop", "ripple.dev/canary-resume", `annotation "ripple.dev/canary-resume" goes on a ConfigMap or Secret, not on a Namespace`},
			},
		},
		{
			name: "pinning: a value not true, on the template, or on a config",
			manifests: configs + web(`{reloader.stakater.com/auto: "true", ripple.dev/pin: "yes"}`, `{ripple.dev/pin: "true"}`) + `---
apiVersion: v1
kind: ConfigMap
metadata:
  name: pinned
  annotations: {ripple.dev/pin: "true"}
---
apiVersion: v1
kind: Namespace
metadata:
  name: shop
  annotations: {ripple.dev/pin: " true "}
`,
			want: []Finding{
				{Warning, "ConfigMap shop/pinned", "ripple.dev/pin", `annotation "ripple.dev/pin" goes on the workload that uses the config, not on a ConfigMap`},
				{Warning, "Deployment shop/web", "ripple.dev/pin", `annotation "ripple.dev/pin" is read from the workload's metadata, not from its pod template`},
				{Warning, "Deployment shop/web", "ripple.dev/pin", `annotation "ripple.dev/pin": "yes" is not "true", so it means false`},
			},
		},
		{
			name: "search with no matched config among the referenced ones in the files",
			manifests: web(`{reloader.stakater.com/search: "true"}`, `{}`) + `---
apiVersion: v1
kind: ConfigMap
metadata: {name: app-config}
`,
			want: []Finding{
				{Warning, "Deployment shop/web", "reloader.stakater.com/search", `annotation "reloader.stakater.com/search" is true but no config the pod template references in the files has "reloader.stakater.com/match" set to "true"`},
			},
		},
		{
			// The referenced config may live outside the files.
			name:      "search with the referenced config outside the files",
			manifests: web(`{reloader.stakater.com/search: "true"}`, `{}`),
		},
		{
			name: "Rollout: its own template, a bad template, a workloadRef outside the files",
			manifests: configs + `---
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata:
  name: own
  annotations: {secret.reloader.stakater.com/auto: "true"}
spec:
  template:
    metadata: {annotations: {reloader.stakater.com/serch: "true"}}
    spec: {containers: [{name: app, image: app}]}
---
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: broken}
spec:
  template: {spec: {containers: "not a list"}}
---
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata:
  name: by-ref
  annotations: {secret.reloader.stakater.com/auto: "true", configmap.reloader.stakater.com/reload: nothing}
spec:
  workloadRef: {apiVersion: apps/v1, kind: Deployment, name: not-here}
`,
			want: []Finding{
				{Error, "Rollout shop/broken", "", "Rollout shop/broken: spec.template is not a pod template: cannot restore slice from string"},
				{Warning, "Rollout shop/by-ref", "configmap.reloader.stakater.com/reload", `annotation "configmap.reloader.stakater.com/reload": "nothing" matches no ConfigMap in the files; Ripple reloads the workload when one is created`},
				{Error, "Rollout shop/own", "reloader.stakater.com/serch", `unknown pod template annotation "reloader.stakater.com/serch"; did you mean "reloader.stakater.com/search"?`},
				{Warning, "Rollout shop/own", "secret.reloader.stakater.com/auto", `annotation "secret.reloader.stakater.com/auto" is true but the pod template references no Secret`},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Check(t.Context(), annotation.DefaultKeys(""), load(t, tt.manifests))
			if !slices.Equal(got, tt.want) {
				t.Errorf("Check =\n%s\nwant\n%s", show(got), show(tt.want))
			}
			if HasErrors(got) != slices.ContainsFunc(tt.want, func(f Finding) bool { return f.Severity == Error }) {
				t.Errorf("HasErrors = %v", HasErrors(got))
			}
		})
	}
}

func show(fs []Finding) string {
	var b strings.Builder
	for _, f := range fs {
		fmt.Fprintf(&b, "  %s %s [%s] %s\n", f.Severity, f.Object, f.Key, f.Message)
	}
	return b.String()
}

func TestCheckRenamedKeys(t *testing.T) {
	// With --annotation-prefix and renamed Reloader keys, the keys are the
	// configured ones: Reloader's defaults are then unknown to Ripple.
	keys := annotation.DefaultKeys("example.com")
	keys.Auto = "reloader.stakater.com/autos"
	objs := load(t, configs+web(
		`{reloader.stakater.com/autos: "true", example.com/settle-window: 5s, ripple.dev/settle-window: 5s, reloader.stakater.com/auto: "true"}`, `{}`))
	want := []Finding{
		{Error, "Deployment shop/web", "reloader.stakater.com/auto", `unknown annotation "reloader.stakater.com/auto"; did you mean "reloader.stakater.com/autos"?`},
	}
	if got := Check(t.Context(), keys, objs); !slices.Equal(got, want) {
		t.Errorf("Check =\n%s\nwant\n%s", show(got), show(want))
	}
}

func TestCheckTypedObjectsWithoutTypeMeta(t *testing.T) {
	// Objects from a client carry no kind; they are recognised by type.
	objs := []client.Object{
		&appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", Annotations: map[string]string{"reloader.stakater.com/atuo": "true"}},
		},
		&corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "shop", Annotations: map[string]string{"reloader.stakater.com/search": "true"}},
		},
	}
	want := []Finding{
		{Warning, "ConfigMap shop/cfg", "reloader.stakater.com/search", `annotation "reloader.stakater.com/search" goes on the workload that uses the config, not on a ConfigMap`},
		{Error, "Deployment shop/web", "reloader.stakater.com/atuo", `unknown annotation "reloader.stakater.com/atuo"; did you mean "reloader.stakater.com/auto"?`},
	}
	if got := Check(t.Context(), annotation.DefaultKeys(""), objs); !slices.Equal(got, want) {
		t.Errorf("Check =\n%s\nwant\n%s", show(got), show(want))
	}
}

func TestFindingsNeverQuoteSecretData(t *testing.T) {
	objs := load(t, `---
apiVersion: v1
kind: Secret
metadata:
  name: s
  annotations: {reloader.stakater.com/auto: "true", reloader.stakater.com/matc: "true"}
stringData: {password: hunter2}
`)
	got := Check(t.Context(), annotation.DefaultKeys(""), objs)
	if len(got) != 2 {
		t.Fatalf("Check =\n%s\nwant the misplaced auto and the unknown key", show(got))
	}
	for _, f := range got {
		if strings.Contains(f.Message, "hunter2") {
			t.Errorf("finding quotes Secret data: %s", f.Message)
		}
	}
}

func TestHasErrors(t *testing.T) {
	if HasErrors(nil) {
		t.Error("HasErrors(nil) = true")
	}
	if HasErrors([]Finding{{Severity: Warning}}) {
		t.Error("HasErrors(warning) = true")
	}
	if !HasErrors([]Finding{{Severity: Warning}, {Severity: Error}}) {
		t.Error("HasErrors(warning, error) = false")
	}
}

// TestCheckChartOutput lints the Helm chart's rendered golden manifests:
// Ripple's own Deployment carries none of the family's annotations, so
// there is nothing to find.
func TestCheckChartOutput(t *testing.T) {
	files, err := filepath.Glob("../../test/chart/testdata/golden/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no chart golden files (%v)", err)
	}
	objs, err := manifest.Load(files, nil, "")
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if got := Check(t.Context(), annotation.DefaultKeys(""), objs); len(got) != 0 {
		t.Errorf("Check on the chart's output =\n%s\nwant nothing", show(got))
	}
}
