"""JobFlowFacts events on the real control plane (issue 25): the event source's events carry the JobFlow and its
vcjobs from its watches, signed; the handler plans from them and reads the API server far less, and a forged one
changes nothing. The unit tier's counterparts: ``tests/unit/test_snapshot_events.py``; the races, in the model:
``tests/unit/test_race_properties.py``."""

from __future__ import annotations

import base64
import threading

import pytest
from kubernetes import client

from devcluster.testing import LocalCluster
from engine import post, start_engine, start_handler
from apiclient import cloudevents
from apiclient.rest import Rest
from apiclient.snapshot_key import ensure_secret
from apiclient.watch_cache import WatchCache
from eventsource.runner import Encoder
from handlers.metrics import API_REQUESTS, SNAPSHOTS
from jobflow_core.vocabulary.api import JOBFLOW, VCJOB
from objects import DIAMOND, apply, diamond_templates, jobflow, vcjobs, wait_for_phase

pytestmark = pytest.mark.cluster


def counts() -> dict[str, float]:
    found = {outcome: SNAPSHOTS.labels(outcome)._value.get()
             for outcome in ("used", "stale", "unsigned", "bad_signature", "no_key", "none")}
    found |= {f"{verb} {code}": API_REQUESTS.labels(verb, code)._value.get()
              for verb in ("get", "list", "create", "replace", "patch", "delete", "") for code in ("2xx", "409")}
    return found


def run_diamond(cluster: LocalCluster, namespace: str, *, snapshots: bool) -> tuple[int, dict[str, float]]:
    """The seed diamond to Succeed; the handler's API requests, and its reconciles by source."""
    before = counts()
    engine = start_engine(cluster, namespace, snapshots=snapshots)
    try:
        apply(cluster, namespace, diamond_templates(run_for="1s"))
        apply(cluster, namespace, DIAMOND)
        wait_for_phase(cluster, namespace, "diamond", "Succeed", timeout=120)
    finally:
        engine.stop()
    return engine.handler.kube.requests, {key: value - before[key] for key, value in counts().items()
                                          if value != before[key]}


def test_the_diamond_runs_on_snapshots_with_far_fewer_requests_than_reading_everything(
        cluster: LocalCluster, namespace: str) -> None:
    with_snapshots, seen = run_diamond(cluster, namespace, snapshots=True)
    other = cluster.create_namespace()
    try:
        reading, read = run_diamond(cluster, other, snapshots=False)
    finally:
        cluster.delete_namespace(other)
    print(f"with snapshots: {with_snapshots} requests, {seen}\nreading everything: {reading} requests, {read}")
    reconciles = seen.get("used", 0) + seen.get("stale", 0) + seen.get("none", 0)
    assert seen.get("used", 0) >= 0.85 * reconciles, seen
    assert "unsigned" not in seen and "bad_signature" not in seen and "no_key" not in seen
    assert with_snapshots < 0.8 * reading
    assert sorted(vcjobs(cluster, namespace)) == [f"diamond-{flow}" for flow in "abcde"]


def test_a_snapshot_signed_with_another_key_changes_nothing(cluster: LocalCluster, namespace: str) -> None:
    """The forger says a Completed, so b would start: the handler reads the truth (a is Running) and waits."""
    apply(cluster, namespace, diamond_templates(run_for="600s"))
    apply(cluster, namespace, DIAMOND)
    handler = start_handler(cluster, {"SNAPSHOT_KEY": b"the real key"})
    try:
        cache = WatchCache()
        encoder = Encoder(mode=cloudevents.Mode.REFERENCE, source="https://10.96.0.1:443", overrides={}, cache=cache,
                          key=b"a key the forger made up", replies=True)
        headers, body = encoder(cloudevents.Envelope(JOBFLOW, cloudevents.Change.UPDATE,
                                                    {"metadata": {"namespace": namespace, "name": "diamond"}}))
        assert "ce-jobflowsig" not in headers  # nothing cached yet: first let the handler create a
        assert post(handler.url, body, headers)[0] == 202
        cluster.wait_until("diamond-a to run", lambda: cluster.vcjob_phase(namespace, "diamond-a") == "Running",
                           timeout=60)
        flow = jobflow(cluster, namespace, "diamond")
        cache.note(JOBFLOW, flow, deleted=False)
        lie = vcjobs(cluster, namespace)["diamond-a"]
        lie["status"]["state"]["phase"] = "Completed"
        cache.note(VCJOB, lie, deleted=False)
        before = counts()["bad_signature"]
        headers, body = encoder(cloudevents.Envelope(JOBFLOW, cloudevents.Change.UPDATE, flow))
        assert "ce-jobflowsig" in headers
        assert post(handler.url, body, headers)[0] == 202
        assert counts()["bad_signature"] == before + 1
        assert sorted(vcjobs(cluster, namespace)) == ["diamond-a"]
        assert jobflow(cluster, namespace, "diamond")["status"]["runningJobs"] == ["diamond-a"]
    finally:
        handler.stop()


def test_event_sources_starting_together_create_one_secret_and_share_its_key(cluster: LocalCluster,
                                                                            namespace: str) -> None:
    """What the manifests' event source does at its first start (SNAPSHOT_KEY_SECRET): the Secret made once, on
    the real API server; each later start, and each racing one, reads that key."""
    keys: list[bytes] = []
    start = threading.Barrier(4)

    def event_source() -> None:
        start.wait()
        keys.append(ensure_secret(Rest(cluster.connection), namespace, "jobflow-snapshot-key"))

    threads = [threading.Thread(target=event_source) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    stored = client.CoreV1Api(cluster.api).read_namespaced_secret("jobflow-snapshot-key", namespace)
    assert len(set(keys)) == 1 and len(keys) == 4
    assert base64.b64decode(stored.data["key"]) == keys[0] and len(keys[0]) == 64
    assert ensure_secret(Rest(cluster.connection), namespace, "jobflow-snapshot-key") == keys[0]
