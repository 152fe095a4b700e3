"""Wake the handler for JobFlows that wait for a probe, as often as their status asks.

A probe (an HTTP server coming up, a TCP port opening) can start passing without any Kubernetes object changing,
so no watch event would ever tell the handler to look again; nor does a retry backoff, a deadline or a timeout
running out. The handler writes, for each flow waiting on a probe or a backoff,
``status.waitingFlows[].recheckSeconds``, and ``status.recheckSeconds`` while a deadline or timeout is pending;
nor does a CloudEvents sink coming back (``status.notifications.pending``: every
``DELIVERY_RECHECK_SECONDS``). While a JobFlow's last seen status has such entries, this re-announces
it (an ``update`` event) every that many seconds (the smallest, if several). A JobFlow that stops waiting, or is
deleted, is dropped. Nothing is kept but one timer per waiting JobFlow, so this is no busy loop.
"""

from __future__ import annotations

import threading
import time

from apiclient.cloudevents import Envelope
from apiclient.watch import Change
from eventsource.outbox import Outbox
from jobflow_core.planning.notifications import DELIVERY_RECHECK_SECONDS
from jobflow_core.routing.concerns import has_pending_notifications
from jobflow_core.vocabulary.api import JOBFLOW


def recheck_seconds(obj: dict) -> float | None:
    status = obj.get("status") or {}
    waits = status.get("waitingFlows") or []
    intervals = [w["recheckSeconds"] for w in waits if isinstance(w, dict) and w.get("recheckSeconds")]
    if isinstance(status.get("recheckSeconds"), (int, float)) and status["recheckSeconds"] > 0:
        intervals.append(status["recheckSeconds"])  # a deadline or timeout that has not run out yet
    if has_pending_notifications(obj):
        intervals.append(DELIVERY_RECHECK_SECONDS)  # CloudEvents out the sink has not taken yet
    return float(min(intervals)) if intervals else None


class Rechecker:
    def __init__(self, outbox: Outbox, stop: threading.Event) -> None:
        self.outbox, self.stop = outbox, stop
        self._due: dict[tuple[str, str], tuple[float, float, dict]] = {}  # key -> (due, interval, object)
        self._lock = threading.Condition()

    def observe(self, change: Change, obj: dict) -> None:
        """Called with every JobFlow the watcher sees."""
        meta = obj.get("metadata") or {}
        key = (meta.get("namespace", ""), meta.get("name", ""))
        interval = None if change is Change.DELETE else recheck_seconds(obj)
        with self._lock:
            if interval is None:
                self._due.pop(key, None)
                return
            due = self._due[key][0] if key in self._due else time.monotonic() + interval
            self._due[key] = (min(due, time.monotonic() + interval), interval, obj)
            self._lock.notify()

    def waiting(self) -> int:
        with self._lock:
            return len(self._due)

    def run(self) -> None:
        while not self.stop.is_set():
            with self._lock:
                now = time.monotonic()
                ready = [(key, entry) for key, entry in self._due.items() if entry[0] <= now]
                for key, (_, interval, obj) in ready:
                    self._due[key] = (now + interval, interval, obj)
                if not ready:
                    next_due = min((entry[0] for entry in self._due.values()), default=now + 1.0)
                    self._lock.wait(timeout=max(0.05, min(next_due - now, 1.0)))
            for _, (_, _, obj) in ready:
                self.outbox.put(Envelope(JOBFLOW, Change.UPDATE, obj))
