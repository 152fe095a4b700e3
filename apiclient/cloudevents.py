"""CloudEvents exactly as Knative's ApiServerSource sends them (binary HTTP mode).

Attributes: ``type`` ``dev.knative.apiserver.{ref|resource}.{add|update|delete}``; ``source`` the API server URL;
``subject`` the object's pseudo self-link; ``id`` a fresh UUID per event; ``time`` now; ``datacontenttype``
``application/json``; extensions ``kind``, ``apiversion``, ``name``, ``namespace``, on a vcjob's event ``jobflow``
(:data:`~jobflow_core.vocabulary.api.JOBFLOW_EXTENSION`, ours), plus every extension in ``K_CE_OVERRIDES``. Data: in
Reference mode ``{"kind", "namespace", "name", "apiVersion"}``, in Resource mode the whole object.

Ours only, additive (a receiver that does not know them sees ApiServerSource's event): with a key to sign with, the
data of an event about a JobFlow or one of its vcjobs also holds ``snapshot`` (:mod:`jobflow_core.routing.snapshots`),
and the extension ``jobflowsig`` its signature over the body; ``jobflowreply: "true"`` says this sender reads the
handler's answer (only when it sends straight to the handler: a Broker in between answers for itself).
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from enum import StrEnum

from cloudevents.core.bindings.http import to_binary_event
from cloudevents.core.v1.event import CloudEvent

from apiclient.watch import Change
from jobflow_core.routing import snapshots
from jobflow_core.routing.relevance import jobflow_of_change, may_wait
from jobflow_core.vocabulary.api import JOBFLOW, JOBFLOW_EXTENSION, VCJOB, ApiType


class Mode(StrEnum):
    REFERENCE = "Reference"
    RESOURCE = "Resource"


def event_type(mode: Mode, change: Change) -> str:
    prefix = "ref" if mode is Mode.REFERENCE else "resource"
    return f"dev.knative.apiserver.{prefix}.{change}"


# Attributes the CloudEvents spec defines: an override may not replace them (sdk-go refuses the same).
SPEC_ATTRIBUTES = frozenset({"specversion", "id", "source", "type", "subject", "time", "datacontenttype",
                             "dataschema"})
EXTENSION_NAME = re.compile(r"[a-z0-9]+")



def parse_overrides(text: str | None) -> dict[str, str]:
    """The extensions of ``K_CE_OVERRIDES`` (``{"extensions": {"name": "value"}}``); empty or missing means none.

    Checked here, once at start-up, so that a bad override stops the source with a clear message instead of
    failing every event later in the sender.
    """
    if not text or not text.strip():
        return {}
    form = 'K_CE_OVERRIDES must be JSON of the form {"extensions": {"name": "value"}}'
    try:
        document = json.loads(text)
    except ValueError as error:
        raise ValueError(f"{form}; it is not JSON: {error}") from None
    extensions = document.get("extensions") if isinstance(document, dict) else ()
    if extensions is None:  # an empty ceOverrides ({}) or a null extensions map: no overrides
        return {}
    if not isinstance(extensions, dict):
        raise ValueError(f"{form}; got {text!r}")
    for name, value in extensions.items():
        if not EXTENSION_NAME.fullmatch(name):
            raise ValueError(f"K_CE_OVERRIDES extension {name!r}: a CloudEvents extension name has only lower-case "
                             "letters and digits; rename it")
        if name in SPEC_ATTRIBUTES:
            raise ValueError(f"K_CE_OVERRIDES extension {name!r} would replace the spec attribute of that name, "
                             "which overrides may not do; remove it")
        if not isinstance(value, str):
            raise ValueError(f"K_CE_OVERRIDES extension {name!r}: the value must be a JSON string, got {value!r}")
    return dict(extensions)


@dataclass(frozen=True)
class Envelope:
    """One outgoing event, before it is encoded for HTTP: a change to an object of type ``api_type``."""

    api_type: ApiType
    change: Change
    obj: dict
    previous_phase: str | None = None
    """A vcjob's phase in the change forwarded before this one, if any (decides whether it may wait)."""

    @property
    def jobflow(self) -> str | None:
        """The JobFlow this change is about (:func:`jobflow_core.routing.relevance.jobflow_of_change`)."""
        return jobflow_of_change(self.api_type, self.obj)

    @property
    def may_wait(self) -> bool:
        """Whether the outbox may hold this change a moment for the next one
        (:func:`~jobflow_core.routing.relevance.may_wait`)."""
        return may_wait(self.api_type, self.obj, deleted=self.change is Change.DELETE,
                        previous_phase=self.previous_phase)

    @property
    def key(self) -> tuple[str, str, str]:
        """What the event makes the handler reconcile; the outbox keeps one pending event per key, and never sends
        two of one key at once. A vcjob's add or update is about its JobFlow, so it shares the JobFlow's key: the
        changes of one JobFlow and of all its vcjobs coalesce into one reconcile, and one JobFlow is never
        reconciled twice at the same time by our events (no write races, no create races). A vcjob's delete keeps
        a key of its own, so that the JobTemplate refresh it asks for is never coalesced away."""
        meta = self.obj.get("metadata") or {}
        jobflow = self.jobflow if self.change is not Change.DELETE else None
        if jobflow is not None:
            return (JOBFLOW.plural, meta.get("namespace", ""), jobflow)
        return (self.api_type.plural, meta.get("namespace", ""), meta.get("name", ""))


def encode(envelope: Envelope, *, mode: Mode, source: str, overrides: dict[str, str],
           now: datetime | None = None, snapshot: dict | None = None, key: bytes | None = None,
           replies: bool = False) -> tuple[dict[str, str], bytes]:
    """(headers, body) of the binary-mode HTTP request for one event; with ``snapshot`` and ``key``, the snapshot
    in the data and the body signed (a snapshot over :data:`~jobflow_core.routing.snapshots.MAX_BYTES` is left out)."""
    meta = envelope.obj.get("metadata") or {}
    namespace, name = meta.get("namespace", ""), meta.get("name", "")
    api_type = envelope.api_type
    if mode is Mode.REFERENCE:
        data = {"kind": api_type.kind, "namespace": namespace, "name": name, "apiVersion": api_type.api_version}
    else:
        data = {"apiVersion": api_type.api_version, "kind": api_type.kind, **envelope.obj}
    attributes = {
        "specversion": "1.0",
        "id": str(uuid.uuid4()),
        "source": source,
        "type": event_type(mode, envelope.change),
        "subject": api_type.path(namespace, name),  # ApiServerSource's pseudo self-link
        "time": now or datetime.now(timezone.utc),
        "datacontenttype": "application/json",
        "kind": api_type.kind,
        "apiversion": api_type.api_version,
        "name": name,
        "namespace": namespace,
        **({JOBFLOW_EXTENSION: envelope.jobflow} if api_type is VCJOB and envelope.jobflow else {}),
        **({snapshots.REPLY_EXTENSION: "true"} if replies else {}),
        **overrides,
    }
    if snapshot is not None and key:
        body = snapshots.encode({**data, "snapshot": snapshot})
        if len(body) <= snapshots.MAX_BYTES:
            message = to_binary_event(CloudEvent({**attributes, snapshots.SIGNATURE_EXTENSION:
                                                  snapshots.sign(key, body)}, body))
            return dict(message.headers), message.body
    message = to_binary_event(CloudEvent(attributes, data))
    return dict(message.headers), message.body
