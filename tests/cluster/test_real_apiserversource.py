"""Knative's real ApiServerSource receive adapter (built from knative.dev/eventing, devcluster/knative_eventing.py)
drives JobFlows straight into the handler, configured from ``knative/apiserversource.yaml`` as Knative's controller
would; no event source of ours runs.

Two behaviours of the real adapter are shown as they are: it announces nothing for objects that exist when it
starts (only the resync, a PingSource's event, brings those forward), and it sends one event per watch event."""

from __future__ import annotations

import statistics
import threading
import time
import urllib.request
import uuid
from datetime import datetime
from pathlib import Path

import pytest
from prometheus_client import REGISTRY

import eventsource
from devcluster import knative_eventing
from devcluster.processes import Component
from devcluster.testing import LocalCluster
from engine import Arrivals, Handler, post, serve, serve_app
from apiclient import cloudevents
from apiclient.rest import Conflict
from handlers.jobflows import MAX_ATTEMPTS
from handlers.kube import KubeApi
from test_knative_events import OneNamespace, ping_event
from objects import DIAMOND, VcjobUids, apply, diamond_templates, jobflow, template, vcjobs, wait_for_phase
from sinks import Sink

pytestmark = pytest.mark.cluster
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "diamond"
TYPES = [f"dev.knative.apiserver.ref.{change}" for change in ("add", "update", "delete")]


def answered(code: str) -> float:
    return sum(REGISTRY.get_sample_value("jobflow_handler_events_total", {"type": type_, "code": code}) or 0
               for type_ in TYPES)


