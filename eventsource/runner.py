"""Start the event source's threads: the watchers fill one outbox, the senders drain it, the rechecker wakes it.

:func:`start` is the whole event source minus its configuration: ``python -m eventsource`` reads the environment
and calls it, and the tests call it with a short ``watch_seconds`` to run the real event source in-process::

    watchers (one per watched type and namespace) ──put──▶ Outbox ──POST──▶ sink
        ├── JobFlows also go to the Rechecker ────put─────┤  (senders threads) │
        ├── JobFlowTemplates also go to the Waker ─put────┘                     │
        └── every change goes to the WatchCache ◀── snapshots, answers ─────────┘

With a key (``snapshot_key``), each event about a JobFlow or one of its vcjobs carries that JobFlow's snapshot from
the cache, signed (:mod:`jobflow_core.routing.snapshots`). With ``replies`` (only when the sink is the handler itself),
the handler's answers are read: the JobFlows it wrote go into the cache, and the JobFlows it handed back (a JobTemplate
event's) are queued, one event each (:mod:`handlers.dispatch`).

Every thread is a daemon and ends soon after :meth:`EventSource.stop`: the senders after the POST in hand, the
rechecker and the waker within a second, a watcher when its current watch request ends (within ``watch_seconds``).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from typing import TYPE_CHECKING

from apiclient import cloudevents
from apiclient.watch import WATCH_SECONDS, WATCHED
from apiclient.version import version
from apiclient.watch_cache import WatchCache
from eventsource import metrics
from eventsource.outbox import DEFAULT_HOLD_SECONDS, Outbox
from eventsource.recheck import Rechecker
from eventsource.wakeup import Waker
from eventsource.watcher import Watcher, wake
from jobflow_core.routing.snapshots import SIGNATURE_EXTENSION
from jobflow_core.vocabulary.api import JOBFLOW, JOBFLOWTEMPLATE

if TYPE_CHECKING:
    from apiclient.connection import Connection

log = logging.getLogger("eventsource")


@dataclass
class EventSource:
    """A started event source: the outbox its watchers fill, and the threads that run it."""

    outbox: Outbox
    threads: list[threading.Thread]
    stopping: threading.Event
    cache: WatchCache

    def stop(self, *, timeout: float = 10.0) -> None:
        """Tell every thread to end, and wait for them, ``timeout`` seconds at most in all."""
        self.stopping.set()
        self.outbox.stop()
        deadline = time.monotonic() + timeout
        for thread in self.threads:
            thread.join(timeout=max(0.0, deadline - time.monotonic()))


class Encoder:
    """Encodes an envelope for the sink, with its JobFlow's signed snapshot when there is a key and the cache
    knows that JobFlow."""

    def __init__(self, *, mode: cloudevents.Mode, source: str, overrides: Mapping[str, str], cache: WatchCache,
                 key: bytes | None, replies: bool) -> None:
        self.mode, self.source, self.overrides = mode, source, dict(overrides)
        self.cache, self.key, self.replies = cache, key, replies

    def __call__(self, envelope: cloudevents.Envelope) -> tuple[dict[str, str], bytes]:
        namespace = (envelope.obj.get("metadata") or {}).get("namespace", "")
        jobflow = envelope.jobflow
        snapshot = self.cache.snapshot(namespace, jobflow) if self.key and jobflow else None
        headers, body = cloudevents.encode(envelope, mode=self.mode, source=self.source, overrides=self.overrides,
                                          snapshot=snapshot, key=self.key, replies=self.replies)
        if self.key and jobflow:
            outcome = "not_cached" if snapshot is None else (
                "attached" if f"ce-{SIGNATURE_EXTENSION}" in headers else "too_large")
            metrics.SNAPSHOTS.labels(outcome).inc()
        return headers, body


def answered(cache: WatchCache, outbox: Outbox, body: bytes) -> None:
    """Read the handler's answer: keep the JobFlows it wrote, queue those it handed back."""
    try:
        answer = json.loads(body)
    except ValueError:
        return  # not the handler's (another sink, or an older handler): nothing to read
    if not isinstance(answer, dict):
        return
    metrics.ANSWERS.labels("written_kept").inc(cache.written(answer.get("written") or []))
    wake(cache, outbox)  # a status write the answer brought first may have ended a JobFlow that held a queue
    for item in answer.get("handed") or ():
        if isinstance(item, list) and len(item) == 2 and all(isinstance(part, str) for part in item):
            metrics.ANSWERS.labels("handed").inc()
            outbox.put(cloudevents.Envelope(JOBFLOW, cloudevents.Change.UPDATE,
                                           {"metadata": {"namespace": item[0], "name": item[1]}}))


def start(api: Connection, *, sink: str, namespaces: Sequence[str], mode: cloudevents.Mode,
          resync_seconds: float, senders: int, overrides: Mapping[str, str] | None = None,
          ca_certs: str | None = None, watch_seconds: int = WATCH_SECONDS,
          hold: float = DEFAULT_HOLD_SECONDS, snapshot_key: bytes | None = None,
          replies: bool = False, clock: Callable[[], float] = time.time) -> EventSource:
    """Watch :data:`~apiclient.watch.WATCHED` in ``namespaces`` (none: all namespaces) through ``api`` and POST
    every change to ``sink`` as ApiServerSource would, with ``senders`` events in flight at most.

    ``overrides`` are extensions added to every event, ``ca_certs`` the PEM of an https sink's CA, ``resync_seconds``
    how often every object is re-announced, ``watch_seconds`` how long one watch request lasts, ``hold`` how long
    a change that may wait is held for the next (:class:`~eventsource.outbox.Outbox`), ``snapshot_key`` the key
    snapshots are signed with (none: events carry none), ``replies`` whether the sink is the handler itself, whose
    answers are then read, ``clock`` the wall clock the JobFlowTemplates' wake-ups are timed by (tests move it).
    """
    source = api.host  # ApiServerSource's ``source``: the API server's URL
    cache = WatchCache()
    encoder = Encoder(mode=mode, source=source, overrides=overrides or {}, cache=cache, key=snapshot_key,
                      replies=replies)
    outbox = Outbox(sink, encoder, ca_certs=ca_certs, hold=hold,
                    on_answer=(lambda body: answered(cache, outbox, body)) if replies else None,
                    version=version() if replies else None)
    stopping = threading.Event()
    rechecker, waker = Rechecker(outbox, stopping), Waker(outbox, stopping, clock=clock)
    observers = {JOBFLOW: rechecker.observe, JOBFLOWTEMPLATE: waker.observe}
    threads = [threading.Thread(target=outbox.run, name=f"sender-{i}", daemon=True) for i in range(senders)]
    threads.append(threading.Thread(target=rechecker.run, name="recheck", daemon=True))
    threads.append(threading.Thread(target=waker.run, name="wakeup", daemon=True))
    for api_type, label_selector in WATCHED.items():
        for namespace in namespaces or [None]:
            watcher = Watcher(api, api_type, namespace, outbox, resync_seconds=resync_seconds, stop=stopping,
                              label_selector=label_selector, watch_seconds=watch_seconds,
                              observer=observers.get(api_type), cache=cache)
            threads.append(threading.Thread(target=watcher.run, name=f"watch-{api_type.plural}", daemon=True))
    for thread in threads:
        thread.start()
    log.info("volcano-jobflow event source %s watching %s in %s; sending %s events to %s", version(),
             ", ".join(t.plural for t in WATCHED), ", ".join(namespaces) or "all namespaces", mode, sink)
    return EventSource(outbox=outbox, threads=threads, stopping=stopping, cache=cache)
