"""Events that carry a snapshot (issue 25): planned from without a read when signed, ignored when not, and the
answer our event source reads. In-process: Flask's test client against an in-memory KubeApi; the real event
source and API server in ``tests/cluster/test_snapshots.py``."""

from __future__ import annotations

import pytest
import yaml

from apiclient import cloudevents
from apiclient.watch_cache import WatchCache
from eventsource.runner import Encoder, answered
from handlers import create_app
from handlers.metrics import SNAPSHOTS
from jobflow_core.routing.snapshots import MAX_BYTES, trim
from jobflow_core.vocabulary.api import JOBFLOW, JOBTEMPLATE, VCJOB
from memory_kube import MemoryKube
from test_shell_reconciler import A_THEN_B, NS, template

KEY = b"a key both sides mount"


class CountingReads(MemoryKube):
    """Counts the reads of JobFlows and vcjobs a reconcile makes."""

    def __init__(self) -> None:
        super().__init__()
        self.reads = 0

    def get_jobflow(self, namespace: str, name: str) -> dict | None:
        self.reads += 1
        return super().get_jobflow(namespace, name)

    def list_vcjobs(self, namespace: str | None, label_selector: str) -> list[dict]:
        self.reads += 1
        return super().list_vcjobs(namespace, label_selector)


@pytest.fixture
def kube() -> CountingReads:
    kube = CountingReads()
    kube.put(template("a"))
    kube.put(template("b"))
    kube.put(yaml.safe_load(A_THEN_B))
    return kube


@pytest.fixture
def client(kube):
    return create_app({"KUBE": kube, "CLOCK": lambda: kube.now, "SNAPSHOT_KEY": KEY}).test_client()


def cache_of(kube: MemoryKube) -> WatchCache:
    """The event source's cache, filled as its watches would fill it from ``kube`` now."""
    cache = WatchCache()
    cache.note(JOBFLOW, kube.stored(JOBFLOW, NS, "f"), deleted=False)
    for name in kube.names(VCJOB, NS):
        cache.note(VCJOB, kube.stored(VCJOB, NS, name), deleted=False)
    return cache


def post(client, cache: WatchCache, *, key: bytes | None = KEY, api_type=JOBFLOW, name: str = "f",
         replies: bool = True, unsigned: bool = False):
    encoder = Encoder(mode=cloudevents.Mode.REFERENCE, source="https://10.96.0.1:443", overrides={}, cache=cache,
                      key=key, replies=replies)
    obj = {"metadata": {"namespace": NS, "name": name}}
    if api_type is VCJOB:  # a vcjob's event is about the JobFlow that controls it
        uid = cache.snapshot(NS, "f")["jobflow"]["metadata"]["uid"]
        obj["metadata"]["ownerReferences"] = [{"kind": "JobFlow", "name": "f", "controller": True, "uid": uid}]
    headers, body = encoder(cloudevents.Envelope(api_type, cloudevents.Change.UPDATE, obj))
    if unsigned:
        del headers["ce-jobflowsig"]
    return client.post("/", data=body, headers=headers)


def counted(outcome: str) -> float:
    return SNAPSHOTS.labels(outcome)._value.get()


def test_a_signed_snapshot_is_planned_from_without_reading_the_jobflow_or_listing_its_vcjobs(client, kube):
    used = counted("used")
    reply = post(client, cache_of(kube))
    assert reply.status_code == 202
    assert kube.reads == 0 and kube.names(VCJOB, NS) == ["f-a"]
    assert counted("used") == used + 1
    written = reply.json["written"][0]
    assert written["status"]["pendingJobs"] == ["f-a"]
    assert written["metadata"]["resourceVersion"] == kube.stored(JOBFLOW, NS, "f")["metadata"]["resourceVersion"]


def test_a_vcjob_event_plans_from_the_snapshot_of_its_jobflow(client, kube):
    cache = cache_of(kube)
    post(client, cache)
    kube.move(NS, "f-a", "Completed")
    cache = cache_of(kube)
    kube.reads = 0
    assert post(client, cache, api_type=VCJOB, name="f-a").status_code == 202
    assert kube.reads == 0 and kube.names(VCJOB, NS) == ["f-a", "f-b"]


