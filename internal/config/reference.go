package config

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"

	"github.com/ripple-dev/ripple/internal/annotation"
	"github.com/ripple-dev/ripple/internal/reason"
	"github.com/ripple-dev/ripple/internal/workload"
)

// EnvVar is an environment variable Ripple reads.
type EnvVar struct{ Name, Meaning string }

// EnvVars lists the environment variables ReadEnv reads, and Reloader's
// POD_NAME, which it does not.
func EnvVars() []EnvVar {
	return []EnvVar{
		{"KUBERNETES_NAMESPACE", "Single-namespace mode: watch only this namespace, unless --namespaces is set."},
		{"POD_NAME", "Not read (Reloader needs it with --enable-ha): the Lease holder's identity is the host name and a unique suffix."},
		{"POD_NAMESPACE", "Ripple's own namespace (set it from metadata.namespace): the Job re-create records are kept there, and with --enable-ha the Lease. Unset: the pod's namespace, or \"default\" out of a cluster."},
		{"RELOADER_NAMESPACE", "Publish Reloader's reloader-meta-info ConfigMap (build info, options, deployment) in this namespace; written by the leader."},
		{"RELOADER_DEPLOYMENT_NAME", "The Deployment name shown in reloader-meta-info."},
		{"METRICS_COUNT_BY_NAMESPACE", "enabled: also count reloads by namespace in reloader_reload_executed_total_by_namespace."},
		{"RIPPLE_WEBHOOK_URL", "The --webhook-url, when the flag is not given: set it from a Secret (the Helm chart does), so that a token in the URL is not in the Deployment's arguments. Never logged."},
		{"ALERT_ON_RELOAD", "true (the exact word, as in Reloader): send an alert after each rollout, naming every config it carries; also when the storm breaker holds a workload, another manager reverts a reload, a change waits for a reload window or an approval, the notify policy leaves a change unrolled, a rollout Ripple started stalls, and a canary halts a change (about the config; docs/alerts.md lists them all). Or --alert-on-reload. Without a valid ALERT_WEBHOOK_URL Ripple starts, logs once that alerts are off and why, and sends none, as Reloader does."},
		{"ALERT_SINK", "slack, teams or gchat (Reloader's payloads); anything else sends raw text. Or --alert-sink."},
		{"ALERT_WEBHOOK_URL", "Where alerts go; needed with ALERT_ON_RELOAD=true. Or --alert-webhook-url. Never logged."},
		{"ALERT_WEBHOOK_PROXY", "HTTP proxy for alerts. Or $ALERT_PROXY (Reloader 2's name), or --alert-proxy."},
		{"ALERT_PROXY", "The same as ALERT_WEBHOOK_PROXY (Reloader 2 reads both)."},
		{"ALERT_ADDITIONAL_INFO", "Text put before each alert as \"<info> : \". Or --alert-additional-info."},
		{"ALERT_STRUCTURED", "true: the raw sink sends JSON instead of text (Reloader 2's --alert-structured, which it also reads from this variable)."},
		{"OTEL_EXPORTER_OTLP_ENDPOINT", "Export one OpenTelemetry trace per change to this OTLP/HTTP collector (docs/tracing.md); or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT. Unset (and OTEL_TRACES_EXPORTER not otlp): no tracing, at no cost. The other OTEL_EXPORTER_OTLP_* variables (headers, TLS, timeout, compression), OTEL_SERVICE_NAME and OTEL_BSP_* apply as the OpenTelemetry SDK reads them. Helm: ripple.tracing.endpoint."},
		{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "The trace endpoint's full URL (…/v1/traces): turns tracing on as OTEL_EXPORTER_OTLP_ENDPOINT does."},
		{"OTEL_TRACES_EXPORTER", "otlp turns tracing on (at the SDK's default endpoint, localhost:4318, unless one is set); none turns it off; any other exporter is refused at start. OTEL_SDK_DISABLED=true turns it off too."},
		{"KUBECONFIG", "Kubeconfig file when --kubeconfig is not set; else the in-cluster config, then $HOME/.kube/config."},
	}
}

