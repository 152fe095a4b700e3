"""The logs pane's stream: one flow's logs (``kubectl jobflow logs NAME FLOW -f``), as server-sent events.

``GET /api/jobflows/NS/NAME/logs?flow=F[&item=N][&container=C]`` answers ``text/event-stream``. The records are
:func:`apiclient.logs.logs`'s, followed, so the pane shows exactly the lines the command prints, under the same
prefixes (``[flow/item/task/pod/container]``), and what the command says on stderr (a vcjob deleted with its pods, a
flow not started yet) as notices. Events:

* ``lines``: a JSON list of lines, each ``{"prefix", "pod", "container", "item", "text", "time"}``; what arrived
  together is sent together, so a tail of 500 lines is one event, not 500;
* ``notice``: ``{"text"}``;
* ``end``: ``{"text"}``, once the JobFlow and every stream ended: the page closes its EventSource (else the browser
  would reconnect and be sent it all again);
* ``problem``: ``{"error"}``, the selection cannot be shown (no such flow), or the API server refused (RBAC) or
  stayed away; then the stream ends;
* a comment every :data:`KEEPALIVE` seconds: a closed tab is noticed only when a write fails.

**Bounds.** A dashboard serves many people: at most :data:`MAX_STREAMS` logs panes are open at once per process
(:class:`Slots`; one more is answered 429, saying so), each follows at most :data:`MAX_FOLLOWED` running containers
(more when it opens is refused, saying to choose an item; one that starts later waits for a place), each container
starts from its last :data:`TAIL` lines (a pod that starts later is shown whole; the page keeps a bounded number of
lines), and at most :data:`QUEUED` records wait to be sent (a slow browser makes the reading wait).

**Closing.** The records are read in a greenlet of their own (the process is gevent's, monkey-patched in
:mod:`dashboard.__main__`, so :mod:`apiclient.logs`' threads and queues are greenlets too). When the browser goes
(the response is closed: a failed write, or the stream's end), ``stop`` is set and that greenlet is killed, which
closes :func:`~apiclient.logs.logs`' generator where it waits; the answers its watches and followers read are shut
down at once (:mod:`apiclient.hangup`), so their connections to the API server end within a second or two and the
pane limit bounds them.

**Whose rights.** Locally the logs are read with the user's kubeconfig; behind an authenticating proxy (the
dashboard's ``--user-header``) as the user it names, impersonated; in the cluster without a proxy, as the
dashboard's ServiceAccount, which is why it is off there unless the operator turns it on (``--logs``) and grants
``pods/log`` (docs/dashboard.md: logs may hold secrets).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import gevent
from gevent.queue import Empty, Queue

from apiclient.cluster import KubeError
from apiclient.follow import WatchLost
from apiclient.log_follow import hand_over
from apiclient.logs import LogLine, LogOptions, LogsRefused, Notice, logs
from jobflow_core.insight.logs import Selection

if TYPE_CHECKING:
    from apiclient.cluster import Cluster

MAX_STREAMS = 20
"""Logs panes open at once in one dashboard process (each holds a few API-server connections)."""
MAX_FOLLOWED = 10
"""Running containers one pane follows at once (``kubectl logs -f``'s ``--max-log-requests`` is 5: a pane of a
fan-out flow shows more)."""
TAIL = 500
"""Lines of each container's log already there when a pane opens (``--tail``), so a huge log does not flood it."""
KEEPALIVE = 5.0
"""Seconds between comments on a quiet stream: how soon a closed tab's upstream reads are let go."""
BATCH = 500
"""Lines sent in one event at most."""
QUEUED = 2000
"""Records read and not yet sent at most: a browser that takes them slowly makes the reading wait (and so the
kubelet), instead of this process buffering without limit."""

LogReader = Callable[..., Iterator[LogLine | Notice]]
"""``(namespace, name, *, selection, options, user, stop)`` -> the records of :func:`apiclient.logs.logs`; ``user``
is the one to impersonate (None: the dashboard's own identity)."""

log = logging.getLogger(__name__)


def log_reader(cluster: Cluster) -> LogReader:
    """The logs as ``cluster`` reads them, or as ``user`` when a proxy names one (``Impersonate-User`` on every
    request, the watches and the logs' streams too)."""

    def read(namespace: str, name: str, *, selection: Selection, options: LogOptions, user: str | None,
             stop: threading.Event) -> Iterator[LogLine | Notice]:
        acting = cluster if user is None else cluster.impersonating(user)
        return logs(acting, namespace, name, selection=selection, options=options, stop=stop)
    return read