@pytest.mark.parametrize("state", ["bad_signature", "unsigned"])
def test_a_forged_or_unsigned_snapshot_changes_nothing_the_handler_reads_the_truth(client, kube, state):
    """The forger claims f-a Completed (it does not even exist): the handler believes the API server."""
    cache = cache_of(kube)
    forged = cache.snapshot(NS, "f")
    lie = {"apiVersion": VCJOB.api_version, "kind": VCJOB.kind,
           "metadata": {"name": "f-a", "namespace": NS, "uid": "forged", "ownerReferences": [
               {"kind": "JobFlow", "name": "f", "controller": True, "uid": forged["jobflow"]["metadata"]["uid"]}]},
           "status": {"state": {"phase": "Completed"}}}
    cache.note(VCJOB, lie, deleted=False)
    before = counted(state)
    reply = post(client, cache, key=b"not the key", unsigned=state == "unsigned")
    assert reply.status_code == 202 and counted(state) == before + 1
    assert kube.reads == 2 and kube.names(VCJOB, NS) == ["f-a"]  # a's vcjob created, b's not
    assert kube.stored(JOBFLOW, NS, "f")["status"]["pendingJobs"] == ["f-a"]


def test_a_handler_that_has_no_key_yet_reads_and_counts_no_key(kube):
    """A handler started before the kubelet wrote the Secret into its volume (apiclient/snapshot_key.py)."""
    keyless = create_app({"KUBE": kube, "CLOCK": lambda: kube.now, "SNAPSHOT_KEY": lambda: None}).test_client()
    before = counted("no_key")

    assert post(keyless, cache_of(kube)).status_code == 202

    assert counted("no_key") == before + 1 and kube.reads == 2 and kube.names(VCJOB, NS) == ["f-a"]


def test_a_snapshot_older_than_the_handlers_own_write_loses_its_write_and_is_read_again(client, kube):
    stale = cache_of(kube)
    post(client, cache_of(kube))  # writes the status: the stale snapshot's JobFlow is now one write behind
    kube.move(NS, "f-a", "Completed")
    stale.note(VCJOB, kube.stored(VCJOB, NS, "f-a"), deleted=False)
    before = counted("stale")
    assert post(client, stale).status_code == 202
    assert counted("stale") == before + 1
    assert kube.names(VCJOB, NS) == ["f-a", "f-b"]


def test_the_answer_brings_the_written_jobflow_into_the_cache_so_the_next_snapshot_is_not_older(client, kube):
    cache = cache_of(kube)
    reply = post(client, cache)
    assert answered_into(cache, reply.data) == 1
    kube.move(NS, "f-a", "Completed")
    cache.note(VCJOB, kube.stored(VCJOB, NS, "f-a"), deleted=False)
    stale = counted("stale")
    assert post(client, cache).status_code == 202
    assert counted("stale") == stale and kube.names(VCJOB, NS) == ["f-a", "f-b"]


def answered_into(cache: WatchCache, body: bytes) -> int:
    class Queue:
        def __init__(self) -> None:
            self.put_events: list = []

        def put(self, envelope) -> None:
            self.put_events.append(envelope)

    before = cache.snapshot(NS, "f")["jobflow"]["metadata"]["resourceVersion"]
    answered(cache, Queue(), body)
    return int(cache.snapshot(NS, "f")["jobflow"]["metadata"]["resourceVersion"] != before)


def test_a_jobtemplate_event_from_our_event_source_hands_its_jobflows_back_and_reconciles_none(client, kube):
    kube.objects.pop(("JobTemplate", NS, "a"))
    post(client, cache_of(kube))  # a waits for its template
    kube.put(template("a"))
    headers, body = cloudevents.encode(cloudevents.Envelope(JOBTEMPLATE, cloudevents.Change.ADD, {
        "metadata": {"namespace": NS, "name": "a"}}), mode=cloudevents.Mode.REFERENCE, source="s", overrides={},
        replies=True)
    reply = client.post("/", data=body, headers=headers)
    assert reply.status_code == 202 and reply.json["handed"] == [[NS, "f"]]
    assert kube.names(VCJOB, NS) == []  # the event source sends f's own event next

    class Queue:
        put_events: list = []

        def put(self, envelope) -> None:
            self.put_events.append(envelope)

    queue = Queue()
    answered(WatchCache(), queue, reply.data)
    assert [(e.api_type, e.obj["metadata"]["name"]) for e in queue.put_events] == [(JOBFLOW, "f")]


def test_without_the_reply_extension_the_answer_is_empty_and_the_work_done_inline(client, kube):
    kube.objects.pop(("JobTemplate", NS, "a"))
    post(client, cache_of(kube), replies=False)
    kube.put(template("a"))
    headers, body = cloudevents.encode(cloudevents.Envelope(JOBTEMPLATE, cloudevents.Change.ADD, {
        "metadata": {"namespace": NS, "name": "a"}}), mode=cloudevents.Mode.REFERENCE, source="s", overrides={})
    reply = client.post("/", data=body, headers=headers)
    assert (reply.status_code, reply.data) == (202, b"")
    assert kube.names(VCJOB, NS) == ["f-a"]


