"""How Kubernetes JSON becomes Python objects, and back, without losing anything.

Every model in this package mirrors a Kubernetes or Volcano type field for field. The Python attribute is the
snake_case spelling; the pydantic ``alias`` is the exact JSON name the API server uses (``unKnowJobs``,
``createTime``: upstream's spelling, typos included). Four rules keep the models wire-compatible:

* Parse what the API server sends with ``Model.model_validate(obj)``. Fields we do not model are kept
  (``extra="allow"``), so an object survives a round trip even when Volcano adds fields we have never heard of.
* Dump with :meth:`WireModel.to_wire`: JSON names, JSON types, and ``None`` left out. Upstream's Go types mark
  every optional field ``omitempty``; leaving unknowns out is how we match that, and it is why we never send a
  ``null`` timestamp (upstream does, and it broke CRD validation, issue #3234). Free-form values (a pod
  template, a PVC spec) are plain dicts and are dumped exactly as they came, nulls included.
* Timestamps are ``metav1.Time``: RFC 3339, UTC, whole seconds, ``2026-01-02T03:04:05Z``. :data:`Timestamp`
  parses any RFC 3339 string and always dumps that shape.
* Models are frozen. Upstream assigned status onto objects shared with its informer cache and poisoned it when a
  write failed (reference G.10); here a plan cannot change its inputs by accident. Build new values with
  ``model_copy(update=...)``.
"""

from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, PlainSerializer

DEFAULT_NAMESPACE = "default"
"""The namespace of an object that does not name one; the API server (and kubectl) fill in the same."""

_WIRE_TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
_ZERO = timedelta(0)


def _as_kubernetes_time(value: datetime) -> datetime:
    # metav1.Time has whole-second precision, and a value without a zone is UTC by API convention. Normalising
    # on the way in makes two observations of the same object compare equal.
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    elif not value.microsecond and value.utcoffset() == _ZERO:  # the usual case, already normal: no new object
        return value
    return value.astimezone(UTC).replace(microsecond=0)


def format_time(value: datetime) -> str:
    """Format a datetime as the API server does: ``2026-01-02T03:04:05Z``."""
    v = _as_kubernetes_time(value)
    # The same as strftime(_WIRE_TIME_FORMAT), several times faster: every status write formats dozens of these.
    return f"{v.year:04d}-{v.month:02d}-{v.day:02d}T{v.hour:02d}:{v.minute:02d}:{v.second:02d}Z"


Timestamp = Annotated[
    datetime,
    AfterValidator(_as_kubernetes_time),
    PlainSerializer(format_time, return_type=str, when_used="json"),
]
"""A ``metav1.Time``: an aware UTC datetime in Python, ``2026-01-02T03:04:05Z`` on the wire."""


class WireModel(BaseModel):
    """Base of every model that mirrors an API type (see the module docstring for the rules)."""

    model_config = ConfigDict(populate_by_name=True, extra="allow", frozen=True)

    def to_wire(self) -> dict[str, Any]:
        """The JSON object the API server expects: JSON names, no ``None`` anywhere a field is unknown."""
        return self.model_dump(by_alias=True, exclude_none=True, mode="json")


class OwnerReference(WireModel):
    """``metav1.OwnerReference``: who owns an object, and whether that owner is its controller."""

    api_version: str = Field(alias="apiVersion")
    kind: str
    name: str
    uid: str
    controller: bool | None = None
    block_owner_deletion: bool | None = Field(None, alias="blockOwnerDeletion")


class ObjectMeta(WireModel):
    """The subset of ``metav1.ObjectMeta`` the core reads; every other metadata field is kept as an extra."""

    name: str | None = None
    namespace: str | None = None
    uid: str | None = None
    resource_version: str | None = Field(None, alias="resourceVersion")
    generation: int | None = None
    creation_timestamp: Timestamp | None = Field(None, alias="creationTimestamp")
    deletion_timestamp: Timestamp | None = Field(None, alias="deletionTimestamp")
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    owner_references: list[OwnerReference] | None = Field(None, alias="ownerReferences")
    finalizers: list[str] | None = None


class ApiObject(WireModel):
    """A top-level API object: ``apiVersion``, ``kind`` and ``metadata``; subclasses add ``spec``/``status``."""

    api_version: str | None = Field(None, alias="apiVersion")
    kind: str | None = None
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)

    @property
    def name(self) -> str:
        return self.metadata.name or ""

    @property
    def namespace(self) -> str:
        return self.metadata.namespace or DEFAULT_NAMESPACE
