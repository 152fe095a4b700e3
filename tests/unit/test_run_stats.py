"""JobTemplate statistics: counted once per vcjob whatever the events, bounded, percentiles and failure rate."""

from __future__ import annotations

from datetime import timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from jobflow_core import observe
from jobflow_core.insight.template_stats import WINDOW, EndedJob, newly_ended, record_runs
from jobflow_core.models import VcJobPhase
from jobflow_core.vocabulary.phase import FlowOutcome
from scenario import T0, Cluster, jobflow

P = VcJobPhase


def run(i: int, *, failed: bool = False, seconds: int = 10) -> EndedJob:
    return EndedJob(template="train", name=f"f-train-{i}", uid=f"uid-{i}",
               outcome=FlowOutcome.FAILED if failed else FlowOutcome.SUCCEEDED, seconds=seconds,
               end_time=T0 + timedelta(minutes=i), reason="PodFailed" if failed else None)


def test_counts_rate_percentiles_and_the_last_failure():
    status = record_runs(None, [run(i, seconds=10 * (i + 1), failed=i == 2) for i in range(5)])
    assert (status.runs, status.succeeded, status.failed, status.failure_rate) == (5, 4, 1, 0.2)
    assert (status.duration_p50_seconds, status.duration_p90_seconds) == (30, 50)
    assert (status.last_failure.job, status.last_failure.reason) == ("f-train-2", "PodFailed")


@given(st.lists(st.integers(min_value=0, max_value=60), max_size=120), st.data())
@settings(max_examples=100, deadline=None)
def test_a_run_is_counted_once_whatever_the_replays_and_their_order_and_the_window_stays_bounded(order, data):
    """Events arrive in any order and any number of times; each run is counted at most once, and every run
    delivered while it was among the WINDOW most recent is counted exactly once."""
    status = None
    for batch in [order[i:i + 3] for i in range(0, len(order), 3)]:
        status = record_runs(status, [run(i) for i in batch])
    counted = status.runs if status and status.runs else 0
    assert counted <= len(set(order))
    assert len(status.recent_runs or ()) <= WINDOW if status else True
    if len(set(order)) <= WINDOW:
        assert counted == len(set(order))
    if status is not None:  # everything delivered again, in another order: nothing changes
        assert record_runs(status, [run(i) for i in data.draw(st.permutations(sorted(set(order))))]) == status


def test_only_vcjobs_the_previous_status_did_not_record_as_ended_are_new_runs():
    cluster = Cluster(jobflow("spec: {flows: [{name: a}, {name: b, dependsOn: {targets: [a]}}]}"))
    cluster.step()
    cluster.move("a", P.COMPLETED)
    assert {t: [r.name for r in runs] for t, runs in newly_ended(observe(
        cluster.flow, jobs=list(cluster.jobs.values()), now=cluster.now)).items()} == {"a": ["test-a"]}
    cluster.step()  # the status now records test-a as Completed
    assert newly_ended(observe(cluster.flow, jobs=list(cluster.jobs.values()), now=cluster.now)) == {}


def test_a_jobflows_failure_rate_counts_every_attempt_that_ended():
    cluster = Cluster(jobflow("spec: {flows: [{name: a, retry: {limit: 2, backoff: {delaySeconds: 0}}}]}"))
    cluster.step()
    assert cluster.flow.status.failure_rate is None  # nothing ended yet
    cluster.move_job("test-a", P.FAILED)
    cluster.step()
    cluster.move_job("test-a-r1", P.FAILED)
    cluster.step()
    cluster.move_job("test-a-r2", P.COMPLETED)
    cluster.step()
    assert cluster.flow.status.failure_rate == 0.6667
