"""Deliver events to the sink without ever blocking the watches, and without losing an object's last change.

Watch threads ``put`` envelopes; one sender thread POSTs them in arrival order. While an object's event waits, a
newer event for the same object replaces it in place (the handler re-reads the object, so only "this object
changed" matters, and a delete is still delivered as the newest change). A failing sink (connection error, an answer
that is not HTTP, 5xx, 404, 408, 409, 429) is retried with exponential backoff, capped; a 4xx that says the event is
bad is logged and dropped, because sending it again cannot help. A retry sends the very same event (same ``id`` and
``time``), as ApiServerSource's sender does, so a sink can recognise the duplicate when an earlier attempt did arrive.
"""

from __future__ import annotations

import http.client
import logging
import threading
import time
import urllib.error
import urllib.request
from collections import OrderedDict
from collections.abc import Callable

from eventsource.cloudevent import Envelope

log = logging.getLogger("eventsource.outbox")

RETRIED_STATUSES = frozenset({404, 408, 409, 429}) | frozenset(range(500, 600))


class Outbox:
    def __init__(self, sink: str, encode: Callable[[Envelope], tuple[dict[str, str], bytes]], *,
                 timeout: float = 10.0, initial_backoff: float = 0.1, max_backoff: float = 30.0) -> None:
        self.sink, self.encode, self.timeout = sink, encode, timeout
        self.initial_backoff, self.max_backoff = initial_backoff, max_backoff
        self._pending: OrderedDict[tuple[str, str, str], Envelope] = OrderedDict()
        self._lock = threading.Condition()
        self._stopped = False
        self.delivered = 0
        self.failures = 0

    def put(self, envelope: Envelope) -> None:
        with self._lock:
            # A newer change to the same object takes the older one's place in the line.
            self._pending[envelope.key] = envelope
            self._lock.notify()

    def pending(self) -> int:
        with self._lock:
            return len(self._pending)

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
            self._lock.notify_all()

    def _next(self) -> Envelope | None:
        with self._lock:
            while not self._pending and not self._stopped:
                self._lock.wait()
            if self._stopped:
                return None
            _, envelope = self._pending.popitem(last=False)
            return envelope

    def _requeue_unless_newer(self, envelope: Envelope) -> None:
        """Put a failed event back at the head of the line, unless a newer change for its object arrived."""
        with self._lock:
            if envelope.key not in self._pending:
                self._pending[envelope.key] = envelope
                self._pending.move_to_end(envelope.key, last=False)

    def _post(self, message: tuple[dict[str, str], bytes]) -> int | None:
        """HTTP status of one attempt, or None when the sink could not be reached or did not answer in HTTP."""
        headers, body = message
        request = urllib.request.Request(self.sink, data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return response.status
        except urllib.error.HTTPError as error:
            return error.code
        except (OSError, http.client.HTTPException) as error:
            log.warning("sink %s gave no HTTP answer: %s", self.sink, error)
            return None

    def run(self) -> None:
        """The sender loop; returns after ``stop``."""
        backoff = self.initial_backoff
        retry: tuple[Envelope, tuple[dict[str, str], bytes]] | None = None
        while (envelope := self._next()) is not None:
            message = retry[1] if retry and retry[0] is envelope else self.encode(envelope)
            retry = None
            status = self._post(message)
            if status is not None and 200 <= status < 300:
                self.delivered += 1
                backoff = self.initial_backoff
                continue
            if status is not None and status not in RETRIED_STATUSES:
                log.error("sink rejected %s %s with HTTP %s; dropping it (it will not get better)",
                          envelope.change, envelope.key, status)
                continue
            self.failures += 1
            log.warning("sink answered %s for %s %s; retrying in %.1f s", status, envelope.change, envelope.key,
                        backoff)
            self._requeue_unless_newer(envelope)
            retry = (envelope, message)
            with self._lock:
                self._lock.wait_for(lambda: self._stopped, timeout=backoff)
            backoff = min(backoff * 2, self.max_backoff)
