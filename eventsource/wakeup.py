"""Wake the handler for each JobFlowTemplate when its next scheduled time comes.

A schedule's time coming changes no Kubernetes object, so no watch event tells the handler that a run is due; on
Knative the PingSource's tick does, every minute. Our event source has its own, finer clock: the handler writes
``status.nextScheduleTime`` on every template it looks at, and this re-announces the template (an ``update``
event) one second after that time, so the run starts within about a second of its time rather than at the next
re-announcement of everything (``RESYNC_SECONDS``). A template whose status names no next time (suspended, no
schedule), or that is deleted, is dropped; a new status replaces its timer. One timer per scheduled template, so
no busy loop. The time is the wall clock (``time.time``; tests hand in one they move): the scheduled times are
wall-clock instants.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import datetime

from apiclient.cloudevents import Envelope
from apiclient.watch import Change
from eventsource.outbox import Outbox
from jobflow_core.vocabulary.api import JOBFLOWTEMPLATE

LATE_SECONDS = 1.0
"""How long after the scheduled time the template is announced: a clock a little behind still finds it due."""


def next_time(obj: dict) -> float | None:
    """``status.nextScheduleTime`` as seconds since the epoch, None when absent or not a time."""
    value = (obj.get("status") or {}).get("nextScheduleTime")
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


class Waker:
    def __init__(self, outbox: Outbox, stop: threading.Event, *, clock: Callable[[], float] = time.time) -> None:
        self.outbox, self.stop, self.clock = outbox, stop, clock
        self._due: dict[tuple[str, str], tuple[float, dict]] = {}  # key -> (wall time due, object)
        self._lock = threading.Condition()

    def observe(self, change: Change, obj: dict) -> None:
        """Called with every JobFlowTemplate the watcher sees."""
        meta = obj.get("metadata") or {}
        key = (meta.get("namespace", ""), meta.get("name", ""))
        due = None if change is Change.DELETE else next_time(obj)
        with self._lock:
            if due is None:
                self._due.pop(key, None)
            else:
                self._due[key] = (due + LATE_SECONDS, obj)
                self._lock.notify()

    def scheduled(self) -> int:
        with self._lock:
            return len(self._due)

    def run(self) -> None:
        while not self.stop.is_set():
            with self._lock:
                now = self.clock()
                ready = [(key, obj) for key, (due, obj) in self._due.items() if due <= now]
                for key, _ in ready:
                    del self._due[key]  # the handler's look writes the next time, which sets the next timer
                if not ready:
                    next_due = min((due for due, _ in self._due.values()), default=now + 1.0)
                    self._lock.wait(timeout=max(0.05, min(next_due - now, 1.0)))
            for _, obj in ready:
                self.outbox.put(Envelope(JOBFLOWTEMPLATE, Change.UPDATE, obj))
