"""The handler's HTTP contract, with events sent by the test: bad input, duplicates, disorder, concurrency.

Events are built exactly as ApiServerSource builds them (the event source's own encoder), so what is tested is
what a Knative Broker would deliver. Every reconcile reads and writes the real API server.
"""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from apiclient import cloudevents
from apiclient.connection import Connection
from devcluster.processes import free_port
from devcluster.testing import LocalCluster
from jobflow_core.vocabulary.api import JOBFLOW, JOBTEMPLATE, VCJOB
from engine import RacedKube, post, send, serve
from handlers.kube import KubeApi
from objects import apply, events_of, jobflow, template, vcjobs, wait_for_phase

pytestmark = pytest.mark.cluster

FLOW = """
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {name: f}
spec: {flows: [{name: a}, {name: b, dependsOn: {targets: [a]}}]}
"""


@pytest.mark.parametrize("body, headers, needle", [
    (b"not json at all", {"Content-Type": "application/cloudevents+json"}, "not a valid CloudEvent"),
    (b"{}", {"Content-Type": "application/json"}, "not a valid CloudEvent"),
    (b'[{"specversion": "1.0"}]', {"Content-Type": "application/cloudevents-batch+json"}, "not a valid CloudEvent"),
    (b'{"kind": "Job", "apiVersion": "batch/v1", "name": "x", "namespace": "y"}',
     {"Content-Type": "application/json", "ce-specversion": "1.0", "ce-id": "1", "ce-source": "s",
      "ce-type": "dev.knative.apiserver.ref.update", "ce-kind": "Job", "ce-apiversion": "batch/v1"},
     "understands JobFlow"),
    (b'{}', {"Content-Type": "application/json", "ce-specversion": "1.0", "ce-id": "1", "ce-source": "s",
             "ce-type": "dev.knative.apiserver.ref.update", "ce-kind": "JobFlow",
             "ce-apiversion": "flow.volcano.sh/v1alpha1"}, "namespace and name"),
])
def test_a_malformed_or_unknown_event_gets_400_with_a_json_error(handler, body, headers, needle) -> None:
    status, reply = post(handler.url, body, headers)

    assert status == 400
    assert needle in json.loads(reply)["error"]


def test_an_event_for_an_object_that_no_longer_exists_is_accepted_with_an_empty_body(
        handler, namespace: str) -> None:
    for api_type in (JOBFLOW, JOBTEMPLATE, VCJOB):
        status, reply = send(handler.url, api_type, namespace, "gone", cloudevents.Change.DELETE)
        assert (status, reply) == (202, b"")


def test_the_api_server_unreachable_gives_503_so_the_bus_retries(namespace: str) -> None:
    with serve(KubeApi(Connection(f"https://127.0.0.1:{free_port()}", verify=False))) as url:
        status, reply = send(url, JOBFLOW, namespace, "f")
    assert status == 503
    assert json.loads(reply)["retry"] is True


def test_a_persistent_conflict_gives_503_so_the_bus_retries(cluster: LocalCluster, namespace: str) -> None:
    apply(cluster, namespace, template("a") + "---\n" + FLOW)
    with serve(RacedKube(cluster.connection)) as url:
        status, reply = send(url, JOBFLOW, namespace, "f")
    assert status == 503
    assert "kept changing" in json.loads(reply)["error"]


def test_the_same_event_delivered_many_times_at_once_creates_each_vcjob_once(
        cluster: LocalCluster, namespace: str, handler) -> None:
    apply(cluster, namespace, template("a", run_for="30s") + "---\n" + FLOW)

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(lambda _: send(handler.url, JOBFLOW, namespace, "f"), range(24)))

    assert {status for status, _ in results} <= {202, 503}
    assert list(vcjobs(cluster, namespace)) == ["f-a"]
    created = [m for _, reason, m in events_of(cluster, namespace, "f") if reason == "Created"]
    assert created == ["create a job named f-a!"]
    assert jobflow(cluster, namespace, "f")["status"]["pendingJobs"] == ["f-a"]


def test_events_out_of_order_and_several_handlers_at_once_still_finish_the_flow(
        cluster: LocalCluster, namespace: str) -> None:
    apply(cluster, namespace, template("a") + "---\n" + template("b") + "---\n" + FLOW)
    stop = threading.Event()

    def storm(url: str) -> None:
        # A vcjob event before its JobFlow's, a template event, then the JobFlow: in a loop, as a chaotic bus would.
        while not stop.is_set():
            send(url, VCJOB, namespace, "f-b", cloudevents.Change.DELETE)
            send(url, JOBTEMPLATE, namespace, "b", cloudevents.Change.ADD)
            send(url, VCJOB, namespace, "f-a")
            send(url, JOBFLOW, namespace, "f")

    with serve(KubeApi(cluster.connection)) as one, serve(KubeApi(cluster.connection)) as two, \
            serve(KubeApi(cluster.connection)) as three:
        workers = [threading.Thread(target=storm, args=(url,)) for url in (one, two, three)]
        for worker in workers:
            worker.start()
        try:
            flow = wait_for_phase(cluster, namespace, "f", "Succeed", timeout=90)
        finally:
            stop.set()
            for worker in workers:
                worker.join()

    assert flow["status"]["completedJobs"] == ["f-a", "f-b"]
    created = sorted(m for _, reason, m in events_of(cluster, namespace, "f") if reason == "Created")
    assert created == ["create a job named f-a!", "create a job named f-b!"]
