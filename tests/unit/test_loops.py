"""``repeat``: iterations until a CEL condition on the last result holds, or a limit."""

from __future__ import annotations

import pytest

from jobflow_core import observe
from jobflow_core.models import JobFlowPhase, VcJobPhase
from jobflow_core.planning.planner import plan_observation
from jobflow_core.validation.jobflows import validate
from scenario import Cluster, jobflow

P = VcJobPhase
pytestmark = pytest.mark.filterwarnings("ignore:The recursion limit will not be reset")

LOOP = """
spec:
  flows:
  - name: train
    repeat: {until: "double(result) < 0.01", limit: LIMIT}
  - {name: deploy, dependsOn: {targets: [train]}, when: 'targets.train.iterations == 3 && targets.train.result < 0.01'}
"""


def finish_iteration(cluster: Cluster, index: int, result: str):
    """Iteration ``index`` completes with ``result``; the handler reads it (as the shell does) and plans."""
    cluster.move_job(f"test-train-{index}", P.COMPLETED)
    observation = observe(cluster.flow, jobs=list(cluster.jobs.values()), now=cluster.now)
    assert observation.results_needed() == [f"test-train-{index}"]
    plan = plan_observation(observation.with_answers(results={f"test-train-{index}": result}),
                            templates=cluster.templates)
    for create in plan.creates:
        cluster.add_job(create)
    cluster.flow = cluster.flow.model_copy(update={"status": plan.status})
    return plan


def test_a_loop_runs_one_iteration_after_another_until_its_condition_holds_then_its_dependent():
    cluster = Cluster(jobflow(LOOP.replace("LIMIT", "10")))
    [first] = cluster.step().creates
    assert first.job_name == "test-train-0"
    assert first.manifest["metadata"]["labels"]["flow.volcano.sh/iteration"] == "0"
    assert [c.job_name for c in finish_iteration(cluster, 0, "0.5").creates] == ["test-train-1"]
    assert [c.job_name for c in finish_iteration(cluster, 1, "0.1").creates] == ["test-train-2"]
    assert [c.flow for c in finish_iteration(cluster, 2, "0.005").creates] == ["deploy"]
    records = {r.name: r.result for r in cluster.flow.status.job_status_list}
    assert records == {"test-train-0": "0.5", "test-train-1": "0.1", "test-train-2": "0.005", "test-deploy": None}


def test_a_loop_that_reaches_its_limit_fails_and_says_why():
    cluster = Cluster(jobflow(LOOP.replace("LIMIT", "2")))
    cluster.step()
    finish_iteration(cluster, 0, "0.5")
    plan = finish_iteration(cluster, 1, "0.1")
    assert plan.creates == [] and cluster.phase is JobFlowPhase.FAILED
    assert cluster.flow.status.state.message.startswith(
        "flow \"train\" (repeat) failed: 2 iterations ran and until (double(result) < 0.01) never held "
        "(last result: '0.1')")


def test_a_failed_iteration_fails_the_loop_unless_retried():
    cluster = Cluster(jobflow(LOOP.replace("LIMIT", "10")))
    cluster.step()
    cluster.move_job("test-train-0", P.FAILED)
    cluster.step()
    assert cluster.phase is JobFlowPhase.FAILED
    assert "its iteration 0 failed" in cluster.flow.status.state.message


def test_a_repeat_that_cannot_run_is_refused():
    messages = [e.message for e in validate(jobflow(
        "spec: {flows: [{name: a, repeat: {until: 'result <', limit: 3}}, "
        "{name: b, repeat: {until: 'true', limit: 0}, forEach: {items: [1]}}]}"))]
    assert messages[-3:] == ['flow "a": repeat.until is not a valid CEL expression: a CEL syntax error at column 8 '
                             "of 'result <'", 'flow "b": repeat.limit must be from 1 to 2000',
                             'flow "b": repeat cannot be combined with forEach']
