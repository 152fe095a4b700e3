"""Deliver events to the sink without ever blocking the watches, and without losing an object's last change.

Watch threads ``put`` envelopes; sender threads (``SINK_CONCURRENCY``, default 4, as many as a gthread handler
worker serves at once) POST them in arrival order, never two events of one key at a time (a key is a JobFlow with
its vcjobs, a JobTemplate, or a deleted vcjob: ``Envelope.key``). While a key's event waits, a newer event for the
same key replaces it in place (the handler re-reads everything, so only "this changed" matters, and a delete is
still delivered as the newest change). A change that may wait (``Envelope.may_wait``: a vcjob not in a final phase)
is held up to ``hold`` seconds (:data:`DEFAULT_HOLD_SECONDS`) for the next one; an urgent change for the same key
ends the hold. So a vcjob's ``Pending`` and ``Running`` show in its JobFlow's status (and satisfy a task-status
probe) up to that much later, while its end, which can start a dependent, never waits. A failing sink (connection error,
an answer that is not HTTP, 5xx, 404, 408, 409, 429) is retried with exponential backoff, capped; a 4xx that says the
event is bad is logged and dropped, because sending it again cannot help. A retry sends the very same event (same ``id``
and ``time``), as ApiServerSource's sender does, so a sink can recognise the duplicate when an earlier attempt did
arrive.

A handler answers with its version (:data:`apiclient.version.REPLY_HEADER`). With ``version`` set (the event
source reads the handler's answers), an event that a handler of another version answered, or one that names none
(0.1.0 did not), is sent again :data:`OTHER_VERSION_SECONDS` later, at most :data:`OTHER_VERSION_RESENDS` times:
during a rolling update the Service sends a new event source's first events (its whole first list) to the old
handlers too, and an idle JobFlow would otherwise keep the old version's decision until the next resync. Both
answers are safe (every write is guarded); the second is this version's.
"""

from __future__ import annotations

import http.client
import logging
import ssl
import threading
import time
import urllib.error
import urllib.request
from collections import OrderedDict
from collections.abc import Callable

from apiclient.cloudevents import Envelope
from apiclient.version import REPLY_HEADER
from eventsource import metrics

log = logging.getLogger("eventsource.outbox")

DEFAULT_HOLD_SECONDS = 0.5
OTHER_VERSION_SECONDS = 2.0
OTHER_VERSION_RESENDS = 30
"""A minute of re-sending: longer than a roll-out of the manifests takes; a handler of another version kept on
purpose does not make the event source send for ever."""
RETRIED_STATUSES = frozenset({404, 408, 409, 429}) | frozenset(range(500, 600))


