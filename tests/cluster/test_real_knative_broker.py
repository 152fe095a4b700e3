"""The Broker path as a user gets it: ``knative/`` (Broker, Triggers, ApiServerSource, PingSource, dead-letter sink)
applied unchanged, wired by Knative's real controllers and carried by its real data plane, all built from
knative.dev/eventing and run as local processes (``devcluster/knative_eventing.py``).

What cannot run here has its smallest stand-in (``devcluster/knative_standins.py``): a local kubelet plays the
Deployments (the handler is this test's process, at the address Knative Serving would give ksvc jobflow-handler),
an HTTP proxy plays cluster DNS, and Knative's defaulting webhook is replaced by writing its defaults on apply.
No event source of ours runs: every event the handler gets comes from the real ApiServerSource adapter or the real
PingSource adapter, through the real broker ingress, in-memory channel and broker filter."""

from __future__ import annotations

import json
import statistics
import time
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pytest
from kubernetes import client

from devcluster import knative_eventing
from devcluster.knative_eventing import Eventing
from devcluster.knative_standins import Receiver
from devcluster.testing import LocalCluster
from engine import Arrivals, serve_app
from handlers.jobflows import MAX_ATTEMPTS
from handlers.kube import KubeApi
from objects import apply, events_of, jobflow, template, vcjobs, wait_for_phase
from test_real_apiserversource import LosesRaces, run_through_an_api_server_outage

pytestmark = pytest.mark.cluster
REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "diamond"
SYSTEM = knative_eventing.HANDLER_NAMESPACE
INGRESS = f"http://broker-ingress.knative-eventing.svc.cluster.local/{SYSTEM}/jobflow"
PING_SOURCE = f"/apis/v1/namespaces/{SYSTEM}/pingsources/jobflow-resync"

@dataclass
class Knative:
    eventing: Eventing
    arrivals: Arrivals
    handler_port: int
    dead_letters: Receiver
    early: str  # a namespace whose JobFlow existed before any Knative program started

    def point_handler_at(self, port: int) -> None:
        """ksvc jobflow-handler is now the process on ``port`` (once the DNS stand-in's cache has expired)."""
        self.eventing.serve(SYSTEM, "jobflow-handler", port)
        time.sleep(self.eventing.dns.cache_seconds + 0.5)


@pytest.fixture(scope="module")
def knative(cluster: LocalCluster) -> Iterator[Knative]:
    early = cluster.create_namespace()
    apply(cluster, early, template("a") + "---\n" + template("b"))
    apply(cluster, early, "apiVersion: flow.volcano.sh/v1alpha1\nkind: JobFlow\nmetadata: {name: early}\n"
                          "spec: {flows: [{name: a}, {name: b, dependsOn: {targets: [a]}}]}\n")
    started = time.monotonic()
    eventing = knative_eventing.start_eventing(cluster.state, cluster.api)
    arrivals, dead_letters = Arrivals(), Receiver(name="jobflow-dead-letters")
    server, port = serve_app(KubeApi(cluster.connection), arrivals)
    try:
        knative_eventing.wire(eventing, handler_port=port, dead_letters_port=dead_letters.port)
        print(f"knative eventing: installed, started and wired in {time.monotonic() - started:.1f} s")
        yield Knative(eventing, arrivals, port, dead_letters, early)
    finally:
        eventing.stop()
        server.shutdown()
        dead_letters.stop()
        cluster.delete_namespace(early)


def through_the_broker(knative: Knative, cluster: LocalCluster, namespace: str) -> None:
    """Wait until the adapter's events reach the handler through the Broker: a JobTemplate changed until one does."""
    apply(cluster, namespace, template("ping"))

    def heard() -> bool:
        cluster.custom.patch_namespaced_custom_object("flow.volcano.sh", "v1alpha1", namespace, "jobtemplates",
                                                      "ping", {"metadata": {"labels": {"t": str(time.time_ns())}}})
        return any(a.event.get("ce-name") == "ping" and a.event.get("ce-namespace") == namespace
                   for a in knative.arrivals.seen)

    cluster.wait_until("an event of the real adapter through the Broker", heard, timeout=90, interval=1)


