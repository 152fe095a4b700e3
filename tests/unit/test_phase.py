"""The JobFlow phase follows from one table of vcjob phases and one list of rules."""

from datetime import timedelta

import pytest

from jobflow_core.models import JobFlowPhase, VcJobPhase
from jobflow_core.vocabulary.durations import go_duration
from jobflow_core.vocabulary.phase import (
    FLOW_PHASE_RULES,
    JOB_PHASE_CATEGORY,
    FlowOutcome,
    JobCategory,
    category_of,
    decide_flow_phase,
    is_final,
    outcome_of_phase,
    outdated_by_record,
    regresses,
)

P = VcJobPhase
C = JobCategory


def phase(*job_phases: VcJobPhase | None, deleting: bool = False, spec_valid: bool = True) -> JobFlowPhase:
    """The phase of an upstream JobFlow (no handlers: every failure is unhandled; fail fast)."""
    categories = [category_of(p) for p in job_phases]
    return decide_flow_phase(deleting=deleting, spec_valid=spec_valid, categories=categories,
                             unhandled_failure=C.FAILED in categories)


def ours(*categories: JobCategory, unhandled: bool = False, fail_fast: bool = True) -> JobFlowPhase:
    return decide_flow_phase(deleting=False, spec_valid=True, categories=categories, unhandled_failure=unhandled,
                             fail_fast=fail_fast)


def test_the_category_table_covers_every_vcjob_phase_and_the_absence_of_a_vcjob():
    assert set(JOB_PHASE_CATEGORY) == {None, *VcJobPhase}


@pytest.mark.parametrize(
    ("job_phase", "category"),
    [
        (None, JobCategory.WAITING),
        (P.NEW, JobCategory.PENDING),
        (P.PENDING, JobCategory.PENDING),
        (P.RUNNING, JobCategory.ACTIVE),
        (P.RESTARTING, JobCategory.ACTIVE),
        (P.COMPLETING, JobCategory.ACTIVE),
        (P.ABORTING, JobCategory.ACTIVE),
        (P.TERMINATING, JobCategory.ACTIVE),
        (P.COMPLETED, JobCategory.DONE),
        (P.FAILED, JobCategory.FAILED),
        (P.TERMINATED, JobCategory.FAILED),
        (P.ABORTED, JobCategory.FAILED),
    ],
)
def test_each_vcjob_phase_has_its_category(job_phase, category):
    assert JOB_PHASE_CATEGORY[job_phase] is category


def test_exactly_completed_failed_terminated_and_aborted_are_final():
    assert {p for p in VcJobPhase if is_final(p)} == {P.COMPLETED, P.FAILED, P.TERMINATED, P.ABORTED}


@pytest.mark.parametrize("job_phase", [None, *VcJobPhase])
def test_every_vcjob_phase_alone_gives_a_jobflow_phase(job_phase):
    expected = {
        JobCategory.WAITING: JobFlowPhase.PENDING,
        JobCategory.PENDING: JobFlowPhase.PENDING,
        JobCategory.ACTIVE: JobFlowPhase.RUNNING,
        JobCategory.DONE: JobFlowPhase.SUCCEED,
        JobCategory.FAILED: JobFlowPhase.FAILED,
    }[JOB_PHASE_CATEGORY[job_phase]]
    assert phase(job_phase) is expected


def test_the_rules_can_be_printed_as_a_table():
    lines = [f"{rule.when:<50} {rule.phase}" for rule in FLOW_PHASE_RULES]
    assert lines[0].startswith("the JobFlow is being deleted") and lines[-1].endswith("Pending")


def test_no_flows_is_succeed():
    assert phase() is JobFlowPhase.SUCCEED


def test_a_jobflow_being_deleted_is_terminating_whatever_its_jobs_do():
    assert phase(P.FAILED, P.RUNNING, deleting=True, spec_valid=False) is JobFlowPhase.TERMINATING


def test_an_invalid_spec_is_failed():
    assert phase(deleting=False, spec_valid=False) is JobFlowPhase.FAILED


def test_one_failed_job_fails_the_jobflow_even_while_others_run():
    assert phase(P.COMPLETED, P.RUNNING, P.TERMINATED, None) is JobFlowPhase.FAILED


def test_every_job_completed_is_succeed_without_passing_through_running():
    assert phase(P.COMPLETED, P.COMPLETED) is JobFlowPhase.SUCCEED


def test_a_completed_job_and_a_flow_not_started_yet_is_running():
    assert phase(P.COMPLETED, None) is JobFlowPhase.RUNNING


def test_only_pending_and_waiting_flows_is_pending():
    assert phase(P.NEW, P.PENDING, None) is JobFlowPhase.PENDING


def test_the_outcome_of_a_vcjob_phase_is_succeeded_for_done_failed_for_failed_and_none_otherwise():
    for job_phase in (None, *VcJobPhase):
        expected = {C.DONE: FlowOutcome.SUCCEEDED, C.FAILED: FlowOutcome.FAILED}.get(category_of(job_phase))
        assert outcome_of_phase(job_phase) is expected


