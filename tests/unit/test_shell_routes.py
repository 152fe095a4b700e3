"""The handler's HTTP contract, in-process: Flask's test client against an in-memory KubeApi (``memory_kube``).

The same contract is tested over real HTTP against the real API server in ``tests/cluster/test_handler_http.py``
and ``tests/cluster/test_knative_delivery.py``.
"""

from __future__ import annotations

import json

import pytest
import yaml

from apiclient import cloudevents
from apiclient.rest import ApiError, Conflict, Unavailable, translate
from handlers import create_app
from jobflow_core.vocabulary.api import JOBFLOW, JOBTEMPLATE, VCJOB, ApiType
from memory_kube import MemoryKube
from test_shell_reconciler import A_THEN_B, NS, template

CE = {"Content-Type": "application/json", "ce-specversion": "1.0", "ce-id": "1", "ce-source": "s",
      "ce-type": "dev.knative.apiserver.ref.update"}


@pytest.fixture
def kube() -> MemoryKube:
    kube = MemoryKube()
    kube.put(template("a"))
    kube.put(yaml.safe_load(A_THEN_B))
    return kube


@pytest.fixture
def client(kube):
    return create_app({"KUBE": kube, "CLOCK": lambda: kube.now}).test_client()


def send(client, api_type: ApiType, name: str, change=cloudevents.Change.UPDATE, namespace: str = NS):
    """POST an event exactly as ApiServerSource sends it (the event source's own encoder)."""
    envelope = cloudevents.Envelope(api_type, change, {"metadata": {"namespace": namespace, "name": name}})
    headers, body = cloudevents.encode(envelope, mode=cloudevents.Mode.REFERENCE, source="https://10.96.0.1:443",
                                      overrides={})
    return client.post("/", data=body, headers=headers)


@pytest.mark.parametrize("body, headers, needle", [
    (b"not json at all", {"Content-Type": "application/cloudevents+json"}, "not a valid CloudEvent"),
    (b"{}", {"Content-Type": "application/json"}, "not a valid CloudEvent"),
    (b'[{"specversion": "1.0"}]', {"Content-Type": "application/cloudevents-batch+json"}, "not a valid CloudEvent"),
    (b'{"kind": "Job", "apiVersion": "batch/v1", "name": "x", "namespace": "y"}',
     CE | {"ce-kind": "Job", "ce-apiversion": "batch/v1"}, "understands JobFlow"),
    (b"{}", CE | {"ce-kind": "JobFlow", "ce-apiversion": "flow.volcano.sh/v1alpha1"}, "namespace and name"),
    (b"{}", CE | {"ce-kind": "Job", "ce-apiversion": "batch.volcano.sh/v1alpha1", "ce-name": "f-a",
                  "ce-namespace": "default", "ce-jobflow": "../f"}, "is not a JobFlow name"),
])
def test_a_malformed_or_unknown_event_gets_400_with_a_json_error(client, kube, body, headers, needle):
    reply = client.post("/", data=body, headers=headers)
    assert reply.status_code == 400
    assert needle in reply.json["error"]
    assert kube.requests == 0


def test_a_jobflow_event_is_reconciled_and_answered_202_with_an_empty_body(client, kube):
    reply = send(client, JOBFLOW, "f")
    assert (reply.status_code, reply.data) == (202, b"")
    assert kube.names(VCJOB, NS) == ["f-a"]


def test_an_event_for_an_object_that_no_longer_exists_is_accepted_with_an_empty_body(client):
    for api_type in (JOBFLOW, JOBTEMPLATE, VCJOB):
        reply = send(client, api_type, "gone", cloudevents.Change.DELETE)
        assert (reply.status_code, reply.data) == (202, b"")


def test_a_persistent_conflict_gives_503_with_retry_so_every_delivery_path_delivers_again(client, kube):
    kube.before_status_write = lambda flow: kube.put(kube.stored(JOBFLOW, NS, "f"))
    reply = send(client, JOBFLOW, "f")
    assert reply.status_code == 503 and reply.headers["Retry-After"] == "1"
    assert reply.json["retry"] is True and reply.json["reason"] == "Conflict"
    assert "kept changing" in reply.json["error"]


