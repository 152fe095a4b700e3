"""The engine under test, in-process: the real Flask app on a loopback port, fed by the real event source.

``start_handler`` serves ``handlers.create_app()`` with a threaded WSGI server; ``start_engine`` adds the event
source (``eventsource.start``, scoped to one namespace) sending to it, all against the real API server of the local
cluster. ``serve`` is ``start_handler`` as a context manager, for tests that need several handlers at once; ``send``
POSTs an event exactly as ApiServerSource would (the event source's own encoder). The fault tier's tools sit between
an event source and its handlers: :class:`Mangler` drops, duplicates and reorders events, :class:`Spreader` hands
them to several handlers in turn, :class:`Pinger` plays the PingSource's resync.
"""

from __future__ import annotations

import random
import secrets
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from werkzeug.serving import make_server

import eventsource
from apiclient import cloudevents
from devcluster.processes import free_port
from devcluster.testing import LocalCluster
from eventsource.outbox import Outbox
from handlers import create_app
from handlers.kube import KubeApi
from jobflow_core.vocabulary.api import JOBFLOW, ApiType


@dataclass
class Handler:
    url: str
    kube: KubeApi
    server: object
    thread: threading.Thread

    def stop(self) -> None:
        self.server.shutdown()
        self.thread.join(timeout=10)


def start_handler(cluster: LocalCluster, config: dict | None = None) -> Handler:
    kube = KubeApi(cluster.connection)
    port = free_port()
    server = make_server("127.0.0.1", port, create_app({"KUBE": kube, **(config or {})}), threaded=True)
    thread = threading.Thread(target=server.serve_forever, name="handler", daemon=True)
    thread.start()
    return Handler(url=f"http://127.0.0.1:{port}/", kube=kube, server=server, thread=thread)


@dataclass
class Engine:
    handler: Handler
    source: eventsource.EventSource

    @property
    def outbox(self) -> Outbox:
        return self.source.outbox

    def stop(self) -> None:
        self.source.stop()
        self.handler.stop()


TEST_KEY = secrets.token_bytes(32)
"""The key an in-process event source signs snapshots with, and its handler checks them with."""


def start_engine(cluster: LocalCluster, namespace: str, *, resync_seconds: float = 300,
                 handler_config: dict | None = None, snapshots: bool = True) -> Engine:
    """The handler and the event source as the Procfile runs them: snapshots signed with a shared key, the
    handler's answers read (``snapshots=False``: no key, every reconcile reads the API server). A ``CLOCK`` in
    ``handler_config`` (a datetime) times the event source's JobFlowTemplate wake-ups too."""
    key = TEST_KEY if snapshots else None
    handler = start_handler(cluster, {"SNAPSHOT_KEY": key, **(handler_config or {})})
    source = eventsource.start(cluster.connection, sink=handler.url, namespaces=[namespace],
                               mode=cloudevents.Mode.REFERENCE, resync_seconds=resync_seconds, senders=4,
                               snapshot_key=key, replies=True,
                               watch_seconds=2,  # short watches, so the threads notice the stop quickly
                               **({"clock": lambda: clock().timestamp()}
                                  if (clock := (handler_config or {}).get("CLOCK")) else {}))
    return Engine(handler, source)


