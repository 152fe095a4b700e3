"""The upstream example, a -> b -> {c, d} -> e with jobRetainPolicy: delete, planned step by step."""

from jobflow_core.models import JobFlowPhase, VcJobPhase
from scenario import DIAMOND, Cluster, jobflow

P = VcJobPhase


def created(plan) -> list[str]:
    return [create.job_name for create in plan.creates]


def test_the_upstream_example_runs_each_flow_after_its_targets_complete_then_cleans_up():
    cluster = Cluster(jobflow(DIAMOND))

    step = cluster.step()
    assert created(step) == ["test-a"]
    assert cluster.phase is JobFlowPhase.PENDING
    assert cluster.flow.status.pending_jobs == ["test-a"]
    assert cluster.flow.status.progress == "0/5"

    cluster.move("a", P.PENDING)
    cluster.move("a", P.RUNNING)
    step = cluster.step()
    assert created(step) == []
    assert cluster.phase is JobFlowPhase.RUNNING
    assert cluster.flow.status.running_jobs == ["test-a"]

    cluster.move("a", P.COMPLETED)
    assert created(cluster.step()) == ["test-b"]
    assert cluster.flow.status.completed_jobs == ["test-a"]
    assert cluster.flow.status.pending_jobs == ["test-b"]

    cluster.move("b", P.RUNNING)
    assert created(cluster.step()) == []
    cluster.move("b", P.COMPLETED)
    assert created(cluster.step()) == ["test-c", "test-d"]

    cluster.move("c", P.COMPLETED)
    cluster.move("d", P.RUNNING)
    step = cluster.step()
    assert created(step) == []
    assert [(w.name, w.waiting_for) for w in cluster.flow.status.waiting_flows] == [("e", ["d"])]

    cluster.move("d", P.COMPLETED)
    assert created(cluster.step()) == ["test-e"]
    assert cluster.flow.status.progress == "4/5"

    cluster.move("e", P.COMPLETED)
    step = cluster.step()
    assert cluster.phase is JobFlowPhase.SUCCEED
    assert step.deletes == ["test-a", "test-b", "test-c", "test-d", "test-e"]
    assert cluster.job_names() == []
    assert cluster.flow.status.completed_jobs == ["test-a", "test-b", "test-c", "test-d", "test-e"]
    assert cluster.flow.status.progress == "5/5"

    step = cluster.step()
    assert (step.creates, step.deletes, step.status_changed, step.events) == ([], [], False, [])
    assert cluster.phase is JobFlowPhase.SUCCEED


def test_the_example_records_one_phase_change_event_per_transition():
    cluster = Cluster(jobflow(DIAMOND))
    messages = [event.message for event in cluster.step().events]
    cluster.move("a", P.RUNNING)
    messages += [event.message for event in cluster.step().events]
    for flows in (["a"], ["b"], ["c", "d"], ["e"]):
        for flow in flows:
            cluster.move(flow, P.COMPLETED)
        messages += [event.message for event in cluster.step().events]
    assert messages == [
        "JobFlow test: (none) -> Pending",
        "JobFlow test: Pending -> Running",
        "JobFlow test: Running -> Succeed",
    ]
