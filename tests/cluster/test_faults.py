"""Faults of our own making, on the real control plane (issue 16): the API server restarted mid-run, the handler
killed mid-reconcile, events duplicated, dropped and shuffled on their way, three handlers at once. Each runs two
diamonds side by side, one that keeps its vcjobs and one with ``jobRetainPolicy: delete`` (issue 23: its vcjobs go
the moment it succeeds, while stale reconciles may still be under way). Whatever happens, each asserts the same
three things: every JobFlow finishes, exactly one vcjob per flow (a name never gets a second UID), and no status
goes backwards (neither its phase nor the number of ended flows it counts).
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

import eventsource
from demo.procfile import read_procfile
from devcluster.processes import free_port, start
from devcluster.testing import LocalCluster
from engine import Mangler, Pinger, Spreader, children, serve, start_engine
from healthz import wait_for_healthz
from apiclient import cloudevents
from handlers.kube import KubeApi
from objects import DIAMOND, History, apply, diamond_templates, flow_phase, vcjobs
from seeds import diamond_yaml
from test_knative_events import OneNamespace

pytestmark = pytest.mark.cluster
REPO = Path(__file__).resolve().parents[2]
FLOWS = [f"{jobflow}-{name}" for jobflow in ("diamond", "gone") for name in "abcde"]


@contextmanager
def watched(cluster: LocalCluster, namespace: str) -> Iterator[None]:
    """Run the two diamonds inside; afterwards assert both Succeeded, one vcjob per flow (a watch sees every vcjob
    added, even those of ``gone`` that live only until it succeeds), and no status going backwards: neither a phase
    nor the number of ended flows."""
    history = History(cluster, namespace)
    started = time.monotonic()
    yield
    cluster.wait_until("both diamonds to Succeed", lambda: all(
        flow_phase(cluster, namespace, name) == "Succeed" for name in ("diamond", "gone")), timeout=180, interval=0.5)
    print(f"the diamonds succeeded {time.monotonic() - started:.1f} s after they were created "
          f"({history.gaps} watch gaps)")
    cluster.wait_until("the vcjobs of gone to be deleted", lambda: not any(
        name.startswith("gone-") for name in vcjobs(cluster, namespace)), timeout=60, interval=0.5)
    history.stop()
    assert {name: len(found) for name, found in history.uids.items()} == {name: 1 for name in FLOWS}
    assert history.regressions() == {}
    assert {name: (counts == sorted(counts), counts[-1]) for name, counts in history.ended.items()} == \
        {"diamond": (True, 5), "gone": (True, 5)}, history.ended


def start_diamond(cluster: LocalCluster, namespace: str, *, run_for: str = "2s") -> None:
    """JobFlow ``diamond`` keeps its vcjobs; ``gone``, the same DAG, deletes them once it succeeded (issue 23)."""
    apply(cluster, namespace, diamond_templates(run_for=run_for))
    apply(cluster, namespace, DIAMOND)
    apply(cluster, namespace, diamond_yaml("gone", retain="delete"))


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
        wait_for_healthz(f"http://127.0.0.1:{port}/", timeout=60, server=web)
        source = eventsource.start(cluster.connection, sink=f"http://127.0.0.1:{port}/", namespaces=[namespace],
                                   mode=cloudevents.Mode.REFERENCE, resync_seconds=5, senders=4, watch_seconds=2)
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


def test_duplicated_dropped_and_shuffled_events_with_a_resync_still_finish_the_flow_once(
        cluster: LocalCluster, namespace: str) -> None:
    with serve(OneNamespace(cluster.connection, namespace)) as url:
        mangler = Mangler(url, seed=16)
        source = eventsource.start(cluster.connection, sink=mangler.url, namespaces=[namespace],
                                   mode=cloudevents.Mode.REFERENCE, resync_seconds=3600, senders=4, watch_seconds=2)
        pinger = Pinger(url, seconds=10)
        try:
            with watched(cluster, namespace):
                start_diamond(cluster, namespace, run_for="1s")
        finally:
            pinger.stop()
            source.stop()
            mangler.server.shutdown()
    print(f"{mangler.dropped} events dropped, {mangler.delivered} deliveries")
    assert mangler.dropped > 0 and mangler.delivered > 0


def test_three_handlers_behind_one_event_stream_create_each_vcjob_once(cluster: LocalCluster,
                                                                       namespace: str) -> None:
    with serve(KubeApi(cluster.connection)) as one, serve(KubeApi(cluster.connection)) as two, \
            serve(KubeApi(cluster.connection)) as three:
        spread = Spreader([one, two, three])
        source = eventsource.start(cluster.connection, sink=spread.url, namespaces=[namespace],
                                   mode=cloudevents.Mode.REFERENCE, resync_seconds=3600, senders=4, watch_seconds=2)
        try:
            with watched(cluster, namespace):
                start_diamond(cluster, namespace, run_for="1s")
        finally:
            source.stop()
            spread.server.shutdown()
    assert all(spread.counts), spread.counts  # each handler took its share


def _gunicorn_master(top: int) -> int:
    """bash -c may exec gunicorn (then ``top`` is the master) or run it as its child."""
    command = Path(f"/proc/{top}/cmdline").read_bytes()
    return top if b"gunicorn" in command else children(top)[0]
