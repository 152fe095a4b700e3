"""Where a container's log stream picks up after a cut (an API-server restart, a dropped connection), so that no
line is shown twice and none is skipped.

The log is asked for with ``timestamps=true``: the kubelet starts each line with the time it was written (RFC 3339,
nanoseconds, trailing zeros trimmed: ``2026-11-25T09:00:00.1234Z``). A stream that is cut is asked for again with
``sinceTime``, which the API server passes on to the kubelet to the second only: the new stream repeats the lines of
that second that were already shown. A :class:`Cursor` remembers the last instant shown and how many lines bore it;
:func:`admit` lets through, on the new stream, only what comes after them. Lines written at the same nanosecond
are told apart by their count, which holds as long as the log's order does (the kubelet serves a file in order).
"""

import re
from dataclasses import dataclass, replace

_TIME = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?Z")


def split(raw: str) -> tuple[str | None, str]:
    """(the time the kubelet put first, the line as the container wrote it); (None, raw) for a line without one."""
    time, space, text = raw.partition(" ")
    return (time, text) if space and _TIME.fullmatch(time) else (None, raw)


def instant(time: str) -> str:
    """A key that sorts as the times do: the fraction padded to nine digits (``...00.1Z`` < ``...00.12Z``)."""
    match = _TIME.fullmatch(time)
    if match is None:
        raise ValueError(f"not an RFC 3339 UTC time: {time!r}")
    return f"{match[1]}.{(match[2] or '').ljust(9, '0')}"


def since_time(time: str) -> str:
    """The ``sinceTime`` that asks again from ``time``'s second (the precision the kubelet is given)."""
    return instant(time)[:19] + "Z"


@dataclass(frozen=True)
class Cursor:
    """What a stream has shown: ``last``, the latest instant (:func:`instant`), and ``at_last``, how many lines bore
    it. On a new connection (:meth:`reconnected`) the lines up to those are skipped once, then everything passes."""

    last: str | None = None
    at_last: int = 0
    replay: tuple[str, int] | None = None
    """While a new connection repeats what was shown: (the last instant shown, lines of it still to skip)."""

    def reconnected(self) -> "Cursor":
        """The cursor of a new connection asked for ``sinceTime`` = :func:`since_time` of the last line shown."""
        return replace(self, replay=(self.last, self.at_last) if self.last is not None else None)

    @property
    def since(self) -> str | None:
        """The ``sinceTime`` to ask a new connection for (None: nothing was shown yet)."""
        return self.last[:19] + "Z" if self.last is not None else None


def admit(cursor: Cursor, time: str | None) -> tuple[bool, Cursor]:
    """Whether the line written at ``time`` is new, and the cursor after it. A line without a time (the kubelet
    always sends one; a stand-in may not) is new unless a replay is under way."""
    if time is None:
        return cursor.replay is None, cursor
    key = instant(time)
    if cursor.replay is not None:
        last, to_skip = cursor.replay
        if key < last:
            return False, cursor
        if key == last and to_skip > 0:
            return False, replace(cursor, replay=(last, to_skip - 1))
        cursor = replace(cursor, replay=None)
    if key == cursor.last:
        return True, replace(cursor, at_last=cursor.at_last + 1)
    return True, replace(cursor, last=key, at_last=1)
