"""``kubectl jobflow approve``/``reject NAME FLOW``: an answer to an approval gate that waits, written as the
annotation ``approval.flow.volcano.sh/FLOW`` with the caller's Kubernetes user (a SelfSubjectReview), and every
reason an answer is not written (:func:`apiclient.steering.answer_gate`, :func:`apiclient.steering.gate_of`)."""

from __future__ import annotations

import io
import json
from http.server import BaseHTTPRequestHandler
from typing import ClassVar

import pytest

from api_standin import send_json, serving
from apiclient.cluster import Cluster, KubeError, Target
from jobflow_core.flows.gates import parse_answer
from jobflow_core.models import ApprovalDecision, JobFlow
from jobflow_core.vocabulary.api import JOBFLOW
from kubectl_jobflow import cli
from test_cli_control import Stored, jobflow as run_cli

KEY = "approval.flow.volcano.sh/deploy-ok"


def gated(*, waiting: dict | None = None, approvals: list | None = None, annotations: dict | None = None,
          phase: str = "Running", approvers: dict | None = None) -> dict:
    """JobFlow ``release``: ``build``, then the gate ``deploy-ok``, then ``deploy``; the gate waits for an answer
    (``waiting`` changes its ``waitingFlows`` entry; None with ``approvals`` given: it was answered)."""
    approval = {"message": "check the staging numbers", **({"approvers": approvers} if approvers else {})}
    status = {"state": {"phase": phase},
              "jobStatusList": [{"name": "release-build", "state": "Completed"}],
              "waitingFlows": [{"name": "deploy", "jobName": "release-deploy", "waitingFor": ["deploy-ok"]}]}
    if approvals is None:
        status["waitingFlows"].insert(0, waiting or {
            "name": "deploy-ok", "jobName": "release-deploy-ok",
            "message": 'waiting for approval of "deploy-ok": check the staging numbers'})
    else:
        status["approvals"] = approvals
    return {"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlow",
            "metadata": {"name": "release", "namespace": "ns", "resourceVersion": "41",
                         **({"annotations": annotations} if annotations else {})},
            "spec": {"flows": [{"name": "build"},
                               {"name": "deploy-ok", "dependsOn": {"targets": ["build"]}, "approval": approval},
                               {"name": "deploy", "dependsOn": {"targets": ["deploy-ok"]}}]},
            "status": status}


def written(stored: Stored) -> dict:
    return json.loads(stored.objects[("JobFlow", "release")]["metadata"]["annotations"][KEY])


def test_approve_writes_the_answer_to_the_gates_record_as_the_caller_with_the_version_it_read(monkeypatch):
    stored = Stored((JOBFLOW, gated()))
    code, out, err = run_cli(monkeypatch, stored, "approve", "release", "deploy-ok", "-m", "numbers fine")
    assert (code, err) == (0, "")
    assert out == ('Approved gate "deploy-ok" of JobFlow ns/release as ana (record release-deploy-ok): what waits for '
                   "it goes on at the engine's next look (follow it with kubectl jobflow status release --watch)\n")
    [(_, _, _, patch)] = stored.patches
    assert patch["metadata"]["resourceVersion"] == "41"
    assert written(stored) == {"jobName": "release-deploy-ok", "decision": "Approved", "user": "ana",
                               "message": "numbers fine"}
    assert parse_answer(patch["metadata"]["annotations"][KEY]).decision is ApprovalDecision.APPROVED


def test_reject_writes_rejected_and_says_the_gate_counts_as_failed(monkeypatch):
    stored = Stored((JOBFLOW, gated()))
    code, out, _ = run_cli(monkeypatch, stored, "reject", "release", "deploy-ok")
    assert code == 0 and out.startswith('Rejected gate "deploy-ok" of JobFlow ns/release as ana (record '
                                        "release-deploy-ok): it counts as a failed flow")
    assert written(stored) == {"jobName": "release-deploy-ok", "decision": "Rejected", "user": "ana"}


