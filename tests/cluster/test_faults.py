"""Faults of our own making, on the real control plane (issue 16): the API server restarted mid-run, the handler
killed mid-reconcile, events duplicated, dropped and shuffled on their way, three handlers at once. Whatever
happens, each asserts the same three things: every JobFlow finishes, exactly one vcjob per flow (a name never gets
a second UID), and no status goes backwards (the number of ended flows a JobFlow's status counts never drops).
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

import eventsource
from demo.procfile import read_procfile
from devcluster.processes import free_port, start
from devcluster.testing import LocalCluster
from engine import answers_health_check, children, serve, start_engine
from eventsource import cloudevent
from handlers.kube import KubeApi
from objects import DIAMOND, VcjobUids, apply, diamond_templates, jobflow
from test_knative_events import OneNamespace

pytestmark = pytest.mark.cluster
REPO = Path(__file__).resolve().parents[2]
FLOWS = [f"diamond-{name}" for name in "abcde"]


class Progress:
    """Polls the JobFlow's status in the background: the ``flowsEnded`` counts seen, in order."""

    def __init__(self, cluster: LocalCluster, namespace: str, name: str = "diamond") -> None:
        self.cluster, self.namespace, self.name = cluster, namespace, name
        self.ended: list[int] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            self._poll()

    def _poll(self) -> None:
        try:
            status = (jobflow(self.cluster, self.namespace, self.name) or {}).get("status") or {}
        except Exception:  # the API server is down: nothing can go backwards meanwhile
            return
        if "flowsEnded" in status and (not self.ended or self.ended[-1] != status["flowsEnded"]):
            self.ended.append(status["flowsEnded"])

    def stop(self) -> list[int]:
        """The counts seen, the last one read now (the JobFlow may have ended since the last poll)."""
        self._stop.set()
        self._thread.join(timeout=5)
        self._poll()
        return self.ended


@contextmanager
def watched(cluster: LocalCluster, namespace: str) -> Iterator[None]:
    """Run the diamond inside; afterwards assert it Succeeded, one vcjob per flow, and no status regression."""
    uids, progress = VcjobUids(cluster, namespace), Progress(cluster, namespace)
    started = time.monotonic()
    yield
    cluster.wait_until("the diamond to Succeed", lambda: ((jobflow(cluster, namespace, "diamond") or {}).get(
        "status") or {}).get("state", {}).get("phase") == "Succeed", timeout=180, interval=0.5)
    print(f"the diamond succeeded {time.monotonic() - started:.1f} s after it was created")
    seen, ended = uids.stop(), progress.stop()
    assert {name: len(found) for name, found in seen.items()} == {name: 1 for name in FLOWS}
    assert ended == sorted(ended) and ended[-1] == 5, ended


def start_diamond(cluster: LocalCluster, namespace: str, *, run_for: str = "2s") -> None:
    apply(cluster, namespace, diamond_templates(run_for=run_for))
    apply(cluster, namespace, DIAMOND)


def test_the_api_server_restarted_mid_run_our_event_source_and_handler_finish_the_flow(
        cluster: LocalCluster, namespace: str) -> None:
    engine = start_engine(cluster, namespace)
    try:
        with watched(cluster, namespace):
            start_diamond(cluster, namespace, run_for="3s")
            cluster.wait_until("b to run", lambda: cluster.vcjob_phase(namespace, "diamond-b") == "Running",
                               timeout=60)
            down = time.monotonic()
            cluster.api_server_outage(10)
            back = time.monotonic()
            print(f"API server down and back in {back - down:.1f} s")
        print(f"converged {time.monotonic() - back:.1f} s after the API server came back")
    finally:
        engine.stop()


