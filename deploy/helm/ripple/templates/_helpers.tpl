{{/* vim: set filetype=mustache: */}}

{{/* The chart name, or nameOverride. */}}
{{- define "ripple.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" | lower -}}
{{- end -}}

{{/* The full name of every object, by Reloader's chart rule so that
`helm upgrade <release>` from Reloader's chart keeps every name (and the
Deployment's selector, which cannot change): fullnameOverride, else
<release>-<name>, cut at 63 characters. <name> is nameOverride, else the
chart's name as Reloader's would be: "reloader", or the alias when the
chart is an aliased dependency. The one exception is a release whose name
contains "ripple" (no nameOverride, no alias): it is named after the
release alone, so `helm install ripple` makes "ripple"; no Reloader release
is named after Ripple. docs/migration.md explains the choice. */}}
{{- define "ripple.fullname" -}}
{{- $aliased := ne .Chart.Name "ripple" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if and (not .Values.nameOverride) (not $aliased) (contains "ripple" .Release.Name) -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := .Values.nameOverride | default (ternary .Chart.Name "reloader" $aliased) -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* The namespace Ripple runs in: Reloader's `namespace` value, else the
release namespace. */}}
{{- define "ripple.namespace" -}}
{{- .Values.namespace | default .Release.Namespace -}}
{{- end -}}

{{/* Pod selector labels. They are Reloader's (app, release, matchLabels), so
a Deployment renamed with fullnameOverride upgrades in place from Reloader's
chart: a Deployment's selector cannot change. */}}
{{- define "ripple.selectorLabels" -}}
app: {{ include "ripple.fullname" . }}
release: {{ .Release.Name | quote }}
{{- with .Values.reloader.matchLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Labels on every object. */}}
{{- define "ripple.labels" -}}
{{ include "ripple.selectorLabels" . }}
app.kubernetes.io/name: {{ include "ripple.name" . }}
app.kubernetes.io/instance: {{ .Release.Name | quote }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end -}}

{{/* The ServiceAccount Ripple runs as. */}}
{{- define "ripple.serviceAccountName" -}}
{{- if .Values.reloader.serviceAccount.create -}}
{{- default (include "ripple.fullname" .) .Values.reloader.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.reloader.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The image as JSON {"ref": ..., "reloader": bool}. The reference is
<repository>:<tag>, or <global.imageRegistry>/<name>:<tag>, with @<digest>
instead of the tag when a digest is set. Reloader's own image (from a
Reloader values file) is replaced by Ripple's, with Ripple's tag and no
digest: installing this chart means installing Ripple. */}}
{{- define "ripple.imageInfo" -}}
{{- $img := .Values.image | default dict -}}
{{- $reloaderImages := list "ghcr.io/stakater/reloader" "docker.io/stakater/reloader" "stakater/reloader" "ghcr.io/stakater/reloader-enterprise" -}}
{{- $registry := "" -}}
{{- if .Values.global -}}
{{- $registry = .Values.global.imageRegistry | default "" -}}
{{- end -}}
{{- $reloader := false -}}
{{- $ref := "" -}}
{{- if $registry -}}
{{- $name := $img.name | default "ripple-dev/ripple" -}}
{{- if has $name $reloaderImages -}}
{{- $name = "ripple-dev/ripple" -}}
{{- $reloader = true -}}
{{- end -}}
{{- $ref = printf "%s/%s" (trimSuffix "/" $registry) $name -}}
{{- else -}}
{{- $ref = $img.repository | default "ghcr.io/ripple-dev/ripple" -}}
{{- if has $ref $reloaderImages -}}
{{- $ref = "ghcr.io/ripple-dev/ripple" -}}
{{- $reloader = true -}}
{{- end -}}
{{- end -}}
{{- $tag := toString ($img.tag | default "") -}}
{{- $digest := $img.digest | default "" -}}
{{- if $reloader -}}
{{- $tag = "" -}}
{{- $digest = "" -}}
{{- end -}}
{{- if $digest -}}
{{- $ref = printf "%s@%s" $ref $digest -}}
{{- else -}}
{{- $ref = printf "%s:%s" $ref ($tag | default .Chart.AppVersion) -}}
{{- end -}}
{{- dict "ref" $ref "reloader" $reloader | toJson -}}
{{- end -}}

{{/* The image reference. */}}
{{- define "ripple.image" -}}
{{- (include "ripple.imageInfo" . | fromJson).ref -}}
{{- end -}}

{{/* "true" when the values name Reloader's image (it is replaced). */}}
{{- define "ripple.reloaderImage" -}}
{{- if (include "ripple.imageInfo" . | fromJson).reloader -}}true{{- end -}}
{{- end -}}

{{/* imagePullSecrets from global.imagePullSecrets and
reloader.deployment.imagePullSecrets, as `- name: x` or `- x`. */}}
{{- define "ripple.imagePullSecrets" -}}
{{- $secrets := list -}}
{{- if .Values.global -}}
{{- $secrets = concat $secrets (.Values.global.imagePullSecrets | default list) -}}
{{- end -}}
{{- $secrets = concat $secrets (.Values.reloader.deployment.imagePullSecrets | default list) -}}
{{- if $secrets }}
imagePullSecrets:
{{- range $secrets }}
{{- if kindIs "map" . }}
  - name: {{ .name | quote }}
{{- else }}
  - name: {{ . | quote }}
{{- end }}
{{- end }}
{{- end }}
{{- end -}}

{{/* The namespaces of scoped mode as a JSON list (sorted, with the release
namespace), or [] outside scoped mode. A non-empty reloader.namespaces
selects scoped mode whatever watchGlobally says. */}}
{{- define "ripple.scopedNamespaces" -}}
{{- $ns := .Values.reloader.namespaces -}}
{{- if kindIs "string" $ns -}}
{{- $ns = splitList "," $ns -}}
{{- end -}}
{{- $out := list -}}
{{- range $ns -}}
{{- $n := trim (toString .) -}}
{{- if $n -}}
{{- $out = append $out $n -}}
{{- end -}}
{{- end -}}
{{- if $out -}}
{{- $out = append $out (include "ripple.namespace" .) -}}
{{- end -}}
{{- $out | uniq | sortAlpha | toJson -}}
{{- end -}}

{{/* The watch mode: global, scoped (reloader.namespaces) or single
(watchGlobally=false: the release namespace only). */}}
{{- define "ripple.mode" -}}
{{- if include "ripple.scopedNamespaces" . | fromJsonArray -}}
scoped
{{- else if eq (toString .Values.reloader.watchGlobally) "false" -}}
single
{{- else -}}
global
{{- end -}}
{{- end -}}

{{/* "true" when leader election is on: enableHA, or more than one replica
(several replicas without it would all act). */}}
{{- define "ripple.ha" -}}
{{- if or .Values.reloader.enableHA (gt (int (.Values.reloader.deployment.replicas | default 1)) 1) -}}true{{- end -}}
{{- end -}}

{{/* The name of the leader-election Lease. */}}
{{- define "ripple.leaseName" -}}
{{- (.Values.ripple.leaderElection | default dict).id | default "stakater-reloader-lock" -}}
{{- end -}}

{{/* The number of shards (ripple.shards): Deployments that split the
namespaces between them. */}}
{{- define "ripple.shards" -}}
{{- int (.Values.ripple.shards | default 1) -}}
{{- end -}}