@pytest.mark.parametrize(("flow", "why"), [
    ("deploy", 'flow "deploy" of JobFlow ns/release is no approval gate (it runs a vcjob): its approval gates are '
               "deploy-ok"),
    ("nope", 'JobFlow ns/release has no flow "nope": its approval gates are deploy-ok'),
])
def test_a_flow_that_is_no_gate_is_refused_naming_the_gates(monkeypatch, flow, why):
    stored = Stored((JOBFLOW, gated()))
    assert run_cli(monkeypatch, stored, "approve", "release", flow) == (1, "", f"Failed to approve: {why}\n")
    assert stored.patches == [] and stored.asked_who == 0


def test_a_gate_answered_already_is_refused_saying_who_answered_and_how(monkeypatch):
    stored = Stored((JOBFLOW, gated(approvals=[{
        "flow": "deploy-ok", "jobName": "release-deploy-ok", "decision": "Rejected", "user": "ben",
        "time": "2026-11-25T09:00:00Z", "message": "p99 doubled"}])))
    assert run_cli(monkeypatch, stored, "approve", "release", "deploy-ok") == (1, "", (
        'Failed to approve: gate "deploy-ok" of JobFlow ns/release was already answered: Rejected by ben at '
        "2026-11-25T09:00:00Z: p99 doubled; the first answer stands (kubectl jobflow retry release asks it again once "
        "the JobFlow ended Failed)\n"))
    assert stored.patches == []


def test_an_answer_recorded_for_an_earlier_record_does_not_close_the_gate_a_rerun_opened_again(monkeypatch):
    stored = Stored((JOBFLOW, gated(waiting={"name": "deploy-ok", "jobName": "release-deploy-ok-r1"})))
    stored.objects[("JobFlow", "release")]["status"]["approvals"] = [
        {"flow": "deploy-ok", "jobName": "release-deploy-ok", "decision": "Rejected", "user": "ben"}]
    assert run_cli(monkeypatch, stored, "approve", "release", "deploy-ok")[0] == 0
    assert written(stored)["jobName"] == "release-deploy-ok-r1"


def test_an_answer_written_but_not_yet_recorded_is_not_written_again_nor_changed(monkeypatch):
    annotation = {KEY: '{"jobName":"release-deploy-ok","decision":"Approved","user":"ben"}'}
    stored = Stored((JOBFLOW, gated(annotations=annotation)))
    assert run_cli(monkeypatch, stored, "approve", "release", "deploy-ok") == (0, (
        'Gate "deploy-ok" of JobFlow ns/release is already approved by ben: the engine records it at its next '
        "look\n"), "")
    assert run_cli(monkeypatch, stored, "reject", "release", "deploy-ok") == (1, "", (
        'Failed to reject: gate "deploy-ok" of JobFlow ns/release was already answered: Approved by ben, which the '
        "engine records at its next look; the first answer stands\n"))
    assert stored.patches == []


def test_a_gate_whose_dependencies_are_not_met_is_not_open_and_says_what_it_waits_for(monkeypatch):
    waits = {"name": "deploy-ok", "jobName": "release-deploy-ok", "waitingFor": ["build"],
             "message": 'waiting for "build" to be Completed'}
    stored = Stored((JOBFLOW, gated(waiting=waits)))
    assert run_cli(monkeypatch, stored, "approve", "release", "deploy-ok") == (1, "", (
        'Failed to approve: gate "deploy-ok" of JobFlow ns/release is not open yet: its dependencies are not met, it '
        'waits for build (waiting for "build" to be Completed); it takes an answer once they are\n'))
    assert stored.patches == []


@pytest.mark.parametrize(("phase", "why"), [
    ("Failed", "waits for no answer: the JobFlow already ended Failed (kubectl jobflow retry release runs it again)"),
    ("Succeed", "waits for no answer: the JobFlow already ended Succeed"),
])
def test_a_gate_of_a_jobflow_that_ended_takes_no_answer(monkeypatch, phase, why):
    stored = Stored((JOBFLOW, gated(phase=phase)))
    assert run_cli(monkeypatch, stored, "reject", "release", "deploy-ok") == (
        1, "", f'Failed to reject: gate "deploy-ok" of JobFlow ns/release {why}\n')


