"""Stop, terminate and approval gates on the real control plane: Volcano aborts what a stop ends, the webhook checks
who answers a gate, and the event source's recheck wakes a gate whose time runs out.

A stop (``kubectl jobflow stop``, ``spec.shutdown: Stop``) aborts the running vcjobs through Volcano's ``AbortJob``
Command, starts nothing but the ``finally`` flows, retries and handles nothing it aborted, and ends the JobFlow
Failed (``Stopped``); ``terminate`` does the same without ``finally``; ``kubectl jobflow retry`` runs again what did
not finish. A gate is answered with ``kubectl jobflow approve|reject`` as an impersonated user (a kubeconfig with
``as``: the admin's certificate has a name of its own), which the real validating webhook (``test_webhook``'s
registration, matching the test's namespace by its label) checks; or by a CloudEvent at the engine's ``/trigger``.
"""

from __future__ import annotations

import io
import json
import threading
import time
import uuid
from datetime import datetime
from pathlib import Path

import pytest
from kubernetes import client

from devcluster.testing import LocalCluster
from engine import Engine, post
from kubectl_jobflow.cli import run
from objects import apply, events_of, jobflow, template, vcjobs, wait_for_phase
from test_kubeconfig_forms import kubeconfig_with
from test_webhook import Webhook, kubectl, webhook, webhook_answers  # noqa: F401 (webhook: the fixture)

pytestmark = pytest.mark.cluster

STOPPABLE = """
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {name: NAME}
spec:
  flows:
  - {name: a, retry: {limit: 2}}
  - {name: h, dependsOn: {targets: [a], outcome: Failed}}
  - {name: b, dependsOn: {targets: [a]}}
  - {name: z, finally: true}
"""

GATED = """
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {name: NAME}
spec:
  flows:
  - name: evaluate
  - name: ok
    dependsOn: {targets: [evaluate]}
    approval:
      message: check the evaluation
      approvers: {users: [alice]}
      events: [{type: com.example.review, source: /ci}]
  - {name: deploy, dependsOn: {targets: [ok]}}
  - {name: rollback, dependsOn: {targets: [ok], outcome: Failed}}
"""

TIMED = """
apiVersion: flow.volcano.sh/v1alpha1
kind: JobFlow
metadata: {name: NAME}
spec:
  flows:
  - {name: ok, approval: {timeoutSeconds: 3}}
  - {name: deploy, dependsOn: {targets: [ok]}}
  - {name: rollback, dependsOn: {targets: [ok], outcome: Failed}}
"""

USERS = ("alice", "mallory")