{{/* The Leases, as a JSON array: each shard's is the Lease name followed
by -shard-<index>-of-<count>, as Ripple names it. */}}
{{- define "ripple.leaseNames" -}}
{{- $n := int (include "ripple.shards" .) -}}
{{- $name := include "ripple.leaseName" . -}}
{{- if eq $n 1 -}}
{{- list $name | toJson -}}
{{- else -}}
{{- $out := list -}}
{{- range $i := until $n -}}{{- $out = append $out (printf "%s-shard-%d-of-%d" $name $i $n) -}}{{- end -}}
{{- $out | toJson -}}
{{- end -}}
{{- end -}}

{{/* "true" in webhook mode: changes are posted, workloads only read. */}}
{{- define "ripple.webhookMode" -}}
{{- if or .Values.reloader.webhookUrl (.Values.ripple.webhookUrlSecret | default dict).name -}}true{{- end -}}
{{- end -}}

{{/* A comma list from a string or a list. */}}
{{- define "ripple.csv" -}}
{{- if kindIs "slice" . -}}
{{- join "," . -}}
{{- else -}}
{{- toString (. | default "") -}}
{{- end -}}
{{- end -}}

{{/* Rejects value combinations Ripple cannot run with, with a message that
says what to change. */}}
{{- define "ripple.validate" -}}
{{- if and .Values.reloader.ignoreSecrets .Values.reloader.ignoreConfigMaps -}}
{{- fail "reloader.ignoreSecrets and reloader.ignoreConfigMaps are both true: Ripple would watch nothing. Set at most one of them (or scale Ripple to zero)." -}}
{{- end -}}
{{- if and .Values.reloader.enablePProf (hasSuffix ":9090" (toString .Values.reloader.pprofAddr)) -}}
{{- fail (printf "reloader.pprofAddr is %s, on the metrics and health port 9090: choose another address, such as 127.0.0.1:6060." (toString .Values.reloader.pprofAddr)) -}}
{{- end -}}
{{- if and .Values.reloader.webhookUrl (.Values.ripple.webhookUrlSecret | default dict).name -}}
{{- fail "reloader.webhookUrl and ripple.webhookUrlSecret.name are both set: set one of them." -}}
{{- end -}}
{{- if (.Values.enterprise | default dict).enabled -}}
{{- fail "enterprise.enabled is true: Reloader's enterprise console and gateway (Reloader chart 3.0) are not part of Ripple, and this chart would remove them. Set enterprise.enabled: false, or keep Reloader's chart (docs/migration.md)." -}}
{{- end -}}
{{- $rle := .Values.reloader.leaderElection | default dict -}}
{{- $le := .Values.ripple.leaderElection | default dict -}}
{{- range (list "leaseDuration" "renewDeadline" "retryPeriod") -}}
{{- $a := toString (index $rle . | default "") -}}
{{- $b := toString (index $le . | default "") -}}
{{- if and $a $b (ne $a $b) -}}
{{- fail (printf "reloader.leaderElection.%s (%s) and ripple.leaderElection.%s (%s) are the same setting and differ: set one of them." . $a . $b) -}}
{{- end -}}
{{- end -}}
{{- if gt (int (include "ripple.shards" .)) 1 -}}
{{- if .Values.reloader.verticalPodAutoscaler.enabled -}}
{{- fail "ripple.shards > 1 with reloader.verticalPodAutoscaler.enabled: the VerticalPodAutoscaler targets one Deployment; turn it off when sharding." -}}
{{- end -}}
{{- end -}}
{{- with .Values.ripple.reloadWindow -}}
{{- if not (regexMatch (include "ripple.reloadWindowPattern" $) (toString .)) -}}
{{- fail (printf "ripple.reloadWindow: %q is not a reload window: write [days] HH:MM-HH:MM [zone], e.g. \"Mon-Fri 02:00-04:00 Europe/Berlin\" or \"Sat, Sun 00:00-24:00\", several separated by \";\"; empty or always for none (docs/change-policies.md)." (toString .)) -}}
{{- end -}}
{{- end -}}
{{- with .Values.ripple.canaryBake -}}
{{- /* The schema checks the form; Ripple also refuses more than 24h. */ -}}
{{- if gt (include "ripple.durationSeconds" (toString .) | float64) 86400.0 -}}
{{- fail (printf "ripple.canaryBake: %s is over 24h, the longest bake Ripple takes (--canary-bake, 0s to 24h)." (toString .)) -}}
{{- end -}}
{{- end -}}
{{- if and .Values.ripple.canaryGates (not (.Values.ripple.configRollouts | default dict).enabled) -}}
{{- fail "ripple.canaryGates needs ripple.configRollouts.enabled: the change controller runs the gates (--canary-gates needs --config-rollouts)." -}}
{{- end -}}
{{- /* A canary that is not none ("", or zeros with a sign) without ConfigRollouts would hold every change, as Ripple refuses. */ -}}
{{- $canaryOn := not (regexMatch "^\\s*([+-]?0+)?\\s*$" (toString (.Values.ripple.canary | default ""))) -}}
{{- if and $canaryOn (not (.Values.ripple.configRollouts | default dict).enabled) (ne (toString .Values.ripple.canaryUnkept) "roll") -}}
{{- fail "ripple.canary needs ripple.configRollouts.enabled, whose ConfigRollouts keep the canaries: without them every canaried change is held; or set ripple.canaryUnkept: roll (--canary needs --config-rollouts, or --canary-unkept=roll)." -}}
{{- end -}}
{{- $prom := .Values.ripple.prometheus | default dict -}}
{{- if and (has "query" (.Values.ripple.canaryGates | default list)) (not $prom.url) -}}
{{- fail "ripple.canaryGates has query but ripple.prometheus.url is empty: the query gate asks that Prometheus (--canary-gates=query needs --prometheus-url)." -}}
{{- end -}}
{{- if and (has "query" (.Values.ripple.canaryGates | default list)) (not $prom.query) (not .Values.ripple.namespaceDefaults) -}}
{{- fail "ripple.canaryGates has query but no condition to ask: set ripple.prometheus.query, or ripple.namespaceDefaults for the Namespaces' own canary-query (--canary-gates=query needs --canary-query or --namespace-defaults)." -}}
{{- end -}}
{{- $adm := .Values.ripple.admission | default dict -}}
{{- if $adm.enabled -}}
{{- $cert := $adm.certificate | default dict -}}
{{- $cm := $cert.certManager | default dict -}}
{{- if eq (include "ripple.mode" .) "single" -}}
{{- fail "ripple.admission.enabled with reloader.watchGlobally: false: Ripple watches only its own namespace, and the webhook is kept off Ripple's own namespace, so it would see no write. Install Ripple in a namespace of its own and list the namespaces to watch in reloader.namespaces." -}}
{{- end -}}
{{- if or .Values.reloader.webhookUrl (.Values.ripple.webhookUrlSecret | default dict).name -}}
{{- fail "ripple.admission.enabled with reloader.webhookUrl (or ripple.webhookUrlSecret): in webhook mode Ripple posts changes and rolls nothing, so the webhook would warn of rollouts that never happen. Turn one of them off." -}}
{{- end -}}
{{- $port := int ($adm.port | default 9443) -}}
{{- if eq $port 9090 -}}
{{- fail "ripple.admission.port is 9090, the metrics and health port: choose another, such as 9443." -}}
{{- end -}}
{{- if and .Values.reloader.enablePProf (hasSuffix (printf ":%d" $port) (toString .Values.reloader.pprofAddr)) -}}
{{- fail (printf "ripple.admission.port %d is reloader.pprofAddr's port (%s): choose another." $port (toString .Values.reloader.pprofAddr)) -}}
{{- end -}}
{{- if and $cm.enabled $cert.secretName -}}
{{- fail "ripple.admission.certificate.certManager.enabled and ripple.admission.certificate.secretName are both set: set one of them (cert-manager writes the Secret <fullname>-admission-tls itself)." -}}
{{- end -}}
{{- if ne (not $cert.secretName) (not $cert.caBundle) -}}
{{- fail "ripple.admission.certificate.secretName and caBundle go together: the Secret of your own serving certificate, and the PEM of the CA that signed it (which the API server is told to trust)." -}}
{{- end -}}
{{- if and $cm.enabled $cm.issuerRef (not $cm.issuerRef.name) -}}
{{- fail "ripple.admission.certificate.certManager.issuerRef has no name: name your Issuer or ClusterIssuer (with kind), or leave issuerRef empty for a self-signed Issuer." -}}
{{- end -}}
{{- if ge (int ($cert.renewBeforeDays | default 30)) (int ($cert.validityDays | default 365)) -}}
{{- fail (printf "ripple.admission.certificate.renewBeforeDays (%d) must be less than validityDays (%d), or every upgrade would make a new certificate." (int ($cert.renewBeforeDays | default 30)) (int ($cert.validityDays | default 365))) -}}
{{- end -}}
{{- end -}}
{{- with include "ripple.workloadKindErrors" . | fromJsonArray -}}
{{- fail (printf "ripple.workloadKinds: Ripple would refuse these kinds at start (docs/workload-kinds.md):\n%s" (join "\n" .)) -}}
{{- end -}}
{{- $rel := (include "ripple.namespace" .) -}}
{{- range (include "ripple.scopedNamespaces" . | fromJsonArray) -}}
{{- if not (regexMatch "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$" .) -}}
{{- fail (printf "reloader.namespaces: %q is not a namespace name (lowercase letters, digits and '-')." .) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* A note when Namespaces' annotations are not read although the values
suggest they are meant to be: ripple.namespaceDefaults set where the
chart does not pass it (not cluster-wide), or change-policy values set
without it. The chart cannot see the Namespaces, so this is a note in
NOTES.txt and on the Deployment, not an error. */}}
{{- define "ripple.namespaceDefaultsNote" -}}
{{- $rp := .Values.ripple -}}
{{- $prefix := $rp.annotationPrefix | default "ripple.dev" -}}
{{- $keys := printf "%s/reload-window, reload-policy, restart-method, max-unavailable, canary and canary-bake" $prefix -}}
{{- $global := eq (include "ripple.mode" .) "global" -}}
{{- $policies := list -}}
{{- range $v := list "reloadWindow" "reloadPolicy" "canary" "canaryBake" -}}
{{- if index $rp $v -}}{{- $policies = append $policies (printf "ripple.%s" $v) -}}{{- end -}}
{{- end -}}
{{- if ne (lower (trim (toString ($rp.restartMethod | default "")))  | default "template") "template" -}}{{- $policies = append $policies "ripple.restartMethod" -}}{{- end -}}
{{- if ($rp.governance | default dict).tightenOnly -}}{{- $policies = append $policies "ripple.governance.tightenOnly" -}}{{- end -}}
{{- if and $rp.namespaceDefaults (not $global) -}}
ripple.namespaceDefaults is not passed on: it needs a cluster-wide install (reloader.watchGlobally true, no reloader.namespaces), so Namespaces' {{ $keys }} annotations are not read.
{{- else if and $policies (not $rp.namespaceDefaults) -}}
{{ join ", " $policies }} {{ if eq (len $policies) 1 }}is{{ else }}are{{ end }} set, and Namespaces' {{ $keys }} annotations are not read: set ripple.namespaceDefaults: true (cluster-wide installs) for them to be the defaults of their workloads and configs.
{{- end -}}
{{- end -}}