def test_the_seed_diamond_runs_to_succeed_through_the_real_broker_wired_by_knatives_controllers(
        cluster: LocalCluster, namespace: str, knative: Knative) -> None:
    through_the_broker(knative, cluster, namespace)
    mark = len(knative.arrivals.seen)
    apply(cluster, namespace, (EXAMPLES / "jobtemplates.yaml").read_text())
    apply(cluster, namespace, (EXAMPLES / "jobflow.yaml").read_text())
    flow = wait_for_phase(cluster, namespace, "test", "Succeed", timeout=150)
    assert sorted(flow["status"]["completedJobs"]) == [f"test-{name}" for name in "abcde"]
    cluster.wait_until("the vcjobs deleted (jobRetainPolicy: delete)", lambda: vcjobs(cluster, namespace) == {},
                       timeout=30)

    about_it = [a for a in knative.arrivals.seen[mark:] if a.event.get("ce-namespace") == namespace]
    assert len(about_it) >= 20 and {a.code for a in about_it} == {202}
    # Each came through the Broker (its ingress stamps the arrival time) from the real adapter.
    assert all("ce-knativearrivaltime" in a.event and a.event["ce-type"].startswith("dev.knative.apiserver.ref.")
               for a in about_it)
    latencies = sorted(a.latency for a in about_it)
    print(f"adapter -> broker -> handler latency over {len(latencies)} events: median "
          f"{statistics.median(latencies) * 1000:.1f} ms, p95 {latencies[int(len(latencies) * 0.95)] * 1000:.1f} ms")

    # The wiring is the controllers': the ApiServerSource's adapter Deployment, sending into the Broker's address,
    # and one Subscription per Trigger to the Broker's channel.
    apps = client.AppsV1Api(cluster.api)
    [adapter] = [d for d in apps.list_namespaced_deployment(SYSTEM).items
                 if any(o.kind == "ApiServerSource" for o in d.metadata.owner_references or ())]
    env = {e.name: e.value for e in adapter.spec.template.spec.containers[0].env}
    assert env["K_SINK"] == INGRESS
    subscriptions = cluster.custom.list_namespaced_custom_object("messaging.knative.dev", "v1", SYSTEM,
                                                                 "subscriptions")["items"]
    owners = {o["name"] for s in subscriptions for o in s["metadata"]["ownerReferences"] if o["kind"] == "Trigger"}
    assert owners >= {"jobflow-jobflows", "jobflow-jobtemplates", "jobflow-vcjobs", "jobflow-resync",
                      "jobflow-jobflowtemplates", "jobflow-run-triggers"}


def test_a_lost_write_race_is_answered_503_and_the_broker_retries_it(cluster: LocalCluster, namespace: str,
                                                                       knative: Knative) -> None:
    through_the_broker(knative, cluster, namespace)
    kube = LosesRaces(cluster.connection, losses=MAX_ATTEMPTS)  # one whole reconcile loses its races
    arrivals = Arrivals()
    server, port = serve_app(kube, arrivals)
    try:
        knative.point_handler_at(port)
        apply(cluster, namespace, "apiVersion: flow.volcano.sh/v1alpha1\nkind: JobFlow\nmetadata: {name: lone}\n"
                                  "spec: {flows: [{name: ghost}]}\n")
        cluster.wait_until("the status, written on the Broker's retry", lambda: (
            (jobflow(cluster, namespace, "lone").get("status") or {}).get("state", {}).get("reason")
            == "TemplateNotFound"), timeout=60)
    finally:
        knative.point_handler_at(knative.handler_port)
        server.shutdown()
    assert kube.losses == 0
    refused = [a for a in arrivals.seen if a.code == 503]
    assert refused and refused[0].headers.get("retry-after") == "1"
    retried = [a for a in arrivals.seen if a.event.get("ce-id") == refused[0].event["ce-id"]]
    assert [a.code for a in retried][-1] == 202  # the same event, delivered again by the Broker


def test_a_20_s_api_server_outage_loses_nothing_through_the_real_broker(cluster: LocalCluster, namespace: str,
                                                                        knative: Knative) -> None:
    through_the_broker(knative, cluster, namespace)
    mark = len(knative.arrivals.seen)
    run_through_an_api_server_outage(cluster, namespace)
    refused = [a for a in knative.arrivals.seen[mark:] if a.code == 503]
    print(f"through the Broker: {len(refused)} deliveries answered 503 during the outage")
    assert all(p.alive() for p in (played.process for played in knative.eventing.kubelet.played.values()))


