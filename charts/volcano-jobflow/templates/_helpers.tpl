{{/* The image every container runs: repository:tag, pinned by @digest when one is given. */}}
{{- define "jobflow.image" -}}
{{- $tag := .Values.image.tag | default .Chart.AppVersion -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}:{{ $tag }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ $tag }}
{{- end -}}
{{- end -}}

{{/* Labels on every object: the manifests' part-of, and Helm's own (which release made it). */}}
{{- define "jobflow.labels" -}}
app.kubernetes.io/part-of: volcano-jobflow
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* The "restricted" Pod Security Standard, as the manifests set it on every pod. */}}
{{- define "jobflow.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 10001
runAsGroup: 10001
seccompProfile: {type: RuntimeDefault}
{{- end -}}

{{- define "jobflow.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities: {drop: [ALL]}
{{- end -}}

{{/* The served namespaces, comma-separated, for the NAMESPACES variable; empty when cluster-wide. */}}
{{- define "jobflow.namespaces" -}}
{{- join "," .Values.namespaces -}}
{{- end -}}

{{/* Scheduling of the engine's pods: nodeSelector, tolerations, affinity, from the values. */}}
{{- define "jobflow.placement" -}}
{{- with .Values.nodeSelector }}
nodeSelector: {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations: {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.affinity }}
affinity: {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.imagePullSecrets }}
imagePullSecrets: {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* The rules of the ClusterRole named .name in the manifests' file .file (files/rbac/ links there): the chart grants
exactly the rights docs/rbac.md lists for the manifests, never a copy that could drift. */}}
{{- define "jobflow.rules" -}}
{{- $found := "" -}}
{{- range $document := regexSplit "(?m)^---\\s*$" (.root.Files.Get .file) -1 -}}
{{- $object := fromYaml $document -}}
{{- if and (eq ($object.kind | default "") "ClusterRole") (eq $object.metadata.name $.name) -}}
{{- $found = toYaml $object.rules -}}
{{- end -}}
{{- end -}}
{{- required (printf "no ClusterRole %s in %s" .name .file) $found -}}
{{- end -}}

{{/* "true" when the chart runs our event source: always in the plain mode, on Knative when knative.source says so
(else ApiServerSource and a PingSource deliver the events); empty otherwise. */}}
{{- define "jobflow.runsEventSource" -}}
{{- if or (eq .Values.mode "plain") (eq .Values.knative.source "eventsource") }}true{{ end -}}
{{- end -}}

{{/* Adds the chart's labels (jobflow.labels) to .object, an object parsed from one of the files the chart renders
as they are (the CRDs, knative/), keeping the labels it has. */}}
{{- define "jobflow.addLabels" -}}
{{- $_ := set .object.metadata "labels" (merge (dict) (.object.metadata.labels | default dict) (include "jobflow.labels" .root | fromYaml)) -}}
{{- end -}}