// annotationDocs describes every annotation key, by the key Keys holds.
func annotationDocs(k annotation.Keys) [][3]string {
	return [][3]string{
		{k.Auto, "workload", `"true" reloads on every referenced ConfigMap and Secret. Any non-empty value, even "false", opts the workload out of --auto-reload-all.`},
		{k.ConfigMapAuto, "workload", "As the auto annotation, for ConfigMaps only."},
		{k.SecretAuto, "workload", "As the auto annotation, for Secrets only."},
		{k.SecretProviderClassAuto, "workload", "As the auto annotation, for SecretProviderClasses mounted through the Secrets Store CSI driver (--enable-csi-integration)."},
		{k.ConfigMapReload, "workload", "Comma list of ConfigMaps that reload the workload, referenced or not. An item made of name characters is an exact name; \"<namespace>/<name>\" names a config of another namespace, followed only while it is shared with the workload's (its shared-with annotation; docs/cross-namespace.md); anything else is an anchored regular expression."},
		{k.SecretReload, "workload", "As above, for Secrets."},
		{k.SecretProviderClassReload, "workload", "As above, for SecretProviderClasses mounted through the Secrets Store CSI driver (--enable-csi-integration)."},
		{k.Search, "workload", `"true": reload on referenced configs that carry the match annotation.`},
		{k.Match, "config", `"true": search workloads reload on this config.`},
		{k.Ignore, "config", `"true": this config never reloads anything.`},
		{k.ConfigMapSelector, "workload (metadata, else pod template)", fmt.Sprintf("A label selector in kubectl's syntax (\"team=a\", \"tier in (web,api),!legacy\"): every ConfigMap of the workload's namespace whose labels match reloads it as if named in the reload annotation, and one created or deleted while selected rolls it too (without --reload-on-create or --reload-on-delete). "+
			"A selector matching more than %d ConfigMaps is refused (a SelectorTooBroad Warning naming the annotation and the count); an invalid one is an InvalidAnnotation Warning. Either way the workload's other configs still reload it. See docs/selectors.md.", annotation.MaxSelected)},
		{k.SecretSelector, "workload (metadata, else pod template)", "As above, for Secrets."},
		{k.ConfigMapExclude, "workload (metadata only)", fmt.Sprintf("Comma list of ConfigMap names that never reload the workload; beats every other annotation. "+
			"A list of more than %d items fails closed: it excludes every ConfigMap, with a Warning naming it.", annotation.MaxItems)},
		{k.SecretExclude, "workload (metadata only)", "As above, for Secrets."},
		{k.SecretProviderClassExclude, "workload (metadata only)", "As above, for SecretProviderClasses."},
		{k.RolloutStrategy, "Argo Rollout (metadata)", `"restart" sets spec.restartAt and leaves the template alone (for GitOps); anything else patches the template.`},
		{k.PausePeriod, "Deployment (metadata)", "A duration such as 5m: a reload pauses the Deployment (spec.paused) and it is resumed this long after, so the reloads of the period roll out once. An invalid value is a Warning event and the reload happens without a pause."},
		{k.PausedAt, "Deployment, written by Ripple", "RFC 3339 time the pause started; the resume is scheduled from it, so it holds across restarts. Without it a paused Deployment is the user's, and Ripple never resumes it."},
		{annotation.LastReloadedFrom, "pod template, written by Ripple", "With --reload-strategy=annotations: the last reload, as Reloader's JSON {type,name,namespace,hash,containerRefs,observedAt}."},
		{k.SettleWindow, "workload", "Overrides --settle-window for this workload, e.g. 0s or 30s. An invalid value is a Warning event and the flag's value applies."},
		{k.ReloadOnKeys, "workload (metadata, else pod template)", `Per-key reload: "true" rolls the workload only when the keys it uses change (an env var's valueFrom key, a volume's items; a config used whole by envFrom or a volume without items counts every key). A comma list may also give keys per config: "app-config[db.url,feature.*], secret/tls[ca.crt]" (a bare name means the ConfigMap and the Secret; a key made of key characters is exact, anything else an anchored regular expression). "false" or absent: any data change rolls, as with Reloader. An invalid value is a Warning event and any data change rolls. See docs/per-key-reload.md.`},
		{k.AppliedAlias, "workload, written by Ripple", "With the reload-on-keys annotation switched on or off, or after a rollback of the pod template: JSON of which current digest the value shown on the pod template stands for, so that switching (or the rollback) rolls nothing by itself. Metadata only."},
		{k.MinRolloutInterval, "workload", "Overrides --min-rollout-interval for this workload, e.g. 0s or 10m. An invalid value is a Warning event and the flag's value applies."},
		{k.CronJobReload, "CronJob", `"run" or "template": overrides --cronjob-reload for this CronJob. An invalid value is a Warning event and the flag's value applies.`},
		{k.ReloadWindow, "workload, pod template or Namespace", `When a reload may roll the workload, overriding --reload-window (a workload's value beats its template's, which beats its Namespace's, read with --namespace-defaults): e.g. "Mon-Fri 02:00-04:00 Europe/Berlin", several windows separated by ";"; empty or "always" means no window. A change outside the window is deferred to its next opening. See docs/change-policies.md.`},
		{k.RestartMethod, "Deployment, StatefulSet or DaemonSet (metadata, else pod template), or Namespace", `"template", "evict", "delete" or "in-place": overrides --restart-method for this workload, with the same precedence as the reload window (a Namespace's value is read with --namespace-defaults). evict and delete leave the pod template alone and restart the pods themselves, up to max-unavailable at a time, waiting for each replacement to be ready; evict honours PodDisruptionBudgets. in-place restarts containers in their pods (same pod, node and volumes) by resizing a resource whose resizePolicy is RestartContainer through pods/resize, up to max-unavailable pods at a time; it delivers environment values, not subPath files; a workload with an env var read by fileKeyRef from a file an init container writes from a watched config gets an InvalidAnnotation Warning and reloads by the template write. An invalid value is a Warning event and the flag's value applies; on other kinds it is a Warning event and the kind's own method applies. See docs/restart-methods.md.`},
		{k.MaxUnavailable, "Deployment, StatefulSet or DaemonSet (metadata, else pod template), or Namespace", "With the evict, delete or in-place restart method or a reload action: how many of the workload's pods may be unavailable at once while Ripple restarts (or calls) them; Ripple restarts a Ready pod only while fewer are (a pod not Ready, being resized or called, or wanted and missing counts; old pods not Ready are restarted first, outside the count). A whole number of at least 1, default 1; no percentage. An invalid value is a Warning event and 1 applies."},
		{k.RestartContainers, "Deployment, StatefulSet or DaemonSet (metadata, else pod template), or Namespace", `With the in-place restart method: the containers to restart in each pod, comma-separated (e.g. "app,worker"); default: every container with a RestartContainer resizePolicy. A pod without one of them is not restarted in place (a RestartNotInPlace Warning). An invalid value is a Warning event and the default applies.`},
		{k.ReloadAction, "Deployment, StatefulSet or DaemonSet (metadata, else pod template)", `Reload each pod by an HTTP call instead of restarting it: "[METHOD ]:PORT/PATH", e.g. ":9090/-/reload" or "PUT :http/reload" (METHOD GET, POST (default) or PUT; PORT a number or a container port's name). After a change Ripple waits reload-delay, then calls each Ready pod created before the change, max-unavailable at a time, 3 tries each; a pod whose endpoint fails gets a ReloadActionFailed Warning and is evicted with in-place-fallback: evict. Only for configs mounted as whole volumes: a workload reading a watched config as environment variables, through subPath or in an init container (or an env var read by fileKeyRef from a file an init container writes from it) gets an InvalidAnnotation Warning and reloads by its restart method. An invalid value is a Warning event and the restart method applies (docs/restart-methods.md).`},
		{k.ReloadDelay, "Deployment, StatefulSet or DaemonSet (metadata, else pod template), or Namespace", `With a reload action: how long after a change Ripple calls the pods, so the kubelet has written the changed files into their volumes first; a duration from 0 to 1h, default 2m (the kubelet's default syncFrequency of 1m, times 1.5 for its jitter, and half a minute to spare). An invalid value is a Warning event and 2m applies.`},
		{k.InPlaceFallback, "Deployment, StatefulSet or DaemonSet (metadata, else pod template), or Namespace", `With the in-place restart method or a reload action: what Ripple does with a pod it cannot restart in place (no RestartContainer resizePolicy, BestEffort, a resize infeasible or refused, a Vertical Pod Autoscaler resizing it in place, a ConfigMap or Secret mounted with subPath) or reload by its action (its endpoint failed 3 times): "none" (default) leaves it with its old configuration, "evict" evicts it as the evict method does (needs the evict permissions). Either way a RestartNotInPlace or ReloadActionFailed Warning names the pod and why. An invalid value is a Warning event and "none" applies.`},
		{k.RestartedAt, "workload, written by Ripple", "With the evict, delete or in-place restart method or a reload action: RFC 3339 time of the last reload, written with the applied record; the pods created up to it (under in-place: whose containers have not started since; under a reload action: not yet called) are the ones left to restart, so a restart interrupted by a Ripple restart continues and no pod restarts twice (a reload action calls again the pods it had called, as Ripple keeps that in memory only). Removed when the restart is complete. Metadata only."},
		{k.ReloadPolicy, "workload, pod template or Namespace", `"auto" (roll), "manual" (wait for "ripple approve") or "notify" (never roll, report): overrides --reload-policy, with the same precedence as the reload window. See docs/change-policies.md.`},
		{k.Approval, "workload, written by \"ripple approve\"", "JSON of the change set (configs and digests) an approver lets roll on a manual workload, written with the approver's own credentials; Ripple rolls exactly that, once."},
		{k.PendingJob, "CronJob, written by Ripple", "The change (the reload strategy's env vars or annotation) of a Job decided but not yet created; Ripple creates the Job from the CronJob's own template with it (also after a restart) and removes the annotation. Any other value starts no Job and is a Warning."},
		{k.RecreateRecord, "ConfigMap, written by Ripple", "Labels the ConfigMap <namespace>.<job>.ripple-recreate, in Ripple's own namespace ($POD_NAMESPACE), that holds a Job being re-created for a reload, sealed with the key in the Secret ripple-job-record-key there, until the new Job exists; it survives errors and restarts. A record that does not open creates nothing."},
		{k.Replaces, "ConfigMap, written by Ripple", "On that ConfigMap: the UID of the Job being replaced, to tell whether the delete happened."},
		{k.Canary, "ConfigMap or Secret, or Namespace", `Canaries a change of this config: how many of the workloads it rolls go first ("1", or a percentage such as "10%", rounded up); the others roll once the canaries completed their rollout and stayed healthy for the bake, and a canary that stalls or turns unhealthy halts the change. "0" turns off a Namespace's or --canary's default. An invalid value is a Warning event on the workloads and the next default applies. See docs/canary.md.`},
		{k.CanaryBake, "ConfigMap or Secret, or Namespace", "How long the canaries must stay healthy after their rollout (0s to 24h, default --canary-bake, 30s)."},
		{k.CanaryFirst, "workload", `"true": the workload is chosen as a canary before the others (which go by name, then kind).`},
		{k.CanaryQuery, "Namespace (with --namespace-defaults)", "The query gate's condition for the namespace's canaried changes (with --canary-gates=query), beside --canary-query: `<PromQL expression> <op> <number>`, bound to the namespace. Read on Namespaces only: a config or workload cannot set one, as a query runs with Ripple's credentials."},
		{k.AckRollouts, "ConfigMap, Secret", "Acknowledges that a write of the config rolls up to this many workloads (a number): a write above the admission guard's limit (--admission-max-rollouts, or the Namespace's max-rollouts) passes when this is at least the count the guard names."},
		{k.MaxRollouts, "Namespace", "The admission guard's limit for the namespace's config writes, in place of --admission-max-rollouts (a number; 0 denies nothing). Read with --namespace-defaults, whose cache holds the Namespaces; only who can write the Namespace sets it."},
		{k.RestartPods, "ConfigMap, Secret", "A label selector (kubectl syntax) of pods in the config's namespace: when the config's data changes, after the settle window, Ripple evicts the selected pods created before the change that no workload of Ripple's owns (bare pods, an operator's), max-unavailable (the config's own annotation, default 1) at a time, honouring PodDisruptionBudgets. An invalid or empty selector, or one selecting more than 500 pods, is a Warning event and restarts nothing. Needs the evict permissions (ripple.restartMethods.evict). See docs/restart-methods.md#pods-a-config-selects."},
		{k.SharedWith, "ConfigMap or Secret", `Shares the config with the workloads of other namespaces: a comma list of namespaces, or "*" for every one. A workload there follows it by naming it "<namespace>/<name>" in its named-reload annotation (at most 16 such references per annotation); without this grant (or when the config does not exist) the reference is not followed, nothing of the config is read, and the workload gets an InvalidAnnotation Warning saying it is "not shared with this namespace". Removing the grant rolls nothing: the reference stops being followed. See docs/cross-namespace.md.`},
		{k.Pin, "workload", `"true" (with --pinning): each reload that writes the workload's pod template first copies every ConfigMap and Secret of its namespace that the template reads into an immutable copy named <config>-r-<digest> (labelled ripple.dev/pinned-copy, owned by the workloads that pin it), and names the copies in the template's pinned annotation, so that kubectl rollout undo brings back the data the revision ran with. A config whose copy's name would be too long is read live, with a Warning. See docs/pinning.md.`},
		{k.Pinned, "pod template, written by Ripple", "The copies the template's pods read: kind/name=digest, comma-separated (\"configmap/app=2415bbab7ab0,secret/db=87fd39ba70a4\"). The chart's MutatingAdmissionPolicy rewrites each new pod that carries it so that its configMap and secret volumes, projected sources, envFrom and valueFrom references name the copies; the template keeps naming the configs."},
		{k.CanaryResume, "ConfigMap or Secret, written by \"ripple resume\"", "The name of the ConfigRollout of a halted change to continue anyway; it continues that change only, not a later one of the same data."},
		{k.CanaryRecord, "ConfigMap, written by an earlier Ripple", "Labelled the ConfigMaps ripple-canary-<hash>, in Ripple's own namespace, in which Ripple before ConfigRollouts kept each canaried change. Ripple writes none: it carries a record over to its change's ConfigRollout once and deletes it (docs/canary.md)."},
		{k.Applied, "workload, written by Ripple", "JSON of the digests of configs that reload the workload and are not shown on its pod template (the baseline that makes first sight and restarts roll nothing) or that Ripple rolled (what a rollback of the template leaves behind: docs/rollbacks.md). Metadata only, so writing it rolls nothing."},
	}
}