{{/* The seconds of a Go duration the schema has checked the form of
(1h30m, 1.5s, 250ms), as a float. */}}
{{- define "ripple.durationSeconds" -}}
{{- $total := 0.0 -}}
{{- $per := dict "h" 3600.0 "m" 60.0 "s" 1.0 "ms" 0.001 "us" 0.000001 "µs" 0.000001 "μs" 0.000001 "ns" 0.000000001 -}}
{{- range regexFindAll `([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h)` . -1 -}}
{{- $n := regexFind `^[0-9.]+` . -}}
{{- $total = addf $total (mulf (float64 $n) (index $per (trimPrefix $n .))) -}}
{{- end -}}
{{- $total -}}
{{- end -}}

{{/* The errors Ripple would find in ripple.workloadKinds.declared and the
presets at start (internal/declared: Parse, then Merge), as a JSON list of
lines naming the entry (from 1) and the field, in Ripple's words; the
schema has checked the fields and their types. test/chart's
TestDeclaredKindsAsRippleReadsThem holds the two to agree. */}}
{{- define "ripple.workloadKindErrors" -}}
{{- $wk := .Values.ripple.workloadKinds | default dict -}}
{{- $path := `^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$` -}}
{{- $label := `^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$` -}}
{{- $subdomain := `^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$` -}}
{{- $name := `^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$` -}}
{{- $errs := list -}}
{{- range $i, $k := $wk.declared -}}
{{- $bad := list -}}
{{- $group := toString ($k.group | default "") -}}
{{- if or (not (regexMatch $subdomain $group)) (gt (len $group) 253) -}}
{{- $bad = append $bad (printf "group: %q is not an API group (a DNS subdomain such as apps.kruise.io)" $group) -}}
{{- end -}}
{{- if not (regexMatch $label (toString ($k.version | default ""))) -}}
{{- $bad = append $bad (printf "version: %q is not an API version such as v1alpha1" (toString ($k.version | default ""))) -}}
{{- end -}}
{{- if not (regexMatch `^[A-Z][A-Za-z0-9]*$` (toString ($k.kind | default ""))) -}}
{{- $bad = append $bad (printf "kind: %q is not a kind (upper camel case, such as CloneSet)" (toString ($k.kind | default ""))) -}}
{{- end -}}
{{- if and $k.resource (not (regexMatch $label (toString $k.resource))) -}}
{{- $bad = append $bad (printf "resource: %q is not a resource name (lower-case plural, such as clonesets)" (toString $k.resource)) -}}
{{- end -}}
{{- $tpl := toString ($k.template | default "") -}}
{{- if and $tpl $k.restart -}}
{{- $bad = append $bad "template: set either template or restart, not both" -}}
{{- else if and (not $tpl) (not $k.restart) -}}
{{- $bad = append $bad "template: missing: set template (the field path of a pod template) or restart" -}}
{{- else if and $tpl (not (regexMatch $path $tpl)) -}}
{{- $bad = append $bad (printf "template: %q is not a field path such as spec.template" $tpl) -}}
{{- else if $k.restart -}}
{{- $ann := toString ($k.restart.annotation | default "") -}}
{{- $parts := splitList "/" $ann -}}
{{- $ok := regexMatch $name (last $parts) -}}
{{- if eq (len $parts) 2 -}}{{- $ok = and $ok (regexMatch $subdomain (first $parts)) (le (len (first $parts)) 253) -}}{{- else if gt (len $parts) 2 -}}{{- $ok = false -}}{{- end -}}
{{- if not $ok -}}
{{- $bad = append $bad (printf "restart.annotation: %q is not an annotation key ([prefix/]name, such as example.com/sync)" $ann) -}}
{{- end -}}
{{- end -}}
{{- if and $k.paused (not $tpl) -}}
{{- $bad = append $bad "paused: only a kind with a template can be paused" -}}
{{- else if and $k.paused (not (regexMatch $path (toString $k.paused))) -}}
{{- $bad = append $bad (printf "paused: %q is not a field path such as spec.paused" (toString $k.paused)) -}}
{{- end -}}
{{- /* An empty ready or replicas is set all the same, as Ripple reads it. */ -}}
{{- if kindIs "map" $k.ready -}}
{{- $rd := $k.ready -}}
{{- $replicas := kindIs "map" $rd.replicas -}}
{{- if and $rd.observedGeneration (not (regexMatch $path (toString $rd.observedGeneration))) -}}
{{- $bad = append $bad (printf "ready.observedGeneration: %q is not a field path such as status.observedGeneration" (toString $rd.observedGeneration)) -}}
{{- end -}}
{{- if eq (not $rd.condition) (not $replicas) -}}
{{- $bad = append $bad "ready.condition: set either condition (a condition type such as Ready) or replicas" -}}
{{- else if $replicas -}}
{{- range $f := list "desired" "updated" "available" -}}
{{- $p := toString (index $rd.replicas $f | default "") -}}
{{- if not (regexMatch $path $p) -}}
{{- $bad = append $bad (printf "ready.replicas.%s: %q is not a field path such as status.replicas" $f $p) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- range $bad -}}
{{- $errs = append $errs (printf "  ripple.workloadKinds.declared entry %d%s: %s" (add1 $i) (ternary (printf " (%s)" (toString $k.kind)) "" (not (empty $k.kind))) .) -}}
{{- end -}}
{{- end -}}
{{- if not $errs -}}
{{- /* Merge: a kind (and group) declared twice, by a preset or an entry. */ -}}
{{- $seen := dict -}}
{{- range (include "ripple.workloadKindResources" . | fromJsonArray) -}}
{{- $key := lower (printf "%s.%s" .kind .group) -}}
{{- if hasKey $seen $key -}}
{{- $errs = append $errs (printf "  %s.%s is declared twice (first in %s, again in %s)" .kind .group (index $seen $key) .from) -}}
{{- else -}}
{{- $_ := set $seen $key .from -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- toJson $errs -}}
{{- end -}}

