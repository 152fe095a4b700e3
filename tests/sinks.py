"""The capture sink: a real HTTP server on 127.0.0.1 that records every request sent to it.

Everything here that sends CloudEvents (the event source's outbox, the handler's notifications and hand-backs,
Knative's ApiServerSource adapter) is tested against a receiver at a URL that keeps what arrived and answers what the
test says: 202, a 503 during an outage, a refusal per event, a reply that is not HTTP at all. This is that receiver,
defined once (``tests/unit/test_one_helper_each.py`` fails on a second); a test states only its answers::

    with Sink(answer=lambda headers: 503 if outage.is_set() else 202) as sink:
        ...  # point the sender at sink.url
    assert [request.headers["ce-id"] for request in sink.accepted()] == [...]

A server that plays something else (an API server answering GETs, a pod a probe reaches, a proxy between a sender
and the handler) is no sink and stays with its tests.
"""

from __future__ import annotations

import json
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

NOT_HTTP = 0
"""An answer that makes the sink reply with a line that is not HTTP, then close the connection."""

Answer = Callable[[dict[str, str]], int]
"""Decides the reply's HTTP status from the request's headers (names lower-cased)."""


@dataclass(frozen=True)
class Request:
    """One request as the sink received it, and the status it answered."""

    at: float  # time.monotonic() on arrival
    method: str
    path: str
    headers: dict[str, str]  # names lower-cased: CloudEvents' binary mode attributes are ce-*, in any case
    body: bytes
    status: int

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    def json(self) -> Any:
        return json.loads(self.body)


class Sink:
    """Records every request; ``answer`` (a status, or a function of the headers) decides each reply.

    ``answer`` may be changed while the sink runs. ``port`` 0 takes a free one; ``tls`` serves HTTPS with that
    context (then ``url`` says ``https``); ``reply_headers`` go on every reply (and may be changed too). Close it,
    or use it as a context manager.
    """

    def __init__(self, *, answer: int | Answer = 202, port: int = 0, tls: ssl.SSLContext | None = None,
                 reply_headers: dict[str, str] | None = None) -> None:
        self.answer = answer
        self.reply_headers = dict(reply_headers or {})
        self.received: list[Request] = []
        self.server = ThreadingHTTPServer(("127.0.0.1", port), _recording(self))
        if tls is not None:
            self.server.socket = tls.wrap_socket(self.server.socket, server_side=True)
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{self.server.server_port}/"
        self._thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), name="sink", daemon=True)
        self._thread.start()

    def _answer_for(self, headers: dict[str, str]) -> int:
        return self.answer(headers) if callable(self.answer) else self.answer

    def accepted(self) -> list[Request]:
        """The requests answered 2xx, in the order they arrived."""
        return [request for request in list(self.received) if request.ok]

    def refused(self) -> list[Request]:
        """The requests answered anything else."""
        return [request for request in list(self.received) if not request.ok]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(timeout=10)

    def __enter__(self) -> Sink:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _recording(sink: Sink) -> type[BaseHTTPRequestHandler]:
    class Recording(BaseHTTPRequestHandler):
        def capture(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            headers = {name.lower(): value for name, value in self.headers.items()}
            status = sink._answer_for(headers)
            sink.received.append(Request(time.monotonic(), self.command, self.path, headers, body, status))
            if status == NOT_HTTP:
                self.wfile.write(b"HELLO THERE\r\n\r\n")
                self.close_connection = True
                return
            self.send_response(status)
            for name, value in dict(sink.reply_headers).items():
                self.send_header(name, value)
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_POST = do_PUT = do_PATCH = do_DELETE = do_GET = capture

        def log_message(self, *args: object) -> None:
            pass

    return Recording