def test_the_api_server_unavailable_gives_503_with_retry(client, kube):
    def unavailable(*args, **kwargs):
        raise Unavailable("API server answered 503 Service Unavailable")

    kube.get_jobflow = unavailable
    reply = send(client, JOBFLOW, "f")
    assert reply.status_code == 503 and reply.json["retry"] is True


def test_an_object_our_models_cannot_read_gets_422_which_is_not_retried(client, kube):
    """Cluster tier: test_knative_delivery.py, test_an_object_our_models_cannot_read_gets_422_not_retried."""
    broken = kube.stored(JOBFLOW, NS, "f")
    broken["spec"]["flows"] = "not a list"
    kube.objects[(JOBFLOW.kind, NS, "f")] = broken
    reply = send(client, JOBFLOW, "f")
    assert reply.status_code == 422
    assert "does not match the JobFlow API" in reply.json["error"]


def test_a_vcjob_event_in_resource_mode_names_its_controller_and_reconciles_that_jobflow(client, kube):
    kube.put(template("b"))
    send(client, JOBFLOW, "f")
    kube.move(NS, "f-a", "Completed")
    job = kube.stored(VCJOB, NS, "f-a")
    headers, body = cloudevents.encode(cloudevents.Envelope(VCJOB, cloudevents.Change.UPDATE, job),
                                      mode=cloudevents.Mode.RESOURCE, source="https://10.96.0.1:443", overrides={})
    reply = client.post("/", data=body, headers=headers)
    assert reply.status_code == 202
    assert kube.names(VCJOB, NS) == ["f-a", "f-b"]


def test_a_vcjob_event_of_our_event_source_names_its_jobflow_which_is_the_one_reconciled(client, kube):
    kube.put(template("b"))
    send(client, JOBFLOW, "f")
    kube.move(NS, "f-a", "Completed")
    job = kube.stored(VCJOB, NS, "f-a")
    headers, body = cloudevents.encode(cloudevents.Envelope(VCJOB, cloudevents.Change.UPDATE, job),
                                      mode=cloudevents.Mode.REFERENCE, source="https://10.96.0.1:443", overrides={})
    assert headers["ce-jobflow"] == "f"
    reply = client.post("/", data=body, headers=headers)
    assert reply.status_code == 202
    assert kube.names(VCJOB, NS) == ["f-a", "f-b"]


def put_flow(kube, name: str, namespace: str = NS) -> None:
    flow = yaml.safe_load(A_THEN_B)
    flow["metadata"].update(name=name, namespace=namespace)
    kube.put(flow)


def test_a_resync_reconciles_every_jobflow_past_one_it_cannot_read_and_names_that_one_in_a_422(client, kube):
    kube.put(template("a") | {"metadata": {"name": "a", "namespace": "other"}})
    put_flow(kube, "g", "other")
    broken = kube.stored(JOBFLOW, NS, "f")
    broken["spec"]["flows"] = "not a list"
    kube.objects[(JOBFLOW.kind, NS, "f")] = broken
    reply = client.post("/resync")
    assert reply.status_code == 422  # retrying cannot help
    assert list(reply.json["failed"]) == [f"{NS}/f"] and "does not match" in reply.json["failed"][f"{NS}/f"]
    assert kube.names(VCJOB, "other") == ["g-a"]  # the JobFlow after it was reconciled
    assert [event[1:3] for event in kube.events if event[0] == "f"] == [("Warning", "ReconcileFailed")]


def test_a_transient_failure_of_one_jobflow_asks_for_the_resync_again_after_reconciling_the_others(client, kube):
    kube.put(template("a") | {"metadata": {"name": "a", "namespace": "other"}})
    put_flow(kube, "g", "other")
    real = kube.replace_jobflow_status

    def lose_races_in_default(flow: dict) -> dict:
        if flow["metadata"]["namespace"] == NS:
            raise Conflict("conflict: someone else wrote first")
        return real(flow)

    kube.replace_jobflow_status = lose_races_in_default
    reply = client.post("/resync")
    assert reply.status_code == 503 and reply.headers["Retry-After"] == "1"
    assert list(reply.json["failed"]) == [f"{NS}/f"]
    assert kube.names(VCJOB, "other") == ["g-a"]


