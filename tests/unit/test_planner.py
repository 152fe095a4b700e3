"""What a plan creates, deletes and reports, one rule at a time."""

from datetime import timedelta

from jobflow_core import EventType, Reason, needs, observe, plan
from jobflow_core.models import JobFlowPhase, VcJobPhase
from scenario import T0, Cluster, jobflow, template, templates_for, vcjob

P = VcJobPhase

A_THEN_B = """
spec:
  flows:
    - name: a
    - name: b
      dependsOn:
        targets: [a]
"""

A_AND_B_THEN_C = """
spec:
  flows:
    - name: a
    - name: b
    - name: c
      dependsOn:
        targets: [a]
"""


def run(flow, *jobs, templates=None):
    return plan(flow, templates=templates_for(flow) if templates is None else templates, jobs=list(jobs), now=T0)


def created(result) -> list[str]:
    return [create.job_name for create in result.creates]


def after(flow, result):
    """``flow`` as the shell leaves it: with the plan's status written."""
    return flow.model_copy(update={"status": result.status})


def test_the_first_plan_creates_the_flows_without_dependencies_and_lists_them_as_pending():
    flow = jobflow(A_AND_B_THEN_C)
    result = run(flow)
    assert created(result) == ["test-a", "test-b"]
    assert result.status.pending_jobs == ["test-a", "test-b"]
    assert result.status.state.phase is JobFlowPhase.PENDING


def test_each_create_comes_with_upstreams_created_event_to_record_after_it_succeeded():
    result = run(jobflow(A_THEN_B))
    assert [(e.type, e.reason, e.message) for e in (create.event for create in result.creates)] == [
        (EventType.NORMAL, Reason.CREATED, "create a job named test-a!")
    ]


def test_a_flow_is_not_created_while_its_target_is_still_running():
    flow = jobflow(A_THEN_B)
    assert created(run(flow, vcjob(flow, "a", P.RUNNING))) == []


def test_a_flow_is_created_once_its_target_completed():
    flow = jobflow(A_THEN_B)
    assert created(run(flow, vcjob(flow, "a", P.COMPLETED))) == ["test-b"]


def test_a_flow_that_already_has_its_vcjob_is_not_created_again():
    flow = jobflow(A_THEN_B)
    assert created(run(flow, vcjob(flow, "a", P.COMPLETED), vcjob(flow, "b", P.NEW))) == []


def test_no_flows_succeeds_at_once():
    result = run(jobflow("spec: {flows: []}"))
    assert result.status.state.phase is JobFlowPhase.SUCCEED
    assert result.status.progress == "0/0"


def test_a_pending_jobflow_whose_jobs_all_completed_goes_straight_to_succeed():
    flow = jobflow("spec: {flows: [{name: a}, {name: b}]}", status={"state": {"phase": "Pending"}})
    result = run(flow, vcjob(flow, "a", P.COMPLETED), vcjob(flow, "b", P.COMPLETED))
    assert result.status.state.phase is JobFlowPhase.SUCCEED
    assert [e.message for e in result.events] == ["JobFlow test: Pending -> Succeed"]


def test_a_failed_jobflow_creates_nothing_but_keeps_tracking_its_running_jobs():
    flow = jobflow(A_AND_B_THEN_C)
    result = run(flow, vcjob(flow, "a", P.FAILED), vcjob(flow, "b", P.RUNNING))
    assert created(result) == []
    assert result.status.state.phase is JobFlowPhase.FAILED
    assert (result.status.failed_jobs, result.status.running_jobs) == (["test-a"], ["test-b"])
    later = run(after(flow, result), vcjob(flow, "a", P.FAILED), vcjob(flow, "b", P.COMPLETED))
    assert later.status.completed_jobs == ["test-b"]


def test_a_failed_jobflow_says_which_job_failed_and_what_to_do():
    flow = jobflow(A_THEN_B)
    result = run(flow, vcjob(flow, "a", P.TERMINATED))
    assert result.status.state.reason == Reason.JOB_FAILED
    assert result.status.state.message.startswith('vcjob "default/test-a" of flow "a" is Terminated')
    assert [w.message for w in result.status.waiting_flows] == ["not started: the JobFlow is Failed"]
    assert [e.reason for e in result.events] == [Reason.PHASE_CHANGED, Reason.JOB_FAILED]