{{/* The form of a reload window as Ripple reads it (internal/window):
windows separated by ";", each [days] HH:MM-HH:MM [zone], days in any case,
three letters or in full, single or as ranges, separated by "," with or
without spaces. Whether the zone exists and the start and end differ,
Ripple checks at start. test/chart's TestReloadWindowSpellings holds it to
the binary's parser. */}}
{{- define "ripple.reloadWindowPattern" -}}
{{- $s := `[ \t\n]` -}}
{{- $day := `(?:sun(?:day)?|mon(?:day)?|tue(?:sday)?|wed(?:nesday)?|thu(?:rsday)?|fri(?:day)?|sat(?:urday)?)` -}}
{{- $days := printf `%[1]s(?:-%[1]s)?(?:%[2]s*,%[2]s*%[1]s(?:-%[1]s)?)*` $day $s -}}
{{- $window := printf `%[1]s*(?:%[2]s%[1]s+)?(?:[01][0-9]|2[0-3]):[0-5][0-9]-(?:(?:[01][0-9]|2[0-3]):[0-5][0-9]|24:00)(?:%[1]s+[a-z][a-z0-9_+-]*(?:/[a-z0-9_+-]+)*)?%[1]s*` $s $days -}}
{{- printf `(?i)^(?:%[1]s*|%[1]s*always%[1]s*|%[2]s(?:;%[2]s)*)$` $s $window -}}
{{- end -}}

{{/* The rules Ripple needs in every namespace it watches, for a Role or the
ClusterRole. Only what the configuration uses: each ignored config or
workload kind, webhook mode (workloads only read, no events, no optional
kinds) and the optional kinds change them. */}}
{{- define "ripple.rules" -}}
{{- $r := .Values.reloader -}}
{{- $webhook := include "ripple.webhookMode" . -}}
{{- if not $r.ignoreConfigMaps }}
- apiGroups: [""]
  resources: ["configmaps"]
  verbs: ["get", "list", "watch"]
{{- end }}
{{- if not $r.ignoreSecrets }}
- apiGroups: [""]
  resources: ["secrets"]
  verbs: ["get", "list", "watch"]
{{- end }}
- apiGroups: ["apps"]
  resources: ["deployments", "daemonsets", "statefulsets"]
{{- if $webhook }}
  verbs: ["get", "list", "watch"]
{{- else }}
  verbs: ["get", "list", "watch", "patch"]
# core/v1 Events, as Reloader records them (patch: a repeated Event
# is counted on the existing one).
- apiGroups: [""]
  resources: ["events"]
  verbs: ["create", "patch"]
{{- end }}
{{- if $webhook }}
{{- if not $r.ignoreCronJobs }}
# Read to name the workloads a change concerns.
- apiGroups: ["batch"]
  resources: ["cronjobs"]
  verbs: ["get", "list", "watch"]
{{- end }}
{{- if not $r.ignoreJobs }}
- apiGroups: ["batch"]
  resources: ["jobs"]
  verbs: ["get", "list", "watch"]
{{- end }}
{{- else }}
{{- if not $r.ignoreCronJobs }}
# CronJobs: a reload starts a Job from the job template (or, with
# --cronjob-reload=template, patches the template).
- apiGroups: ["batch"]
  resources: ["cronjobs"]
  verbs: ["get", "list", "watch", "patch"]
# The Job started from a CronJob names it as its controller, blocking its
# deletion: with the OwnerReferencesPermissionEnforcement admission plugin
# (on in OpenShift) that needs the CronJob's finalizers.
- apiGroups: ["batch"]
  resources: ["cronjobs/finalizers"]
  verbs: ["update"]
{{- end }}
{{- if not $r.ignoreJobs }}
# Jobs: a reload deletes the Job and creates it again (its record is kept
# in the release namespace: the job-records Role).
- apiGroups: ["batch"]
  resources: ["jobs"]
  verbs: ["get", "list", "watch", "patch", "create", "delete"]
{{- else if not $r.ignoreCronJobs }}
# The Jobs started from CronJobs.
- apiGroups: ["batch"]
  resources: ["jobs"]
  verbs: ["create"]
{{- end }}
{{- if $r.isArgoRollouts }}
# Argo Rollouts: the pod template (or spec.restartAt) is patched.
- apiGroups: ["argoproj.io"]
  resources: ["rollouts"]
  verbs: ["get", "list", "watch", "patch"]
{{- end }}
{{- if $r.isOpenshift }}
# OpenShift DeploymentConfigs: the pod template is patched.
- apiGroups: ["apps.openshift.io"]
  resources: ["deploymentconfigs"]
  verbs: ["get", "list", "watch", "patch"]
{{- end }}
{{- if (.Values.ripple.configRollouts | default dict).enabled }}
# ConfigRollouts: one per change of a config, in the config's namespace,
# made, kept and collected by the change controller (docs/config-rollouts.md);
# patch moves the ripple.dev/latest label off an older change.
- apiGroups: ["ripple.dev"]
  resources: ["configrollouts"]
  verbs: ["get", "list", "watch", "create", "patch", "delete"]
