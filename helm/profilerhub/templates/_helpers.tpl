{{- /*
Named templates. Every object name comes from here (zero-to-jupyterhub style), so a
fullnameOverride renames everything consistently. Each template takes the root context.
*/}}

{{- define "profilerhub.fullname" -}}
{{- .Values.fullnameOverride | default (printf "%s-%s" .Release.Name .Chart.Name) | trunc 40 | trimSuffix "-" -}}
{{- end }}

{{- define "profilerhub.hub.fullname" -}}
{{- printf "%s-hub" (include "profilerhub.fullname" .) -}}
{{- end }}

{{- define "profilerhub.worker.fullname" -}}
{{- printf "%s-worker" (include "profilerhub.fullname" .) -}}
{{- end }}

{{- define "profilerhub.ingest.fullname" -}}
{{- printf "%s-ingest" (include "profilerhub.fullname" .) -}}
{{- end }}

{{- /* host:port of the Redis KEDA reads the ingest queue's length from. */}}
{{- define "profilerhub.ingest.redisAddress" -}}
{{- if .Values.redis.enabled -}}
{{- printf "%s:6379" (include "profilerhub.redis.fullname" .) -}}
{{- else -}}
{{- required "ingestWorker.autoscaling.redisAddress (host:port) is required unless redis.enabled" .Values.ingestWorker.autoscaling.redisAddress -}}
{{- end -}}
{{- end }}

{{- define "profilerhub.beat.fullname" -}}
{{- printf "%s-beat" (include "profilerhub.fullname" .) -}}
{{- end }}

{{- define "profilerhub.migration.fullname" -}}
{{- printf "%s-migrate" (include "profilerhub.fullname" .) -}}
{{- end }}

{{- define "profilerhub.redis.fullname" -}}
{{- printf "%s-redis" (include "profilerhub.fullname" .) -}}
{{- end }}

{{- define "profilerhub.apps.fullname" -}}
{{- printf "%s-apps" (include "profilerhub.fullname" .) -}}
{{- end }}

{{- define "profilerhub.settings.fullname" -}}
{{- printf "%s-settings" (include "profilerhub.fullname" .) -}}
{{- end }}

{{- define "profilerhub.secret.fullname" -}}
{{- .Values.secrets.existingSecret | default (printf "%s-secrets" (include "profilerhub.fullname" .)) -}}
{{- end }}

{{- define "profilerhub.apps.namespace" -}}
{{- .Values.apps.namespace | default .Release.Namespace -}}
{{- end }}

{{- define "profilerhub.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- end }}

{{- define "profilerhub.labels" -}}
app.kubernetes.io/name: profilerhub
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end }}

{{- define "profilerhub.selectorLabels" -}}
app.kubernetes.io/name: profilerhub
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- /* The pod and container security contexts every ProfilerHub pod runs with. */}}
{{- define "profilerhub.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 10001
runAsGroup: 10001
fsGroup: 10001
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{- define "profilerhub.containerSecurityContext" -}}
runAsNonRoot: true
runAsUser: 10001
runAsGroup: 10001
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
privileged: false
capabilities:
  drop: ["ALL"]
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{- /* Non-secret settings, shared by hub, worker, beat and the migration Job (PROFILERHUB_*). */}}
{{- define "profilerhub.settings.data" -}}
PROFILERHUB_ENVIRONMENT: {{ .Values.settings.environment | quote }}
PROFILERHUB_HOME: "/var/lib/profilerhub"
PROFILERHUB_HOST: "0.0.0.0"
PROFILERHUB_PORT: "8080"
PROFILERHUB_PUBLIC_URL: {{ .Values.settings.publicUrl | quote }}
PROFILERHUB_HUB_INTERNAL_URL: {{ printf "http://%s.%s.svc:%v" (include "profilerhub.hub.fullname" .) .Release.Namespace .Values.hub.service.port | quote }}
PROFILERHUB_STORAGE_URL: {{ required "settings.storageUrl is required (s3://bucket/prefix)" .Values.settings.storageUrl | quote }}
PROFILERHUB_S3_ENDPOINT_URL: {{ .Values.settings.s3EndpointUrl | quote }}
PROFILERHUB_CELERY_QUEUE: {{ .Values.settings.celeryQueue | quote }}
PROFILERHUB_LOG_LEVEL: {{ .Values.settings.logLevel | quote }}
PROFILERHUB_APP_POLL_SECONDS: {{ .Values.settings.appPollSeconds | quote }}
PROFILERHUB_JOB_INGEST_TRACE_MEMORY_BYTES: {{ .Values.ingestWorker.traceMemoryBytes | quote }}
PROFILERHUB_WORKER_INGEST_MEMORY_BYTES: {{ .Values.ingestWorker.ingestMemoryBytes | quote }}
PROFILERHUB_SPAWNER: "kubernetes"
PROFILERHUB_K8S_NAMESPACE: {{ include "profilerhub.apps.namespace" . | quote }}
PROFILERHUB_K8S_RELEASE: {{ .Release.Name | quote }}
PROFILERHUB_K8S_APP_IMAGE: {{ include "profilerhub.image" . | quote }}
PROFILERHUB_K8S_IMAGE_PULL_POLICY: {{ .Values.image.pullPolicy | quote }}
PROFILERHUB_K8S_APP_CPU_REQUEST: {{ .Values.apps.resources.cpuRequest | quote }}
PROFILERHUB_K8S_APP_MEMORY_REQUEST: {{ .Values.apps.resources.memoryRequest | quote }}
PROFILERHUB_K8S_APP_CPU_LIMIT: {{ .Values.apps.resources.cpuLimit | quote }}
PROFILERHUB_K8S_APP_MEMORY_LIMIT: {{ .Values.apps.resources.memoryLimit | quote }}
PROFILERHUB_K8S_APP_STORAGE_SECRET: {{ .Values.apps.storageSecret | quote }}
PROFILERHUB_K8S_APP_STORAGE_SECRET_TEMPLATE: {{ .Values.apps.storageSecretTemplate | quote }}
{{- end }}

{{- /* The environment of every ProfilerHub container: the ConfigMap, then the Secret. */}}
{{- define "profilerhub.envFrom" -}}
- configMapRef:
    name: {{ include "profilerhub.settings.fullname" . }}
- secretRef:
    name: {{ include "profilerhub.secret.fullname" . }}
{{- end }}

{{- /* Annotations that roll the pods when the settings or secrets change. */}}
{{- define "profilerhub.checksums" -}}
checksum/settings: {{ include "profilerhub.settings.data" . | sha256sum }}
checksum/secrets: {{ include "profilerhub.secrets.inputs" . | sha256sum }}
{{- end }}

{{- define "profilerhub.secrets.inputs" -}}
{{- toYaml .Values.secrets -}}
{{- end }}

{{- define "profilerhub.volumes" -}}
- name: tmp
  emptyDir: {}
- name: home
  emptyDir: {}
{{- end }}

{{- define "profilerhub.volumeMounts" -}}
- name: tmp
  mountPath: /tmp
- name: home
  mountPath: /var/lib/profilerhub
{{- end }}
