"""The event source's watch of one type of object: every change it sees goes into the outbox, as an event.

The loop itself (list, watch, resume, re-list after 410 and on every resync, back off on errors) and what is
watched (:data:`~apiclient.watch.WATCHED`) are the client layer's (:mod:`apiclient.watch`). This adds what the
event source makes of a change: between lists, an update that changes nothing the engine reads
(:mod:`jobflow_core.routing.relevance`: a vcjob's pod counts, our own status writes) is not forwarded, though the
observer (the rechecker, the waker) and the cache still see it; every other change is put into the outbox, with the
phase the object had in the change forwarded before it (which decides whether it may wait a moment).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from apiclient.cloudevents import Envelope
from apiclient.watch import WATCH_SECONDS, Change, ListWatch
from apiclient.watch_cache import WatchCache
from eventsource import metrics
from eventsource.outbox import Outbox
from jobflow_core.routing.relevance import fingerprint, phase_of
from jobflow_core.vocabulary.api import JOBFLOW, ApiType

if TYPE_CHECKING:
    from apiclient.connection import Connection


class Watcher(ListWatch):
    """Puts every change to the objects of ``api_type`` in ``namespace`` (None: all namespaces) that match
    ``label_selector`` (None: all of them) into ``outbox``."""

    def __init__(self, api: Connection, api_type: ApiType, namespace: str | None, outbox: Outbox, *,
                 resync_seconds: float, stop: threading.Event, label_selector: str | None = None,
                 watch_seconds: int = WATCH_SECONDS, observer: Callable[[Change, dict], None] | None = None,
                 cache: WatchCache | None = None) -> None:
        super().__init__(api, api_type, namespace, resync_seconds=resync_seconds, stop=stop,
                         label_selector=label_selector, watch_seconds=watch_seconds)
        self.outbox = outbox
        self.observer = observer  # also sees every change (the Rechecker, for JobFlows)
        self.cache = cache  # keeps every change, forwarded or not (the snapshots' source)
        self.fingerprints: dict[str, int] = {}  # "<ns>/<name>" -> fingerprint of the version last forwarded
        self.phases: dict[str, str | None] = {}  # "<ns>/<name>" -> status.state.phase of that version

    def seen(self, change: Change, obj: dict, *, key: str, listed: bool) -> None:
        if not listed and change is Change.UPDATE and self.fingerprints.get(key) == fingerprint(self.api_type, obj):
            metrics.CHANGES_SKIPPED.labels(self.api_type.kind).inc()  # nothing the engine reads has changed
            self._note(change, obj)
            if self.observer is not None:
                self.observer(change, obj)
            return
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

    def _note(self, change: Change, obj: dict) -> None:
        if self.cache is not None:
            self.cache.note(self.api_type, obj, deleted=change is Change.DELETE)
            wake(self.cache, self.outbox)


def wake(cache: WatchCache, outbox: Outbox) -> None:
    """Send an event to each JobFlow waiting in a queue a change just left room in (:meth:`WatchCache.woken`)."""
    for namespace, name in cache.woken():
        metrics.WOKEN.inc()
        outbox.put(Envelope(JOBFLOW, Change.UPDATE, {"metadata": {"namespace": namespace, "name": name}}))