// WriteReference writes docs/reference.md: every flag, environment
// variable and annotation, with its default and meaning, from the code.
func WriteReference(w io.Writer) error {
	var b strings.Builder
	b.WriteString("# Reference\n\n")
	b.WriteString("<!-- Generated by `make docs` from internal/config; a test fails when it is stale. -->\n\n")
	b.WriteString("## Flags\n\n")
	b.WriteString("Reloader's flags keep their names and meanings. Boolean flags accept `--flag`, `--flag=true`, `--flag=false` and `--flag false`; ")
	b.WriteString("Reloader's string-valued `--reload-on-create`, `--reload-on-delete` and `--is-Argo-Rollouts` take any next argument as their value (`--reload-on-create true`) and, as in Reloader, are on only for the exact value `true`: any other value (`True`, `1`, `yes`) is false and logged as a warning at start. ")
	b.WriteString("The other boolean flags read their values as Go does (`true`, `True`, `1`, `false`, ...). ")
	b.WriteString("An invalid value stops Ripple at start with exit code 2 and a message that names the flag.\n\n")
	b.WriteString("| flag | default | meaning |\n|---|---|---|\n")
	fs := pflag.NewFlagSet("ripple", pflag.ContinueOnError)
	NewOptions().BindFlags(fs)
	fs.VisitAll(func(f *pflag.Flag) {
		def := f.DefValue
		if def == "" || def == "[]" {
			def = "—"
		} else {
			def = "`" + def + "`"
		}
		fmt.Fprintf(&b, "| `--%s` | %s | %s |\n", f.Name, def, cell(f.Usage))
	})
	b.WriteString("\n## Environment variables\n\n| variable | meaning |\n|---|---|\n")
	for _, e := range EnvVars() {
		fmt.Fprintf(&b, "| `%s` | %s |\n", e.Name, cell(e.Meaning))
	}
	b.WriteString("\n## Annotations\n\n")
	b.WriteString("Keys shown are the defaults; the `--*-annotation` flags rename Reloader's, and `--annotation-prefix` moves Ripple's own.\n\n")
	b.WriteString("| annotation | on | meaning |\n|---|---|---|\n")
	for _, a := range annotationDocs(annotation.DefaultKeys(annotation.DefaultPrefix)) {
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", a[0], a[1], cell(a[2]))
	}
	writeBounds(&b)
	writeContracts(&b)
	_, err := io.WriteString(w, b.String())
	return err
}