- apiGroups: ["ripple.dev"]
  resources: ["configrollouts/status"]
  verbs: ["update"]
{{- end }}
{{- if (.Values.ripple.pinning | default dict).enabled }}
# Pinning (docs/pinning.md): a pinned workload's reload creates immutable
# copies of the configs it reads, in its namespace, and adds a workload
# that pins the same data to a copy's owners (patch); once its rollout
# completes, the copies are handed to the revisions that name them
# (patch), listed by the workload's selector, so that the revision
# history limit prunes them.
- apiGroups: [""]
  resources: [{{ if not $r.ignoreConfigMaps }}"configmaps"{{ end }}{{ if not (or $r.ignoreConfigMaps $r.ignoreSecrets) }}, {{ end }}{{ if not $r.ignoreSecrets }}"secrets"{{ end }}]
  verbs: ["create", "patch"]
- apiGroups: ["apps"]
  resources: ["replicasets", "controllerrevisions"]
  verbs: ["list"]
# Ripple deletes no copy (the garbage collector does, with its last
# owner), but the API server's OwnerReferencesPermissionEnforcement (on in
# OpenShift, and wherever a cluster turns it on) lets only who may delete
# an object change its owners. The chart's pinned copy policy confines
# this, as the rule above, to Ripple's copies.
- apiGroups: [""]
  resources: [{{ if not $r.ignoreConfigMaps }}"configmaps"{{ end }}{{ if not (or $r.ignoreConfigMaps $r.ignoreSecrets) }}, {{ end }}{{ if not $r.ignoreSecrets }}"secrets"{{ end }}]
  verbs: ["delete"]
{{- end }}
{{- range include "ripple.workloadKindResources" . | fromJsonArray }}
# Declared kind {{ .kind }} (ripple.workloadKinds): its reload is a patch.
- apiGroups: [{{ .group | quote }}]
  resources: [{{ .resource | quote }}]
  verbs: ["get", "list", "watch", "patch"]
{{- end }}
{{- $restart := include "ripple.restartMethods" . | fromJson }}
{{- $podGate := has "pods" (.Values.ripple.canaryGates | default list) }}
{{- $delete := and $restart.delete (not (.Values.ripple.governance | default dict).restartDeleteNamespaces) }}
{{- if or $restart.evict $restart.delete $restart.inPlace $restart.reloadAction }}
# Restart methods (docs/restart-methods.md): the pods of a workload being
# restarted are listed by its selector (never watched){{ if $delete }} and deleted{{ else if $restart.delete }}; they are deleted
# only in ripple.governance.restartDeleteNamespaces (the pod-delete Roles){{ end }}{{ if $restart.inPlace }}; in-place resizes
# one container of each by a unit (pods/resize){{ end }}{{ if $restart.reloadAction }}; a reload action
# calls the reload endpoint of each Ready one{{ end }}.
{{- end }}
{{- if $podGate }}
# The canary's pod gate (ripple.canaryGates: pods, docs/canary.md): the
# pods of a baking change's canaries are listed and watched by their
# selector until the bake ends.
{{- end }}
{{- if or $restart.evict $restart.delete $restart.inPlace $restart.reloadAction $podGate }}
- apiGroups: [""]
  resources: ["pods"]
  verbs: [{{ if $delete }}"delete", {{ end }}"list"{{ if $podGate }}, "watch"{{ end }}]
{{- end }}
{{- if $restart.evict }}
- apiGroups: [""]
  resources: ["pods/eviction"]
  verbs: ["create"]
{{- end }}
{{- if $restart.inPlace }}
- apiGroups: [""]
  resources: ["pods/resize"]
  verbs: ["patch"]
{{- end }}
{{- if $r.enableCSIIntegration }}
# Secrets Store CSI: the pod statuses show the versions each pod mounted.
- apiGroups: ["secrets-store.csi.x-k8s.io"]
  resources: ["secretproviderclasspodstatuses"]
  verbs: ["get", "list", "watch"]
- apiGroups: ["secrets-store.csi.x-k8s.io"]
  resources: ["secretproviderclasses"]
  verbs: ["get", "list", "watch"]
{{- end }}
{{- end }}
{{- end -}}

{{/* The namespaces where Ripple may delete pods, as a JSON array, when
--restart-delete-namespaces limits the delete restart method to them:
those of ripple.governance.restartDeleteNamespaces that Ripple watches.
Empty when the delete method is off, in webhook mode, or when the list is
empty (delete is allowed everywhere Ripple watches: the rules grant it). */}}
{{- define "ripple.podDeleteNamespaces" -}}
{{- $listed := list -}}
{{- $gov := .Values.ripple.governance | default dict -}}
{{- if and (include "ripple.restartMethods" . | fromJson).delete (not (include "ripple.webhookMode" .)) -}}
{{- $mode := include "ripple.mode" . -}}
{{- $watched := list (include "ripple.namespace" .) -}}
{{- if eq $mode "scoped" }}{{ $watched = include "ripple.scopedNamespaces" . | fromJsonArray }}{{ end -}}
{{- range $gov.restartDeleteNamespaces | default list -}}
{{- $n := trim (toString .) -}}
{{- if and $n (or (eq $mode "global") (has $n $watched)) }}{{ $listed = append $listed $n }}{{ end -}}
{{- end -}}
{{- end -}}
{{- toJson ($listed | uniq) -}}
{{- end -}}

{{/* Which restart methods get their pod permissions, as JSON
{"evict": bool, "delete": bool, "inPlace": bool, "reloadAction": bool}:
those turned on under ripple.restartMethods, and the default
ripple.restartMethod (a reload action is an annotation, never the default). */}}
{{- define "ripple.restartMethods" -}}
{{- $rp := .Values.ripple -}}
{{- $on := $rp.restartMethods | default dict -}}
{{- $default := lower (trim (toString ($rp.restartMethod | default ""))) | default "template" -}}
{{- toJson (dict "evict" (or $on.evict (eq $default "evict")) "delete" (or $on.delete (eq $default "delete")) "inPlace" (or $on.inPlace (eq $default "in-place")) "reloadAction" ($on.reloadAction | default false)) -}}
{{- end -}}