@contextmanager
def serve(kube: KubeApi) -> Iterator[str]:
    """A handler using ``kube`` (any KubeApi, e.g. one with a racing writer), yielding its URL."""
    port = free_port()
    server = make_server("127.0.0.1", port, create_app({"KUBE": kube}), threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        server.shutdown()
        thread.join(timeout=10)


@dataclass(frozen=True)
class Arrival:
    """One request as the handler got it: its path, its CloudEvent headers, the answer, and when it arrived."""

    path: str
    event: dict[str, str]  # lower-cased ce-* headers (and content-type)
    code: int
    headers: dict[str, str]  # the answer's, lower-cased
    arrived: float  # time.time()

    @property
    def latency(self) -> float:
        """From the event's ``ce-time`` (set by the adapter that made it) to its arrival here, same clock."""
        return self.arrived - datetime.fromisoformat(self.event["ce-time"].replace("Z", "+00:00")).timestamp()


class Arrivals:
    """WSGI middleware around the handler app that notes every request (a list of :class:`Arrival`)."""

    def __init__(self) -> None:
        self.seen: list[Arrival] = []
        self.app = None

    def wrap(self, app):
        self.app = app.wsgi_app
        app.wsgi_app = self
        return app

    def __call__(self, environ, start_response):
        arrived = time.time()
        event = {key[5:].lower().replace("_", "-"): value for key, value in environ.items()
                 if key.startswith("HTTP_CE_")}
        event["content-type"] = environ.get("CONTENT_TYPE", "")

        def noting(status, headers, exc_info=None):
            self.seen.append(Arrival(environ.get("PATH_INFO", ""), event, int(status[:3]),
                                     {k.lower(): v for k, v in headers}, arrived))
            return start_response(status, headers, exc_info)

        return self.app(environ, noting)


def serve_app(kube: KubeApi, arrivals: Arrivals) -> tuple[object, int]:
    """A handler using ``kube`` whose requests ``arrivals`` notes; (its server, its port)."""
    port = free_port()
    server = make_server("127.0.0.1", port, arrivals.wrap(create_app({"KUBE": kube})), threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, port


def post(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def send(url: str, api_type: ApiType, namespace: str, name: str, change=cloudevents.Change.UPDATE):
    envelope = cloudevents.Envelope(api_type, change, {"metadata": {"namespace": namespace, "name": name}})
    headers, body = cloudevents.encode(envelope, mode=cloudevents.Mode.REFERENCE, source="https://10.96.0.1:443",
                                      overrides={})
    return post(url, body, headers)


class RacedKube(KubeApi):
    """Another writer changes the JobFlow right before each of our status writes: a real 409 every time."""

    def replace_jobflow_status(self, flow: dict) -> dict:
        meta = flow["metadata"]
        self.rest.request("PATCH", JOBFLOW.path(meta["namespace"], meta["name"]),
                          body={"metadata": {"annotations": {"raced": str(self.requests)}}},
                          content_type="application/merge-patch+json")
        return super().replace_jobflow_status(flow)


def children(pid: int) -> list[int]:
    """The PIDs of process ``pid``'s children (none once it is gone: a killed worker may vanish while we look)."""
    try:
        return [int(c) for task in Path(f"/proc/{pid}/task").iterdir()
                for c in (task / "children").read_text().split()]
    except OSError:
        return []


class Mangler:
    """Between the event source and the handler: each event is dropped (``drop``, 30 % by default), or delivered 1
    to 3 times, after a random delay of up to 1 s (so events overtake each other). Always answers 202: a dropped
    event is lost, and so is one the handler answered 503 (the sender would have retried it)."""

    def __init__(self, target: str, *, seed: int, drop: float = 0.3) -> None:
        self.target, self.random, self.drop = target, random.Random(seed), drop
        self.dropped = self.delivered = 0
        mangler = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                headers = {k: v for k, v in self.headers.items() if k.lower() != "content-length"}
                copies = 0 if mangler.random.random() < mangler.drop else mangler.random.randint(1, 3)
                mangler.dropped += copies == 0
                for _ in range(copies):
                    threading.Timer(mangler.random.random(), mangler.forward, (headers, body)).start()
                self.send_response(202)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def forward(self, headers: dict[str, str], body: bytes) -> None:
        request = urllib.request.Request(self.target, data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=30):
                self.delivered += 1
        except OSError:
            pass  # a 503 the sender would have retried: lost here, like a dropped event


class Spreader:
    """Hands each event to the next of several handlers in turn, as a Service in front of Knative's pods would."""

    def __init__(self, targets: list[str]) -> None:
        self.targets, self.counts, self._next = targets, [0] * len(targets), 0
        self._lock = threading.Lock()
        spreader = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with spreader._lock:
                    index, spreader._next = spreader._next, (spreader._next + 1) % len(spreader.targets)
                    spreader.counts[index] += 1
                headers = {k: v for k, v in self.headers.items() if k.lower() != "content-length"}
                request = urllib.request.Request(spreader.targets[index], data=body, headers=headers, method="POST")
                try:
                    with urllib.request.urlopen(request, timeout=30) as reply:
                        status = reply.status
                except urllib.error.HTTPError as error:
                    status = error.code
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


class Pinger:
    """The PingSource's part: ``POST /resync`` to a handler every ``seconds`` until stopped (a failed ping is no
    failure: the next one comes)."""

    def __init__(self, url: str, *, seconds: float = 10) -> None:
        self.url, self.seconds = url, seconds
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.seconds):
            try:
                urllib.request.urlopen(urllib.request.Request(self.url + "resync", data=b"", method="POST"),
                                       timeout=30).close()
            except OSError:
                pass

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=35)
