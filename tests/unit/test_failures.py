"""Why a JobFlow failed (``jobflow_core.planning.failures``): one example per row, and advice a user can follow as
written."""

import re
import shlex

import pytest

from jobflow_core import plan, plan_observation
from jobflow_core.dag.awaits import Run, Seen
from jobflow_core.planning.observation import observe
from jobflow_core.models import JobFlowPhase, VcJobPhase
from jobflow_core.planning.failures import FAILURE_RULES, rerun_advice
from scenario import T0, Cluster, jobflow, templates_for, vcjob

P = VcJobPhase

A_THEN_B = "spec: {flows: [{name: a}, {name: b, dependsOn: {targets: [a]}}]}"
DELETING = jobflow("metadata: {deletionTimestamp: '2026-01-02T03:04:05Z'}\n" + A_THEN_B)
CYCLE = jobflow("spec: {flows: [{name: a, dependsOn: {targets: [b]}}, {name: b, dependsOn: {targets: [a]}}]}")
PAST_DEADLINE = jobflow("metadata: {creationTimestamp: '2026-01-02T01:00:00Z'}\n"
                        "spec: {activeDeadlineSeconds: 60, flows: [{name: a}, {name: b, dependsOn: {targets: [a]}}]}")
FAILED = jobflow(A_THEN_B)
STOPPED = jobflow(A_THEN_B.replace("spec: {", "spec: {shutdown: Stop, "))
TERMINATED = jobflow(A_THEN_B.replace("spec: {", "spec: {shutdown: Terminate, "))


WAITER = jobflow("metadata: {uid: uid-w}\nspec: {dependsOn: {jobFlows: [{name: train}]}, flows: [{name: a}]}")


def state_of(flow, *jobs):
    return plan(flow, templates=templates_for(flow), jobs=list(jobs), now=T0).status.state


def awaited_failed():
    """The JobFlow it waits for (:mod:`jobflow_core.dag.awaits`) ended Failed."""
    seen = Seen(jobflows={"train": Run("train", "uid-t", T0, JobFlowPhase.FAILED, T0)})
    observation = observe(WAITER, jobs=[], now=T0, awaited=seen)
    return plan_observation(observation, templates=templates_for(WAITER)).status.state


ROWS = {
    "the JobFlow is being deleted": lambda: state_of(DELETING, vcjob(DELETING, "a", P.FAILED)),
    "its spec is invalid": lambda: state_of(CYCLE),
    "activeDeadlineSeconds passed before every flow ended":
        lambda: state_of(PAST_DEADLINE, vcjob(PAST_DEADLINE, "a", P.FAILED)),
    "the JobFlow was stopped": lambda: state_of(STOPPED, vcjob(STOPPED, "a", P.RUNNING)),
    "the JobFlow was terminated": lambda: state_of(TERMINATED, vcjob(TERMINATED, "a", P.RUNNING)),
    "a flow failed and no flow handles its failure": lambda: state_of(FAILED, vcjob(FAILED, "a", P.TERMINATED)),
    "another JobFlow it waits for failed and no flow handles it": awaited_failed,
}


def test_a_stop_says_what_it_did_and_how_to_run_the_rest_again():
    state = ROWS["the JobFlow was stopped"]()
    assert state.phase is JobFlowPhase.FAILED
    assert state.message == (
        "Stopped (spec.shutdown: Stop): what ran was aborted, nothing new starts, its finally flows run (to run what "
        "did not finish again: kubectl jobflow retry -n default test, which also removes spec.shutdown)")


def test_a_stop_after_the_jobflow_succeeded_changes_nothing():
    state = state_of(STOPPED, vcjob(STOPPED, "a", P.COMPLETED), vcjob(STOPPED, "b", P.COMPLETED))
    assert (state.phase, state.reason) == (JobFlowPhase.SUCCEED, None)


def test_every_row_of_the_table_has_an_example_here():
    assert [rule.when for rule in FAILURE_RULES] == list(ROWS)


@pytest.mark.parametrize("rule", FAILURE_RULES, ids=lambda rule: rule.when)
def test_each_row_decides_its_example(rule):
    assert ROWS[rule.when]().reason == rule.reason


def test_a_failed_job_says_which_vcjob_failed_and_to_rerun_it_with_kubectl_jobflow_retry():
    assert ROWS["a flow failed and no flow handles its failure"]().message == (
        'vcjob "default/test-a" of flow "a" is Terminated (a JobFlow fails when one of its jobs fails: fix the '
        "cause, then run the failed flows and what follows them again: kubectl jobflow retry -n default test, or "
        "with plain kubectl: kubectl annotate jobflow -n default test --overwrite flow.volcano.sh/rerun=<any new "
        "value>)")


@pytest.mark.parametrize("row", ["its spec is invalid", "activeDeadlineSeconds passed before every flow ended"])
def test_every_failure_ends_with_the_rerun_advice_and_none_says_re_create(row):
    message = ROWS[row]().message
    assert message.endswith(f"then rerun it: {rerun_advice(name='test', namespace='default')})")
    assert "re-create" not in message


def test_the_plain_kubectl_advice_followed_as_written_runs_the_failed_flow_again():
    cluster = Cluster(jobflow(A_THEN_B))
    cluster.step()
    cluster.move("a", P.FAILED)
    cluster.step()
    assert cluster.phase is JobFlowPhase.FAILED
    advice = cluster.flow.status.state.message.split("with plain kubectl: ", 1)[1].rstrip(")")
    words = shlex.split(advice.replace("<any new value>", "1"))
    assert words[:5] == ["kubectl", "annotate", "jobflow", "-n", "default"]
    key, value = re.fullmatch(r"([^=]+)=(.*)", words[-1]).groups()
    metadata = cluster.flow.metadata.model_copy(update={"annotations": {key: value}})
    cluster.flow = cluster.flow.model_copy(update={"metadata": metadata})
    result = cluster.step()
    assert [create.job_name for create in result.creates] == ["test-a-r1"]
    assert cluster.phase is JobFlowPhase.PENDING  # the failed attempt no longer counts
    assert cluster.flow.status.state.reason is None


def test_a_jobflow_that_is_not_failed_has_no_failure():
    assert state_of(FAILED, vcjob(FAILED, "a", P.RUNNING)).reason is None
