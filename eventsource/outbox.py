"""Deliver events to the sink without ever blocking the watches, and without losing an object's last change.

Watch threads ``put`` envelopes; sender threads (``SINK_CONCURRENCY``, default 4, as many as a gthread handler
worker serves at once) POST them in arrival order, never two events of one object at a time. While an object's event waits, a
newer event for the same object replaces it in place (the handler re-reads the object, so only "this object
changed" matters, and a delete is still delivered as the newest change). A failing sink (connection error, an answer
that is not HTTP, 5xx, 404, 408, 409, 429) is retried with exponential backoff, capped; a 4xx that says the event is
bad is logged and dropped, because sending it again cannot help. A retry sends the very same event (same ``id`` and
``time``), as ApiServerSource's sender does, so a sink can recognise the duplicate when an earlier attempt did arrive.
"""

from __future__ import annotations

import http.client
import logging
import ssl
import threading
import urllib.error
import urllib.request
from collections import OrderedDict
from collections.abc import Callable

from eventsource import metrics
from eventsource.cloudevent import Envelope

log = logging.getLogger("eventsource.outbox")

RETRIED_STATUSES = frozenset({404, 408, 409, 429}) | frozenset(range(500, 600))


class Outbox:
    def __init__(self, sink: str, encode: Callable[[Envelope], tuple[dict[str, str], bytes]], *,
                 timeout: float = 10.0, initial_backoff: float = 0.1, max_backoff: float = 30.0,
                 ca_certs: str | None = None) -> None:
        self.sink, self.encode, self.timeout = sink, encode, timeout
        # K_CA_CERTS: the PEM of an https sink's CA, as Knative's SinkBinding injects it (else the system's CAs).
        self.ssl_context = ssl.create_default_context(cadata=ca_certs) if ca_certs else None
        self.initial_backoff, self.max_backoff = initial_backoff, max_backoff
        self._pending: OrderedDict[tuple[str, str, str], Envelope] = OrderedDict()
        self._in_flight: set[tuple[str, str, str]] = set()  # objects a sender is busy with (never two at once)
        self._encoded: dict[tuple[str, str, str], tuple[Envelope, tuple[dict[str, str], bytes]]] = {}
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
        """The oldest pending event whose object no other sender is busy with; waits for one."""
        with self._lock:
            while not self._stopped:
                key = next((k for k in self._pending if k not in self._in_flight), None)
                if key is not None:
                    self._in_flight.add(key)
                    return self._pending.pop(key)
                self._lock.wait()
            return None

    def _finish(self, envelope: Envelope) -> None:
        with self._lock:
            self._in_flight.discard(envelope.key)
            self._lock.notify_all()

    def _message(self, envelope: Envelope) -> tuple[dict[str, str], bytes]:
        """The encoded event; a retry of the very same event is sent byte for byte again (same id)."""
        with self._lock:
            cached = self._encoded.get(envelope.key)
        if cached is not None and cached[0] is envelope:
            return cached[1]
        message = self.encode(envelope)
        with self._lock:
            self._encoded[envelope.key] = (envelope, message)
        return message

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
            with urllib.request.urlopen(request, timeout=self.timeout, context=self.ssl_context) as response:
                return response.status
        except urllib.error.HTTPError as error:
            return error.code
        except (OSError, http.client.HTTPException) as error:
            log.warning("sink %s gave no HTTP answer: %s", self.sink, error)
            return None

    def run(self) -> None:
        """One sender loop (several may run: each object is with at most one sender); returns after ``stop``."""
        backoff = self.initial_backoff
        while (envelope := self._next()) is not None:
            try:
                backoff = self._deliver(envelope, backoff)
            finally:
                self._finish(envelope)

    def _deliver(self, envelope: Envelope, backoff: float) -> float:
        """Send one event; on a transient failure put it back and wait. Returns the next backoff."""
        status = self._post(self._message(envelope))
        if status is not None and (200 <= status < 300 or status not in RETRIED_STATUSES):
            with self._lock:
                if self._encoded.get(envelope.key, (None,))[0] is envelope:
                    del self._encoded[envelope.key]
        kind = envelope.api_type.kind
        if status is not None and 200 <= status < 300:
            self.delivered += 1
            metrics.EVENTS_SENT.labels(kind, "delivered").inc()
            return self.initial_backoff
        if status is not None and status not in RETRIED_STATUSES:
            metrics.EVENTS_SENT.labels(kind, "dropped").inc()
            log.error("sink rejected %s %s with HTTP %s; dropping it (it will not get better)",
                      envelope.change, envelope.key, status)
            return backoff
        self.failures += 1
        metrics.EVENTS_SENT.labels(kind, "retried").inc()
        log.warning("sink answered %s for %s %s; retrying in %.1f s", status, envelope.change, envelope.key, backoff)
        self._requeue_unless_newer(envelope)
        with self._lock:  # the object stays ours while we wait, so no other sender retries it early
            self._lock.wait_for(lambda: self._stopped, timeout=backoff)
        return min(backoff * 2, self.max_backoff)
