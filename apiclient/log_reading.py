"""One container's log, line by line, asked again after a cut: the reading that :mod:`apiclient.logs` does for each
container of a selection, and the records it hands on (:class:`LogLine`, :class:`Notice`).

The log is asked for with ``timestamps=true`` (``GET /api/v1/namespaces/NS/pods/POD/log?container=C``); a cut
connection (an API-server restart: reset, refused, 5xx) is asked again with ``sinceTime`` of the last line shown,
and the lines of that second shown already are skipped (:mod:`jobflow_core.insight.log_lines`). The API server may
stay away for ``patience`` seconds, then :class:`~apiclient.follow.WatchLost` is raised; the clock starts again as
soon as it answers (200), so a quiet container, whose read times out every :data:`READ_SECONDS` on an answered
stream, is asked again at once and never taken for an API server that is away.

A line longer than :data:`MAX_LINE` bytes (a progress bar that never writes a line break) is shown in pieces of that
length. A piece the stream ended in (no line break after it) is shown only when the log will not be asked again:
otherwise the next answer repeats that line whole, and it is shown then, once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from urllib3.exceptions import HTTPError, ReadTimeoutError

from apiclient.follow import PATIENCE, TRANSIENT, _wait_out
from apiclient.rest import ApiError, Unterminated
from jobflow_core.insight.log_lines import Cursor, admit, split
from jobflow_core.insight.logs import Pod, Stream
from jobflow_core.vocabulary.api import ApiType

if TYPE_CHECKING:
    from apiclient.cluster import Cluster
    from apiclient.hangup import Hangup

POD = ApiType("", "v1", "Pod", "pods")
MAX_LOG_REQUESTS = 5
"""Running containers followed at once, kubectl's ``--max-log-requests`` default."""
READ_SECONDS = 60.0
"""A followed log that says nothing this long is asked again (from its last line): a dead connection is noticed."""
MAX_LINE = 64 * 1024
"""Bytes of a line shown at most as one; a longer one is shown in pieces of this length."""


@dataclass(frozen=True)
class LogOptions:
    """How the logs are read: ``follow`` them, the last ``tail`` lines, those of the last ``since_seconds``, at most
    ``max_requests`` followed at once, the API server away for at most ``patience`` seconds."""

    follow: bool = False
    tail: int | None = None
    since_seconds: int | None = None
    max_requests: int = MAX_LOG_REQUESTS
    patience: float = PATIENCE


@dataclass(frozen=True)
class LogLine:
    """One line of one container's log: ``text`` as written, ``time`` as the kubelet stamped it (RFC 3339)."""

    stream: Stream
    text: str
    time: str | None

    @property
    def prefix(self) -> str:
        return self.stream.prefix


@dataclass(frozen=True)
class Notice:
    """What is said of a part of the selection that shows no log, or of the JobFlow (deleted while followed)."""

    text: str


def container_log(cluster: Cluster, namespace: str, stream: Stream, *, follow: bool, options: LogOptions,
                  first: bool, stop: threading.Event, hangup: Hangup | None = None) -> Iterator[LogLine | Notice]:
    """One container's log, from its ``first`` connection (with ``--tail``/``--since``) or whole; asked again from
    its last line after a cut, until it ends (see the module docstring)."""
    path = f"/api/v1/namespaces/{namespace}/pods/{stream.pod}/log"
    cursor = Cursor()
    opened = time.monotonic()
    lost_since: float | None = None
    backoff = 0.2
    asked = 0
    answered = False

    def answer() -> None:
        nonlocal lost_since, backoff, answered
        lost_since, backoff, answered = None, 0.2, True

    while not stop.is_set():
        query: list[tuple[str, Any]] = [("container", stream.container), ("timestamps", "true"),
                                        *([("follow", "true")] if follow else [])]
        query += _start_from(cursor, options if first else None, asked=asked, elapsed=time.monotonic() - opened)
        if cursor.last is not None:
            cursor = cursor.reconnected()
        asked += 1
        answered = False
        held: str | None = None
        try:
            for raw in cluster.rest.text_lines(path, query=query, timeout=(5.0, READ_SECONDS), hangup=hangup,
                                               answered=answer, max_line=MAX_LINE):
                if follow and isinstance(raw, Unterminated):
                    held = raw  # shown only if the log is not asked again (which repeats it whole)
                    continue
                when, text = split(raw)
                new, cursor = admit(cursor, when)
                if new:
                    yield LogLine(stream, text, when)
                if stop.is_set():
                    return
        except ApiError as error:
            if error.status in (400, 404):  # the pod is gone, or its container has no log to serve
                if asked == 1 and not follow:
                    yield Notice(f"{stream.prefix}: {error.message}")
                return
            if error.status not in TRANSIENT:
                raise cluster._api_error(error) from error
            lost_since = _wait_out(cluster, error, lost_since, backoff, options.patience)
            backoff = min(backoff * 2, 5.0)
            continue
        except (HTTPError, OSError) as error:  # cut: asked again from the last line shown
            if stop.is_set():  # the hangup shut it: we are done
                return
            if answered and isinstance(error, ReadTimeoutError):
                continue  # a quiet log on an answered stream: the API server is there, ask again at once
            lost_since = _wait_out(cluster, error, lost_since, backoff, options.patience)
            backoff = min(backoff * 2, 5.0)
            continue
        if stop.is_set():
            return
        if not follow or not _still_running(cluster, namespace, stream):
            when, text = split(held) if held is not None else (None, "")
            if held is not None and admit(cursor, when)[0]:
                yield LogLine(stream, text, when)
            return
        stop.wait(0.5)  # the same container still runs: the connection was closed under it


def _start_from(cursor: Cursor, options: LogOptions | None, *, asked: int, elapsed: float) -> list[tuple[str, Any]]:
    """Where a connection starts: after the last line shown; on the first, as asked (``options``: tail, since);
    again with nothing shown yet, from as far back as the first asked for, so nothing written meanwhile is lost, and
    with the same ``tailLines`` (a cut before the first line must not bring the whole log)."""
    if cursor.since is not None:
        return [("sinceTime", cursor.since)]
    if options is None:
        return []
    if options.since_seconds is not None:
        return [("sinceSeconds", max(1, int(options.since_seconds + (elapsed if asked else 0))))]
    if options.tail == 0 and asked:  # nothing was shown; what was there at first was not to be
        return [("sinceSeconds", max(1, int(elapsed) + 1))]
    if options.tail is not None:
        return [("tailLines", options.tail)]
    return []


def _still_running(cluster: Cluster, namespace: str, stream: Stream) -> bool:
    """Whether the container instance ``stream`` followed still runs (so its log's end was a cut, not its end)."""
    try:
        pod = cluster.find(POD, namespace, stream.pod)
    except Exception:  # noqa: BLE001 -- unreachable now: ask the log again, which waits for the API server
        return True
    if pod is None:
        return False
    return any(container.instance == stream.instance and container.running
               for container in Pod.of(pod).containers if container.name == stream.container)
