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
cluster-wide one. Only the identity is taken from the event. Its payload is never trusted as the object's state: events can be
duplicated, reordered or forged, so the reconciler always re-reads the truth from the API server.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from cloudevents.core.bindings.http import HTTPMessage, from_http_event
from cloudevents.core.exceptions import BaseCloudEventException

from jobflow_core.api import API_TYPES, JOBFLOW_EXTENSION, VCJOB, ApiType, api_type_of
from jobflow_core.routing import controller_name

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


def _data_dict(event: Any) -> dict[str, Any]:
    data = event.get_data()
    if isinstance(data, (bytes, str)) and data:
        try:
            data = json.loads(data)
        except (ValueError, RecursionError):
            return {}
    return data if isinstance(data, dict) else {}


def hint_from(event: Any) -> Hint:
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
    return Hint(about, namespace=namespace, name=name, event_type=event_type, controller=controller)


def hint_from_request(headers: dict[str, str], body: bytes) -> Hint:
    return hint_from(parse_cloudevent(headers, body))