def test_the_handler_killed_mid_reconcile_again_and_again_the_flow_finishes(cluster: LocalCluster,
                                                                            namespace: str) -> None:
    """The Procfile's web command; its gunicorn worker is SIGKILLed every 1.5 s (the master starts another), so
    reconciles die between a create and the status write that records it."""
    port = free_port()
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "PORT": str(port), "KUBECONFIG": str(cluster.state.kubeconfig), "LOG_LEVEL": "WARNING"}
    web = start("killed-web", Path(shutil.which("bash") or "/bin/bash"),
                ["-c", read_procfile(REPO / "Procfile")["web"]], log_dir=cluster.state.log_dir, env=env, cwd=REPO)
    source = None
    kills = 0
    try:
        cluster.wait_until("the handler to answer", lambda: answers_health_check(port), timeout=60)
        source = eventsource.start(cluster.api, sink=f"http://127.0.0.1:{port}/", namespaces=[namespace],
                                   mode=cloudevent.Mode.REFERENCE, resync_seconds=5, senders=4, watch_seconds=2)
        with watched(cluster, namespace):
            start_diamond(cluster, namespace, run_for="1s")
            deadline = time.monotonic() + 12
            while time.monotonic() < deadline:
                time.sleep(1.5)
                for worker in children(_gunicorn_master(web.pid)):
                    os.kill(worker, signal.SIGKILL)
                    kills += 1
    finally:
        if source is not None:
            source.stop()
        web.stop()
    print(f"{kills} workers killed")
    assert kills >= 6


class Mangler:
    """Between the event source and the handler: each event is dropped (30 %), or delivered 1 to 3 times, after a
    random delay of up to 1 s (so events overtake each other). Always answers 202: a dropped event is lost."""

    def __init__(self, target: str, *, seed: int) -> None:
        self.target, self.random = target, random.Random(seed)
        self.dropped = self.delivered = 0
        mangler = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                headers = {k: v for k, v in self.headers.items() if k.lower() != "content-length"}
                copies = 0 if mangler.random.random() < 0.3 else mangler.random.randint(1, 3)
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


def test_duplicated_dropped_and_shuffled_events_with_a_resync_still_finish_the_flow_once(
        cluster: LocalCluster, namespace: str) -> None:
    with serve(OneNamespace(cluster.api, namespace)) as url:
        mangler = Mangler(url, seed=16)
        source = eventsource.start(cluster.api, sink=mangler.url, namespaces=[namespace],
                                   mode=cloudevent.Mode.REFERENCE, resync_seconds=3600, senders=4, watch_seconds=2)
        stop = threading.Event()

        def resyncs() -> None:  # the PingSource's part, every 10 s
            while not stop.wait(10):
                try:
                    urllib.request.urlopen(urllib.request.Request(url + "resync", data=b"", method="POST"),
                                           timeout=30).close()
                except OSError:
                    pass  # the next one comes

        pinger = threading.Thread(target=resyncs, daemon=True)
        pinger.start()
        try:
            with watched(cluster, namespace):
                start_diamond(cluster, namespace, run_for="1s")
        finally:
            stop.set()
            source.stop()
            mangler.server.shutdown()
    print(f"{mangler.dropped} events dropped, {mangler.delivered} deliveries")
    assert mangler.dropped > 0 and mangler.delivered > 0


def test_three_handlers_behind_one_event_stream_create_each_vcjob_once(cluster: LocalCluster,
                                                                       namespace: str) -> None:
    with serve(KubeApi(cluster.api)) as one, serve(KubeApi(cluster.api)) as two, \
            serve(KubeApi(cluster.api)) as three:
        spread = Spreader([one, two, three])
        source = eventsource.start(cluster.api, sink=spread.url, namespaces=[namespace],
                                   mode=cloudevent.Mode.REFERENCE, resync_seconds=3600, senders=4, watch_seconds=2)
        try:
            with watched(cluster, namespace):
                start_diamond(cluster, namespace, run_for="1s")
        finally:
            source.stop()
            spread.server.shutdown()
    assert all(spread.counts), spread.counts  # each handler took its share


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


def _gunicorn_master(top: int) -> int:
    """bash -c may exec gunicorn (then ``top`` is the master) or run it as its child."""
    command = Path(f"/proc/{top}/cmdline").read_bytes()
    return top if b"gunicorn" in command else children(top)[0]