// writeBounds describes the bounds on the pattern lists tenants write.
func writeBounds(b *strings.Builder) {
	b.WriteString("\n### Bounds on pattern lists\n\n")
	b.WriteString("Any user who may edit a workload writes its annotations, and Ripple reads them with cluster-wide rights, so the lists of names and patterns it compiles are bounded. ")
	b.WriteString("A value past a bound is an invalid annotation: a Warning event (InvalidAnnotation) on that workload naming the annotation, while every other workload reloads as before.\n\n")
	b.WriteString("| bound | value | applies to | why |\n|---|---|---|---|\n")
	fmt.Fprintf(b, "| items per annotation | %d | the named-reload annotations (past it the whole value is ignored); the reload-on-keys annotation (its items, and the keys of all its lists together); "+
		"the exclude annotations (past it the list excludes every config of its kind) | "+
		"Reloader's users list a few names, or one pattern per config; %[1]d patterns against 1,000 configs is still fast, where 37,000 cost 9.5 s a reconcile. |\n", annotation.MaxItems)
	fmt.Fprintf(b, "| bytes per item | %d | each name, pattern and key item | The longest object name (a DNS subdomain) and the longest config key: a longer item can match nothing written literally. |\n", annotation.MaxItemLen)
	fmt.Fprintf(b, "| compiled instructions per pattern | %d | each pattern item, as Go's regexp/syntax compiles `^(?:item)$` | "+
		"Matching may visit every instruction once per byte of the name: `app-config-.*` compiles to about 20, `[a-z0-9]{1,63}` to 130, the longest item with a `.*` to 260; "+
		"`(a{30}b{30}){30}` compiles to about 1,800. |\n", annotation.MaxInstructions)
	fmt.Fprintf(b, "| unbounded repeats per pattern | %d | `*`, `+` and `{n,}` in a pattern item; and no repeat of what can match the empty string or repeats without limit itself, such as `(?:.*){240}` or `(a+)+` | "+
		"Each keeps a match alive for the whole name: `(?:.*){240}!`, 12 bytes, cost 0.9 ms a name. |\n", annotation.MaxUnbounded)
	fmt.Fprintf(b, "| match budget | %d units | one annotation in one reconcile: a named-reload annotation against the names of its kind in the namespace, reload-on-keys against the keys of the configs it lists; "+
		"a unit is one instruction against one byte, a name without the pattern's literal start one unit (past it the annotation is ignored whole) | "+
		"About 130 ms of a core for the costliest patterns, far less for real ones; 100 items of 12 bytes against 100 names once took 9.1 s a gather. |\n\n", annotation.MatchBudget)
	fmt.Fprintf(b, "Each pattern is compiled once and kept in a cache of the last %d items, shared by reconciles, `ripple explain` and `ripple lint`; "+
		"its result for a name is remembered (the last %d), and so is the per-key digest of a key table under a key selection (the last %d), so a reconcile matches only what is new. ",
		annotation.CachedPatterns, annotation.CachedMatches, annotation.CachedSelections)
	b.WriteString("The cache index that maps a config to its workloads never compiles a pattern: it reads the exact names and notes that a pattern is there, and the plan decides what the pattern matches.\n")
}