{{/* The container arguments, one flag per item, as Reloader's chart maps
its values, plus Ripple's settings. Selectors are not wrapped in quotes as
Reloader's chart does: Ripple splits list flags at commas and joins the
items back, so "a in (x,y),team:b" keeps working item by item, legacy
"team:b" syntax included. */}}
{{- define "ripple.args" -}}
{{- $r := .Values.reloader -}}
{{- $mode := include "ripple.mode" . -}}
{{- $args := list -}}
{{- if $r.logFormat -}}{{- $args = append $args (printf "--log-format=%s" $r.logFormat) -}}{{- end -}}
{{- if $r.logLevel -}}{{- $args = append $args (printf "--log-level=%s" $r.logLevel) -}}{{- end -}}
{{- if $r.ignoreSecrets -}}{{- $args = append $args "--resources-to-ignore=secrets" -}}{{- end -}}
{{- if $r.ignoreConfigMaps -}}{{- $args = append $args "--resources-to-ignore=configmaps" -}}{{- end -}}
{{- $types := list -}}
{{- if $r.ignoreJobs -}}{{- $types = append $types "jobs" -}}{{- end -}}
{{- if $r.ignoreCronJobs -}}{{- $types = append $types "cronjobs" -}}{{- end -}}
{{- if $types -}}{{- $args = append $args (printf "--ignored-workload-types=%s" (join "," $types)) -}}{{- end -}}
{{- if eq $mode "scoped" -}}
{{- $args = append $args (printf "--namespaces=%s" (include "ripple.scopedNamespaces" . | fromJsonArray | join ",")) -}}
{{- end -}}
{{- if eq $mode "global" -}}
{{- $ignore := include "ripple.csv" $r.ignoreNamespaces | trim -}}
{{- if $ignore -}}{{- $args = append $args (printf "--namespaces-to-ignore=%s" $ignore) -}}{{- end -}}
{{- $sel := trimAll "\"" (toString ($r.namespaceSelector | default "")) | trim -}}
{{- if $sel -}}{{- $args = append $args (printf "--namespace-selector=%s" $sel) -}}{{- end -}}
{{- end -}}
{{- $rsel := trimAll "\"" (toString ($r.resourceLabelSelector | default "")) | trim -}}
{{- if $rsel -}}{{- $args = append $args (printf "--resource-label-selector=%s" $rsel) -}}{{- end -}}
{{- if $r.enablePProf -}}
{{- $args = append $args "--enable-pprof=true" -}}
{{- if $r.pprofAddr -}}{{- $args = append $args (printf "--pprof-addr=%s" $r.pprofAddr) -}}{{- end -}}
{{- end -}}
{{- if $r.enableCSIIntegration -}}{{- $args = append $args "--enable-csi-integration=true" -}}{{- end -}}
{{- $ca := $r.custom_annotations | default dict -}}
{{- range $key, $flag := dict "configmap" "configmap-annotation" "secret" "secret-annotation" "auto" "auto-annotation" "configmap_auto" "configmap-auto-annotation" "secret_auto" "secret-auto-annotation" "search" "auto-search-annotation" "match" "search-match-annotation" "ignore" "ignore-annotation" "pausePeriod" "pause-deployment-annotation" "pauseTime" "pause-deployment-time-annotation" "configmap_exclude" "configmap-exclude-annotation" "secret_exclude" "secret-exclude-annotation" "secretproviderclass" "secretproviderclass-annotation" "secretproviderclass_auto" "secretproviderclass-auto-annotation" "secretproviderclass_exclude" "secretproviderclass-exclude-annotation" -}}
{{- if index $ca $key -}}{{- $args = append $args (printf "--%s=%s" $flag (index $ca $key)) -}}{{- end -}}
{{- end -}}
{{- /* webhookUrl is not an argument: RIPPLE_WEBHOOK_URL, from a Secret. */ -}}
{{- if $r.isArgoRollouts -}}{{- $args = append $args "--is-Argo-Rollouts=true" -}}{{- end -}}
{{- if $r.isOpenshift -}}{{- $args = append $args "--is-openshift=true" -}}{{- end -}}
{{- $wk := .Values.ripple.workloadKinds | default dict -}}
{{- if $wk.presets -}}{{- $args = append $args (printf "--workload-kinds-preset=%s" (join "," $wk.presets)) -}}{{- end -}}
{{- if $wk.declared -}}{{- $args = append $args (printf "--workload-kinds=%s/workload-kinds.yaml" (include "ripple.workloadKindsDir" .)) -}}{{- end -}}
{{- if $r.reloadOnCreate -}}{{- $args = append $args "--reload-on-create=true" -}}{{- end -}}
{{- if $r.reloadOnDelete -}}{{- $args = append $args "--reload-on-delete=true" -}}{{- end -}}
{{- if $r.syncAfterRestart -}}{{- $args = append $args "--sync-after-restart=true" -}}{{- end -}}
{{- if and $r.reloadStrategy (ne (toString $r.reloadStrategy) "default") -}}{{- $args = append $args (printf "--reload-strategy=%s" $r.reloadStrategy) -}}{{- end -}}
{{- if include "ripple.ha" . -}}{{- $args = append $args "--enable-ha=true" -}}{{- end -}}
{{- if $r.autoReloadAll -}}{{- $args = append $args "--auto-reload-all=true" -}}{{- end -}}
{{- $rp := .Values.ripple -}}
{{- if $rp.settleWindow -}}{{- $args = append $args (printf "--settle-window=%s" (toString $rp.settleWindow)) -}}{{- end -}}
{{- if $rp.reloadWindow -}}{{- $args = append $args (printf "--reload-window=%s" (toString $rp.reloadWindow)) -}}{{- end -}}
{{- if $rp.digest -}}{{- $args = append $args (printf "--digest=%s" (toString $rp.digest)) -}}{{- end -}}
{{- if $rp.reloadPolicy -}}{{- $args = append $args (printf "--reload-policy=%s" (toString $rp.reloadPolicy)) -}}{{- end -}}
{{- if $rp.canary -}}{{- $args = append $args (printf "--canary=%s" (toString $rp.canary)) -}}{{- end -}}
{{- if $rp.canaryBake -}}{{- $args = append $args (printf "--canary-bake=%s" (toString $rp.canaryBake)) -}}{{- end -}}
{{- if $rp.canaryUnkept -}}{{- $args = append $args (printf "--canary-unkept=%s" (toString $rp.canaryUnkept)) -}}{{- end -}}
{{- with $rp.canaryGates -}}{{- $args = append $args (printf "--canary-gates=%s" (join "," .)) -}}{{- end -}}
{{- $prom := $rp.prometheus | default dict -}}
{{- if $prom.url -}}{{- $args = append $args (printf "--prometheus-url=%s" (toString $prom.url)) -}}{{- end -}}
{{- if $prom.secret -}}{{- $args = append $args (printf "--prometheus-credentials-dir=%s" (include "ripple.prometheusDir" .)) -}}{{- end -}}
{{- if $prom.query -}}{{- $args = append $args (printf "--canary-query=%s" (toString $prom.query)) -}}{{- end -}}
{{- if $prom.interval -}}{{- $args = append $args (printf "--canary-query-interval=%s" (toString $prom.interval)) -}}{{- end -}}
{{- if $prom.inconclusive -}}{{- $args = append $args (printf "--canary-query-inconclusive=%s" (toString $prom.inconclusive)) -}}{{- end -}}
{{- if ($rp.pinning | default dict).enabled -}}{{- $args = append $args "--pinning=true" -}}{{- end -}}
{{- $cro := $rp.configRollouts | default dict -}}
{{- if not $cro.enabled -}}{{- $args = append $args "--config-rollouts=false" -}}{{- end -}}
{{- if $cro.history -}}{{- $args = append $args (printf "--config-rollout-history=%s" (toString $cro.history)) -}}{{- end -}}
{{- if $cro.perNamespace -}}{{- $args = append $args (printf "--config-rollouts-per-namespace=%s" (toString $cro.perNamespace)) -}}{{- end -}}
{{- if and $rp.namespaceDefaults (eq $mode "global") -}}{{- $args = append $args "--namespace-defaults=true" -}}{{- end -}}
{{- if $rp.minRolloutInterval -}}{{- $args = append $args (printf "--min-rollout-interval=%s" (toString $rp.minRolloutInterval)) -}}{{- end -}}
{{- $fb := $rp.flapBreaker | default dict -}}
{{- if not (kindIs "invalid" $fb.threshold) -}}{{- $args = append $args (printf "--flap-threshold=%d" (int $fb.threshold)) -}}{{- end -}}
{{- if $fb.window -}}{{- $args = append $args (printf "--flap-window=%s" (toString $fb.window)) -}}{{- end -}}
{{- if $fb.quietPeriod -}}{{- $args = append $args (printf "--flap-quiet-period=%s" (toString $fb.quietPeriod)) -}}{{- end -}}
{{- /* Both in any case, as Ripple reads them; passed in lower case. */ -}}
{{- $cj := lower (trim (toString ($rp.cronJobReload | default ""))) -}}
{{- if and $cj (ne $cj "run") -}}{{- $args = append $args (printf "--cronjob-reload=%s" $cj) -}}{{- end -}}
{{- $rm := lower (trim (toString ($rp.restartMethod | default ""))) | default "template" -}}
{{- if ne $rm "template" -}}{{- $args = append $args (printf "--restart-method=%s" $rm) -}}{{- end -}}
{{- if $rp.dryRun -}}{{- $args = append $args "--dry-run=true" -}}{{- end -}}
{{- if $rp.annotationPrefix -}}{{- $args = append $args (printf "--annotation-prefix=%s" $rp.annotationPrefix) -}}{{- end -}}
{{- $gov := $rp.governance | default dict -}}
{{- if $gov.tightenOnly -}}{{- $args = append $args "--tighten-only=true" -}}{{- end -}}
{{- if $gov.approvalMaxAge -}}{{- $args = append $args (printf "--approval-max-age=%s" (toString $gov.approvalMaxAge)) -}}{{- end -}}
{{- if $gov.restartDeleteNamespaces -}}{{- $args = append $args (printf "--restart-delete-namespaces=%s" (join "," $gov.restartDeleteNamespaces)) -}}{{- end -}}
{{- if ($gov.approvalPolicy | default dict).enabled -}}{{- $args = append $args "--approvals-verified=true" -}}{{- end -}}
{{- if not (kindIs "invalid" $rp.maxConcurrentRollouts) -}}{{- $args = append $args (printf "--max-concurrent-rollouts=%d" (int $rp.maxConcurrentRollouts)) -}}{{- end -}}
{{- if not (kindIs "invalid" $rp.maxConcurrentRolloutsPerNamespace) -}}{{- $args = append $args (printf "--max-concurrent-rollouts-per-namespace=%d" (int $rp.maxConcurrentRolloutsPerNamespace)) -}}{{- end -}}
{{- if $rp.rolloutTimeout -}}{{- $args = append $args (printf "--rollout-timeout=%s" (toString $rp.rolloutTimeout)) -}}{{- end -}}
{{- if not (kindIs "invalid" $rp.kubeApiQps) -}}{{- $args = append $args (printf "--kube-api-qps=%v" $rp.kubeApiQps) -}}{{- end -}}
{{- if not (kindIs "invalid" $rp.kubeApiBurst) -}}{{- $args = append $args (printf "--kube-api-burst=%d" (int $rp.kubeApiBurst)) -}}{{- end -}}
{{- if not (kindIs "invalid" $rp.maxConcurrentReconciles) -}}{{- $args = append $args (printf "--max-concurrent-reconciles=%d" (int $rp.maxConcurrentReconciles)) -}}{{- end -}}
{{- if include "ripple.ha" . -}}
{{- $le := $rp.leaderElection | default dict -}}
{{- if $le.id -}}{{- $args = append $args (printf "--leader-election-id=%s" $le.id) -}}{{- end -}}
{{- /* Reloader chart 3.0's reloader.leaderElection or Ripple's; ripple.validate refuses two different values. */ -}}
{{- $rle := $r.leaderElection | default dict -}}
{{- range $key, $flag := dict "leaseDuration" "lease-duration" "renewDeadline" "renew-deadline" "retryPeriod" "retry-period" -}}
{{- with (index $le $key) | default (index $rle $key) -}}{{- $args = append $args (printf "--leader-election-%s=%s" $flag .) -}}{{- end -}}
{{- end -}}
{{- end -}}
{{- $adm := $rp.admission | default dict -}}
{{- if $adm.enabled -}}
{{- /* The certificate is mounted at Ripple's default --admission-cert-dir. */ -}}
{{- $args = append $args (printf "--admission-bind-address=:%d" (int ($adm.port | default 9443))) -}}
{{- if gt (int ($adm.maxRollouts | default 0)) 0 -}}{{- $args = append $args (printf "--admission-max-rollouts=%d" (int $adm.maxRollouts)) -}}{{- end -}}
{{- if $adm.clientCA -}}{{- $args = append $args (printf "--admission-client-ca=%s/ca.crt" (include "ripple.admissionClientCADir" $)) -}}{{- end -}}
{{- end -}}
{{- if $rp.alertTemplate -}}{{- $args = append $args (printf "--alert-template=%s/alert.tmpl" (include "ripple.alertTemplateDir" .)) -}}{{- end -}}
{{- if $rp.alertClusterName -}}{{- $args = append $args (printf "--alert-cluster-name=%s" $rp.alertClusterName) -}}{{- end -}}
{{- range $rp.extraArgs -}}{{- $args = append $args (toString .) -}}{{- end -}}
{{- toJson $args -}}
{{- end -}}

