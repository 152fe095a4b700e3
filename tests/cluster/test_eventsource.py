"""The event source against the real API server: ``python -m eventsource`` as a process, POSTing to a real sink.

Each test runs the source scoped to its own namespace (``NAMESPACES``), acts like a user on JobFlows, JobTemplates
and vcjobs, and reads what reached the sink. Volcano runs the vcjobs; a reconciler someone runs on the same cluster
may write the status of any JobFlow, so no test assumes it made an object's only change. The last test drives a
``Watcher`` in-process to reach 410 Gone.
"""

from __future__ import annotations

import os
import signal
import subprocess
import urllib.request
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from kubernetes import watch
from kubernetes.client.rest import ApiException

from apiclient.cloudevents import Change, Envelope
from devcluster.testing import LocalCluster
from eventsource.watcher import Watcher
from jobflow_core.vocabulary.api import CREATED_BY_JOBFLOW, JOBFLOW, JOBTEMPLATE, VCJOB, ApiType
from sinks import Sink

pytestmark = pytest.mark.cluster

JOB_SPEC = {"schedulerName": "volcano", "queue": "default", "minAvailable": 1,
            "tasks": [{"name": "t", "replicas": 1, "template": {"spec": {
                "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}]}
BY_JOBFLOW = {CREATED_BY_JOBFLOW: "some-flow"}


@dataclass
class Event:
    headers: dict[str, str]
    data: dict

    @property
    def change(self) -> str:
        return self.headers["ce-type"].rsplit(".", 1)[1]

    @property
    def labels(self) -> dict[str, str]:
        return self.data.get("metadata", {}).get("labels") or {}


class EventSink(Sink):
    """The capture sink, answering 503 while ``down`` is set; what it accepted reads as events."""

    def __init__(self) -> None:
        self.down = threading.Event()
        super().__init__(answer=lambda headers: 503 if self.down.is_set() else 202)

    @property
    def events(self) -> list[Event]:
        return [Event(request.headers, request.json()) for request in self.accepted()]

    def of(self, kind: str, name: str) -> list[Event]:
        return [e for e in self.events if (e.headers["ce-kind"], e.headers["ce-name"]) == (kind, name)]

    def last(self, kind: str, name: str) -> Event | None:
        events = self.of(kind, name)
        return events[-1] if events else None


@pytest.fixture
def sink() -> Iterator[EventSink]:
    with EventSink() as running:
        yield running


@pytest.fixture
def start_source(cluster: LocalCluster, namespace: str, sink: EventSink,
                 tmp_path: Path) -> Iterator[Callable[..., None]]:
    """Starts ``python -m eventsource`` for the test's namespace; SIGTERMs it afterwards and shows its log."""
    processes: list[subprocess.Popen] = []
    log = tmp_path / "eventsource.log"

    def start(*, mode: str = "Reference", resync_seconds: float = 600, overrides: str = "",
              **extra: str) -> None:
        env = {**os.environ, "K_SINK": sink.url, "KUBECONFIG": str(cluster.state.kubeconfig),
               "NAMESPACES": namespace, "EVENT_MODE": mode, "RESYNC_SECONDS": str(resync_seconds),
               "K_CE_OVERRIDES": overrides, **extra}
        with log.open("w") as output:
            processes.append(subprocess.Popen([sys.executable, "-m", "eventsource"], env=env, stdout=output,
                                              stderr=subprocess.STDOUT))

    yield start
    for process in processes:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
        print(log.read_text()[-5000:])


def create(cluster: LocalCluster, namespace: str, api_type: ApiType, name: str, *,
           labels: dict[str, str] | None = None) -> dict:
    body = {"apiVersion": api_type.api_version, "kind": api_type.kind, "metadata": {"name": name, "labels": labels},
            "spec": {"flows": [{"name": "a"}]} if api_type is JOBFLOW else JOB_SPEC}
    return cluster.custom.create_namespaced_custom_object(api_type.group, api_type.version, namespace,
                                                          api_type.plural, body)


def label(cluster: LocalCluster, namespace: str, api_type: ApiType, name: str, **labels: str) -> dict:
    return cluster.custom.patch_namespaced_custom_object(api_type.group, api_type.version, namespace,
                                                         api_type.plural, name, {"metadata": {"labels": labels}})


def delete(cluster: LocalCluster, namespace: str, api_type: ApiType, name: str) -> None:
    cluster.custom.delete_namespaced_custom_object(api_type.group, api_type.version, namespace, api_type.plural, name)


def test_objects_that_exist_before_the_start_are_announced_as_add(cluster, namespace, sink, start_source):
    create(cluster, namespace, JOBFLOW, "flow")
    create(cluster, namespace, JOBTEMPLATE, "template")
    create(cluster, namespace, VCJOB, "job", labels=BY_JOBFLOW)
    # Once the vcjob is done nobody changes it, so its add cannot be coalesced into a later update.
    cluster.wait_until("vcjob job to complete", lambda: cluster.vcjob_phase(namespace, "job") == "Completed",
                       timeout=120)

    start_source()
    announced = {("JobFlow", "flow"), ("JobTemplate", "template"), ("Job", "job")}
    cluster.wait_until("the three adds", lambda: all(
        sink.of(kind, name) and sink.of(kind, name)[0].change == "add" for kind, name in announced), timeout=60)


def test_a_jobflow_create_update_delete_are_sent_exactly_as_apiserversource_sends_them(
        cluster, namespace, sink, start_source):
    create(cluster, namespace, JOBFLOW, "ready")
    start_source(overrides='{"extensions": {"team": "ml"}}')
    cluster.wait_until("the source to list jobflows", lambda: sink.of("JobFlow", "ready"), timeout=60)

    def changes() -> list[str]:
        return [e.change for e in sink.of("JobFlow", "flow")]

    create(cluster, namespace, JOBFLOW, "flow")
    cluster.wait_until("the add", lambda: changes()[:1] == ["add"])
    label(cluster, namespace, JOBFLOW, "flow", step="1")
    cluster.wait_until("an update", lambda: "update" in changes())
    delete(cluster, namespace, JOBFLOW, "flow")
    cluster.wait_until("the delete", lambda: changes()[-1:] == ["delete"])

    assert changes()[0] == "add" and set(changes()[1:-1]) == {"update"}
    for event in sink.of("JobFlow", "flow"):
        assert event.headers["ce-type"] == f"dev.knative.apiserver.ref.{event.change}"
        assert event.headers["ce-source"] == cluster.state.server
        assert event.headers["ce-subject"] == f"/apis/flow.volcano.sh/v1alpha1/namespaces/{namespace}/jobflows/flow"
        assert (event.headers["ce-kind"], event.headers["ce-apiversion"]) == ("JobFlow", "flow.volcano.sh/v1alpha1")
        assert (event.headers["ce-name"], event.headers["ce-namespace"]) == ("flow", namespace)
        assert (event.headers["ce-specversion"], event.headers["content-type"]) == ("1.0", "application/json")
        assert event.headers["ce-team"] == "ml"
        assert list(event.data.items()) == [("kind", "JobFlow"), ("namespace", namespace), ("name", "flow"),
                                            ("apiVersion", "flow.volcano.sh/v1alpha1")]
    assert len({e.headers["ce-id"] for e in sink.events}) == len(sink.events)


def test_a_jobtemplate_is_sent_with_its_own_kind(cluster, namespace, sink, start_source):
    start_source(mode="Resource")
    create(cluster, namespace, JOBTEMPLATE, "template")

    event = cluster.wait_until("the jobtemplate", lambda: sink.last("JobTemplate", "template"), timeout=60)
    assert event.headers["ce-type"] == "dev.knative.apiserver.resource.add"
    assert event.headers["ce-apiversion"] == "flow.volcano.sh/v1alpha1"
    assert event.headers["ce-subject"].endswith(f"/namespaces/{namespace}/jobtemplates/template")
    assert (event.data["kind"], event.data["spec"]["tasks"][0]["name"]) == ("JobTemplate", "t")


def test_only_vcjobs_created_by_a_jobflow_are_sent(cluster, namespace, sink, start_source):
    start_source(mode="Resource")
    create(cluster, namespace, VCJOB, "stranger")
    create(cluster, namespace, VCJOB, "ours", labels=BY_JOBFLOW)
    cluster.wait_until("Volcano to change the stranger", lambda: cluster.vcjob_phase(namespace, "stranger"),
                       timeout=90)

    # The one vcjobs watch delivers in order: had the stranger's changes been sent, they would come before this.
    label(cluster, namespace, VCJOB, "ours", marker="after-the-stranger-changed")
    cluster.wait_until("our marked vcjob", lambda: any(
        e.labels.get("marker") for e in sink.of("Job", "ours")), timeout=60)
    assert sink.of("Job", "stranger") == []
    assert {e.headers["ce-apiversion"] for e in sink.of("Job", "ours")} == {"batch.volcano.sh/v1alpha1"}


def test_a_resync_re_announces_every_object_unchanged(cluster, namespace, sink, start_source):
    create(cluster, namespace, JOBFLOW, "flow")
    create(cluster, namespace, JOBTEMPLATE, "template")
    start_source(mode="Resource", resync_seconds=2)

    def re_announced(kind: str, name: str) -> bool:
        """An update that repeats an earlier event's resourceVersion: a real change always has a new one."""
        versions = [(e.change, e.data["metadata"]["resourceVersion"]) for e in sink.of(kind, name)]
        return any(change == "update" and version in {v for _, v in versions[:i]}
                   for i, (change, version) in enumerate(versions))

    cluster.wait_until("a resync of both objects", lambda: re_announced("JobFlow", "flow") and re_announced(
        "JobTemplate", "template"), timeout=90)


def test_a_sink_outage_loses_no_change_and_the_watches_survive_it(cluster, namespace, sink, start_source):
    for name in ("a", "b", "c"):
        create(cluster, namespace, JOBFLOW, name)
    create(cluster, namespace, JOBTEMPLATE, "t")
    start_source(mode="Resource")
    cluster.wait_until("the adds", lambda: all(sink.of("JobFlow", n) for n in "abc") and sink.of("JobTemplate", "t"),
                       timeout=60)

    sink.down.set()
    outage = time.monotonic()
    for step in ("1", "2", "3"):
        label(cluster, namespace, JOBFLOW, "a", step=step)
    delete(cluster, namespace, JOBFLOW, "b")
    create(cluster, namespace, JOBFLOW, "d")
    label(cluster, namespace, JOBTEMPLATE, "t", step="1")
    cluster.wait_until("an outage of several seconds and retries", lambda: (
        len(sink.refused()) >= 5 and time.monotonic() - outage > 6), timeout=60)
    sink.down.clear()

    def delivered_latest(api_type: ApiType, name: str) -> bool:
        """The last event the sink accepted for the object shows its current state (or its deletion)."""
        event = sink.last(api_type.kind, name)
        try:
            now = cluster.custom.get_namespaced_custom_object(api_type.group, api_type.version, namespace,
                                                             api_type.plural, name)
        except ApiException as error:
            if error.status != 404:
                raise
            return event is not None and event.change == "delete"
        return event is not None and event.data["metadata"]["resourceVersion"] == now["metadata"]["resourceVersion"]

    cluster.wait_until("the latest change of every object", lambda: all(
        delivered_latest(r, n) for r, n in [(JOBFLOW, "a"), (JOBFLOW, "b"), (JOBFLOW, "d"), (JOBTEMPLATE, "t")]),
        timeout=90)
    assert sink.last("JobFlow", "a").labels["step"] == "3"
    assert sink.last("JobTemplate", "t").labels["step"] == "1"

    # Nothing re-lists for 600 s: these arrive only because the watches went on through the outage.
    label(cluster, namespace, JOBFLOW, "c", step="after")
    create(cluster, namespace, JOBFLOW, "e")
    cluster.wait_until("changes after the outage", lambda: (
        delivered_latest(JOBFLOW, "c") and delivered_latest(JOBFLOW, "e")), timeout=60)
    assert sink.last("JobFlow", "c").labels["step"] == "after"


class Recorder:
    """Stands in for the outbox: the watcher only ever calls ``put``."""

    def __init__(self) -> None:
        self.envelopes: list[Envelope] = []

    def put(self, envelope: Envelope) -> None:
        self.envelopes.append(envelope)

    def changes(self, first: int | None = None) -> set[tuple[Change, str]]:
        return {(e.change, e.obj["metadata"]["name"]) for e in self.envelopes[:first]}


def test_after_410_gone_the_watcher_relists_and_announces_the_gap_including_a_delete(cluster, namespace):
    for name in ("a", "b", "c"):
        create(cluster, namespace, JOBFLOW, name)
    recorder, stop = Recorder(), threading.Event()
    watcher = Watcher(cluster.connection, JOBFLOW, namespace, recorder, resync_seconds=600, stop=stop, watch_seconds=2)
    watcher.relist()
    assert recorder.changes() == {(Change.ADD, "a"), (Change.ADD, "b"), (Change.ADD, "c")}
    recorder.envelopes.clear()

    # The gap: changes the watcher does not see.
    label(cluster, namespace, JOBFLOW, "a", step="1")
    delete(cluster, namespace, JOBFLOW, "b")
    create(cluster, namespace, JOBFLOW, "d")
    # kube-apiserver serves watches from its watch cache, which answers 410 for a version older than its window
    # (compacting etcd does not make it forget a version it still holds); version 1 is older than any window.
    expired = "1"
    with pytest.raises(ApiException) as gone:
        for _ in watch.Watch().stream(cluster.custom.list_namespaced_custom_object, JOBFLOW.group, JOBFLOW.version,
                                      namespace, JOBFLOW.plural, resource_version=expired, timeout_seconds=5):
            pass
    assert gone.value.status == 410

    thread = threading.Thread(target=watcher.run, kwargs={"resource_version": expired}, daemon=True)
    thread.start()
    try:
        cluster.wait_until("the re-list after 410", lambda: watcher.relists == 2, timeout=60)
        assert recorder.changes(first=4) == {  # the re-list's four; the watch goes on after it
            (Change.UPDATE, "a"), (Change.DELETE, "b"), (Change.UPDATE, "c"), (Change.ADD, "d")}
        create(cluster, namespace, JOBFLOW, "e")  # and it watches again from the new list
        cluster.wait_until("the add of e", lambda: (Change.ADD, "e") in recorder.changes(), timeout=60)
        assert watcher.relists == 2
    finally:
        stop.set()
        thread.join(timeout=15)


def test_its_metrics_count_retries_during_an_outage_then_deliveries(cluster, namespace, sink, start_source):
    from prometheus_client.parser import text_string_to_metric_families

    from devcluster.processes import free_port

    port = free_port()

    def sent() -> dict[tuple[str, str], float]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as reply:
                text = reply.read().decode()
        except OSError:
            return {}
        return {(sample.labels["kind"], sample.labels["outcome"]): sample.value
                for family in text_string_to_metric_families(text) for sample in family.samples
                if sample.name == "jobflow_eventsource_events_sent_total"} | \
            {("", "pending"): sample.value for family in text_string_to_metric_families(text)
             for sample in family.samples if sample.name == "jobflow_eventsource_pending_events"}

    sink.down.set()
    start_source(METRICS_PORT=str(port), METRICS_ADDRESS="127.0.0.1")
    create(cluster, namespace, JOBFLOW, "flow")
    cluster.wait_until("a retry counted", lambda: sent().get(("JobFlow", "retried"), 0) >= 1, timeout=30)
    sink.down.clear()
    cluster.wait_until("the delivery counted", lambda: sent().get(("JobFlow", "delivered"), 0) >= 1, timeout=60)
    assert sent()[("", "pending")] == 0