class Slots:
    """How many logs panes may be open at once in this process, and how many are."""

    def __init__(self, limit: int = MAX_STREAMS) -> None:
        self.limit = limit
        self.open = 0
        self._lock = threading.Lock()

    def take(self) -> bool:
        with self._lock:
            if self.open >= self.limit:
                return False
            self.open += 1
            return True

    def give_back(self) -> None:
        with self._lock:
            self.open -= 1


@dataclass(frozen=True)
class Request:
    """One pane's stream: whose logs, seen by whom (None: the dashboard's own identity)."""

    namespace: str
    name: str
    selection: Selection
    user: str | None = None
    tail: int = TAIL


_END = object()


class LogStream:
    """The pane's server-sent events as a WSGI body (see the module docstring). The caller took a slot; closing the
    body (the WSGI server does, once the browser went or the stream ended) closes the upstream reads and gives the
    slot back, once, even when the body was never iterated."""

    def __init__(self, read: LogReader, request: Request, slots: Slots) -> None:
        self._events = _stream(read, request)
        self._slots: Slots | None = slots

    def __iter__(self) -> LogStream:
        return self

    def __next__(self) -> str:
        return next(self._events)

    def close(self) -> None:
        self._events.close()
        if self._slots is not None:
            self._slots.give_back()
            self._slots = None


def _stream(read: LogReader, request: Request) -> Iterator[str]:
    stop = threading.Event()
    records: Queue = Queue(maxsize=QUEUED)
    options = LogOptions(follow=True, tail=request.tail, max_requests=MAX_FOLLOWED)

    def put(record: object) -> None:
        """``record`` for the pane, waiting while it has :data:`QUEUED` to send; dropped if it is closed meanwhile."""
        hand_over(records, record, stop)  # gevent's Queue raises the standard library's Full

    def pump() -> None:
        try:
            for record in read(request.namespace, request.name, selection=request.selection, options=options,
                               user=request.user, stop=stop):
                put(record)
            put(_END)
        except (LogsRefused, KubeError, WatchLost) as error:
            put(error)
        except Exception as error:  # noqa: BLE001 -- said in the pane, and logged with its trace here
            log.exception("the logs of %s/%s failed", request.namespace, request.name)
            put(RuntimeError(f"the dashboard failed to read the logs ({error}); its log says more"))

    reader = gevent.spawn(pump)
    try:
        yield "retry: 2000\n\n"
        while True:
            try:
                batch = [records.get(timeout=KEEPALIVE)]
            except Empty:
                yield ": keep-alive\n\n"
                continue
            while len(batch) < BATCH and not records.empty():
                batch.append(records.get_nowait())
            for event in _events(batch, request):
                yield event
            if batch[-1] is _END or isinstance(batch[-1], Exception):
                return
    finally:
        stop.set()
        reader.kill(block=False)


def _events(batch: list[object], request: Request) -> Iterator[str]:
    """The batch as events: its lines together, a notice or the end as their own (in the order they came)."""
    lines: list[dict[str, object]] = []
    for record in batch:
        if isinstance(record, LogLine):
            stream = record.stream
            lines.append({"prefix": record.prefix, "pod": stream.pod, "container": stream.container,
                          "item": stream.index, "text": record.text, "time": record.time})
            continue
        if lines:
            yield _event("lines", lines)
            lines = []
        if isinstance(record, Notice):
            yield _event("notice", {"text": record.text})
        elif isinstance(record, Exception):
            yield _event("problem", {"error": _problem(record, request)})
        elif record is _END:
            yield _event("end", {"text": "the JobFlow ended and so did every container shown: no more lines"})
    if lines:
        yield _event("lines", lines)


def _problem(error: Exception, request: Request) -> str:
    """What the pane says when the logs cannot be shown, and what to do."""
    if isinstance(error, LogsRefused) and error.usage:
        return (f"{error} (in the dashboard: at most {MAX_FOLLOWED} running containers at once; choose an item above, "
                f"or run kubectl jobflow logs {request.name} {request.selection.flow or ''} -n {request.namespace} -f "
                "--max-log-requests N)")
    if isinstance(error, KubeError) and error.status == 403:
        return (f"{error} (reading logs needs get on pods/log and list and watch on pods in namespace "
                f"{request.namespace}: docs/dashboard.md#logs)")
    return str(error)


def _event(name: str, data: object) -> str:
    return f"event: {name}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"