// writeContracts describes what Ripple writes that users' tools read, and
// where it differs from Reloader on purpose.
func writeContracts(b *strings.Builder) {
	b.WriteString("\n## Events\n\n")
	b.WriteString("Ripple records core/v1 Events on the workload, as Reloader does, with Reloader's source component: ")
	b.WriteString("`reloader-configmaps`, `reloader-secrets` or `reloader-secretproviderclasspodstatuses`, after the kind of the config the Event is about ")
	b.WriteString("(when one rollout carries changes of several kinds, the first config it names). Ripple's own Events that name no config have the component `ripple`.\n\n")
	b.WriteString("| reason | type | when |\n|---|---|---|\n")
	for _, i := range reason.All() {
		if i.Event {
			fmt.Fprintf(b, "| `%s` | %s | %s |\n", i.Reason, i.Type(), cell(i.When))
		}
	}
	b.WriteString("\n## Writes\n\n")
	fmt.Fprintf(b, "Every write Ripple makes (reload patches, Jobs, its records) has the field manager `%s`, where Reloader's is `Reloader`: ", workload.FieldManager)
	b.WriteString("a deliberate difference: a Deployment's, StatefulSet's or DaemonSet's reload is a server-side apply (forced) of only Ripple's fields, ")
	b.WriteString("the strategy's env var or annotation and Ripple's metadata records, so a GitOps tool re-applying its manifest keeps them; other kinds are patched. ")
	fmt.Fprintf(b, "GitOps rules that name Reloader's manager (Argo CD `managedFieldsManagers` in `ignoreDifferences`) must name `%s`; ", workload.FieldManager)
	b.WriteString("`ripple explain --gitops argocd|flux` prints them (docs/gitops.md).\n\n")
	b.WriteString("The `reloader-meta-info` ConfigMap (label `reloader.stakater.com/meta-info=reloader`) is published in `$RELOADER_NAMESPACE` when it is set, ")
	b.WriteString("as Reloader does; the chart sets it by default (`ripple.metaInfo.enabled`), and `ripple explain` reads its settings from it.\n")
}

// cell makes text safe for a Markdown table cell.
func cell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}
