"""Start the event source's threads: the watchers fill one outbox, the senders drain it, the rechecker wakes it.

:func:`start` is the whole event source minus its configuration: ``python -m eventsource`` reads the environment
and calls it, and the tests call it with a short ``watch_seconds`` to run the real event source in-process::

    watchers (one per watched type and namespace) ──put──▶ Outbox ──POST──▶ sink
        └── JobFlows also go to the Rechecker ────put─────┘  (senders threads)

Every thread is a daemon and ends soon after :meth:`EventSource.stop`: the senders after the POST in hand, the
rechecker within a second, a watcher when its current watch request ends (within ``watch_seconds``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kubernetes import client

from eventsource import cloudevent
from eventsource.outbox import DEFAULT_HOLD_SECONDS, Outbox
from eventsource.recheck import Rechecker
from eventsource.watcher import WATCH_SECONDS, WATCHED, Watcher
from jobflow_core.api import JOBFLOW

log = logging.getLogger("eventsource")


@dataclass
class EventSource:
    """A started event source: the outbox its watchers fill, and the threads that run it."""

    outbox: Outbox
    threads: list[threading.Thread]
    stopping: threading.Event

    def stop(self, *, timeout: float = 10.0) -> None:
        """Tell every thread to end, and wait for them, ``timeout`` seconds at most in all."""
        self.stopping.set()
        self.outbox.stop()
        deadline = time.monotonic() + timeout
        for thread in self.threads:
            thread.join(timeout=max(0.0, deadline - time.monotonic()))


def start(api: client.ApiClient, *, sink: str, namespaces: Sequence[str], mode: cloudevent.Mode,
          resync_seconds: float, senders: int, overrides: Mapping[str, str] | None = None,
          ca_certs: str | None = None, watch_seconds: int = WATCH_SECONDS,
          hold: float = DEFAULT_HOLD_SECONDS) -> EventSource:
    """Watch :data:`~eventsource.watcher.WATCHED` in ``namespaces`` (none: all namespaces) through ``api`` and POST
    every change to ``sink`` as ApiServerSource would, with ``senders`` events in flight at most.

    ``overrides`` are extensions added to every event, ``ca_certs`` the PEM of an https sink's CA, ``resync_seconds``
    how often every object is re-announced, ``watch_seconds`` how long one watch request lasts, ``hold`` how long
    a change that may wait is held for the next (:class:`~eventsource.outbox.Outbox`).
    """
    source = api.configuration.host  # ApiServerSource's ``source``: the API server's URL
    extensions = dict(overrides or {})
    outbox = Outbox(sink, lambda envelope: cloudevent.encode(envelope, mode=mode, source=source,
                                                             overrides=extensions), ca_certs=ca_certs, hold=hold)
    stopping = threading.Event()
    rechecker = Rechecker(outbox, stopping)
    threads = [threading.Thread(target=outbox.run, name=f"sender-{i}", daemon=True) for i in range(senders)]
    threads.append(threading.Thread(target=rechecker.run, name="recheck", daemon=True))
    for api_type, label_selector in WATCHED.items():
        for namespace in namespaces or [None]:
            watcher = Watcher(api, api_type, namespace, outbox, resync_seconds=resync_seconds, stop=stopping,
                              label_selector=label_selector, watch_seconds=watch_seconds,
                              observer=rechecker.observe if api_type is JOBFLOW else None)
            threads.append(threading.Thread(target=watcher.run, name=f"watch-{api_type.plural}", daemon=True))
    for thread in threads:
        thread.start()
    log.info("watching %s in %s; sending %s events to %s", ", ".join(t.plural for t in WATCHED),
             ", ".join(namespaces) or "all namespaces", mode, sink)
    return EventSource(outbox=outbox, threads=threads, stopping=stopping)
