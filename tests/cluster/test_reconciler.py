"""The engine on the real control plane: JobFlows run through the real Volcano job controller and scheduler.

Each test acts as a user would (create JobTemplates and a JobFlow) and lets the engine (the event source feeding
the Flask handler, both in-process) and Volcano (real vcjobs, pods on kwok nodes) do the rest.
"""

from __future__ import annotations

from datetime import datetime

import pytest

from devcluster.testing import LocalCluster
from engine import send
from jobflow_core.vocabulary.api import JOBFLOW
from objects import apply, events_of, jobflow, template, vcjobs, wait_for_phase
from seeds import diamond_yaml

pytestmark = pytest.mark.cluster

DIAMOND = diamond_yaml(retain="delete")


def stamp(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def walk(value, path="status"):
    yield path, value
    if isinstance(value, dict):
        for key, item in value.items():
            yield from walk(item, f"{path}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from walk(item, f"{path}[{index}]")


def test_a_root_flow_starts_at_once_with_upstreams_labels_and_owner(cluster: LocalCluster, namespace: str,
                                                                     engine) -> None:
    apply(cluster, namespace, template("a", run_for="5s"))
    [flow] = apply(cluster, namespace, "apiVersion: flow.volcano.sh/v1alpha1\nkind: JobFlow\n"
                                       "metadata: {name: solo}\nspec: {flows: [{name: a}]}")

    job = cluster.wait_until("vcjob solo-a", lambda: vcjobs(cluster, namespace).get("solo-a"), timeout=30)

    expected = {"volcano.sh/createdByJobFlow": f"{namespace}.solo",
                "volcano.sh/createdByJobTemplate": f"{namespace}.a"}
    assert job["metadata"]["labels"] == expected
    assert {k: v for k, v in job["metadata"]["annotations"].items() if k.startswith("volcano.sh/")} == expected
    assert job["metadata"]["ownerReferences"] == [{
        "apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlow", "name": "solo",
        "uid": flow["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}]
    assert job["spec"]["tasks"][0]["name"] == "main"


def test_the_seed_diamond_runs_in_dag_order_to_succeed_and_deletes_its_jobs(cluster: LocalCluster, namespace: str,
                                                                           engine) -> None:
    apply(cluster, namespace, "\n---\n".join(template(n) for n in "abcde"))
    apply(cluster, namespace, DIAMOND)

    flow = wait_for_phase(cluster, namespace, "test", "Succeed", timeout=120)

    status = flow["status"]
    assert status["completedJobs"] == ["test-a", "test-b", "test-c", "test-d", "test-e"]
    assert status["progress"] == "5/5"
    records = {r["name"]: r for r in status["jobStatusList"]}
    # DAG order: a dependent's vcjob was created only after every target's vcjob ended Completed.
    for job, targets in {"b": "a", "c": "b", "d": "b", "e": "cd"}.items():
        for target in targets:
            assert stamp(records[f"test-{job}"]["startTimestamp"]) >= stamp(records[f"test-{target}"]["endTimestamp"])
    # jobRetainPolicy: delete removed the vcjobs; the status keeps their record.
    cluster.wait_until("the vcjobs to be deleted", lambda: not vcjobs(cluster, namespace), timeout=30)
    assert set(records) == {f"test-{n}" for n in "abcde"}


def test_the_status_uses_upstreams_field_names_and_never_a_null(cluster: LocalCluster, namespace: str,
                                                                engine) -> None:
    apply(cluster, namespace, template("a") + "---\n" + template("b", run_for="30s"))
    apply(cluster, namespace, "apiVersion: flow.volcano.sh/v1alpha1\nkind: JobFlow\nmetadata: {name: f}\n"
                              "spec: {flows: [{name: a}, {name: b, dependsOn: {targets: [a]}}, "
                              "{name: c, dependsOn: {targets: [b]}}]}")

    def running_b() -> dict | None:
        flow = jobflow(cluster, namespace, "f") or {}
        return flow if (flow.get("status") or {}).get("runningJobs") == ["f-b"] else None

    status = cluster.wait_until("f-b to run", running_b, timeout=60)["status"]

    assert status["completedJobs"] == ["f-a"]
    assert status["state"]["phase"] == "Running"
    assert status["progress"] == "1/3"
    assert set(status["conditions"]) == {"f-a", "f-b"}
    assert set(status["conditions"]["f-a"]) >= {"phase", "createTime", "runningDuration"}
    record = next(r for r in status["jobStatusList"] if r["name"] == "f-a")
    assert set(record) == {"name", "state", "startTimestamp", "endTimestamp", "restartCount", "runningHistories"}
    # flow c waits for b, and the status says so.
    assert status["waitingFlows"] == [{"name": "c", "jobName": "f-c", "waitingFor": ["b"],
                                       "message": status["waitingFlows"][0]["message"]}]
    assert "b" in status["waitingFlows"][0]["message"]
    assert [path for path, value in walk(status) if value is None] == []


def test_a_failed_job_fails_the_flow_starts_nothing_more_and_still_tracks_its_siblings(
        cluster: LocalCluster, namespace: str, engine) -> None:
    apply(cluster, namespace, "\n---\n".join([template("bad", fail=True), template("slow", run_for="4s"),
                                              template("after")]))
    apply(cluster, namespace, "apiVersion: flow.volcano.sh/v1alpha1\nkind: JobFlow\nmetadata: {name: f}\n"
                              "spec: {flows: [{name: bad}, {name: slow}, "
                              "{name: after, dependsOn: {targets: [bad]}}]}")

    failed = wait_for_phase(cluster, namespace, "f", "Failed", timeout=60)
    assert failed["status"]["terminatedJobs"] == ["f-bad"]
    assert failed["status"]["state"]["reason"] == "JobFailed"

    def slow_completed() -> dict | None:
        flow = jobflow(cluster, namespace, "f")
        return flow if "f-slow" in (flow["status"].get("completedJobs") or []) else None

    final = cluster.wait_until("the sibling's completion to be tracked", slow_completed, timeout=60)
    assert final["status"]["state"]["phase"] == "Failed"
    assert "f-after" not in vcjobs(cluster, namespace)
    assert ("Warning", "JobFailed") in [(t, r) for t, r, _ in events_of(cluster, namespace, "f")]


def test_retain_keeps_jobs_and_deleting_the_jobflow_deletes_them(cluster: LocalCluster, namespace: str,
                                                                  engine) -> None:
    apply(cluster, namespace, template("a"))
    apply(cluster, namespace, "apiVersion: flow.volcano.sh/v1alpha1\nkind: JobFlow\nmetadata: {name: keep}\n"
                              "spec: {jobRetainPolicy: retain, flows: [{name: a}]}")
    wait_for_phase(cluster, namespace, "keep", "Succeed")
    assert "keep-a" in vcjobs(cluster, namespace)

    cluster.custom.delete_namespaced_custom_object("flow.volcano.sh", "v1alpha1", namespace, "jobflows", "keep")

    cluster.wait_until("the garbage collector to delete keep-a", lambda: "keep-a" not in vcjobs(cluster, namespace),
                       timeout=60)


def test_a_completed_vcjob_deleted_later_is_not_run_again_and_its_dependents_start(
        cluster: LocalCluster, namespace: str, engine) -> None:
    apply(cluster, namespace, template("a") + "---\n" + template("b", run_for="2s"))
    apply(cluster, namespace, "apiVersion: flow.volcano.sh/v1alpha1\nkind: JobFlow\nmetadata: {name: f}\n"
                              "spec: {flows: [{name: a}, {name: b, dependsOn: {targets: [a]}}]}")
    cluster.wait_until("f-b to exist", lambda: "f-b" in vcjobs(cluster, namespace), timeout=60)
    first_a = vcjobs(cluster, namespace)["f-a"]["metadata"]["uid"]

    cluster.custom.delete_namespaced_custom_object("batch.volcano.sh", "v1alpha1", namespace, "jobs", "f-a")

    flow = wait_for_phase(cluster, namespace, "f", "Succeed", timeout=60)
    assert "f-a" not in vcjobs(cluster, namespace), "a completed job must not run again"
    assert flow["status"]["completedJobs"] == ["f-a", "f-b"]
    assert vcjobs(cluster, namespace)["f-b"]["metadata"]["uid"] != first_a


def test_a_jobtemplate_created_after_its_jobflow_is_picked_up(cluster: LocalCluster, namespace: str,
                                                               engine) -> None:
    apply(cluster, namespace, "apiVersion: flow.volcano.sh/v1alpha1\nkind: JobFlow\nmetadata: {name: late}\n"
                              "spec: {jobRetainPolicy: retain, flows: [{name: a}]}")

    def blocked() -> dict | None:
        flow = jobflow(cluster, namespace, "late") or {}
        return flow if ((flow.get("status") or {}).get("state") or {}).get("reason") == "TemplateNotFound" else None

    waiting = cluster.wait_until("the flow to say its template is missing", blocked, timeout=30)
    assert f'JobTemplate "{namespace}/a" not found' in waiting["status"]["state"]["message"]
    assert ("Warning", "TemplateNotFound") in [(t, r) for t, r, _ in events_of(cluster, namespace, "late")]

    apply(cluster, namespace, template("a"))

    wait_for_phase(cluster, namespace, "late", "Succeed")
    jt = cluster.custom.get_namespaced_custom_object("flow.volcano.sh", "v1alpha1", namespace, "jobtemplates", "a")
    assert jt["status"]["jobDependsOnList"] == ["late-a"]


def test_the_jobtemplate_list_shrinks_when_its_vcjobs_go(cluster: LocalCluster, namespace: str, engine) -> None:
    apply(cluster, namespace, template("a"))
    for name in ("one", "two"):
        apply(cluster, namespace, f"apiVersion: flow.volcano.sh/v1alpha1\nkind: JobFlow\nmetadata: {{name: {name}}}\n"
                                  "spec: {jobRetainPolicy: retain, flows: [{name: a}]}")

    def depends_on() -> list[str]:
        jt = cluster.custom.get_namespaced_custom_object("flow.volcano.sh", "v1alpha1", namespace, "jobtemplates",
                                                         "a")
        return (jt.get("status") or {}).get("jobDependsOnList") or []

    cluster.wait_until("both vcjobs listed", lambda: depends_on() == ["one-a", "two-a"], timeout=60)
    wait_for_phase(cluster, namespace, "one", "Succeed")  # a vcjob that vanishes unfinished is created again
    cluster.custom.delete_namespaced_custom_object("batch.volcano.sh", "v1alpha1", namespace, "jobs", "one-a")
    cluster.wait_until("the list to shrink", lambda: depends_on() == ["two-a"], timeout=60)


def test_jobflows_sharing_templates_never_see_each_others_jobs(cluster: LocalCluster, namespace: str,
                                                               engine) -> None:
    apply(cluster, namespace, template("a") + "---\n" + template("b", run_for="20s"))
    apply(cluster, namespace, "apiVersion: flow.volcano.sh/v1alpha1\nkind: JobFlow\nmetadata: {name: x}\n"
                              "spec: {flows: [{name: a}, {name: b}]}")
    apply(cluster, namespace, "apiVersion: flow.volcano.sh/v1alpha1\nkind: JobFlow\nmetadata: {name: y}\n"
                              "spec: {flows: [{name: a}]}")

    y = wait_for_phase(cluster, namespace, "y", "Succeed")
    x = wait_for_phase(cluster, namespace, "x", "Running")  # x-b runs 20 s: x is Running well after y ended

    assert y["status"]["completedJobs"] == ["y-a"]
    assert set(y["status"]["conditions"]) == {"y-a"}
    assert {r["name"] for r in x["status"]["jobStatusList"]} <= {"x-a", "x-b"}


def test_phase_changes_and_creations_are_recorded_as_events(cluster: LocalCluster, namespace: str, engine) -> None:
    apply(cluster, namespace, template("a"))
    apply(cluster, namespace, "apiVersion: flow.volcano.sh/v1alpha1\nkind: JobFlow\nmetadata: {name: ev}\n"
                              "spec: {flows: [{name: a}]}")
    wait_for_phase(cluster, namespace, "ev", "Succeed")

    def recorded() -> list | None:
        seen = [(t, r, m) for t, r, m in events_of(cluster, namespace, "ev")]
        # Running may be skipped when the job finished between two events: Pending -> Succeed is fine too.
        succeed = [m for _, r, m in seen if r == "PhaseChanged" and m.endswith("-> Succeed")]
        return seen if succeed else None

    seen = cluster.wait_until("the Succeed event", recorded, timeout=30)
    assert ("Normal", "Created", "create a job named ev-a!") in seen
    assert sum(1 for _, reason, _ in seen if reason == "Created") == 1


def test_an_invalid_spec_that_slipped_past_admission_fails_with_the_reason_in_status_and_an_event(
        cluster: LocalCluster, namespace: str, engine) -> None:
    apply(cluster, namespace, "\n---\n".join(template(n) for n in "abc"))
    apply(cluster, namespace, "apiVersion: flow.volcano.sh/v1alpha1\nkind: JobFlow\nmetadata: {name: loop}\n"
                              "spec: {flows: [{name: a, dependsOn: {targets: [c]}}, "
                              "{name: b, dependsOn: {targets: [a]}}, {name: c, dependsOn: {targets: [b]}}]}")

    flow = wait_for_phase(cluster, namespace, "loop", "Failed")

    assert flow["status"]["state"]["reason"] == "InvalidSpec"
    assert "jobflow Flow is not DAG" in flow["status"]["state"]["message"]
    assert vcjobs(cluster, namespace) == {}
    warnings = [m for t, r, m in events_of(cluster, namespace, "loop") if (t, r) == ("Warning", "InvalidSpec")]
    assert len(warnings) == 1 and "not DAG" in warnings[0]


def test_a_vcjob_refused_by_volcanos_webhook_is_shown_in_status_and_an_event(cluster: LocalCluster, namespace: str,
                                                                             engine) -> None:
    apply(cluster, namespace, template("a").replace("queue: default", "queue: no-such-queue"))
    apply(cluster, namespace, "apiVersion: flow.volcano.sh/v1alpha1\nkind: JobFlow\nmetadata: {name: refused}\n"
                              "spec: {flows: [{name: a}]}")

    def rejected() -> dict | None:
        flow = jobflow(cluster, namespace, "refused") or {}
        return flow if ((flow.get("status") or {}).get("state") or {}).get("reason") == "JobRejected" else None

    flow = cluster.wait_until("the refusal in the status", rejected, timeout=30)
    assert "no-such-queue" in flow["status"]["state"]["message"]
    assert vcjobs(cluster, namespace) == {}
    assert ("Warning", "JobRejected") in [(t, r) for t, r, _ in events_of(cluster, namespace, "refused")]


def test_a_vcjob_its_ttl_deletes_while_no_handler_looks_is_still_recorded_and_never_run_again(
        cluster: LocalCluster, namespace: str, handler) -> None:
    quick = template("a").replace("  queue: default\n", "  queue: default\n  ttlSecondsAfterFinished: 0\n")
    apply(cluster, namespace, quick + "---\n" + template("b"))
    apply(cluster, namespace, "apiVersion: flow.volcano.sh/v1alpha1\nkind: JobFlow\nmetadata: {name: ttl}\n"
                              "spec: {jobRetainPolicy: retain, flows: [{name: a}, {name: b, dependsOn: {targets: [a]}}]}")
    assert send(handler.url, JOBFLOW, namespace, "ttl")[0] == 202  # creates ttl-a; then no handler looks

    def deleted_by_ttl() -> dict | None:
        job = vcjobs(cluster, namespace).get("ttl-a") or {}
        return job if job.get("metadata", {}).get("deletionTimestamp") else None

    held = cluster.wait_until("Volcano's TTL to delete ttl-a", deleted_by_ttl, timeout=60)
    assert held["status"]["state"]["phase"] == "Completed"  # our finalizer keeps it until it is recorded

    assert send(handler.url, JOBFLOW, namespace, "ttl")[0] == 202

    flow = jobflow(cluster, namespace, "ttl")
    assert flow["status"]["completedJobs"] == ["ttl-a"]
    assert flow["status"]["pendingJobs"] == ["ttl-b"]
    cluster.wait_until("ttl-a to be released and gone", lambda: "ttl-a" not in vcjobs(cluster, namespace), timeout=30)
    created = [m for _, reason, m in events_of(cluster, namespace, "ttl") if reason == "Created"]
    assert sorted(created) == ["create a job named ttl-a!", "create a job named ttl-b!"]