TERMINATING = json.dumps({"kind": "Status", "code": 403, "reason": "Forbidden", "details": {
    "causes": [{"reason": "NamespaceTerminating", "message": "namespace t is being terminated"}]}})


@pytest.mark.parametrize("refusal", [ApiError(404, "Not Found"), ApiError(403, "Forbidden")])
def test_a_jobflow_whose_namespace_goes_during_a_resync_is_no_failure(client, kube, refusal):
    """The namespace of a listed JobFlow is deleted while the resync works: its writes answer 404, or 403
    NamespaceTerminating, which means there is nothing left to reconcile, not a failure to report (a PingSource would
    dead-letter a 422)."""
    refusal.body = TERMINATING if refusal.status == 403 else None
    kube.put(template("a") | {"metadata": {"name": "a", "namespace": "other"}})
    put_flow(kube, "f", NS)
    put_flow(kube, "g", "other")
    real = kube.replace_jobflow_status

    def namespace_gone(flow: dict) -> dict:
        if flow["metadata"]["namespace"] == NS:
            raise translate(refusal, "replace")  # what KubeApi makes of the API server's answer
        return real(flow)

    kube.replace_jobflow_status = namespace_gone
    reply = client.post("/resync")
    assert reply.status_code == 202, reply.json
    assert kube.names(VCJOB, "other") == ["g-a"]


@pytest.mark.parametrize("how", ["route", "ping event"])
def test_a_resync_finishes_a_flow_whose_events_were_all_lost(client, kube, how):
    """Cluster tier: test_knative_delivery.py, test_a_ping_event_is_delivered_on_both_routes."""
    kube.put(template("b"))

    def resync():
        if how == "route":
            return client.post("/resync")
        ping = CE | {"ce-type": "dev.knative.sources.ping"}
        return client.post("/", data=json.dumps({"body": "resync"}), headers=ping)

    for flow in ("a", "b"):
        assert resync().status_code == 202
        kube.move(NS, f"f-{flow}", "Completed")
    assert resync().status_code == 202
    assert kube.stored(JOBFLOW, NS, "f")["status"]["state"]["phase"] == "Succeed"


def test_healthz_answers_without_touching_the_api_server(client, kube):
    assert client.get("/healthz").status_code == 200
    assert kube.requests == 0


def test_a_handler_serving_some_namespaces_refuses_an_event_about_another_and_resyncs_only_its_own(kube):
    kube.put(template("a") | {"metadata": {"name": "a", "namespace": "other"}})
    put_flow(kube, "g", "other")
    served = create_app({"KUBE": kube, "CLOCK": lambda: kube.now, "NAMESPACES": (NS,)}).test_client()
    reply = send(served, JOBFLOW, "g", namespace="other")
    assert reply.status_code == 400 and "serves namespaces default" in reply.json["error"]
    assert served.post("/resync").status_code == 202
    assert kube.names(VCJOB, NS) == ["f-a"] and kube.names(VCJOB, "other") == []


def test_a_refusal_of_the_api_server_that_retrying_cannot_cure_is_its_4xx_never_a_500(client, kube):
    def forbidden(namespace: str, name: str) -> dict:
        raise ApiError(403, "Forbidden")

    kube.get_jobflow = forbidden
    reply = send(client, JOBFLOW, "f")
    assert reply.status_code == 403 and "403 Forbidden" in reply.json["error"]


def test_every_reply_names_the_handlers_version_so_the_event_source_can_tell_a_roll_out(client, kube):
    from apiclient.version import REPLY_HEADER, version

    replies = [send(client, JOBFLOW, "a-then-b"), client.post("/", data=b"{}"), client.get("/healthz")]

    assert [reply.headers.get(REPLY_HEADER) for reply in replies] == [version()] * 3