def test_a_completed_vcjob_that_was_deleted_is_not_created_again_and_its_dependents_start():
    flow = jobflow(A_THEN_B)
    first = run(flow, vcjob(flow, "a", P.COMPLETED))
    result = run(after(flow, first))  # test-a deleted by a user or ttlSecondsAfterFinished
    assert created(result) == ["test-b"]
    assert result.status.completed_jobs == ["test-a"]


def test_a_vcjob_that_vanished_before_it_finished_is_created_again():
    flow = jobflow(A_THEN_B)
    first = run(flow, vcjob(flow, "a", P.RUNNING))
    result = run(after(flow, first))
    assert created(result) == ["test-a"]
    assert result.status.pending_jobs == ["test-a"]


def test_vcjobs_of_another_jobflow_are_ignored():
    flow = jobflow(A_THEN_B)
    other = jobflow(A_THEN_B.replace("spec:", "metadata: {name: other, uid: other-uid}\nspec:"))
    result = run(flow, vcjob(other, "a", P.COMPLETED))
    assert created(result) == ["test-a"]
    assert "other-a" not in str(result.status.to_wire())


def test_a_vcjob_with_our_name_owned_by_someone_else_blocks_its_flow_with_a_warning():
    flow = jobflow(A_THEN_B)
    result = run(flow, vcjob(flow, "a", P.RUNNING, owner_uid="uid-of-a-deleted-jobflow"))
    assert created(result) == []
    assert result.status.state.reason == Reason.JOB_NAME_CONFLICT
    assert "delete or rename that vcjob" in result.status.state.message
    assert [(e.type, e.reason) for e in result.events][-1] == (EventType.WARNING, Reason.JOB_NAME_CONFLICT)
    assert result.status.waiting_flows[0].message == result.status.state.message


def test_a_missing_template_keeps_its_flow_waiting_and_says_how_to_fix_it():
    flow = jobflow(A_AND_B_THEN_C)
    result = run(flow, templates={"b": template("b")})
    assert created(result) == ["test-b"]
    assert result.status.state.reason == Reason.TEMPLATE_NOT_FOUND
    assert result.status.state.message == (
        'JobTemplate "default/a" not found: create it (kubectl apply -f ...) and the flow will continue'
    )
    assert [e.type for e in result.events if e.reason == Reason.TEMPLATE_NOT_FOUND] == [EventType.WARNING]


def test_the_missing_template_warning_is_not_repeated_when_nothing_changed():
    flow = jobflow(A_THEN_B)
    first = run(flow, templates={})
    again = run(after(flow, first), templates={})
    assert (again.events, again.status_changed) == ([], False)


def test_once_the_missing_template_exists_the_flow_starts_and_the_reason_is_cleared():
    flow = jobflow(A_THEN_B)
    first = run(flow, templates={})
    result = run(after(flow, first))
    assert created(result) == ["test-a"]
    assert (result.status.state.reason, result.status.state.message) == (None, None)


def test_an_invalid_spec_creates_nothing_fails_and_warns_once():
    flow = jobflow("spec: {flows: [{name: a, dependsOn: {targets: [b]}}, {name: b, dependsOn: {targets: [a]}}]}")
    result = run(flow)
    assert created(result) == []
    assert result.status.state.phase is JobFlowPhase.FAILED
    assert result.status.state.reason == Reason.INVALID_SPEC
    assert result.status.state.message.startswith("jobflow Flow is not DAG: a -> b -> a")
    assert [e.reason for e in result.events] == [Reason.PHASE_CHANGED, Reason.INVALID_SPEC]
    assert run(after(flow, result)).events == []


def test_a_jobflow_being_deleted_is_terminating_and_creates_and_deletes_nothing():
    flow = jobflow(A_THEN_B.replace("spec:", "metadata: {deletionTimestamp: '2026-01-02T03:04:05Z'}\nspec:"))
    result = run(flow, vcjob(flow, "a", P.COMPLETED))
    assert result.status.state.phase is JobFlowPhase.TERMINATING
    assert (result.creates, result.deletes) == ([], [])


def test_retain_policy_delete_deletes_every_live_job_once_succeeded_and_keeps_their_record():
    flow = jobflow("spec: {jobRetainPolicy: delete, flows: [{name: a}, {name: b}]}")
    result = run(flow, vcjob(flow, "a", P.COMPLETED), vcjob(flow, "b", P.COMPLETED))
    assert result.deletes == ["test-a", "test-b"]
    assert result.status.completed_jobs == ["test-a", "test-b"]
    assert [r.name for r in result.status.job_status_list] == ["test-a", "test-b"]
    gone = run(after(flow, result))
    assert (gone.creates, gone.deletes, gone.status_changed) == ([], [], False)


