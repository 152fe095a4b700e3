"""Approval gates answered by CloudEvents at ``POST /trigger`` (``handlers.approvals``), in memory: who is trusted,
what each reply code means, and that the first answer stands."""

import json

import yaml

from handlers import create_app
from jobflow_core.flows.gates import signature
from jobflow_core.models import ApprovalDecision
from jobflow_core.vocabulary.api import JOBFLOW, JOBTEMPLATE, VCJOB
from memory_kube import T0, MemoryKube
from scenario import TEMPLATE_SPEC

KEY = b"k" * 32
FLOW = f"""
apiVersion: {JOBFLOW.api_version}
kind: JobFlow
metadata: {{name: release, namespace: default}}
spec:
  flows:
  - name: evaluate
  - name: ok
    dependsOn: {{targets: [evaluate]}}
    approval:
      message: check the evaluation
      events: [{{type: com.example.review, source: /ci}}]
  - {{name: deploy, dependsOn: {{targets: [ok]}}}}
"""


def event(id: str = "e1", *, type: str = "com.example.review", source: str = "/ci", decision: str = "approve",
          **extra: str) -> tuple[dict, bytes]:
    headers = {"ce-specversion": "1.0", "ce-id": id, "ce-type": type, "ce-source": source,
               "content-type": "application/json", **{f"ce-{k}": v for k, v in extra.items()}}
    data = {"namespace": "default", "jobflow": "release", "flow": "ok", "decision": decision, "message": "fine"}
    return headers, json.dumps(data).encode()


def setup(*, evaluated: bool = True):
    kube = MemoryKube()
    for name in ("evaluate", "deploy"):
        kube.put({"apiVersion": JOBTEMPLATE.api_version, "kind": JOBTEMPLATE.kind,
                  "metadata": {"name": name, "namespace": "default"}, "spec": yaml.safe_load(TEMPLATE_SPEC)})
    kube.put(yaml.safe_load(FLOW))
    app = create_app({"KUBE": kube, "CLOCK": lambda: T0, "SNAPSHOT_KEY": KEY}).test_client()
    reconcile(app)
    if evaluated:
        kube.move("default", "release-evaluate", "Completed")
        reconcile(app)
    return kube, app


def reconcile(app) -> None:
    headers = {"ce-specversion": "1.0", "ce-id": "x", "ce-type": "dev.knative.apiserver.ref.update",
               "ce-source": "/api", "ce-kind": "JobFlow", "ce-apiversion": JOBFLOW.api_version, "ce-name": "release",
               "ce-namespace": "default"}
    assert app.post("/", headers=headers).status_code == 202


def status(kube: MemoryKube) -> dict:
    return kube.stored(JOBFLOW, "default", "release")["status"]


def test_an_event_of_a_type_and_source_the_gate_names_approves_it_and_what_waits_starts():
    kube, app = setup()
    assert kube.stored(VCJOB, "default", "release-deploy") is None
    assert app.post("/trigger", headers=event()[0], data=event()[1]).status_code == 202
    [entry] = status(kube)["approvals"]
    assert (entry["flow"], entry["jobName"], entry["decision"], entry["source"], entry["eventId"], entry["message"]) \
        == ("ok", "release-ok", "Approved", "/ci", "e1", "fine")
    assert kube.stored(VCJOB, "default", "release-deploy") is not None
    [record] = [r for r in status(kube)["jobStatusList"] if r["name"] == "release-ok"]
    assert (record["state"], record["reason"]) == ("Completed", "Approved")


def test_the_same_event_twice_changes_nothing_and_a_later_reject_does_not_flip_the_answer():
    kube, app = setup()
    for _ in range(2):
        assert app.post("/trigger", headers=event()[0], data=event()[1]).status_code == 202
    headers, data = event("e2", decision="reject")
    assert app.post("/trigger", headers=headers, data=data).status_code == 202  # answered before: it stands
    assert [entry["decision"] for entry in status(kube)["approvals"]] == ["Approved"]


def test_an_event_from_a_source_the_gate_does_not_name_is_refused_with_403_and_a_warning():
    kube, app = setup()
    headers, data = event(source="/somebody-else")
    reply = app.post("/trigger", headers=headers, data=data)
    assert reply.status_code == 403 and "refused" in reply.get_json()["error"]
    assert "approvals" not in status(kube)
    assert [reason for _, _, reason, _ in kube.events if reason == "ApprovalRefused"] == ["ApprovalRefused"]


def test_an_event_signed_with_the_engines_key_is_taken_from_any_source_and_a_bad_signature_is_not():
    kube, app = setup()
    sign = signature(KEY, namespace="default", jobflow="release", flow="ok", decision=ApprovalDecision.REJECTED,
                     source="/anyone", event_id="s1")
    headers, data = event("s1", type="other", source="/anyone", decision="reject", jobflowsignature="0" * 64)
    assert app.post("/trigger", headers=headers, data=data).status_code == 403
    headers["ce-jobflowsignature"] = sign
    assert app.post("/trigger", headers=headers, data=data).status_code == 202
    [entry] = status(kube)["approvals"]
    assert (entry["decision"], entry["source"]) == ("Rejected", "/anyone")
    assert status(kube)["state"]["phase"] == "Failed"  # a rejected gate is a failed flow; nothing handles it


def test_a_signed_event_sent_again_under_another_source_or_with_a_signature_that_is_no_hex_is_refused_403():
    kube, app = setup()
    sign = signature(KEY, namespace="default", jobflow="release", flow="ok", decision=ApprovalDecision.APPROVED,
                     source="/signer", event_id="s2")
    for source, given in (("/replayer", sign), ("/signer", "é" * 64), ("/signer", sign[:-1])):
        headers, data = event("s2", type="other", source=source, jobflowsignature="x")
        headers["ce-jobflowsignature"] = given
        assert app.post("/trigger", headers=headers, data=data).status_code == 403, (source, given)
    assert "approvals" not in status(kube)


def test_an_approval_event_still_reaches_the_triggers_of_jobflowtemplates():
    kube, app = setup()
    kube.put({"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlowTemplate",
              "metadata": {"name": "on-review", "namespace": "default"},
              "spec": {"triggers": [{"name": "reviewed", "type": "com.example.review"}],
                       "jobFlow": {"spec": {"flows": [{"name": "evaluate"}]}}}})
    assert app.post("/trigger", headers=event()[0], data=event()[1]).status_code == 202
    assert [entry["decision"] for entry in status(kube)["approvals"]] == ["Approved"]
    assert [name for name in kube.names(JOBFLOW, "default") if name != "release"]  # and the trigger started a run


def test_an_answer_before_the_gate_opened_is_refused_with_422_and_lost_nowhere():
    kube, app = setup(evaluated=False)
    reply = app.post("/trigger", headers=event()[0], data=event()[1])
    assert reply.status_code == 422 and "takes no answer now" in reply.get_json()["error"]
    kube.move("default", "release-evaluate", "Completed")
    reconcile(app)
    assert "approvals" not in status(kube)  # it waits for an answer given once it opened
    assert app.post("/trigger", headers=event("e3")[0], data=event("e3")[1]).status_code == 202


def test_an_answer_to_no_gate_or_no_jobflow_is_422():
    _, app = setup()
    headers, data = event()
    for change in ({"flow": "deploy"}, {"jobflow": "nope"}, {"decision": "maybe"}):
        body = json.dumps({**json.loads(data), **change}).encode()
        assert app.post("/trigger", headers=headers, data=body).status_code == 422, change
