{{/* The chart name, or nameOverride. */}}
{{- define "berth.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The name of every object of the release. A release named like the chart ("berth") gives plain
"berth" rather than "berth-berth".
*/}}
{{- define "berth.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "berth.selectorLabels" -}}
app.kubernetes.io/name: {{ include "berth.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "berth.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "berth.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/component: scheduler
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "berth.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "berth.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
"true" when the replicas elect a leader: leaderElection.enabled when set, else replicas > 1.
Several replicas without it would all schedule at once and overcommit nodes, so that is refused.
*/}}
{{- define "berth.leaderElect" -}}
{{- $enabled := .Values.leaderElection.enabled }}
{{- if kindIs "invalid" $enabled }}
{{- $enabled = gt (int .Values.replicas) 1 }}
{{- end }}
{{- if and (not $enabled) (gt (int .Values.replicas) 1) }}
{{- fail (printf "replicas is %d but leaderElection.enabled is false: replicas that do not elect a leader all schedule at once; set leaderElection.enabled to true (or leave it null)" (int .Values.replicas)) }}
{{- end }}
{{- ternary "true" "false" $enabled }}
{{- end }}

{{- define "berth.leaseName" -}}
{{- default (include "berth.fullname" .) .Values.leaderElection.resourceName }}
{{- end }}

{{- define "berth.metricsReaderName" -}}
{{- printf "%s-metrics-reader" (include "berth.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "berth.debugReaderName" -}}
{{- printf "%s-debug-reader" (include "berth.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- /*
A ClusterRole of non-resource rules, and a ClusterRoleBinding to the ServiceAccounts listed in
.values.serviceAccounts when there are any. Arguments: root (the chart's context), name, values,
rules.
*/}}
{{- define "berth.nonResourceRole" -}}
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: {{ .name }}
  labels:
    {{- include "berth.labels" .root | nindent 4 }}
rules:
  {{- toYaml .rules | nindent 2 }}
{{- with .values.serviceAccounts }}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: {{ $.name }}
  labels:
    {{- include "berth.labels" $.root | nindent 4 }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: {{ $.name }}
subjects:
  {{- range . }}
  - kind: ServiceAccount
    name: {{ .name }}
    namespace: {{ .namespace }}
  {{- end }}
{{- end }}
{{- end }}

{{- define "berth.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