def listening_ports(pid: int) -> set[int]:
    """The TCP ports process ``pid`` listens on (its socket inodes, looked up in /proc/net/tcp and tcp6)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        target = fd.readlink().name if fd.is_symlink() else ""
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:  # 0A: LISTEN
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def start_adapter(cluster: LocalCluster, namespace: str, handler: Handler | str) -> Component:
    """The adapter, once its watches are up: a JobTemplate changed until an event about it arrives."""
    sink = handler if isinstance(handler, str) else handler.url
    adapter = knative_eventing.start_apiserver_adapter(cluster.state, sink=sink, namespaces=[namespace])
    apply(cluster, namespace, template("ping"))
    before = answered("202")

    def heard() -> bool:
        assert adapter.alive(), adapter.log_tail()
        cluster.custom.patch_namespaced_custom_object("flow.volcano.sh", "v1alpha1", namespace, "jobtemplates",
                                                      "ping", {"metadata": {"labels": {"t": str(time.time_ns())}}})
        return answered("202") > before

    cluster.wait_until("the adapter's first event", heard, timeout=60, interval=0.5)
    assert 8080 not in listening_ports(adapter.pid)  # our main leaves the hard-coded probe server out
    return adapter


def test_the_seed_diamond_runs_to_succeed_on_the_real_adapters_events_alone(cluster: LocalCluster,
                                                                            namespace: str) -> None:
    arrivals = Arrivals()
    server, port = serve_app(KubeApi(cluster.connection), arrivals)
    adapter = start_adapter(cluster, namespace, f"http://127.0.0.1:{port}/")
    try:
        mark = len(arrivals.seen)
        apply(cluster, namespace, (EXAMPLES / "jobtemplates.yaml").read_text())
        apply(cluster, namespace, (EXAMPLES / "jobflow.yaml").read_text())
        flow = wait_for_phase(cluster, namespace, "test", "Succeed", timeout=120)
    finally:
        adapter.stop()
        server.shutdown()
    assert sorted(flow["status"]["completedJobs"]) == [f"test-{name}" for name in "abcde"]
    cluster.wait_until("the vcjobs deleted (jobRetainPolicy: delete)", lambda: vcjobs(cluster, namespace) == {},
                       timeout=30)
    about_it = [a for a in arrivals.seen[mark:] if a.event.get("ce-namespace") == namespace]
    assert len(about_it) >= 20  # JobTemplates, the JobFlow's updates, every vcjob change
    assert {a.code for a in about_it} == {202} and not any("ce-knativearrivaltime" in a.event for a in about_it)
    latencies = sorted(a.latency for a in about_it)
    print(f"adapter -> handler latency over {len(latencies)} events: median "
          f"{statistics.median(latencies) * 1000:.1f} ms, p95 {latencies[int(len(latencies) * 0.95)] * 1000:.1f} ms")


def test_objects_that_exist_before_it_starts_wait_for_the_resync_then_run_on_its_events(
        cluster: LocalCluster, namespace: str, handler: Handler) -> None:
    apply(cluster, namespace, template("a") + "---\n" + template("b"))
    apply(cluster, namespace, "apiVersion: flow.volcano.sh/v1alpha1\nkind: JobFlow\nmetadata: {name: early}\n"
                              "spec: {flows: [{name: a}, {name: b, dependsOn: {targets: [a]}}]}\n")
    adapter = start_adapter(cluster, namespace, handler)
    try:
        time.sleep(3)
        assert "status" not in jobflow(cluster, namespace, "early"), "the adapter announced an existing object"
        ping = urllib.request.Request(handler.url + "resync", data=b"{}", method="POST", headers={
            "ce-specversion": "1.0", "ce-id": "1", "ce-source": "/apis/v1/namespaces/volcano-jobflow/pingsources/"
            "jobflow-resync", "ce-type": "dev.knative.sources.ping", "content-type": "application/json"})
        with urllib.request.urlopen(ping, timeout=30) as reply:
            assert reply.status == 202
        wait_for_phase(cluster, namespace, "early", "Succeed", timeout=90)
    finally:
        adapter.stop()


class LosesRaces(KubeApi):
    """The handler's first ``losses`` JobFlow status writes lose a write race (the API server's 409)."""

    def __init__(self, api, *, losses: int) -> None:
        super().__init__(api)
        self.losses = losses

    def replace_jobflow_status(self, flow: dict) -> dict:
        if self.losses > 0:
            self.losses -= 1
            raise Conflict("another writer was faster (simulated)")
        return super().replace_jobflow_status(flow)


def test_a_lost_write_race_is_answered_503_which_the_real_adapter_retries(cluster: LocalCluster,
                                                                           namespace: str) -> None:
    """The JobFlow's creation is the only event about it: had the answer been a 409, the adapter would have dropped
    it and the JobFlow would have no status to this day."""
    kube = LosesRaces(cluster.connection, losses=MAX_ATTEMPTS)  # one whole reconcile loses
    with serve(kube) as url:
        adapter = start_adapter(cluster, namespace, url)
        try:
            retried = answered("503")
            apply(cluster, namespace, "apiVersion: flow.volcano.sh/v1alpha1\nkind: JobFlow\nmetadata: {name: lone}\n"
                                      "spec: {flows: [{name: ghost}]}\n")
            cluster.wait_until("the status, written on the adapter's retry", lambda: (
                (jobflow(cluster, namespace, "lone").get("status") or {}).get("state", {}).get("reason")
                == "TemplateNotFound"), timeout=30)
        finally:
            adapter.stop()
    assert kube.losses == 0 and answered("503") == retried + 1


def run_through_an_api_server_outage(cluster: LocalCluster, namespace: str, *, seconds: float = 20) -> dict:
    """The diamond (vcjobs kept) with kube-apiserver stopped for ``seconds`` while b runs; the finished JobFlow.
    Asserts that it finished and that every flow got exactly one vcjob."""
    uids = VcjobUids(cluster, namespace)
    apply(cluster, namespace, diamond_templates(run_for="3s"))
    apply(cluster, namespace, DIAMOND)
    cluster.wait_until("b to run", lambda: cluster.vcjob_phase(namespace, "diamond-b") == "Running", timeout=60)
    started = time.monotonic()
    cluster.api_server_outage(seconds)
    back = time.monotonic()
    progress = []

    def finished() -> bool:
        flow = jobflow(cluster, namespace, "diamond") or {}
        state = ((flow.get("status") or {}).get("state") or {}).get("phase"), flow.get("status", {}).get("progress")
        if not progress or progress[-1][1:] != state:
            progress.append((round(time.monotonic() - back, 1), *state))
        return state[0] == "Succeed"

    cluster.wait_until("the diamond to Succeed after the outage", finished, timeout=150)
    flow = jobflow(cluster, namespace, "diamond")
    print(f"outage {back - started:.1f} s; then (seconds, phase, progress): {progress}")
    seen = uids.stop()
    assert sorted(flow["status"]["completedJobs"]) == [f"diamond-{name}" for name in "abcde"]
    assert {name: len(found) for name, found in seen.items()} == {f"diamond-{name}": 1 for name in "abcde"}
    return flow


class Resyncs:
    """What ``knative/pingsource.yaml``'s PingSource does for a handler the adapter sinks into directly: a
    ``dev.knative.sources.ping`` event to ``POST /resync``, here every ``period`` seconds instead of every minute (a
    stand-in; the real PingSource adapter runs in ``test_real_knative_broker.py``)."""

    def __init__(self, url: str, *, period: float) -> None:
        self.url, self.period, self.sent = url.rstrip("/") + "/resync", period, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="resyncs", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.period):
            headers, body = ping_event()
            post(self.url, body, headers)
            self.sent += 1

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)


def test_a_20_s_api_server_outage_loses_nothing_on_the_direct_path(cluster: LocalCluster, namespace: str) -> None:
    """The real adapter's relist after a broken watch announces nothing (like its start): a change made while its
    watch was down, such as b completing, is never sent. The resync is the net on this path, as the docs say."""
    with serve(OneNamespace(cluster.connection, namespace)) as url:
        adapter = start_adapter(cluster, namespace, url)
        resyncs = Resyncs(url, period=15)
        try:
            refused = answered("503")
            run_through_an_api_server_outage(cluster, namespace)
            assert adapter.alive(), adapter.log_tail()
        finally:
            resyncs.stop()
            adapter.stop()
    print(f"direct path: {answered('503') - refused:.0f} events answered 503 during the outage; "
          f"{resyncs.sent} resyncs sent")


def about(sink: Sink, name: str) -> list[tuple[dict[str, str], object]]:
    """(lower-cased headers, JSON body) of every request the sink received about object ``name``."""
    return [(request.headers, request.json()) for request in sink.received if request.headers.get("ce-name") == name]


ATTRIBUTES = ("ce-specversion", "ce-type", "ce-source", "ce-subject", "ce-kind", "ce-apiversion", "ce-name",
              "ce-namespace", "content-type")


def test_our_event_source_and_the_real_adapter_send_the_same_events_for_the_same_changes(
        cluster: LocalCluster, namespace: str) -> None:
    ours, theirs = Sink(), Sink()
    source = eventsource.start(cluster.connection, sink=ours.url, namespaces=[namespace], mode=cloudevents.Mode.REFERENCE,
                               resync_seconds=3600, senders=1, watch_seconds=2)
    adapter = knative_eventing.start_apiserver_adapter(cluster.state, sink=theirs.url, namespaces=[namespace])
    try:
        def both_heard(name: str, count: int) -> bool:
            return len(about(ours, name)) >= count and len(about(theirs, name)) >= count

        apply(cluster, namespace, template("warm"))

        def both_watch() -> bool:  # changed until both tell: the adapter announces nothing it found at start
            cluster.custom.patch_namespaced_custom_object("flow.volcano.sh", "v1alpha1", namespace, "jobtemplates",
                                                          "warm", {"metadata": {"labels": {"t": str(time.time_ns())}}})
            return both_heard("warm", 1)

        cluster.wait_until("both to watch", both_watch, timeout=60, interval=0.5)
        apply(cluster, namespace, template("t"))
        cluster.wait_until("the add", lambda: both_heard("t", 1), timeout=30)
        cluster.custom.patch_namespaced_custom_object("flow.volcano.sh", "v1alpha1", namespace, "jobtemplates", "t",
                                                      {"metadata": {"labels": {"changed": "yes"}}})
        cluster.wait_until("the update", lambda: both_heard("t", 2), timeout=30)
        cluster.custom.delete_namespaced_custom_object("flow.volcano.sh", "v1alpha1", namespace, "jobtemplates", "t")
        cluster.wait_until("the delete", lambda: both_heard("t", 3), timeout=30)
    finally:
        adapter.stop()
        source.stop()
        ours.close()
        theirs.close()
    pairs = zip(about(ours, "t"), about(theirs, "t"), strict=True)
    for (our_headers, our_body), (their_headers, their_body) in pairs:
        assert {a: our_headers.get(a) for a in ATTRIBUTES} == {a: their_headers.get(a) for a in ATTRIBUTES}
        assert our_body == their_body  # the same JSON (theirs is compact: the bytes differ, the reading does not)
        for headers in (our_headers, their_headers):
            uuid.UUID(headers["ce-id"])
            datetime.fromisoformat(headers["ce-time"][:26].rstrip("Z") + "+00:00")
    assert [h["ce-type"] for h, _ in about(theirs, "t")] == [f"dev.knative.apiserver.ref.{c}" for c in
                                                            ("add", "update", "delete")]
    # The deliberate differences, as they are today: Knative adds Kn-Namespace (its source's namespace), we do not.
    assert all("kn-namespace" in h for h, _ in about(theirs, "t")) and not any("kn-namespace" in h for h, _ in
                                                                              about(ours, "t"))