class Outbox:
    def __init__(self, sink: str, encode: Callable[[Envelope], tuple[dict[str, str], bytes]], *,
                 timeout: float = 10.0, initial_backoff: float = 0.1, max_backoff: float = 30.0,
                 ca_certs: str | None = None, hold: float = DEFAULT_HOLD_SECONDS,
                 on_answer: Callable[[bytes], None] | None = None, version: str | None = None) -> None:
        self.sink, self.encode, self.timeout = sink, encode, timeout
        self.on_answer = on_answer  # reads the body of a 2xx answer (the handler's, when it answers us)
        self.version = version  # ours: an event another version answered is sent again (module docstring)
        self._resent: dict[tuple[str, str, str], int] = {}  # key -> times its change went back for that
        # K_CA_CERTS: the PEM of an https sink's CA, as Knative's SinkBinding injects it (else the system's CAs).
        self.ssl_context = ssl.create_default_context(cadata=ca_certs) if ca_certs else None
        self.initial_backoff, self.max_backoff = initial_backoff, max_backoff
        self.hold = hold
        self._pending: OrderedDict[tuple[str, str, str], Envelope] = OrderedDict()
        self._due: dict[tuple[str, str, str], float] = {}  # key -> monotonic time its pending event may go
        self._in_flight: set[tuple[str, str, str]] = set()  # objects a sender is busy with (never two at once)
        self._encoded: dict[tuple[str, str, str], tuple[Envelope, tuple[dict[str, str], bytes]]] = {}
        self._lock = threading.Condition()
        self._stopped = False
        self.delivered = 0
        self.failures = 0

    def put(self, envelope: Envelope) -> None:
        key, now = envelope.key, time.monotonic()
        with self._lock:
            # A newer change to the same key takes the older one's place in the line, and keeps its due time
            # unless it is urgent (so a stream of changes that may wait is never held for longer than one hold).
            due = now + self.hold if envelope.may_wait else now
            self._due[key] = min(self._due.get(key, due), due) if key in self._pending else due
            self._pending[key] = envelope
            self._lock.notify()

    def pending(self) -> int:
        with self._lock:
            return len(self._pending)

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
            self._lock.notify_all()

    def _next(self) -> Envelope | None:
        """The oldest pending event that is due and whose key no other sender is busy with; waits for one."""
        with self._lock:
            while not self._stopped:
                now, soonest = time.monotonic(), None
                for key in self._pending:
                    if key in self._in_flight:
                        continue
                    due = self._due.get(key, now)
                    if due <= now:
                        self._in_flight.add(key)
                        self._due.pop(key, None)
                        return self._pending.pop(key)
                    soonest = due if soonest is None else min(soonest, due)
                self._lock.wait(None if soonest is None else soonest - now)
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

    def _again_if_another_version(self, envelope: Envelope, answered_by: str | None) -> None:
        """Send ``envelope`` again a moment later if a handler of another version answered it (module docstring)."""
        key = envelope.key
        with self._lock:
            if answered_by == self.version:
                self._resent.pop(key, None)
                return
            times = self._resent.get(key, 0)
            if times >= OTHER_VERSION_RESENDS or key in self._pending:  # given up, or a newer change goes anyway
                return
            self._resent[key] = times + 1
            self._pending[key] = envelope
            self._due[key] = time.monotonic() + OTHER_VERSION_SECONDS
            self._lock.notify()
        metrics.EVENTS_SENT.labels(envelope.api_type.kind, "other_version").inc()
        log.info("a handler of version %s answered %s %s; sending it again for one of version %s",
                 answered_by or "unknown (0.1.0 or older)", envelope.change, key, self.version)

    def _requeue_unless_newer(self, envelope: Envelope) -> None:
        """Put a failed event back at the head of the line, unless a newer change for its object arrived."""
        with self._lock:
            if envelope.key not in self._pending:
                self._due[envelope.key] = time.monotonic()
                self._pending[envelope.key] = envelope
                self._pending.move_to_end(envelope.key, last=False)

    def _post(self, message: tuple[dict[str, str], bytes]) -> tuple[int | None, bytes, str | None]:
        """HTTP status, body and the answering handler's version of one attempt; None when the sink could not be
        reached or did not answer in HTTP."""
        headers, body = message
        request = urllib.request.Request(self.sink, data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout, context=self.ssl_context) as response:
                return response.status, response.read(), response.headers.get(REPLY_HEADER)
        except urllib.error.HTTPError as error:
            return error.code, b"", None
        except (OSError, http.client.HTTPException) as error:
            log.warning("sink %s gave no HTTP answer: %s", self.sink, error)
            return None, b"", None

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
        status, answer, answered_by = self._post(self._message(envelope))
        if status is not None and (200 <= status < 300 or status not in RETRIED_STATUSES):
            with self._lock:
                if self._encoded.get(envelope.key, (None,))[0] is envelope:
                    del self._encoded[envelope.key]
        kind = envelope.api_type.kind
        if status is not None and 200 <= status < 300:
            self.delivered += 1
            metrics.EVENTS_SENT.labels(kind, "delivered").inc()
            if answer and self.on_answer is not None:
                self.on_answer(answer)
            if self.version is not None:
                self._again_if_another_version(envelope, answered_by)
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