def test_a_snapshot_over_the_cap_is_left_out_and_the_event_names_the_jobflow_only():
    flow = {"apiVersion": JOBFLOW.api_version, "kind": JOBFLOW.kind,
            "metadata": {"name": "f", "namespace": NS, "uid": "u", "annotations": {"big": "x" * (MAX_BYTES + 1)}},
            "spec": {"flows": [{"name": "a"}]}}
    cache = WatchCache()
    cache.note(JOBFLOW, flow, deleted=False)
    encoder = Encoder(mode=cloudevents.Mode.REFERENCE, source="s", overrides={}, cache=cache, key=KEY, replies=True)
    headers, body = encoder(cloudevents.Envelope(JOBFLOW, cloudevents.Change.UPDATE, flow))
    assert "ce-jobflowsig" not in headers and b"snapshot" not in body and len(body) < 200


def test_trimming_keeps_what_the_planner_reads_and_drops_pod_templates_and_managed_fields():
    job = {"metadata": {"name": "j", "managedFields": [{}], "annotations": {
        "kubectl.kubernetes.io/last-applied-configuration": "{}", "keep": "me"}},
        "spec": {"tasks": [{"name": "t", "replicas": 2, "template": {"spec": {"containers": []}}}]},
        "status": {"state": {"phase": "Running"}}}
    trimmed = trim({"metadata": {"name": "f", "managedFields": [{}]}, "spec": {}}, [job])
    assert trimmed["jobflow"]["metadata"] == {"name": "f"}
    assert trimmed["vcjobs"][0] == {"metadata": {"name": "j", "annotations": {"keep": "me"}},
                                    "spec": {"tasks": [{"name": "t", "replicas": 2}]},
                                    "status": {"state": {"phase": "Running"}}}


def flow_at(version: int, phase: str = "Running") -> dict:
    return {"apiVersion": JOBFLOW.api_version, "kind": JOBFLOW.kind,
            "metadata": {"name": "f", "namespace": NS, "uid": "u", "resourceVersion": str(version)},
            "spec": {"flows": [{"name": "a"}]}, "status": {"state": {"phase": phase}}}


def test_the_cache_keeps_a_written_jobflow_until_the_watch_brings_a_newer_one():
    cache = WatchCache()
    cache.note(JOBFLOW, flow_at(10), deleted=False)
    assert cache.written([flow_at(12, "Succeed")]) == 1
    cache.note(JOBFLOW, flow_at(11), deleted=False)  # the watch, late: older than what the handler wrote
    assert cache.snapshot(NS, "f")["jobflow"]["status"]["state"]["phase"] == "Succeed"
    cache.note(JOBFLOW, flow_at(13, "Succeed"), deleted=False)
    assert cache.snapshot(NS, "f")["jobflow"]["metadata"]["resourceVersion"] == "13"
    assert cache.written([flow_at(12, "Running")]) == 0  # an answer older than the watch is not kept


def test_the_cache_never_brings_back_a_jobflow_the_watch_saw_go_nor_one_it_never_saw():
    cache = WatchCache()
    assert cache.written([flow_at(5)]) == 0 and cache.snapshot(NS, "f") is None
    cache.note(JOBFLOW, flow_at(6), deleted=False)
    cache.note(JOBFLOW, flow_at(7), deleted=True)
    assert cache.written([flow_at(8)]) == 0 and cache.snapshot(NS, "f") is None


def test_a_snapshot_holds_only_the_vcjobs_its_jobflow_controls_as_they_now_are():
    cache = WatchCache()
    cache.note(JOBFLOW, flow_at(1), deleted=False)

    def job(name: str, uid: str, phase: str) -> dict:
        return {"metadata": {"name": name, "namespace": NS, "ownerReferences": [
            {"kind": "JobFlow", "name": "f", "controller": True, "uid": uid}]}, "status": {"state": {"phase": phase}}}

    cache.note(VCJOB, job("f-a", "u", "Running"), deleted=False)
    cache.note(VCJOB, job("f-a", "u", "Completed"), deleted=False)
    cache.note(VCJOB, job("f-b", "u", "Pending"), deleted=False)
    cache.note(VCJOB, job("f-c", "an earlier JobFlow of that name", "Running"), deleted=False)
    cache.note(VCJOB, job("f-b", "u", "Pending"), deleted=True)
    assert [(j["metadata"]["name"], j["status"]["state"]["phase"]) for j in cache.snapshot(NS, "f")["vcjobs"]] == \
        [("f-a", "Completed")]