def test_a_handled_failure_and_a_skipped_flow_end_the_jobflow_as_succeed():
    assert ours(C.DONE, C.FAILED, C.SKIPPED) is JobFlowPhase.SUCCEED


def test_a_handled_failure_while_the_handler_runs_is_running():
    assert ours(C.FAILED, C.ACTIVE) is JobFlowPhase.RUNNING


def test_an_unhandled_failure_fails_a_fail_fast_jobflow_at_once():
    assert ours(C.FAILED, C.ACTIVE, C.WAITING, unhandled=True) is JobFlowPhase.FAILED


def test_an_unhandled_failure_keeps_a_keep_going_jobflow_running_until_everything_ended():
    assert ours(C.FAILED, C.ACTIVE, unhandled=True, fail_fast=False) is JobFlowPhase.RUNNING
    assert ours(C.FAILED, C.DONE, C.SKIPPED, unhandled=True, fail_fast=False) is JobFlowPhase.FAILED


def test_only_skipped_flows_is_succeed():
    assert ours(C.SKIPPED) is JobFlowPhase.SUCCEED


@pytest.mark.parametrize(
    ("duration", "text"),
    [
        (timedelta(0), "0s"),
        (timedelta(minutes=2, seconds=56), "2m56s"),
        (timedelta(hours=1, seconds=5), "1h0m5s"),
        (timedelta(minutes=1), "1m0s"),
        (timedelta(hours=49), "49h0m0s"),
        (timedelta(milliseconds=500), "500ms"),
        (timedelta(seconds=1, milliseconds=500), "1.5s"),
        (timedelta(microseconds=1_500), "1.5ms"),
        (timedelta(microseconds=1), "1µs"),
        (timedelta(seconds=-5), "-5s"),
    ],
)
def test_durations_are_written_like_gos_duration_string(duration, text):
    assert go_duration(duration) == text


ANY_CATEGORIES = [(C.ACTIVE,), (C.WAITING, C.PENDING), (C.DONE,), (C.FAILED, C.ACTIVE), (C.SKIPPED, C.DONE)]


@pytest.mark.parametrize("categories", ANY_CATEGORIES)
@pytest.mark.parametrize("ended", [JobFlowPhase.SUCCEED, JobFlowPhase.FAILED])
def test_an_ended_jobflow_keeps_its_phase_whatever_is_observed_until_deleted(categories, ended):
    """Issue 23: a vcjob list older than the status (or a spec edited after the end) never moves it back."""
    assert decide_flow_phase(deleting=False, spec_valid=True, categories=categories, unhandled_failure=False,
                             recorded=ended) is ended
    assert decide_flow_phase(deleting=True, spec_valid=True, categories=categories, unhandled_failure=False,
                             recorded=ended) is JobFlowPhase.TERMINATING


@pytest.mark.parametrize("recorded", [None, JobFlowPhase.PENDING, JobFlowPhase.RUNNING, JobFlowPhase.SUSPENDED])
def test_a_phase_that_has_not_ended_is_no_memory_the_observation_decides(recorded):
    assert decide_flow_phase(deleting=False, spec_valid=True, categories=[C.DONE], unhandled_failure=False,
                             recorded=recorded) is JobFlowPhase.SUCCEED
    assert decide_flow_phase(deleting=False, spec_valid=True, categories=[C.ACTIVE], unhandled_failure=False,
                             recorded=recorded) is JobFlowPhase.RUNNING


@pytest.mark.parametrize(("before", "after", "rerun", "regression"), [
    (JobFlowPhase.SUCCEED, JobFlowPhase.RUNNING, False, True),
    (JobFlowPhase.FAILED, JobFlowPhase.PENDING, False, True),
    (JobFlowPhase.FAILED, JobFlowPhase.SUCCEED, False, True),
    (JobFlowPhase.FAILED, JobFlowPhase.RUNNING, True, False),
    (JobFlowPhase.SUCCEED, JobFlowPhase.TERMINATING, False, False),
    (JobFlowPhase.SUCCEED, JobFlowPhase.SUCCEED, False, False),
    (JobFlowPhase.RUNNING, JobFlowPhase.PENDING, False, False),
    (None, JobFlowPhase.RUNNING, False, False),
])
def test_only_an_ended_phase_can_regress_and_only_a_rerun_may_leave_it(before, after, rerun, regression):
    assert regresses(before, after, rerun_accepted=rerun) is regression


@pytest.mark.parametrize(("live", "recorded", "outdated"), [
    (P.RUNNING, P.COMPLETED, True),
    (None, P.COMPLETED, True),
    (P.PENDING, P.FAILED, True),
    (P.RUNNING, P.TERMINATED, True),
    (P.RUNNING, P.ABORTED, False),  # a user resumed an Aborted vcjob: the live phase is the newer truth
    (P.COMPLETED, P.COMPLETED, False),
    (P.RUNNING, P.PENDING, False),
    (P.RUNNING, None, False),
])
def test_a_listed_vcjob_that_has_not_ended_is_older_than_a_record_of_its_terminal_end(live, recorded, outdated):
    assert outdated_by_record(live, recorded) is outdated