def test_an_event_the_handler_refuses_goes_to_the_dead_letter_sink_through_the_real_broker(
        cluster: LocalCluster, knative: Knative) -> None:
    event_id = str(uuid.uuid4())
    forged = urllib.request.Request(INGRESS, method="POST", data=json.dumps(
        {"kind": "JobFlow", "namespace": SYSTEM, "name": "not%a%name", "apiVersion": "flow.volcano.sh/v1alpha1"}
    ).encode(), headers={
        "ce-specversion": "1.0", "ce-id": event_id, "ce-source": "https://example.test",
        "ce-type": "dev.knative.apiserver.ref.update", "ce-kind": "JobFlow", "ce-apiversion":
        "flow.volcano.sh/v1alpha1", "ce-name": "not%a%name", "ce-namespace": SYSTEM,
        "content-type": "application/json"})
    proxied = urllib.request.build_opener(urllib.request.ProxyHandler({"http": knative.eventing.dns.url}))
    with proxied.open(forged, timeout=30) as reply:
        assert reply.status == 202  # the Broker took it

    def dead_letter():
        return next((h for h, _ in knative.dead_letters.received if h.get("ce-id") == event_id), None)

    headers = cluster.wait_until("the refused event at the dead-letter sink", dead_letter, timeout=30)
    assert headers["ce-knativeerrorcode"] == "400"
    assert "jobflow-handler" in headers["ce-knativeerrordest"]
    assert [a.code for a in knative.arrivals.seen if a.event.get("ce-id") == event_id] == [400]  # not retried


def test_a_users_cloudevent_through_the_real_broker_starts_one_run_of_the_jobflowtemplate_it_triggers(
        cluster: LocalCluster, namespace: str, knative: Knative) -> None:
    apply(cluster, namespace, template("load"))
    apply(cluster, namespace, """
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlowTemplate
metadata: {name: etl}
spec:
  triggers: [{name: data-ready, type: com.example.data.ready, parameters: {date: data.date}}]
  jobFlow:
    spec:
      parameters: [{name: date, value: none}]
      flows:
      - name: load
        patch: {jobSpec: {tasks: [{name: main, template: {metadata: {annotations: {example.com/date:
        "{{params.date}}"}}}}]}}
""")
    event_id = str(uuid.uuid4())
    proxied = urllib.request.build_opener(urllib.request.ProxyHandler({"http": knative.eventing.dns.url}))
    for _ in range(2):  # the same event twice: one run
        sent = urllib.request.Request(INGRESS, method="POST", data=b'{"date": "2026-11-24"}', headers={
            "ce-specversion": "1.0", "ce-id": event_id, "ce-source": "/storage/landing",
            "ce-type": "com.example.data.ready", "content-type": "application/json"})
        with proxied.open(sent, timeout=30) as reply:
            assert reply.status == 202  # the Broker took it

    def runs() -> list[dict]:
        return cluster.custom.list_namespaced_custom_object(
            "flow.volcano.sh", "v1alpha1", namespace, "jobflows",
            label_selector="flow.volcano.sh/jobflow-template=etl")["items"]

    cluster.wait_until("both deliveries answered at /trigger", lambda: [
        a.code for a in knative.arrivals.seen if a.event.get("ce-id") == event_id] == [202, 202], timeout=30)
    [run] = runs()
    job = cluster.wait_until("the run's vcjob", lambda: vcjobs(cluster, namespace).get(f"{run['metadata']['name']}-load"),
                             timeout=60)
    assert job["spec"]["tasks"][0]["template"]["metadata"]["annotations"]["example.com/date"] == "2026-11-24"
    assert {a.path for a in knative.arrivals.seen if a.event.get("ce-id") == event_id} == {"/trigger"}
    # The engine's own events never take that Trigger.
    assert all(a.event.get("ce-type", "").startswith("com.example.") for a in knative.arrivals.seen
               if a.path == "/trigger")