def stamp(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def jobflow_cli(kubeconfig: Path, *argv: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run([*argv, "--kubeconfig", str(kubeconfig)], out=out, err=err)
    return code, out.getvalue() + err.getvalue()


def records(flow: dict) -> dict[str, dict]:
    return {r["name"]: r for r in flow["status"].get("jobStatusList") or []}


def status(cluster: LocalCluster, namespace: str, name: str) -> dict:
    return (jobflow(cluster, namespace, name) or {}).get("status") or {}


def shut_down_while_a_runs(cluster: LocalCluster, namespace: str, name: str, verb: str) -> str:
    """:data:`STOPPABLE` as ``name``, its ``a`` running 60 s, then ``kubectl jobflow VERB`` once ``a`` runs."""
    apply(cluster, namespace, "---\n".join([template("a", run_for="60s"), template("h"), template("b"),
                                            template("z")]))
    apply(cluster, namespace, STOPPABLE.replace("NAME", name))
    cluster.wait_until(f"{name}-a to run", lambda: cluster.vcjob_phase(namespace, f"{name}-a") == "Running",
                       timeout=60)
    code, said = jobflow_cli(cluster.state.kubeconfig, verb, name, "-n", namespace)
    assert code == 0, said
    return said


def aborted_by(cluster: LocalCluster, namespace: str, name: str, reason: str) -> list[str]:
    return [m for t, r, m in events_of(cluster, namespace, name) if (t, r) == ("Warning", reason)
            and m.startswith("aborting vcjob")]


def test_stop_aborts_the_running_vcjob_through_volcano_runs_the_finally_flow_and_retries_or_handles_nothing(
        cluster: LocalCluster, namespace: str, engine: Engine) -> None:
    said = shut_down_while_a_runs(cluster, namespace, "halt", "stop")
    assert said.startswith("Stopping JobFlow"), said

    flow = wait_for_phase(cluster, namespace, "halt", "Failed", timeout=60)
    assert flow["status"]["state"]["reason"] == "Stopped", flow["status"]["state"]
    # Failed at once, as a JobFlow that fails fast is; its finally flow still runs.
    cluster.wait_until("finally z to complete", lambda: cluster.vcjob_phase(namespace, "halt-z") == "Completed",
                       timeout=30)
    cluster.wait_until("halt-a Aborted, as the status records it", lambda: cluster.vcjob_phase(namespace, "halt-a")
                       == "Aborted" and records(jobflow(cluster, namespace, "halt"))["halt-a"]["state"] == "Aborted",
                       timeout=30)
    jobs = vcjobs(cluster, namespace)
    # b never started, h (a's failure handler) neither, a was not retried (no halt-a-r1): only finally z ran.
    assert sorted(jobs) == ["halt-a", "halt-z"]
    assert stamp(jobs["halt-z"]["metadata"]["creationTimestamp"]) >= \
        stamp(jobs["halt-a"]["status"]["state"]["lastTransitionTime"])
    assert aborted_by(cluster, namespace, "halt", "Stopped") == [
        'aborting vcjob "halt-a" of flow "a": the JobFlow was stopped (spec.shutdown: Stop)']


def test_terminate_aborts_the_running_vcjob_and_runs_no_finally_flow(
        cluster: LocalCluster, namespace: str, engine: Engine) -> None:
    said = shut_down_while_a_runs(cluster, namespace, "kill", "terminate")
    assert said.startswith("Terminating JobFlow"), said

    flow = wait_for_phase(cluster, namespace, "kill", "Failed", timeout=60)
    assert flow["status"]["state"]["reason"] == "Terminated", flow["status"]["state"]
    cluster.wait_until("kill-a aborted", lambda: cluster.vcjob_phase(namespace, "kill-a") == "Aborted", timeout=30)
    assert sorted(vcjobs(cluster, namespace)) == ["kill-a"]  # neither b, h, a retry, nor finally z
    assert aborted_by(cluster, namespace, "kill", "Terminated") == [
        'aborting vcjob "kill-a" of flow "a": the JobFlow was terminated (spec.shutdown: Terminate)']


def test_a_stop_racing_the_first_create_starts_nothing_but_what_the_status_named_when_it_landed(
        cluster: LocalCluster, namespace: str, engine: Engine) -> None:
    apply(cluster, namespace, "---\n".join([template("a", run_for="2s"), template("h"), template("b"),
                                            template("z")]))
    names = [f"race-{i}" for i in range(6)]
    named_at_stop: dict[str, set[str]] = {}
    for i, name in enumerate(names):
        apply(cluster, namespace, STOPPABLE.replace("NAME", name))
        time.sleep(0.08 * i)  # from at once to about when the engine creates the first vcjob
        # What kubectl jobflow stop writes; the answer is the JobFlow as stored with the stop, status included.
        stored = cluster.custom.patch_namespaced_custom_object("flow.volcano.sh", "v1alpha1", namespace, "jobflows",
                                                               name, {"spec": {"shutdown": "Stop"}})
        named_at_stop[name] = set(records(stored)) if stored.get("status") else set()

    for name in names:
        flow = wait_for_phase(cluster, namespace, name, "Failed", timeout=60)
        assert flow["status"]["state"]["reason"] == "Stopped", (name, flow["status"]["state"])
    jobs = vcjobs(cluster, namespace)
    for name in names:
        started = {job for job in jobs if job.startswith(f"{name}-") and job != f"{name}-z"}
        # Nothing but finally z was created that the status did not name when the stop landed, and never b or h.
        assert started <= named_at_stop[name] & {f"{name}-a"}, (name, started, named_at_stop[name])
        cluster.wait_until(f"finally {name}-z to complete", lambda: cluster.vcjob_phase(namespace, f"{name}-z")
                           == "Completed", timeout=30)
        for job in started:
            cluster.wait_until(f"{job} to end Aborted", lambda: cluster.vcjob_phase(namespace, job) == "Aborted",
                               timeout=30)
    late = sum(f"{name}-a" in named_at_stop[name] for name in names)
    print(f"stops that landed once the status named {names[0][:4]}-*-a (its create planned): {late} of {len(names)}")


# ---------------------------------------------------------------------------------------------------------------
# Approval gates


@pytest.fixture
def people(cluster: LocalCluster, namespace: str, webhook: Webhook, tmp_path: Path) -> dict[str, Path]:  # noqa: F811
    """A kubeconfig per user of :data:`USERS` (the admin's token, impersonating them), each allowed to read and patch
    the namespace's JobFlows; the namespace gets the label the webhook's registration matches."""
    cluster.core.patch_namespace(namespace, {"metadata": {"labels": webhook.label}})
    rbac = client.RbacAuthorizationV1Api(cluster.api)
    rbac.create_namespaced_role(namespace, {"metadata": {"name": "answer-gates"}, "rules": [
        {"apiGroups": ["flow.volcano.sh"], "resources": ["jobflows"], "verbs": ["get", "list", "watch", "patch"]}]})
    rbac.create_namespaced_role_binding(namespace, {
        "metadata": {"name": "answer-gates"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "answer-gates"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user} for user in USERS]})
    cluster.wait_until("the webhook to review the namespace's JobFlows", lambda: webhook_answers(cluster, namespace),
                       timeout=30)
    return {user: kubeconfig_with(cluster, tmp_path / user, {"token": cluster.state.token, "as": user})
            for user in USERS}


def gated(cluster: LocalCluster, namespace: str, *names: str, text: str = GATED) -> None:
    apply(cluster, namespace, "---\n".join(template(flow) for flow in ("evaluate", "deploy", "rollback")))
    for name in names:
        apply(cluster, namespace, text.replace("NAME", name))


def open_gate(cluster: LocalCluster, namespace: str, name: str) -> dict:
    """Gate ``ok`` of ``name`` once it waits for an answer (its dependencies met): its ``waitingFlows`` entry."""
    return cluster.wait_until(f"gate ok of {name} to wait for an answer", lambda: next((
        w for w in status(cluster, namespace, name).get("waitingFlows") or ()
        if w["name"] == "ok" and not w.get("waitingFor")), None), timeout=60)


def answers(cluster: LocalCluster, namespace: str, name: str) -> list[dict]:
    return [entry for entry in status(cluster, namespace, name).get("approvals") or () if entry["flow"] == "ok"]


def test_an_approver_approves_with_the_cli_and_what_waits_for_the_gate_runs(
        cluster: LocalCluster, namespace: str, engine: Engine, people: dict[str, Path]) -> None:
    gated(cluster, namespace, "release")
    gate = open_gate(cluster, namespace, "release")
    assert "check the evaluation" in gate["message"]
    assert "release-deploy" not in vcjobs(cluster, namespace)

    code, said = jobflow_cli(people["alice"], "approve", "release", "ok", "-n", namespace, "-m", "numbers fine")
    assert code == 0 and "as alice" in said, said

    flow = wait_for_phase(cluster, namespace, "release", "Succeed", timeout=60)
    [entry] = flow["status"]["approvals"]
    assert {k: entry.get(k) for k in ("flow", "jobName", "decision", "user", "message")} == {
        "flow": "ok", "jobName": "release-ok", "decision": "Approved", "user": "alice", "message": "numbers fine"}
    assert (records(flow)["release-ok"]["state"], records(flow)["release-ok"]["reason"]) == ("Completed", "Approved")
    assert sorted(vcjobs(cluster, namespace)) == ["release-deploy", "release-evaluate"]  # the gate has no vcjob


def test_an_answer_from_someone_who_is_not_an_approver_is_refused_by_the_webhook_and_nothing_is_recorded(
        cluster: LocalCluster, namespace: str, engine: Engine, people: dict[str, Path]) -> None:
    gated(cluster, namespace, "release")
    gate = open_gate(cluster, namespace, "release")

    code, said = jobflow_cli(people["mallory"], "approve", "release", "ok", "-n", namespace)
    assert code != 0 and "you (mallory) may not answer" in said and "approvers are users alice" in said, said
    # Past the command line's check, as plain kubectl: the webhook refuses who asks, in their name or in another's.
    for claimed, refused in (("mallory", f'user "mallory" may not answer gate "ok" of JobFlow {namespace}/release: '
                                         "its approvers are users 'alice'"),
                             ("alice", 'names user "alice" but the request comes from "mallory"')):
        answer = json.dumps({"jobName": gate["jobName"], "decision": "Approved", "user": claimed})
        result = kubectl(cluster, "--as=mallory", "annotate", "jobflow", "release", "-n", namespace,
                         f"approval.flow.volcano.sh/ok={answer}")
        assert result.returncode != 0 and "Forbidden" in result.stderr and refused in result.stderr, result.stderr

    time.sleep(2)  # what the engine would have done with a stored answer, it would have done by now
    stored = jobflow(cluster, namespace, "release")
    assert not any(k.startswith("approval.flow.volcano.sh/") for k in stored["metadata"].get("annotations") or {})
    assert "approvals" not in stored["status"] and open_gate(cluster, namespace, "release")
    assert "release-deploy" not in vcjobs(cluster, namespace)


def test_a_gate_rejected_with_the_cli_runs_its_failure_handler_and_not_what_needs_it_approved(
        cluster: LocalCluster, namespace: str, engine: Engine, people: dict[str, Path]) -> None:
    gated(cluster, namespace, "release")
    open_gate(cluster, namespace, "release")

    code, said = jobflow_cli(people["alice"], "reject", "release", "ok", "-n", namespace, "--message", "AUC dropped")
    assert code == 0 and said.startswith('Rejected gate "ok"'), said

    cluster.wait_until("rollback to complete", lambda: cluster.vcjob_phase(namespace, "release-rollback")
                       == "Completed", timeout=60)
    flow = wait_for_phase(cluster, namespace, "release", "Succeed", timeout=30)  # its failure was handled
    [entry] = flow["status"]["approvals"]
    assert (entry["decision"], entry["user"], entry["message"]) == ("Rejected", "alice", "AUC dropped")
    assert (records(flow)["release-ok"]["state"], records(flow)["release-ok"]["reason"]) == ("Failed", "Rejected")
    assert "release-deploy" not in vcjobs(cluster, namespace)
    assert [s["name"] for s in flow["status"]["skippedFlows"]] == ["deploy"]
    assert any((t, r) == ("Warning", "Rejected") for t, r, _ in events_of(cluster, namespace, "release"))


def test_a_gate_nobody_answers_is_rejected_by_its_timeout_woken_by_the_event_sources_recheck(
        cluster: LocalCluster, namespace: str, engine: Engine) -> None:
    gated(cluster, namespace, "idle", text=TIMED)
    started = time.monotonic()
    # No vcjob and no event: only the recheck the status asks for (eventsource/recheck.py) brings the engine back.
    gate = open_gate(cluster, namespace, "idle")
    assert status(cluster, namespace, "idle").get("recheckSeconds") == 1, gate

    flow = cluster.wait_until("the timeout's answer", lambda: answers(cluster, namespace, "idle")
                              and jobflow(cluster, namespace, "idle"), timeout=30, interval=0.1)
    waited = time.monotonic() - started
    [entry] = flow["status"]["approvals"]
    assert (entry["decision"], entry.get("timedOut"), entry.get("user")) == ("Rejected", True, None)
    assert (records(flow)["idle-ok"]["state"], records(flow)["idle-ok"]["reason"]) == ("Failed", "ApprovalTimeout")
    # Due 3 s after the JobFlow was created (the gate opened then), answered at the first recheck after that.
    late = (stamp(entry["time"]) - stamp(flow["metadata"]["creationTimestamp"])).total_seconds()
    print(f"timeout answered {late:.0f} s after creation (timestamps in whole seconds), seen after {waited:.1f} s")
    assert 3 <= late <= 5 and waited < 6
    cluster.wait_until("rollback to run", lambda: cluster.vcjob_phase(namespace, "idle-rollback") == "Completed",
                       timeout=60)


def review_event(name: str, namespace: str, decision: str) -> tuple[str, bytes, dict[str, str]]:
    """An approval CloudEvent from the source gate ``ok`` trusts: (its id, body, headers)."""
    event_id = str(uuid.uuid4())
    return event_id, json.dumps({"namespace": namespace, "jobflow": name, "flow": "ok", "decision": decision,
                                 "message": "by the CI"}).encode(), {
        "ce-specversion": "1.0", "ce-id": event_id, "ce-type": "com.example.review", "ce-source": "/ci",
        "content-type": "application/json"}


def test_an_approve_and_a_reject_racing_record_exactly_one_answer_which_never_changes(
        cluster: LocalCluster, namespace: str, engine: Engine, people: dict[str, Path]) -> None:
    names = [f"race-{i}" for i in range(4)]
    gated(cluster, namespace, *names)
    trigger = engine.handler.url + "trigger"
    outcome: dict[str, tuple[int, int]] = {}
    said: dict[str, str] = {}
    for name in names:
        open_gate(cluster, namespace, name)
        _, body, headers = review_event(name, namespace, "reject")
        replies: dict[str, int] = {}
        ready = threading.Barrier(2)

        def approve(name: str = name) -> None:
            ready.wait()
            replies["cli"], said[name] = jobflow_cli(people["alice"], "approve", name, "ok", "-n", namespace)

        def reject() -> None:
            ready.wait()
            replies["event"] = post(trigger, body, headers)[0]

        threads = [threading.Thread(target=approve), threading.Thread(target=reject)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        outcome[name] = (replies["cli"], replies["event"])
        [entry] = cluster.wait_until(f"the answer to {name}", lambda: answers(cluster, namespace, name), timeout=30)
        # The event is 202 either way (taken, or the gate was answered before it); the command line is refused when
        # the event's answer was recorded before its write.
        assert replies["event"] == 202 and (replies["cli"] == 0) == (entry["decision"] == "Approved"), (
            replies, entry, said[name])
        assert entry.get("user" if entry["decision"] == "Approved" else "source") == \
            ("alice" if entry["decision"] == "Approved" else "/ci")

    first = {name: answers(cluster, namespace, name) for name in names}
    time.sleep(3)
    for name in names:  # later answers of both doors change nothing
        _, body, headers = review_event(name, namespace, "approve")
        assert post(trigger, body, headers)[0] == 202  # answered before: the first answer stands
        code, refused = jobflow_cli(people["alice"], "reject", name, "ok", "-n", namespace)
        assert code != 0 and "was already answered" in refused, refused
    time.sleep(2)
    for name in names:
        assert answers(cluster, namespace, name) == first[name]
        wait_for_phase(cluster, namespace, name, "Succeed", timeout=60)  # deploy, or rollback handling the rejection
        ran = "deploy" if first[name][0]["decision"] == "Approved" else "rollback"
        assert {job for job in vcjobs(cluster, namespace) if job.startswith(f"{name}-")} == {
            f"{name}-evaluate", f"{name}-{ran}"}
    print("race outcomes (cli exit, event reply, answer): " + ", ".join(
        f"{name}={outcome[name]}:{first[name][0]['decision']}" for name in names))


# ---------------------------------------------------------------------------------------------------------------
# Running a stopped JobFlow again


def test_retry_after_a_stop_removes_it_and_runs_again_what_did_not_finish(
        cluster: LocalCluster, namespace: str, engine: Engine) -> None:
    shut_down_while_a_runs(cluster, namespace, "again", "stop")
    wait_for_phase(cluster, namespace, "again", "Failed", timeout=60)
    # The fix a user makes before retrying: a runs briefly from now on (a vcjob is made from its JobTemplate then).
    cluster.custom.patch_namespaced_custom_object(
        "flow.volcano.sh", "v1alpha1", namespace, "jobtemplates", "a",
        {"spec": {"tasks": [{"name": "main", "replicas": 1, "template": {
            "metadata": {"annotations": {"kwok.jobflow.dev/run-for": "300ms"}},
            "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]}}}]}})

    code, said = jobflow_cli(cluster.state.kubeconfig, "retry", "again", "-n", namespace)
    assert code == 0 and "spec.shutdown (Stop) removed" in said, said

    flow = wait_for_phase(cluster, namespace, "again", "Succeed", timeout=90)
    assert "shutdown" not in flow["spec"]
    jobs = vcjobs(cluster, namespace)
    phases = {name: job["status"]["state"]["phase"] for name, job in jobs.items()}
    # a's next attempt ran (its retries counted afresh from it), b after it; h is not needed; z completed during the
    # stop, and what completed is kept.
    assert phases == {"again-a": "Aborted", "again-a-r1": "Completed", "again-b": "Completed",
                      "again-z": "Completed"}, phases
    assert stamp(jobs["again-b"]["metadata"]["creationTimestamp"]) >= \
        stamp(jobs["again-a-r1"]["status"]["state"]["lastTransitionTime"])
    # Run again by the rerun, not as a's own retry: the attempt the stop aborted uses none of a's retries.
    rerun = flow["status"]["rerun"]
    assert (rerun.get("fromAttempt"), rerun.get("message")) == ({"a": 2}, "run again: a"), rerun