{{/* Probe settings: Reloader's defaults, overridden per key (0 included). */}}
{{- define "ripple.probeTimings" -}}
{{- $p := . | default dict -}}
{{- range $key, $def := dict "timeoutSeconds" 5 "failureThreshold" 5 "periodSeconds" 10 "successThreshold" 1 "initialDelaySeconds" 10 }}
{{ $key }}: {{ if hasKey $p $key }}{{ int (index $p $key) }}{{ else }}{{ $def }}{{ end }}
{{- end }}
{{- end -}}

{{/* The PromQL label matchers selecting this release's series. */}}
{{- define "ripple.alertSelector" -}}
{{- .Values.ripple.alerts.selector | default (printf "namespace=%q,job=%q" (include "ripple.namespace" .) (include "ripple.fullname" .)) -}}
{{- end -}}

{{/* Brings older Reloader values into the form the templates read, in
place (every template includes it first; it is idempotent), and records
what it changed in .Values._rippleDeprecated for NOTES.txt to warn about:
  * quoted booleans ("true", "false") become booleans; a plain `if` would
    take "false" as true;
  * reloader.deployment.image.{name,tag,pullPolicy} (Reloader chart 1.0)
    become image.{repository,tag,pullPolicy};
  * reloader.volumes / reloader.volumeMounts are appended to
    reloader.deployment.volumes / volumeMounts.
The schema accepts these forms; nothing here fails. */}}
{{- define "ripple.compat" -}}
{{- if not (hasKey .Values "_rippleDeprecated") -}}
{{- $notes := list -}}
{{- $r := .Values.reloader -}}
{{- $bools := dict "" (list "autoReloadAll" "isArgoRollouts" "isOpenshift" "ignoreSecrets" "ignoreConfigMaps" "ignoreJobs" "ignoreCronJobs" "reloadOnCreate" "reloadOnDelete" "syncAfterRestart" "watchGlobally" "enableHA" "enablePProf" "enableCSIIntegration" "readOnlyRootFileSystem" "enableMetricsByNamespace") "rbac" (list "enabled") "serviceAccount" (list "create" "automountServiceAccountToken") "deployment" (list "automountServiceAccountToken" "hostUsers") "serviceMonitor" (list "enabled" "honorLabels") "podMonitor" (list "enabled" "honorLabels") "podDisruptionBudget" (list "enabled") "netpol" (list "enabled") "verticalPodAutoscaler" (list "enabled") "legacy" (list "rbac") -}}
{{- range $group, $keys := $bools -}}
{{- $m := $r -}}
{{- if $group -}}{{- $m = index $r $group -}}{{- end -}}
{{- if kindIs "map" $m -}}
{{- range $keys -}}
{{- $v := index $m . -}}
{{- if kindIs "string" $v -}}
{{- $_ := set $m . (eq (lower $v) "true") -}}
{{- $notes = append $notes (printf "reloader.%s%s: %q is a quoted boolean; write %s without quotes." (ternary (printf "%s." $group) "" (ne $group "")) . $v (lower $v)) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- $d := $r.deployment | default dict -}}
{{- with $d.image -}}
{{- $img := $.Values.image | default dict -}}
{{- if .name -}}{{- $_ := set $img "repository" .name -}}{{- $_ := set $img "name" .name -}}{{- end -}}
{{- if .tag -}}{{- $_ := set $img "tag" (toString .tag) -}}{{- end -}}
{{- if .pullPolicy -}}{{- $_ := set $img "pullPolicy" .pullPolicy -}}{{- end -}}
{{- $_ := set $.Values "image" $img -}}
{{- $notes = append $notes "reloader.deployment.image is deprecated (Reloader chart 1.0); use image.repository, image.tag and image.pullPolicy." -}}
{{- end -}}
{{- range $old, $new := dict "volumes" "volumes" "volumeMounts" "volumeMounts" -}}
{{- with index $r $old -}}
{{- $_ := set $d $new (concat (index $d $new | default list) .) -}}
{{- $_ := unset $r $old -}}
{{- $notes = append $notes (printf "reloader.%s is deprecated; use reloader.deployment.%s." $old $new) -}}
{{- end -}}
{{- end -}}
{{- $_ := set .Values "_rippleDeprecated" $notes -}}
{{- end -}}
{{- end -}}