def test_a_gate_of_a_jobflow_being_stopped_takes_no_answer_unless_it_is_a_finally_flow_under_stop(monkeypatch):
    stopping = gated()
    stopping["spec"]["shutdown"] = "Stop"
    stored = Stored((JOBFLOW, stopping))
    assert run_cli(monkeypatch, stored, "approve", "release", "deploy-ok") == (1, "", (
        'Failed to approve: gate "deploy-ok" of JobFlow ns/release waits for no answer: the JobFlow is being stopped '
        "(spec.shutdown: Stop); once it ended Failed, kubectl jobflow retry release runs it again\n"))
    stopping["spec"]["flows"][1]["finally"] = True
    assert run_cli(monkeypatch, stored, "approve", "release", "deploy-ok")[0] == 0
    terminating = gated()
    terminating["spec"]["shutdown"] = "Terminate"
    terminating["spec"]["flows"][1]["finally"] = True
    stored = Stored((JOBFLOW, terminating))
    assert "the JobFlow is being terminated (spec.shutdown: Terminate)" in run_cli(
        monkeypatch, stored, "reject", "release", "deploy-ok")[2]


def test_a_gate_not_planned_yet_takes_no_answer(monkeypatch):
    fresh = gated()
    del fresh["status"]
    stored = Stored((JOBFLOW, fresh))
    assert run_cli(monkeypatch, stored, "approve", "release", "deploy-ok") == (1, "", (
        'Failed to approve: gate "deploy-ok" of JobFlow ns/release waits for no answer yet: the engine has not planned '
        "the JobFlow yet\n"))


def test_a_user_who_is_not_an_approver_is_refused_before_anything_is_written(monkeypatch):
    stored = Stored((JOBFLOW, gated(approvers={"users": ["ben"], "groups": ["release-managers"]})))
    assert run_cli(monkeypatch, stored, "approve", "release", "deploy-ok") == (1, "", (
        'Failed to approve: you (ana) may not answer gate "deploy-ok" of JobFlow ns/release: its approvers are users '
        "ben; groups release-managers\n"))
    assert stored.patches == []


def test_an_approver_by_group_may_answer(monkeypatch):
    stored = Stored((JOBFLOW, gated(approvers={"groups": ["team-a"]})))
    assert run_cli(monkeypatch, stored, "approve", "release", "deploy-ok")[0] == 0


class Racing(Stored):
    """The JobFlow changes between the read and the write (the engine's status, or someone else's answer)."""

    def __init__(self, *objects, change) -> None:
        super().__init__(*objects)
        self.change = change

    def merge_patch(self, api_type, namespace, name, patch):
        if self.change is not None:
            obj = self.objects[("JobFlow", name)]
            self.change(obj)
            obj["metadata"]["resourceVersion"] = "42"
            self.change = None
        return super().merge_patch(api_type, namespace, name, patch)


def test_a_jobflow_changed_meanwhile_is_read_and_checked_again_never_overwritten(monkeypatch):
    def ben_answers(obj: dict) -> None:
        obj["metadata"]["annotations"] = {KEY: '{"jobName":"release-deploy-ok","decision":"Rejected","user":"ben"}'}

    stored = Racing((JOBFLOW, gated()), change=ben_answers)
    assert run_cli(monkeypatch, stored, "approve", "release", "deploy-ok") == (1, "", (
        'Failed to approve: gate "deploy-ok" of JobFlow ns/release was already answered: Rejected by ben, which the '
        "engine records at its next look; the first answer stands\n"))
    assert len(stored.patches) == 1  # the one refused with 409
    assert json.loads(stored.objects[("JobFlow", "release")]["metadata"]["annotations"][KEY])["user"] == "ben"


