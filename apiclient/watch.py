"""List, then watch, one type of object in one namespace (or all), forever; re-list after 410 and on every resync.

What the engine's programs watch is :data:`WATCHED`: every JobFlow, JobTemplate and JobFlowTemplate, and only the
vcjobs some JobFlow created (a cluster's other vcjobs are none of our business), narrowed on the API server by a
label selector. The event source forwards what its watches see; the dashboard keeps it in memory.

Each (re-)list compares what the API server has with what this watch last knew, and reports the difference to
:meth:`ListWatch.seen`: ``add`` for objects that are new to it (so everything at start-up), ``update`` for the ones
it knew (a resync reports every object again, a safety net), ``delete`` for the ones that vanished during a gap.
A watch that ends (server timeout, network error) resumes from the last resourceVersion and loses nothing; only
410 Gone forces a re-list. Errors never end the loop: they are logged and retried with backoff.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Iterator, Mapping
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Final

from urllib3.exceptions import HTTPError

from apiclient.connection import CredentialError
from apiclient.rest import ApiError, Rest
from jobflow_core.vocabulary.api import JOBFLOW, JOBFLOWTEMPLATE, JOBTEMPLATE, VCJOB, ApiType
from jobflow_core.vocabulary.naming import FLOW_JOBS_SELECTOR

if TYPE_CHECKING:
    from apiclient.connection import Connection

log = logging.getLogger("apiclient.watch")

WATCH_SECONDS = 240  # a watch request's server-side timeout; the loop simply opens the next one

WATCHED: Final[Mapping[ApiType, str | None]] = {JOBFLOW: None, JOBTEMPLATE: None, VCJOB: FLOW_JOBS_SELECTOR,
                                                JOBFLOWTEMPLATE: None}
"""Each watched type, with the label selector its lists and watches carry (None: every object of the type)."""


class Change(StrEnum):
    """What happened to an object, in the words of ApiServerSource's event types."""

    ADD = "add"
    UPDATE = "update"
    DELETE = "delete"


CHANGES = {"ADDED": Change.ADD, "MODIFIED": Change.UPDATE, "DELETED": Change.DELETE}


class ListWatch:
    """Reports every change to the objects of ``api_type`` in ``namespace`` (None: all namespaces) that match
    ``label_selector`` (None: all of them) to :meth:`seen`, which a subclass says the meaning of."""

    def __init__(self, api: Connection, api_type: ApiType, namespace: str | None, *, resync_seconds: float,
                 stop: threading.Event, label_selector: str | None = None,
                 watch_seconds: int = WATCH_SECONDS) -> None:
        self.rest = Rest(api)
        self.api_type, self.namespace, self.label_selector = api_type, namespace, label_selector
        self.resync_seconds, self.stop, self.watch_seconds = resync_seconds, stop, watch_seconds
        self.known: dict[str, str] = {}  # "<ns>/<name>" -> resourceVersion
        self.relists = 0

    def seen(self, change: Change, obj: dict[str, Any], *, key: str, listed: bool) -> None:
        """One change: by a (re-)list (``listed``: every object is reported, as add or update), or by the watch;
        ``key`` is ``<namespace>/<name>``."""
        raise NotImplementedError

    @property
    def path(self) -> str:
        t = self.api_type
        where = f"/namespaces/{self.namespace}" if self.namespace else ""
        return f"/apis/{t.group}/{t.version}{where}/{t.plural}"

    def _query(self, **more: Any) -> list[tuple[str, Any]]:
        return [*([("labelSelector", self.label_selector)] if self.label_selector else []), *more.items()]

    def relist(self) -> str:
        """Report the difference between the API server and what we knew; returns the list's resourceVersion."""
        listing = self.rest.request("GET", self.path, query=self._query())
        found: dict[str, str] = {}
        for obj in listing.get("items", []):
            meta = obj["metadata"]
            key = f"{meta['namespace']}/{meta['name']}"
            found[key] = meta["resourceVersion"]
            self.seen(Change.UPDATE if key in self.known else Change.ADD, obj, key=key, listed=True)
        for key in self.known.keys() - found.keys():
            namespace, name = key.split("/", 1)
            self.seen(Change.DELETE, {"metadata": {"namespace": namespace, "name": name}}, key=key, listed=True)
        self.known = found
        self.relists += 1
        return listing["metadata"]["resourceVersion"]

    def _events(self, resource_version: str, timeout: int) -> Iterator[dict[str, Any]]:
        """The watch's events, one JSON object per line, until the server ends the request."""
        query = self._query(watch=True, resourceVersion=resource_version, timeoutSeconds=timeout,
                            allowWatchBookmarks=True)
        return self.rest.lines(self.path, query=query, timeout=(10.0, timeout + 30.0))

    def _watch(self, resource_version: str, until: float) -> str | None:
        """Stream changes until ``until``; returns the last resourceVersion, or None after 410 Gone."""
        while time.monotonic() < until and not self.stop.is_set():
            timeout = max(1, min(self.watch_seconds, int(until - time.monotonic())))
            try:
                for event in self._events(resource_version, timeout):
                    obj = event.get("object") or {}
                    if event.get("type") == "ERROR":  # a Status: 410 Gone when the version is too old
                        raise ApiError(int(obj.get("code") or 500), str(obj.get("reason") or ""), json.dumps(obj))
                    resource_version = obj["metadata"]["resourceVersion"]
                    if event["type"] == "BOOKMARK":
                        continue
                    meta = obj["metadata"]
                    key = f"{meta['namespace']}/{meta['name']}"
                    change = CHANGES[event["type"]]
                    if change is Change.DELETE:
                        self.known.pop(key, None)
                    else:
                        self.known[key] = resource_version
                    self.seen(change, obj, key=key, listed=False)
                    if self.stop.is_set():
                        break
            except ApiError as error:
                if error.status == 410:
                    log.info("%s: resourceVersion %s is gone; re-listing", self.api_type.plural, resource_version)
                    return None
                raise
        return resource_version

    def run(self, *, resource_version: str | None = None) -> None:
        """List, watch and resync until ``stop`` is set.

        ``resource_version`` skips the first list and watches from that version, for a caller that already listed
        with ``relist()``; tests use it to resume from a version the API server no longer has, as a watcher that was
        cut off for a long time would, and so see the 410 Gone path against the real API server.
        """
        backoff = 0.5
        while not self.stop.is_set():
            try:
                if resource_version is None:
                    resource_version = self.relist()
                until = time.monotonic() + self.resync_seconds
                while resource_version is not None and time.monotonic() < until and not self.stop.is_set():
                    resource_version = self._watch(resource_version, until)
                backoff = 0.5
            except (ApiError, HTTPError, OSError, ValueError, CredentialError) as error:
                log.warning("%s in %s: %s; retrying in %.1f s", self.api_type.plural,
                            self.namespace or "all namespaces", error, backoff)
                self.stop.wait(backoff)
                backoff = min(backoff * 2, 30)
            resource_version = None
