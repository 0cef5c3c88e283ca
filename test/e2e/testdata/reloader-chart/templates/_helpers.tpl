{{/* Reloader's fullname rule: fullnameOverride, else <release>-<nameOverride
or the chart name "reloader">, cut at 63 characters. */}}
{{- define "reloader-fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name (default .Chart.Name .Values.nameOverride) | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* The selector labels (app, release) and the rest of the chart labels. */}}
{{- define "reloader-match-labels" -}}
app: {{ include "reloader-fullname" . }}
release: {{ .Release.Name | quote }}
{{- end -}}

{{- define "reloader-labels" -}}
{{ include "reloader-match-labels" . }}
app.kubernetes.io/name: {{ default .Chart.Name .Values.nameOverride }}
app.kubernetes.io/instance: {{ .Release.Name | quote }}
helm.sh/chart: "{{ .Chart.Name }}-{{ .Chart.Version }}"
chart: "{{ .Chart.Name }}-{{ .Chart.Version }}"
heritage: {{ .Release.Service | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service | quote }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end -}}

{{- define "reloader-serviceAccountName" -}}
{{- if .Values.reloader.serviceAccount.create -}}
{{- default (include "reloader-fullname" .) .Values.reloader.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.reloader.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The rules Reloader's chart grants, in the ClusterRole (global) or the
Role (one namespace). */}}
{{- define "reloader-rules" -}}
- apiGroups: [""]
  resources:
    {{- if not .Values.reloader.ignoreSecrets }}
    - secrets
    {{- end }}
    {{- if not .Values.reloader.ignoreConfigMaps }}
    - configmaps
    {{- end }}
  verbs: [list, get, watch]
- apiGroups: [apps]
  resources: [deployments, daemonsets, statefulsets]
  verbs: [list, get, update, patch]
- apiGroups: [batch]
  resources: [cronjobs]
  verbs: [list, get]
- apiGroups: [batch]
  resources: [jobs]
  verbs: [create, delete, list, get]
- apiGroups: [""]
  resources: [events]
  verbs: [create, patch]
{{- end -}}
