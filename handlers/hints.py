"""Turn one incoming CloudEvent into a hint: which object changed, so the reconciler knows what to re-read.

Understood events (anything else is answered 400, because retrying it cannot help):

- Knative ApiServerSource and our event source: ``dev.knative.apiserver.{ref,resource}.{add,update,delete}``,
  identified by the ``kind`` and ``apiversion`` extensions (``name``, ``namespace`` too), or, for producers that
  do not set them, by ``kind``/``apiVersion``/``metadata`` (Resource mode) or ``kind``/``apiVersion``/``name``/
  ``namespace`` (Reference mode) in the JSON data.
- Any other CloudEvent whose extensions or data name a JobFlow, JobTemplate or vcjob in that way (other buses).
- ``dev.knative.sources.ping`` (PingSource) and ``dev.volcano.jobflow.resync``: reconcile every unfinished JobFlow.

The identity is checked before any URL is built from it: a namespace must be a DNS-1123 label and a name a DNS-1123
subdomain (what the API server allows), so an event naming namespace ``..`` cannot turn a namespaced request into a
cluster-wide one.

The identity is all that is taken from an event, with one exception: a *snapshot* (the JobFlow and its vcjobs, in
the data under ``snapshot``; :mod:`jobflow_core.routing.snapshots`) that our event source signed with the key this
handler shares (``SNAPSHOT_KEY``), over the exact body of a binary-mode event. An unsigned or badly signed snapshot is
ignored, and the reconciler reads the API server as for any other event: events can be duplicated, reordered or forged,
and a forged one does no harm. Even a signed snapshot is only as new as the event source's watch, which is why every
write the reconciler makes from it is guarded (``handlers/jobflows.py``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from cloudevents.core.bindings.http import HTTPMessage, from_http_event
from cloudevents.core.exceptions import BaseCloudEventException

from jobflow_core.routing.concerns import controller_name
from jobflow_core.routing.snapshots import REPLY_EXTENSION, SIGNATURE_EXTENSION, signed
from jobflow_core.vocabulary.api import API_TYPES, JOBFLOW, JOBFLOW_EXTENSION, VCJOB, ApiType, api_type_of

RESYNC_TYPES = frozenset({"dev.knative.sources.ping", "dev.volcano.jobflow.resync"})
DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


class BadEvent(ValueError):
    """The request is not a CloudEvent this handler understands; the message says why and what is expected."""


@dataclass(frozen=True)
class Hint:
    """Which object an event is about: ``about`` is its type, or None for a resync of everything."""

    about: ApiType | None
    namespace: str = ""
    name: str = ""
    event_type: str = ""
    controller: str | None = None
    """The JobFlow a vcjob's event names as its controller (our event source's ``jobflow`` extension, or the
    ownerReference in a Resource-mode payload): only a hint for which JobFlow to re-read first."""

    snapshot: dict | None = None
    """A signed snapshot of the JobFlow the event is about (or of a vcjob's JobFlow), to plan from."""
    snapshot_state: str = "none"
    """What became of the event's snapshot: ``none`` (it carried none), ``signed`` (:attr:`snapshot`),
    ``unsigned``, ``bad_signature`` or ``no_key`` (ignored: this handler holds no key yet)."""
    replies: bool = False
    """The sender reads the answer (our event source, sending straight to this handler): JobFlows an event
    concerns may be handed back to it (:mod:`handlers.dispatch`)."""

    @property
    def deleted(self) -> bool:
        """Whether the event says the object went."""
        return self.event_type.endswith(".delete")


def parse_cloudevent(headers: dict[str, str], body: bytes) -> Any:
    try:
        return from_http_event(HTTPMessage(headers, body))
    except RecursionError:
        raise BadEvent("the JSON is nested too deeply to be a CloudEvent about a Kubernetes object") from None
    except (BaseCloudEventException, ValueError, TypeError, AttributeError, KeyError) as error:
        raise BadEvent(f"not a valid CloudEvent (binary or structured HTTP mode): {error}") from None


def data_of(event: Any) -> Any:
    """An event's data as JSON when it is JSON (bytes or text that parse), else as sent (text), None if none."""
    data = event.get_data()
    if isinstance(data, bytes):
        data = data.decode("utf-8", errors="replace")
    if isinstance(data, str) and data:
        try:
            return json.loads(data)
        except (ValueError, RecursionError):
            return data
    return data


def _data_dict(event: Any) -> dict[str, Any]:
    data = event.get_data()
    if isinstance(data, (bytes, str)) and data:
        try:
            data = json.loads(data)
        except (ValueError, RecursionError):
            return {}
    return data if isinstance(data, dict) else {}


def _snapshot(event: Any, data: dict[str, Any], *, about: ApiType, body: bytes | None,
              key: bytes | None) -> tuple[dict | None, str]:
    snapshot = data.get("snapshot")
    if snapshot is None:
        return None, "none"
    signature = event.get_extension(SIGNATURE_EXTENSION)
    if signature is None or body is None:
        return None, "unsigned"
    if key is None:
        return None, "no_key"
    if not signed(key, body, signature):
        return None, "bad_signature"
    if not (isinstance(snapshot, dict) and isinstance(snapshot.get("jobflow"), dict)
            and isinstance(snapshot.get("vcjobs"), list) and about in (JOBFLOW, VCJOB)):
        raise BadEvent("the event's snapshot is signed but not {jobflow: {...}, vcjobs: [...]} about a JobFlow or "
                       "a vcjob: the event source and the handler are of different versions; upgrade both")
    return snapshot, "signed"


def hint_from(event: Any, *, body: bytes | None = None, key: bytes | None = None) -> Hint:
    """The hint of ``event``; ``body`` is the request body when it is the event's data (binary mode), against which
    a snapshot's signature is checked with ``key``."""
    event_type = event.get_type()
    if event_type in RESYNC_TYPES:
        return Hint(None, event_type=event_type)
    data = _data_dict(event)
    metadata = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
    kind = event.get_extension("kind") or data.get("kind")
    api_version = event.get_extension("apiversion") or data.get("apiVersion")
    name = event.get_extension("name") or data.get("name") or metadata.get("name")
    namespace = event.get_extension("namespace") or data.get("namespace") or metadata.get("namespace")
    about = api_type_of(api_version, kind)
    if about is None:
        understood = ", ".join(f"{t.kind} ({t.api_version})" for t in API_TYPES)
        raise BadEvent(
            f"event type {event_type!r} names kind {kind!r} in apiVersion {api_version!r}; this handler "
            f"understands {understood} and the resync types " + ", ".join(sorted(RESYNC_TYPES))
        )
    if not (isinstance(name, str) and name and isinstance(namespace, str) and namespace):
        raise BadEvent(f"event {event.get_id()!r} names a {kind} but not its namespace and name: set the "
                       "`namespace` and `name` extensions (or data fields)")
    if not DNS_LABEL.fullmatch(namespace):
        raise BadEvent(f"namespace {namespace[:80]!r} is not a Kubernetes namespace: a DNS-1123 label (lower-case "
                       "letters, digits and '-', starting and ending with a letter or digit, at most 63 characters)")
    if len(name) > 253 or not DNS_SUBDOMAIN.fullmatch(name):
        raise BadEvent(f"name {name[:80]!r} is not a Kubernetes object name: a DNS-1123 subdomain (lower-case "
                       "letters, digits, '-' and '.', at most 253 characters)")
    controller = event.get_extension(JOBFLOW_EXTENSION) if about is VCJOB else None
    if controller is None and metadata:
        controller = controller_name(data)
    if controller is not None and not (isinstance(controller, str) and len(controller) <= 253
                                       and DNS_SUBDOMAIN.fullmatch(controller)):
        raise BadEvent(f"extension {JOBFLOW_EXTENSION!r} ({str(controller)[:80]!r}) is not a JobFlow name: a DNS-1123 "
                       "subdomain; leave it out and the handler finds the vcjob's JobFlow itself")
    snapshot, state = _snapshot(event, data, about=about, body=body, key=key)
    if snapshot is not None:
        meta = snapshot["jobflow"].get("metadata") or {}
        if meta.get("namespace") != namespace or (about is JOBFLOW and meta.get("name") != name):
            raise BadEvent("the event's snapshot is of another JobFlow than the event names")
    return Hint(about, namespace=namespace, name=name, event_type=event_type, controller=controller,
                snapshot=snapshot, snapshot_state=state, replies=event.get_extension(REPLY_EXTENSION) == "true")


def hint_from_request(headers: dict[str, str], body: bytes, *, key: bytes | None = None) -> Hint:
    binary = any(name.lower() == "ce-specversion" for name in headers)
    return hint_from(parse_cloudevent(headers, body), body=body if binary else None, key=key)
