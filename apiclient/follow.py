"""Follow objects through the watch API, as ``kubectl get -w`` and ``kubectl wait`` do, and keep following across a
dropped watch, 410 Gone and an API-server restart.

:func:`follow` lists (unless the caller already did), then watches from the list's resourceVersion. A watch that
ends (the server's timeout) is reopened from the last version seen; 410 Gone (the version is too old, as after a
long gap or a restart that compacted it away) re-lists and reports the difference (changed objects as MODIFIED,
vanished ones as DELETED), so nothing is missed or repeated. While the API server cannot be reached (a connection
refused or reset, 5xx, 429), the watch retries with backoff for ``patience`` seconds; after that it is lost
(:class:`WatchLost`, which the command line turns into its own exit code, so a script can tell "the watch was lost"
from "the JobFlow failed").

:class:`~apiclient.watch.ListWatch` is the long-running programs' watch (it never gives up, and reports to a
callback); this is a person's command's (it gives up, and is iterated).

:func:`merged` runs several follows at once (``status -w`` follows a JobFlow and its vcjobs) and hands their events
to one loop, in the order they arrive.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from urllib3.exceptions import HTTPError

from apiclient.rest import ApiError

if TYPE_CHECKING:
    from apiclient.cluster import Cluster
    from apiclient.hangup import Hangup
    from jobflow_core.vocabulary.api import ApiType

PATIENCE = 60.0
"""Seconds the API server may stay unreachable before a watch gives up (an API server restart takes a few)."""
WATCH_SECONDS = 240
TRANSIENT = (429, 500, 502, 503, 504)
Event = tuple[str, dict[str, Any]]


class WatchLost(RuntimeError):
    """The API server stayed unreachable longer than the watch waits for it; the message says since when."""


def _key(obj: dict[str, Any]) -> str:
    return f"{obj['metadata'].get('namespace')}/{obj['metadata']['name']}"


def follow(cluster: Cluster, api_type: ApiType, namespace: str | None, *, label_selector: str | None = None,
           field_selector: str | None = None, since: str | None = None, seen: tuple[dict[str, Any], ...] = (),
           patience: float = PATIENCE, stop: threading.Event | None = None,
           hangup: Hangup | None = None) -> Iterator[Event]:
    """Each change to the objects of ``api_type`` in ``namespace`` (None: all) that match the selectors, as (``ADDED``
    | ``MODIFIED`` | ``DELETED``, object). Without ``since``, lists first and reports every object as ADDED; with it
    (the caller listed ``seen`` at that version), watches from there. ``hangup`` (made with ``stop``) ends the watch's
    answer as soon as ``stop`` is set, not at its next event (:mod:`apiclient.hangup`)."""
    path = cluster._path(api_type, namespace)
    selection = [*([("labelSelector", label_selector)] if label_selector else []),
                 *([("fieldSelector", field_selector)] if field_selector else [])]
    known = {_key(obj): obj["metadata"]["resourceVersion"] for obj in seen}
    lost_since: float | None = None
    backoff = 0.2
    while stop is None or not stop.is_set():
        try:
            if since is None:
                listing = cluster.rest.request("GET", path, query=selection or None)
                yield from _difference(known, listing.get("items") or [])
                since = listing["metadata"]["resourceVersion"]
                lost_since, backoff = None, 0.2
            query = [*selection, ("watch", "true"), ("resourceVersion", since), ("allowWatchBookmarks", "true"),
                     ("timeoutSeconds", WATCH_SECONDS)]
            for event in cluster.rest.lines(path, query=query, timeout=(5.0, WATCH_SECONDS + 30.0), hangup=hangup):
                lost_since, backoff = None, 0.2
                obj = event.get("object") or {}
                if event.get("type") == "ERROR":
                    raise ApiError(int(obj.get("code") or 500), str(obj.get("reason") or ""), None)
                since = obj["metadata"]["resourceVersion"]
                if event["type"] == "BOOKMARK":
                    if stop is not None and stop.is_set():
                        return
                    continue
                if event["type"] == "DELETED":
                    known.pop(_key(obj), None)
                else:
                    known[_key(obj)] = since
                yield event["type"], obj
                if stop is not None and stop.is_set():
                    return
        except ApiError as error:
            if error.status == 410:
                since = None  # too old: list again, and report what changed meanwhile
                continue
            if error.status not in TRANSIENT:
                raise cluster._api_error(error) from error
            lost_since = _wait_out(cluster, error, lost_since, backoff, patience)
            backoff = min(backoff * 2, 5.0)
        except (HTTPError, OSError) as error:
            if stop is not None and stop.is_set():  # the connections were closed under us: we are done
                return
            lost_since = _wait_out(cluster, error, lost_since, backoff, patience)
            backoff = min(backoff * 2, 5.0)


def _difference(known: dict[str, str], items: list[dict[str, Any]]) -> Iterator[Event]:
    """What a (re-)list says changed since ``known``, which it brings up to date."""
    found = {_key(obj): obj for obj in items}
    for key, obj in found.items():
        version = obj["metadata"]["resourceVersion"]
        if known.get(key) != version:
            yield ("MODIFIED" if key in known else "ADDED"), obj
    for key in known.keys() - found.keys():
        namespace, name = key.split("/", 1)
        yield "DELETED", {"metadata": {"namespace": namespace, "name": name}}
    known.clear()
    known.update({key: obj["metadata"]["resourceVersion"] for key, obj in found.items()})


def _wait_out(cluster: Cluster, error: Exception, lost_since: float | None, backoff: float, patience: float) -> float:
    now = time.monotonic()
    lost_since = now if lost_since is None else lost_since
    if now - lost_since > patience:
        reason = getattr(error, "reason", None) or error
        raise WatchLost(f"lost the watch: the API server {cluster.server} did not answer for {patience:g}s "
                        f"({reason}); the last state printed may be stale") from error
    time.sleep(backoff)
    return lost_since


def merged(*streams: Iterator[Event], timeout: float | None,
           stop: threading.Event) -> Iterator[tuple[int, str, dict[str, Any]] | None]:
    """The events of several :func:`follow` streams as (which stream, type, object), in arrival order; None when
    ``timeout`` seconds pass without one (the caller decides whether that is the end). A stream's error is raised
    here. ``stop`` (the one the streams were given) is set once the caller is done with this generator, so their
    threads end at their next event instead of watching on for nobody."""
    events: queue.Queue[tuple[int, str, dict[str, Any]] | BaseException] = queue.Queue()

    def pump(index: int, stream: Iterator[Event]) -> None:
        try:
            for kind, obj in stream:
                events.put((index, kind, obj))
        except BaseException as error:  # noqa: BLE001 -- handed to the reading thread, which raises it
            events.put(error)

    for index, stream in enumerate(streams):
        threading.Thread(target=pump, args=(index, stream), daemon=True, name=f"watch-{index}").start()
    try:
        while True:
            try:
                item = events.get(timeout=timeout)
            except queue.Empty:
                yield None
                continue
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