def test_a_status_written_meanwhile_only_costs_a_second_read(monkeypatch):
    stored = Racing((JOBFLOW, gated()), change=lambda obj: obj["status"].update(progress="1/3"))
    assert run_cli(monkeypatch, stored, "approve", "release", "deploy-ok")[0] == 0
    assert [patch["metadata"]["resourceVersion"] for *_, patch in stored.patches] == ["41", "42"]
    assert stored.asked_who == 1
    assert written(stored)["user"] == "ana"


@pytest.mark.parametrize("argv", [("approve",), ("approve", "release"), ("reject", "release")])
def test_approve_or_reject_without_the_gate_is_a_usage_error(monkeypatch, argv):
    stored = Stored((JOBFLOW, gated()))
    code, _, err = run_cli(monkeypatch, stored, *argv)
    assert code == 2 and err == (f"Failed to {argv[0]}: name the JobFlow and its approval gate: kubectl jobflow "
                                 f"{argv[0]} NAME FLOW [--message TEXT]\n")


def test_the_dashboard_and_the_command_agree_on_when_a_gate_takes_an_answer():
    from apiclient.steering import gate_of

    model = JobFlow.model_validate(gated())
    assert gate_of(model, "deploy") is None
    gate = gate_of(model, "deploy-ok")
    assert gate.refusal is None and gate.waiting.job_name == "release-deploy-ok"
    assert gate.approval.message == "check the staging numbers"


class ApiServer(BaseHTTPRequestHandler):
    """The API server for one approve: the JobFlow, a SelfSubjectReview naming the user, the patch taken."""

    seen: ClassVar[list[tuple[str, str, str | None, dict | None]]] = []
    reviews: ClassVar[bool] = True

    def _seen(self) -> None:
        """Every request, whatever its verb: method, path, content type and body."""
        data = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        ApiServer.seen.append((self.command, self.path, self.headers.get("Content-Type") if data else None,
                               json.loads(data) if data else None))

    def do_GET(self) -> None:
        self._seen()
        send_json(self, gated())

    def do_POST(self) -> None:
        self._seen()
        if not ApiServer.reviews:
            send_json(self, {"kind": "Status", "code": 404, "reason": "NotFound", "message": "the server could not "
                             "find the requested resource"}, status=404)
            return
        user = {"username": "oidc:ana@example.com", "groups": ["system:authenticated"]}
        send_json(self, {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview",
                         "status": {"userInfo": user}})

    def do_PATCH(self) -> None:
        self._seen()
        send_json(self, gated())

    def log_message(self, *_: object) -> None:
        pass


def test_the_user_is_the_one_a_self_subject_review_names_on_the_real_client(monkeypatch, tmp_path):
    ApiServer.seen, ApiServer.reviews = [], True
    with serving(ApiServer, tmp_path / "config"):
        out, err = io.StringIO(), io.StringIO()
        code = cli.run(["approve", "release", "deploy-ok", "-n", "ns", "--kubeconfig", str(tmp_path / "config")],
                       out=out, err=err)
    assert (code, err.getvalue()) == (0, "")
    get, review, patch = ApiServer.seen
    assert get[:2] == ("GET", "/apis/flow.volcano.sh/v1alpha1/namespaces/ns/jobflows/release")
    assert review == ("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", "application/json",
                      {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
    assert patch[:3] == ("PATCH", get[1] + "?fieldValidation=Strict", "application/merge-patch+json")
    assert patch[3] == {"metadata": {"resourceVersion": "41", "annotations": {KEY: (
        '{"jobName":"release-deploy-ok","decision":"Approved","user":"oidc:ana@example.com"}')}}}


def test_an_api_server_without_self_subject_review_says_who_cannot_be_told(tmp_path):
    ApiServer.seen, ApiServer.reviews = [], False
    with serving(ApiServer, tmp_path / "config"):
        cluster = Cluster(Target(kubeconfig=str(tmp_path / "config")))
        try:
            with pytest.raises(KubeError, match="does not answer SelfSubjectReview .*Kubernetes 1.28") as error:
                cluster.whoami()
        finally:
            cluster.close()
    assert error.value.status == 404