def test_flows_that_existed_before_the_adapter_started_finish_through_the_real_pingsources_resync(
        cluster: LocalCluster, knative: Knative) -> None:
    """The adapter announces nothing that exists when it starts; the PingSource fires every minute."""
    flow = wait_for_phase(cluster, knative.early, "early", "Succeed", timeout=150)
    assert sorted(flow["status"]["completedJobs"]) == ["early-a", "early-b"]
    # Every ping is answered 202, except those that came while the outage test had the API server down (503).
    pings = [a for a in knative.arrivals.seen if a.path == "/resync"]
    assert pings and {p.code for p in pings} <= {202, 503} and 202 in {p.code for p in pings}
    assert {(p.event["ce-type"], p.event["ce-source"]) for p in pings} == {("dev.knative.sources.ping", PING_SOURCE)}
    first = min(datetime.fromisoformat(p.event["ce-time"].replace("Z", "+00:00")).timestamp() for p in pings)
    created = datetime.fromisoformat(flow["metadata"]["creationTimestamp"].replace("Z", "+00:00")).timestamp()
    assert first > created


GATE = """
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {name: release}
spec:
  flows:
  - name: ok
    approval: {events: [{type: com.example.review, source: /ci}]}
  - {name: deploy, dependsOn: {targets: [ok]}}
"""
"""A gate that takes the answer of a CloudEvent of type com.example.review from /ci: a type the Broker's Trigger
jobflow-run-triggers sends to /trigger (it takes every type but Knative's, ours and our notifications')."""


def gate_waiting(knative: Knative, cluster: LocalCluster, namespace: str) -> None:
    through_the_broker(knative, cluster, namespace)
    apply(cluster, namespace, template("deploy"))
    apply(cluster, namespace, GATE)
    cluster.wait_until("gate ok to wait for an answer", lambda: any(
        w["name"] == "ok" for w in (jobflow(cluster, namespace, "release").get("status") or {}).get("waitingFlows")
        or ()), timeout=60)


def send_review(knative: Knative, namespace: str, *, source: str) -> str:
    """An approval of gate ok, from ``source``, into the Broker's ingress; its id."""
    event_id = str(uuid.uuid4())
    sent = urllib.request.Request(INGRESS, method="POST", data=json.dumps({
        "namespace": namespace, "jobflow": "release", "flow": "ok", "decision": "approve"}).encode(), headers={
        "ce-specversion": "1.0", "ce-id": event_id, "ce-source": source, "ce-type": "com.example.review",
        "content-type": "application/json"})
    proxied = urllib.request.build_opener(urllib.request.ProxyHandler({"http": knative.eventing.dns.url}))
    with proxied.open(sent, timeout=30) as reply:
        assert reply.status == 202  # the Broker took it
    return event_id


def test_a_gate_approved_by_a_cloudevent_through_the_real_broker_lets_what_waits_for_it_run(
        cluster: LocalCluster, namespace: str, knative: Knative) -> None:
    gate_waiting(knative, cluster, namespace)
    event_id = send_review(knative, namespace, source="/ci")

    flow = wait_for_phase(cluster, namespace, "release", "Succeed", timeout=90)
    [entry] = flow["status"]["approvals"]
    assert (entry["decision"], entry["source"], entry["eventId"]) == ("Approved", "/ci", event_id)
    assert sorted(vcjobs(cluster, namespace)) == ["release-deploy"]
    assert [(a.path, a.code) for a in knative.arrivals.seen if a.event.get("ce-id") == event_id] == [
        ("/trigger", 202)]


def test_a_gate_answer_from_a_source_the_gate_does_not_name_is_refused_once_and_dead_lettered_through_the_broker(
        cluster: LocalCluster, namespace: str, knative: Knative) -> None:
    gate_waiting(knative, cluster, namespace)
    event_id = send_review(knative, namespace, source="/somebody-else")

    headers = cluster.wait_until("the refused answer at the dead-letter sink", lambda: next(
        (h for h, _ in knative.dead_letters.received if h.get("ce-id") == event_id), None), timeout=30)
    assert headers["ce-knativeerrorcode"] == "403"
    assert [(a.path, a.code) for a in knative.arrivals.seen if a.event.get("ce-id") == event_id] == [
        ("/trigger", 403)]  # refused for good: the Broker does not deliver it again
    refusals = [m for t, r, m in events_of(cluster, namespace, "release") if (t, r) == ("Warning", "ApprovalRefused")]
    assert len(refusals) == 1 and f'event {event_id} of type "com.example.review" from "/somebody-else"' in \
        refusals[0], refusals
    status = jobflow(cluster, namespace, "release")["status"]
    assert "approvals" not in status and [w["name"] for w in status["waitingFlows"]] == ["ok", "deploy"]
    assert vcjobs(cluster, namespace) == {}
