"""The status reports every vcjob once, with times taken from the vcjobs themselves, and never a null."""

from datetime import timedelta

import pytest

from jobflow_core import plan
from jobflow_core.models import VcJob, VcJobPhase
from jobflow_core.planning.status import JOB_LIST_OF_PHASE
from scenario import DIAMOND, T0, Cluster, jobflow, templates_for, vcjob

P = VcJobPhase
LISTS = ["pendingJobs", "runningJobs", "completedJobs", "failedJobs", "terminatedJobs", "unKnowJobs"]
FLOW = jobflow("spec: {flows: [{name: a}]}")


def status_of(*jobs, flow=FLOW):
    return plan(flow, templates=templates_for(flow), jobs=list(jobs), now=T0).status


def walk(value, path="status"):
    """Every (path, value) in a JSON document."""
    yield path, value
    if isinstance(value, dict):
        for key, item in value.items():
            yield from walk(item, f"{path}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from walk(item, f"{path}[{index}]")


@pytest.mark.parametrize("phase", list(VcJobPhase))
def test_every_vcjob_phase_puts_the_job_in_exactly_one_list(phase):
    wire = status_of(vcjob(FLOW, "a", phase)).to_wire()
    assert [name for name in LISTS if "test-a" in wire.get(name, [])] == [JOB_LIST_OF_PHASE[phase]]


@pytest.mark.parametrize(
    ("phase", "list_name"),
    [
        (P.NEW, "pendingJobs"),
        (P.PENDING, "pendingJobs"),
        (P.RUNNING, "runningJobs"),
        (P.COMPLETED, "completedJobs"),
        (P.FAILED, "failedJobs"),
        (P.TERMINATED, "terminatedJobs"),
        (P.ABORTING, "unKnowJobs"),
        (P.ABORTED, "unKnowJobs"),
        (P.RESTARTING, "unKnowJobs"),
        (P.COMPLETING, "unKnowJobs"),
        (P.TERMINATING, "unKnowJobs"),
    ],
)
def test_the_list_of_each_vcjob_phase(phase, list_name):
    assert JOB_LIST_OF_PHASE[phase] == list_name


def test_a_finished_job_record_starts_at_creation_and_ends_at_its_last_transition():
    job = vcjob(FLOW, "a", P.COMPLETED, changed=T0 + timedelta(minutes=2, seconds=56), retry_count=2)
    [record] = status_of(job).to_wire()["jobStatusList"]
    assert record == {
        "name": "test-a",
        "state": "Completed",
        "startTimestamp": "2026-01-02T03:04:05Z",
        "endTimestamp": "2026-01-02T03:07:01Z",
        "restartCount": 2,
        "runningHistories": [{"startTimestamp": "2026-01-02T03:04:05Z", "state": "Completed"}],
    }


def test_a_running_job_record_has_no_end_timestamp_and_no_null():
    [record] = status_of(vcjob(FLOW, "a", P.RUNNING)).to_wire()["jobStatusList"]
    assert "endTimestamp" not in record
    assert record["restartCount"] == 0


def test_running_histories_follow_the_vcjob_conditions_each_ended_by_the_next():
    t = [T0 + timedelta(seconds=s) for s in (0, 30, 90)]
    job = vcjob(FLOW, "a", P.RUNNING, conditions=[(P.PENDING, t[0]), (P.RUNNING, t[1]), (P.RESTARTING, t[2])])
    [record] = status_of(job).to_wire()["jobStatusList"]
    assert record["runningHistories"] == [
        {"startTimestamp": "2026-01-02T03:04:05Z", "endTimestamp": "2026-01-02T03:04:35Z", "state": "Pending"},
        {"startTimestamp": "2026-01-02T03:04:35Z", "endTimestamp": "2026-01-02T03:05:35Z", "state": "Running"},
        {"startTimestamp": "2026-01-02T03:05:35Z", "state": "Restarting"},
    ]


def test_repeated_conditions_of_one_phase_make_one_history_span():
    # Volcano appends a condition on every status update, e.g. Pending, Pending, Running, Running, Completed.
    t = [T0 + timedelta(seconds=s) for s in (0, 1, 2, 3, 4)]
    phases = [P.PENDING, P.PENDING, P.RUNNING, P.RUNNING, P.COMPLETED]
    job = vcjob(FLOW, "a", P.COMPLETED, changed=t[4], conditions=list(zip(phases, t)))
    [record] = status_of(job).to_wire()["jobStatusList"]
    assert [(h["state"], h["startTimestamp"][-3:-1]) for h in record["runningHistories"]] == [
        ("Pending", "05"), ("Running", "07"), ("Completed", "09")]


def test_a_vcjob_not_yet_seen_by_volcano_has_no_history_and_no_state():
    [record] = status_of(vcjob(FLOW, "a")).to_wire()["jobStatusList"]
    assert record == {"name": "test-a", "startTimestamp": "2026-01-02T03:04:05Z", "restartCount": 0}


def test_the_condition_of_a_finished_job_has_its_running_duration_in_go_format():
    job = vcjob(FLOW, "a", P.COMPLETED, changed=T0 + timedelta(minutes=2, seconds=56))
    assert status_of(job).to_wire()["conditions"] == {
        "test-a": {"phase": "Completed", "createTime": "2026-01-02T03:04:05Z", "runningDuration": "2m56s"}
    }


def test_the_condition_prefers_the_vcjobs_own_running_duration_and_copies_task_counts():
    wire = vcjob(FLOW, "a", P.COMPLETED, changed=T0 + timedelta(hours=1)).to_wire()
    wire["status"] |= {"runningDuration": "1h0m5s", "taskStatusCount": {"nginx": {"phase": {"Succeeded": 1}}}}
    job = VcJob.model_validate(wire)
    condition = status_of(job).to_wire()["conditions"]["test-a"]
    assert condition["runningDuration"] == "1h0m5s"
    assert condition["taskStatusCount"] == {"nginx": {"phase": {"Succeeded": 1}}}


def test_a_running_job_has_no_running_duration():
    assert "runningDuration" not in status_of(vcjob(FLOW, "a", P.RUNNING)).to_wire()["conditions"]["test-a"]


def test_a_vanished_job_keeps_its_record_list_and_condition():
    finished = status_of(vcjob(FLOW, "a", P.COMPLETED, changed=T0 + timedelta(minutes=1)))
    flow = FLOW.model_copy(update={"status": finished})
    assert status_of(flow=flow) == finished


def test_empty_lists_are_left_out_as_gos_omitempty_does():
    wire = status_of(vcjob(FLOW, "a", P.RUNNING)).to_wire()
    assert [name for name in LISTS if name in wire] == ["runningJobs"]
    assert "waitingFlows" not in wire


def test_no_status_of_a_whole_run_contains_a_null_and_every_time_ends_in_z():
    cluster = Cluster(jobflow(DIAMOND))
    documents = [cluster.step().status.to_wire()]
    for phase_by_flow in (
        {"a": P.PENDING},
        {"a": P.RUNNING},
        {"a": P.COMPLETED},
        {"b": P.RESTARTING},
        {"b": P.RUNNING},
        {"b": P.COMPLETED},
        {"c": P.COMPLETING, "d": P.ABORTING},
        {"c": P.COMPLETED, "d": P.ABORTED},
    ):
        for flow, phase in phase_by_flow.items():
            cluster.move(flow, phase)
        documents.append(cluster.step().status.to_wire())
    for document in documents:
        for path, value in walk(document):
            assert value is not None, path
            if path.endswith(("Timestamp", "createTime")):
                assert value.endswith("Z") and len(value) == 20, path
