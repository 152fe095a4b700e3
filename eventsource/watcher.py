"""List, then watch, one resource in one namespace (or all), forever; re-list after 410 and on every resync.

Each (re-)list compares what the API server has with what this watcher last knew, and announces the difference:
``add`` for objects that are new to it (so everything at start-up), ``update`` for the ones it knew (a resync
re-announces every object, a safety net for the handler), ``delete`` for the ones that vanished during a gap.
A watch that ends (server timeout, network error) resumes from the last resourceVersion and loses nothing; only
410 Gone forces a re-list. Errors never end the loop: they are logged and retried with backoff.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
import threading
import time

from kubernetes import client, watch
from kubernetes.client.rest import ApiException
from urllib3.exceptions import HTTPError

from eventsource.cloudevent import Change, Envelope
from eventsource.outbox import Outbox
from eventsource.resources import Resource

log = logging.getLogger("eventsource.watcher")

WATCH_SECONDS = 240  # a watch request's server-side timeout; the loop simply opens the next one

CHANGES = {"ADDED": Change.ADD, "MODIFIED": Change.UPDATE, "DELETED": Change.DELETE}


class Watcher:
    def __init__(self, api: client.ApiClient, resource: Resource, namespace: str | None, outbox: Outbox, *,
                 resync_seconds: float, stop: threading.Event, watch_seconds: int = WATCH_SECONDS,
                 observer: Callable[[Change, dict], None] | None = None) -> None:
        self.custom = client.CustomObjectsApi(api)
        self.resource, self.namespace, self.outbox = resource, namespace, outbox
        self.resync_seconds, self.stop, self.watch_seconds = resync_seconds, stop, watch_seconds
        self.observer = observer  # also sees every change (the Rechecker, for JobFlows)
        self.known: dict[str, str] = {}  # "<ns>/<name>" -> resourceVersion
        self.relists = 0

    def _call(self, **kwargs):
        r = self.resource
        if r.label_selector:
            kwargs["label_selector"] = r.label_selector
        if self.namespace:
            return self.custom.list_namespaced_custom_object(r.group, r.version, self.namespace, r.plural, **kwargs)
        return self.custom.list_cluster_custom_object(r.group, r.version, r.plural, **kwargs)

    def _emit(self, change: Change, obj: dict) -> None:
        self.outbox.put(Envelope(self.resource, change, obj))
        if self.observer is not None:
            self.observer(change, obj)

    def relist(self) -> str:
        """Announce the difference between the API server and what we knew; returns the list's resourceVersion."""
        listing = self._call()
        seen: dict[str, str] = {}
        for obj in listing.get("items", []):
            meta = obj["metadata"]
            key = f"{meta['namespace']}/{meta['name']}"
            seen[key] = meta["resourceVersion"]
            self._emit(Change.UPDATE if key in self.known else Change.ADD, obj)
        for key in self.known.keys() - seen.keys():
            namespace, name = key.split("/", 1)
            self._emit(Change.DELETE, {"metadata": {"namespace": namespace, "name": name}})
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
                    self._emit(change, obj)
                    if self.stop.is_set():
                        break
            except ApiException as error:
                if error.status == 410:
                    log.info("%s: resourceVersion %s is gone; re-listing", self.resource.plural, resource_version)
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
                log.warning("%s in %s: %s; retrying in %.1f s", self.resource.plural, self.namespace or "all namespaces",
                            error, backoff)
                self.stop.wait(backoff)
                backoff = min(backoff * 2, 30)
            resource_version = None
