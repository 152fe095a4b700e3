"""Streamed answers (a watch, a followed log) that a stop ends at once, instead of at their next line.

A thread that reads a streamed answer looks at its ``stop`` only between lines: a quiet log or a watch with nothing
to say keeps it (and its connection to the API server) for as long as the read may wait, 60 seconds for a log, four
minutes for a watch. A :class:`Hangup` holds the answers being read now (:meth:`Rest.text_lines
<apiclient.rest.Rest.text_lines>` hands each to it while it reads) and, once ``stop`` is set, shuts their sockets
down from its own thread: each reader wakes with the end of its stream and sees ``stop``. So a closed logs pane lets
go of its upstream connections within a moment, and the dashboard's limit on open panes bounds them.
"""

from __future__ import annotations

import threading
from typing import Any


class Hangup:
    """The answers read now under one ``stop``; shut down once it is set (and any handed in afterwards, at once)."""

    def __init__(self, stop: threading.Event, *, name: str = "hangup") -> None:
        self._stop = stop
        self._open: set[Any] = set()
        self._lock = threading.Lock()
        threading.Thread(target=self._wait, daemon=True, name=name).start()

    def hold(self, response: Any) -> None:
        """``response`` is being read: shut it down when ``stop`` is set (now, if it is)."""
        with self._lock:
            if not self._stop.is_set():
                self._open.add(response)
                return
        _shut(response)

    def let_go(self, response: Any) -> None:
        """``response`` was read to its end, or left: nothing to shut down."""
        with self._lock:
            self._open.discard(response)

    def _wait(self) -> None:
        self._stop.wait()
        with self._lock:
            responses, self._open = list(self._open), set()
        for response in responses:
            _shut(response)


def _shut(response: Any) -> None:
    """The socket's reading side shut down: a read waiting on it returns the stream's end at once."""
    try:
        response.shutdown()
    except (OSError, RuntimeError, ValueError):  # released to the pool already, or closed: nothing is read on it
        pass
