"""The engine under test, in-process: the real Flask app on a loopback port, fed by the real event source.

``start_handler`` serves ``handlers.create_app()`` with a threaded WSGI server; ``start_engine`` adds the event
source (``eventsource.start``, scoped to one namespace) sending to it, all against the real API server of the local
cluster. ``serve`` is ``start_handler`` as a context manager, for tests that need several handlers at once; ``send``
POSTs an event exactly as ApiServerSource would (the event source's own encoder).
"""

from __future__ import annotations

import http.client
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from werkzeug.serving import make_server

import eventsource
from devcluster.processes import free_port
from devcluster.testing import LocalCluster
from eventsource import cloudevent
from eventsource.outbox import Outbox
from handlers import create_app
from handlers.kube import KubeApi
from jobflow_core.api import ApiType


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
    kube = KubeApi(cluster.api)
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


def start_engine(cluster: LocalCluster, namespace: str, *, resync_seconds: float = 300,
                 handler_config: dict | None = None) -> Engine:
    handler = start_handler(cluster, handler_config)
    source = eventsource.start(cluster.api, sink=handler.url, namespaces=[namespace], mode=cloudevent.Mode.REFERENCE,
                               resync_seconds=resync_seconds, senders=4,
                               watch_seconds=2)  # short watches, so the threads notice the stop quickly
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


def send(url: str, api_type: ApiType, namespace: str, name: str, change=cloudevent.Change.UPDATE):
    envelope = cloudevent.Envelope(api_type, change, {"metadata": {"namespace": namespace, "name": name}})
    headers, body = cloudevent.encode(envelope, mode=cloudevent.Mode.REFERENCE, source="https://10.96.0.1:443",
                                      overrides={})
    return post(url, body, headers)


class RacedKube(KubeApi):
    """Another writer changes the JobFlow right before each of our status writes: a real 409 every time."""

    def replace_jobflow_status(self, flow: dict) -> dict:
        meta = flow["metadata"]
        self.custom.patch_namespaced_custom_object(
            "flow.volcano.sh", "v1alpha1", meta["namespace"], "jobflows", meta["name"],
            {"metadata": {"annotations": {"raced": str(self.requests)}}})
        return super().replace_jobflow_status(flow)


def children(pid: int) -> list[int]:
    """The PIDs of process ``pid``'s children (none once it is gone: a killed worker may vanish while we look)."""
    try:
        return [int(c) for task in Path(f"/proc/{pid}/task").iterdir()
                for c in (task / "children").read_text().split()]
    except OSError:
        return []


def answers_health_check(port: int) -> bool:
    """Whether a handler on ``port`` answers ``GET /healthz`` with 200."""
    try:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
        connection.request("GET", "/healthz")
        return connection.getresponse().status == 200
    except OSError:
        return False