def test_without_retain_policy_delete_the_jobs_of_a_succeeded_jobflow_are_kept():
    flow = jobflow("spec: {flows: [{name: a}]}")
    assert run(flow, vcjob(flow, "a", P.COMPLETED)).deletes == []


def test_retain_policy_delete_does_not_delete_the_jobs_of_a_failed_jobflow():
    flow = jobflow("spec: {jobRetainPolicy: delete, flows: [{name: a}, {name: b}]}")
    assert run(flow, vcjob(flow, "a", P.COMPLETED), vcjob(flow, "b", P.FAILED)).deletes == []


def test_planning_the_same_inputs_again_changes_nothing_and_repeats_no_event():
    cluster = Cluster(jobflow(A_AND_B_THEN_C))
    cluster.step()
    cluster.move("a", P.RUNNING)
    cluster.step()
    again = cluster.step()
    assert (again.status_changed, again.events, again.creates) == (False, [], [])


def test_the_status_does_not_depend_on_the_time_of_planning():
    flow = jobflow(A_THEN_B)
    jobs = [vcjob(flow, "a", P.COMPLETED)]
    early = plan(flow, templates=templates_for(flow), jobs=jobs, now=T0)
    late = plan(flow, templates=templates_for(flow), jobs=jobs, now=T0 + timedelta(days=3))
    assert early == late


def test_templates_needed_are_every_flows_once_for_the_estimates_then_only_the_flows_about_to_start():
    assert list(needs(observe(jobflow(A_AND_B_THEN_C), jobs=[])).templates) == ["a", "b", "c"]
    flow = jobflow(A_AND_B_THEN_C, status={"estimates": [{"flow": name} for name in "abc"]})
    assert list(needs(observe(flow, jobs=[])).templates) == ["a", "b"]
    running = [vcjob(flow, "a", P.COMPLETED), vcjob(flow, "b", P.RUNNING)]
    assert list(needs(observe(flow, jobs=running)).templates) == ["c"]


def test_templates_needed_is_empty_for_a_failed_jobflow():
    flow = jobflow(A_AND_B_THEN_C)
    assert list(needs(observe(flow, jobs=[vcjob(flow, "a", P.FAILED)])).templates) == []


def test_templates_needed_skips_a_flow_whose_job_name_is_taken():
    flow = jobflow(A_THEN_B, status={"estimates": [{"flow": "a"}, {"flow": "b"}]})
    assert list(needs(observe(flow, jobs=[vcjob(flow, "a", owner_uid="someone-else")])).templates) == []


def test_the_status_records_the_generation_it_was_computed_from():
    flow = jobflow(A_THEN_B.replace("spec:", "metadata: {generation: 4}\nspec:"))
    assert run(flow).status.observed_generation == 4


def test_a_flow_removed_from_the_spec_keeps_its_job_reported_and_starts_nothing():
    flow = jobflow("spec: {flows: [{name: a}]}")
    result = run(flow, vcjob(flow, "a", P.COMPLETED), vcjob(flow, "gone", P.RUNNING))
    assert result.status.running_jobs == ["test-gone"]
    assert result.status.state.phase is JobFlowPhase.SUCCEED
    assert result.status.progress == "1/1"


def test_a_succeeded_jobflow_keeps_its_skipped_flows_and_waiting_list_when_planned_again():
    """Issue 23 regression: the rule that holds back a succeeded JobFlow's flows must not hide why a flow was
    skipped (it comes after the skip rules of the start table)."""
    flow = jobflow("spec: {flows: [{name: a}, {name: b, dependsOn: {targets: [a], outcome: Failed}}]}")
    jobs = [vcjob(flow, "a", VcJobPhase.COMPLETED)]
    first = plan(flow, templates=templates_for(flow), jobs=jobs, now=T0)
    assert first.status.state.phase is JobFlowPhase.SUCCEED and first.status.skipped_flows
    again = plan(flow.model_copy(update={"status": first.status}), templates=templates_for(flow), jobs=jobs, now=T0)
    assert again.status == first.status and not again.status_changed