{{/* Where the alert template of ripple.alertTemplate is mounted:
alert.tmpl in it. */}}
{{- define "ripple.alertTemplateDir" -}}/etc/ripple/alert-template{{- end -}}

{{/* Where the kinds file of ripple.workloadKinds.declared is mounted. */}}
{{- define "ripple.workloadKindsDir" -}}/etc/ripple/workload-kinds{{- end -}}

{{/* Where the Secret of ripple.prometheus.secret is mounted (read-only),
passed as --prometheus-credentials-dir. */}}
{{- define "ripple.prometheusDir" -}}/etc/ripple/prometheus{{- end -}}

{{/* The resources of the declared kinds, as a JSON list of {kind, group,
resource}: the presets' (as internal/declared ships them; test/chart
checks the two agree) and those of ripple.workloadKinds.declared, whose
resource defaults to the kind's lower-case plural as Ripple makes it. */}}
{{- define "ripple.workloadKindResources" -}}
{{- $presets := dict
  "kruise" (list (dict "kind" "CloneSet" "group" "apps.kruise.io" "resource" "clonesets")
    (dict "kind" "StatefulSet" "group" "apps.kruise.io" "resource" "statefulsets")
    (dict "kind" "DaemonSet" "group" "apps.kruise.io" "resource" "daemonsets"))
  "knative" (list (dict "kind" "Service" "group" "serving.knative.dev" "resource" "services"))
  "keda" (list (dict "kind" "ScaledJob" "group" "keda.sh" "resource" "scaledjobs"))
  "external-secrets" (list (dict "kind" "ExternalSecret" "group" "external-secrets.io" "resource" "externalsecrets")) -}}
{{- $wk := .Values.ripple.workloadKinds | default dict -}}
{{- $out := list -}}
{{- range $wk.presets -}}
{{- $name := lower (toString .) -}}
{{- $p := index $presets $name -}}
{{- if not $p -}}{{- fail (printf "ripple.workloadKinds.presets: %q is not a preset; use one of %s" (toString .) (keys $presets | sortAlpha | join ", ")) -}}{{- end -}}
{{- range $p -}}{{- $out = append $out (merge (dict "from" (printf "preset %s" $name)) .) -}}{{- end -}}
{{- end -}}
{{- range $i, $_ := $wk.declared -}}
{{- $res := .resource -}}
{{- if not $res -}}
{{- $k := lower (toString .kind) -}}
{{- if regexMatch "[^ae]y$" $k -}}{{- $res = regexReplaceAll "y$" $k "ies" -}}
{{- else if regexMatch "(s|x|ch|sh)$" $k -}}{{- $res = printf "%ses" $k -}}
{{- else -}}{{- $res = printf "%ss" $k -}}{{- end -}}
{{- end -}}
{{- $out = append $out (dict "kind" .kind "group" .group "resource" $res "from" (printf "ripple.workloadKinds.declared entry %d" (add1 $i))) -}}
{{- end -}}
{{- toJson $out -}}
{{- end -}}

{{/* Where the webhook's serving certificate is mounted (read-only): Ripple's
default --admission-cert-dir, so no flag is passed. */}}
{{- define "ripple.admissionCertDir" -}}/etc/ripple/admission-tls{{- end -}}

{{/* Where the CA of the API server's client certificate
(ripple.admission.clientCA) is mounted: ca.crt in it. */}}
{{- define "ripple.admissionClientCADir" -}}/etc/ripple/admission-client-ca{{- end -}}

{{/* The Secret holding the webhook's serving certificate: the user's
(ripple.admission.certificate.secretName), else <fullname>-admission-tls,
which the chart or cert-manager writes. */}}
{{- define "ripple.admissionSecretName" -}}
{{- ((.Values.ripple.admission | default dict).certificate | default dict).secretName | default (printf "%s-admission-tls" (include "ripple.fullname" .)) -}}
{{- end -}}

{{/* The label that keeps the webhook off a Namespace or a config, with the
value disabled: <annotationPrefix>/admission, ripple.dev/admission by
default. */}}
{{- define "ripple.admissionOptOut" -}}
{{- printf "%s/admission" (.Values.ripple.annotationPrefix | default "ripple.dev") -}}
{{- end -}}

{{/* The TCP port a URL connects to: the one it names, else 80 for http
and 443 for https. */}}
{{- define "ripple.urlPort" -}}
{{- $u := urlParse . -}}
{{- if regexMatch ":[0-9]+$" $u.host -}}{{- regexFind "[0-9]+$" $u.host -}}
{{- else if eq $u.scheme "http" -}}80
{{- else -}}443
{{- end -}}
{{- end -}}
