"""List, then watch, one type of object in one namespace (or all), forever; re-list after 410 and on every resync.

What the event source watches is :data:`WATCHED`: every JobFlow, JobTemplate and JobFlowTemplate, and only the
vcjobs some JobFlow created (a cluster's other vcjobs are none of our business), narrowed on the API server by a
label selector.

Each (re-)list compares what the API server has with what this watcher last knew, and announces the difference:
``add`` for objects that are new to it (so everything at start-up), ``update`` for the ones it knew (a resync
re-announces every object, a safety net for the handler), ``delete`` for the ones that vanished during a gap.
Between lists, an update that changes nothing the engine reads (:mod:`jobflow_core.routing.relevance`: a vcjob's pod
counts, our own status writes) is not forwarded; the observer (the rechecker) still sees it.
A watch that ends (server timeout, network error) resumes from the last resourceVersion and loses nothing; only
410 Gone forces a re-list. Errors never end the loop: they are logged and retried with backoff.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Final

from kubernetes import client, watch
from kubernetes.client.rest import ApiException
from urllib3.exceptions import HTTPError

from eventsource import metrics
from eventsource.cache import WatchCache
from eventsource.cloudevent import Change, Envelope
from eventsource.outbox import Outbox
from jobflow_core.routing.relevance import fingerprint, phase_of
from jobflow_core.vocabulary.api import JOBFLOW, JOBFLOWTEMPLATE, JOBTEMPLATE, VCJOB, ApiType
from jobflow_core.vocabulary.naming import FLOW_JOBS_SELECTOR

log = logging.getLogger("eventsource.watcher")

WATCH_SECONDS = 240  # a watch request's server-side timeout; the loop simply opens the next one

WATCHED: Final[Mapping[ApiType, str | None]] = {JOBFLOW: None, JOBTEMPLATE: None, VCJOB: FLOW_JOBS_SELECTOR,
                                                JOBFLOWTEMPLATE: None}
"""Each watched type, with the label selector its lists and watches carry (None: every object of the type)."""

CHANGES = {"ADDED": Change.ADD, "MODIFIED": Change.UPDATE, "DELETED": Change.DELETE}


class Watcher:
    """Puts every change to the objects of ``api_type`` in ``namespace`` (None: all namespaces) that match
    ``label_selector`` (None: all of them) into ``outbox``."""

    def __init__(self, api: client.ApiClient, api_type: ApiType, namespace: str | None, outbox: Outbox, *,
                 resync_seconds: float, stop: threading.Event, label_selector: str | None = None,
                 watch_seconds: int = WATCH_SECONDS, observer: Callable[[Change, dict], None] | None = None,
                 cache: WatchCache | None = None) -> None:
        self.custom = client.CustomObjectsApi(api)
        self.api_type, self.namespace, self.outbox = api_type, namespace, outbox
        self.label_selector = label_selector
        self.resync_seconds, self.stop, self.watch_seconds = resync_seconds, stop, watch_seconds
        self.observer = observer  # also sees every change (the Rechecker, for JobFlows)
        self.cache = cache  # keeps every change, forwarded or not (the snapshots' source)
        self.known: dict[str, str] = {}  # "<ns>/<name>" -> resourceVersion
        self.fingerprints: dict[str, int] = {}  # "<ns>/<name>" -> fingerprint of the version last forwarded
        self.phases: dict[str, str | None] = {}  # "<ns>/<name>" -> status.state.phase of that version
        self.relists = 0

    def _call(self, **kwargs):
        t = self.api_type
        if self.label_selector:
            kwargs["label_selector"] = self.label_selector
        if self.namespace:
            return self.custom.list_namespaced_custom_object(t.group, t.version, self.namespace, t.plural, **kwargs)
        return self.custom.list_cluster_custom_object(t.group, t.version, t.plural, **kwargs)

    def _note(self, change: Change, obj: dict) -> None:
        if self.cache is not None:
            self.cache.note(self.api_type, obj, deleted=change is Change.DELETE)

    def _emit(self, change: Change, obj: dict, *, key: str) -> None:
        self._note(change, obj)
        previous_phase = self.phases.get(key)
        if change is Change.DELETE:
            self.fingerprints.pop(key, None)
            self.phases.pop(key, None)
        else:
            self.fingerprints[key] = fingerprint(self.api_type, obj)
            self.phases[key] = phase_of(obj)
        self.outbox.put(Envelope(self.api_type, change, obj, previous_phase=previous_phase))
        if self.observer is not None:
            self.observer(change, obj)

    def _unchanged(self, obj: dict, *, key: str) -> bool:
        """Whether an update leaves everything the engine reads as it was when last forwarded."""
        return self.fingerprints.get(key) == fingerprint(self.api_type, obj)

    def relist(self) -> str:
        """Announce the difference between the API server and what we knew; returns the list's resourceVersion."""
        listing = self._call()
        seen: dict[str, str] = {}
        for obj in listing.get("items", []):
            meta = obj["metadata"]
            key = f"{meta['namespace']}/{meta['name']}"
            seen[key] = meta["resourceVersion"]
            self._emit(Change.UPDATE if key in self.known else Change.ADD, obj, key=key)
        for key in self.known.keys() - seen.keys():
            namespace, name = key.split("/", 1)
            self._emit(Change.DELETE, {"metadata": {"namespace": namespace, "name": name}}, key=key)
        self.known = seen
        self.relists += 1
        return listing["metadata"]["resourceVersion"]

    def _watch(self, resource_version: str, until: float) -> str | None:
        """Stream changes until ``until``; returns the last resourceVersion, or None after 410 Gone."""
        stream = watch.Watch()
        while time.monotonic() < until and not self.stop.is_set():
            timeout = max(1, min(self.watch_seconds, int(until - time.monotonic())))
            try:
                for event in stream.stream(self._call, resource_version=resource_version, timeout_seconds=timeout,
                                           allow_watch_bookmarks=True):
                    obj = event["object"]
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
                    if change is Change.UPDATE and self._unchanged(obj, key=key):
                        metrics.CHANGES_SKIPPED.labels(self.api_type.kind).inc()
                        self._note(change, obj)
                        if self.observer is not None:
                            self.observer(change, obj)
                    else:
                        self._emit(change, obj, key=key)
                    if self.stop.is_set():
                        break
            except ApiException as error:
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
            except (ApiException, HTTPError, OSError) as error:
                log.warning("%s in %s: %s; retrying in %.1f s", self.api_type.plural,
                            self.namespace or "all namespaces", error, backoff)
                self.stop.wait(backoff)
                backoff = min(backoff * 2, 30)
            resource_version = None
