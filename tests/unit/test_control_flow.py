"""Outcome-aware dependencies, Skipped flows, failure policy and finally flows, planned step by step."""

from __future__ import annotations

from datetime import timedelta

from jobflow_core import Abort
from jobflow_core.models import JobFlowPhase, VcJobPhase, format_time
from scenario import T0, Cluster, jobflow
from seeds import diamond_yaml

P = VcJobPhase

WITH_HANDLER = """
spec:
  flows:
  - name: train
  - name: alert                    # runs only if train fails
    dependsOn: {targets: [train], outcome: Failed}
  - name: report
    dependsOn: {targets: [train]}
"""

WITHOUT_HANDLER = """
spec:
  flows:
  - name: train
  - name: report
    dependsOn: {targets: [train]}
"""


def started(cluster: Cluster) -> list[str]:
    return [create.flow for create in cluster.step().creates]


def skipped(cluster: Cluster) -> dict[str, str]:
    return {flow.name: flow.message for flow in cluster.flow.status.skipped_flows or ()}


def test_a_handled_failure_runs_the_handler_skips_the_rest_and_the_jobflow_succeeds():
    cluster = Cluster(jobflow(WITH_HANDLER))
    assert started(cluster) == ["train"]
    cluster.move("train", P.FAILED)
    assert started(cluster) == ["alert"]
    assert cluster.phase is JobFlowPhase.RUNNING
    assert cluster.flow.status.state.reason is None  # a failure that is handled is no problem
    assert skipped(cluster) == {"report": '"train" Failed, and this flow runs only if its targets succeed'}
    cluster.move("alert", P.COMPLETED)
    result = cluster.step()
    assert cluster.phase is JobFlowPhase.SUCCEED
    assert cluster.flow.status.failed_jobs == ["test-train"]
    assert cluster.flow.status.progress == "3/3"
    assert [e.message for e in result.events] == ["JobFlow test: Running -> Succeed"]


def test_the_same_failure_without_a_handler_fails_the_jobflow_as_upstream_does():
    cluster = Cluster(jobflow(WITHOUT_HANDLER))
    cluster.step()
    cluster.move("train", P.FAILED)
    assert started(cluster) == []
    assert cluster.phase is JobFlowPhase.FAILED
    assert cluster.flow.status.state.reason == "JobFailed"
    assert cluster.flow.status.skipped_flows is None  # held, as upstream: "not started: the JobFlow is Failed"
    assert [w.message for w in cluster.flow.status.waiting_flows] == ["not started: the JobFlow is Failed"]


def test_an_error_handler_whose_target_succeeds_is_skipped_with_a_normal_event():
    cluster = Cluster(jobflow(WITH_HANDLER))
    cluster.step()
    cluster.move("train", P.COMPLETED)
    result = cluster.step()
    assert [create.flow for create in result.creates] == ["report"]
    assert skipped(cluster) == {"alert": 'no target failed ("train" Succeeded), and this flow runs only if one does'}
    assert [(e.type, e.reason) for e in result.events if e.reason == "DependencyNotMet"] == [
        ("Normal", "DependencyNotMet")]
    assert cluster.step().events == []  # not repeated


def test_a_skip_propagates_down_a_chain_and_a_keep_going_jobflow_fails_only_once_all_has_ended():
    cluster = Cluster(jobflow("""
spec:
  failurePolicy: KeepGoing
  flows:
  - name: a
  - {name: b, dependsOn: {targets: [a]}}
  - {name: c, dependsOn: {targets: [b]}}
  - name: other
"""))
    assert started(cluster) == ["a", "other"]
    cluster.move("a", P.FAILED)
    cluster.step()
    assert set(skipped(cluster)) == {"b", "c"}
    assert skipped(cluster)["c"] == '"b" was Skipped, and this flow runs only if its targets succeed'
    assert cluster.phase is JobFlowPhase.RUNNING  # "other" still runs
    cluster.move("other", P.COMPLETED)
    cluster.step()
    assert cluster.phase is JobFlowPhase.FAILED
    assert cluster.flow.status.state.reason == "JobFailed"


def test_keep_going_runs_every_branch_that_does_not_need_the_failure():
    text = """
spec:
  failurePolicy: {policy}
  flows:
  - name: a
  - name: b
  - {{name: after-b, dependsOn: {{targets: [b]}}}}
"""
    for policy, expected in (("KeepGoing", ["after-b"]), ("FailFast", [])):
        cluster = Cluster(jobflow(text.format(policy=policy)))
        cluster.step()
        cluster.move("a", P.FAILED)
        cluster.step()
        cluster.move("b", P.COMPLETED)
        assert started(cluster) == expected, policy


def test_a_cleanup_runs_after_its_targets_end_whatever_the_outcome():
    for outcome in (P.COMPLETED, P.FAILED):
        cluster = Cluster(jobflow("""
spec:
  flows:
  - name: a
  - {name: cleanup, dependsOn: {targets: [a], outcome: Finished}}
"""))
        cluster.step()
        cluster.move("a", outcome)
        assert started(cluster) == ["cleanup"]
        cluster.move("cleanup", P.COMPLETED)
        cluster.step()
        assert cluster.phase is JobFlowPhase.SUCCEED  # a Finished dependency handles the failure


FINALLY = """
spec:
  flows:
  - name: a
  - {name: b, dependsOn: {targets: [a]}}
  - {name: notify, finally: true}
  - {name: archive, finally: true, dependsOn: {targets: [notify]}}
"""


def test_finally_flows_run_once_every_other_flow_has_ended_and_keep_the_outcome():
    cluster = Cluster(jobflow(FINALLY))
    assert started(cluster) == ["a"]
    assert {w.name: w.message for w in cluster.flow.status.waiting_flows}["notify"] == \
        "waiting for every other flow to end (this flow is finally)"
    cluster.move("a", P.COMPLETED)
    assert started(cluster) == ["b"]
    cluster.move("b", P.COMPLETED)
    assert started(cluster) == ["notify"]
    assert cluster.phase is JobFlowPhase.RUNNING
    cluster.move("notify", P.COMPLETED)
    assert started(cluster) == ["archive"]
    cluster.move("archive", P.COMPLETED)
    cluster.step()
    assert cluster.phase is JobFlowPhase.SUCCEED


def test_finally_flows_still_run_after_a_fail_fast_failure_once_nothing_else_runs():
    cluster = Cluster(jobflow(FINALLY.replace("  - name: a\n", "  - name: a\n  - name: slow\n")))
    assert started(cluster) == ["a", "slow"]
    cluster.move("a", P.FAILED)
    assert started(cluster) == []  # slow still runs
    assert cluster.phase is JobFlowPhase.FAILED
    cluster.move("slow", P.COMPLETED)
    assert started(cluster) == ["notify"]  # b never starts: the JobFlow failed fast
    cluster.move("notify", P.COMPLETED)
    assert started(cluster) == ["archive"]
    assert cluster.phase is JobFlowPhase.FAILED


def test_a_failing_finally_flow_fails_a_jobflow_that_had_succeeded_so_far():
    cluster = Cluster(jobflow("spec: {flows: [{name: a}, {name: notify, finally: true}]}"))
    cluster.step()
    cluster.move("a", P.COMPLETED)
    assert started(cluster) == ["notify"]
    cluster.move("notify", P.FAILED)
    cluster.step()
    assert cluster.phase is JobFlowPhase.FAILED


def test_a_suspended_jobflow_starts_nothing_new_and_resumes_where_it_stopped():
    cluster = Cluster(jobflow("spec: {flows: [{name: a}, {name: b, dependsOn: {targets: [a]}}]}"))
    cluster.step()
    cluster.flow = cluster.flow.model_copy(update={"spec": cluster.flow.spec.model_copy(update={"suspend": True})})
    cluster.move("a", P.COMPLETED)
    result = cluster.step()
    assert result.creates == []
    assert cluster.phase is JobFlowPhase.SUSPENDED
    assert [w.message for w in cluster.flow.status.waiting_flows] == [
        "not started: the JobFlow is suspended (resume it: kubectl jobflow resume test)"]
    assert [e.message for e in result.events] == ["JobFlow test: Pending -> Suspended"]
    cluster.flow = cluster.flow.model_copy(update={"spec": cluster.flow.spec.model_copy(update={"suspend": False})})
    assert started(cluster) == ["b"]
    assert cluster.phase is JobFlowPhase.RUNNING


def test_a_suspended_jobflow_whose_flows_all_ended_is_succeed():
    cluster = Cluster(jobflow("spec: {suspend: true, flows: []}"))
    cluster.step()
    assert cluster.phase is JobFlowPhase.SUCCEED


RETRIED = """
spec:
  flows:
  - name: train
    retry: {limit: 2, backoff: {delaySeconds: 90, factor: 2}}
  - {name: report, dependsOn: {targets: [train]}}
"""


def test_a_failed_attempt_is_retried_after_its_backoff_and_dependents_wait_for_the_last_one():
    cluster = Cluster(jobflow(RETRIED))
    assert [c.job_name for c in cluster.step().creates] == ["test-train"]
    cluster.move("train", P.FAILED)
    failed_at = cluster.now
    result = cluster.step()
    assert result.creates == [] and cluster.phase is JobFlowPhase.RUNNING
    [waiting] = [w for w in cluster.flow.status.waiting_flows if w.name == "train"]
    assert (waiting.job_name, waiting.recheck_seconds) == ("test-train-r1", 30)
    assert waiting.message == (f"attempt 2 of 3 starts at {format_time(failed_at + timedelta(seconds=90))}: "
                               "90s after attempt 1 ended Failed")
    cluster.now = failed_at + timedelta(seconds=89)
    assert cluster.step().creates == []
    cluster.now = failed_at + timedelta(seconds=90)
    [retry] = cluster.step().creates
    assert retry.job_name == "test-train-r1"
    assert retry.manifest["metadata"]["labels"]["flow.volcano.sh/attempt"] == "2"
    pod = retry.manifest["spec"]["tasks"][0]["template"]["metadata"]
    assert pod["annotations"]["flow.volcano.sh/attempt"] == "2"
    records = {r.name: r.attempt for r in cluster.flow.status.job_status_list}
    assert records == {"test-train": 1, "test-train-r1": 2}
    cluster.move_job("test-train-r1", P.COMPLETED)
    assert [c.flow for c in cluster.step().creates] == ["report"]
    assert cluster.flow.status.failed_jobs == ["test-train"]


def test_the_second_backoff_is_longer_and_a_last_failure_fails_the_flow():
    cluster = Cluster(jobflow(RETRIED))
    cluster.step()
    for name, delay in (("test-train", 90), ("test-train-r1", 180)):
        cluster.move_job(name, P.FAILED)
        cluster.now += timedelta(seconds=delay - 1)
        assert cluster.step().creates == []
        cluster.now += timedelta(seconds=1)
        assert len(cluster.step().creates) == 1
    cluster.move_job("test-train-r2", P.FAILED)
    cluster.step()
    assert cluster.phase is JobFlowPhase.FAILED
    assert "test-train-r2" in cluster.flow.status.state.message


def test_only_the_end_states_in_retry_on_are_retried():
    cluster = Cluster(jobflow(RETRIED.replace("retry: {", "retry: {retryOn: [Failed], ")))
    cluster.step()
    cluster.move("train", P.ABORTED)
    cluster.now += timedelta(hours=1)
    assert cluster.step().creates == []
    assert cluster.phase is JobFlowPhase.FAILED


def test_a_retry_created_but_not_yet_recorded_is_never_created_twice():
    cluster = Cluster(jobflow(RETRIED))
    cluster.step()
    cluster.move("train", P.FAILED)
    cluster.now += timedelta(hours=1)
    before = cluster.flow
    assert [c.job_name for c in cluster.step().creates] == ["test-train-r1"]
    cluster.flow = before  # the handler died after the create, before writing the status
    result = cluster.step()
    assert result.creates == []
    assert {r.name for r in cluster.flow.status.job_status_list} == {"test-train", "test-train-r1"}


def test_an_attempt_past_its_timeout_is_aborted_through_volcano_once_and_may_be_retried():
    cluster = Cluster(jobflow("""
spec:
  flows:
  - {name: train, timeoutSeconds: 600, retry: {limit: 1, backoff: {delaySeconds: 0}}}
"""))
    cluster.step()
    cluster.move("train", P.RUNNING)
    created = cluster.jobs["test-train"].metadata.creation_timestamp
    cluster.now = created + timedelta(seconds=599)
    result = cluster.step()
    assert result.of(Abort) == []
    assert cluster.flow.status.recheck_seconds == 30  # a tenth of the timeout, at most 30 s
    cluster.now = created + timedelta(seconds=600)
    [abort] = cluster.step().of(Abort)
    assert abort.command["action"] == "AbortJob" and abort.command["target"]["name"] == "test-train"
    assert abort.command["metadata"]["name"] == "test-train-abort" and abort.event.reason == "Timeout"
    cluster.move("train", P.ABORTING)
    assert cluster.step().of(Abort) == []  # Volcano is already on it
    cluster.move("train", P.ABORTED)
    assert [c.job_name for c in cluster.step().creates] == ["test-train-r1"]


DEADLINE = """
metadata: {creationTimestamp: '2026-01-02T03:04:05Z'}
spec:
  activeDeadlineSeconds: 3600
  flows:
  - name: a
  - {name: b, dependsOn: {targets: [a]}}
  - name: c
"""


def test_a_jobflow_past_its_deadline_aborts_what_runs_starts_nothing_and_fails():
    cluster = Cluster(jobflow(DEADLINE))
    cluster.step()
    cluster.move("a", P.COMPLETED)
    cluster.move("c", P.RUNNING)
    cluster.now = T0 + timedelta(seconds=3599)
    assert [c.flow for c in cluster.step().creates] == ["b"]
    cluster.now = T0 + timedelta(seconds=3600)
    result = cluster.step()
    assert sorted(a.job_name for a in result.of(Abort)) == ["test-b", "test-c"]
    assert cluster.phase is JobFlowPhase.FAILED
    assert cluster.flow.status.state.reason == "DeadlineExceeded"
    assert cluster.flow.status.recheck_seconds is None


def test_a_jobflow_that_succeeded_before_its_deadline_stays_succeed_after_it():
    cluster = Cluster(jobflow(DEADLINE))
    cluster.step()
    for flow in ("a", "c"):
        cluster.move(flow, P.COMPLETED)
    cluster.step()
    cluster.move("b", P.COMPLETED)
    cluster.step()
    assert cluster.phase is JobFlowPhase.SUCCEED
    cluster.now = T0 + timedelta(days=1)
    result = cluster.step()
    assert (cluster.phase, result.of(Abort), result.status_changed) == (JobFlowPhase.SUCCEED, [], False)


def test_a_probe_that_has_not_passed_within_its_timeout_skips_its_flow():
    cluster = Cluster(jobflow("""
spec:
  flows:
  - name: server
  - name: client
    dependsOn:
      targets: [server]
      probe: {timeoutSeconds: 120, tcpSocketList: [{taskName: nginx, port: 5432}]}
"""))
    cluster.step()
    cluster.move("server", P.RUNNING)
    created = cluster.jobs["test-server"].metadata.creation_timestamp
    cluster.now = created + timedelta(seconds=119)
    cluster.step()
    assert cluster.flow.status.recheck_seconds == 12  # a tenth of the probe timeout
    assert [w.name for w in cluster.flow.status.waiting_flows] == ["client"]
    cluster.now = created + timedelta(seconds=120)
    cluster.step()
    [skipped] = cluster.flow.status.skipped_flows
    assert skipped.message.startswith("its probe did not pass within 120s of its last target's vcjob being created")


DIAMOND_KEEP = diamond_yaml(metadata={"annotations": {}})


def ask_rerun(cluster: Cluster, request: str, flows: str | None = None) -> None:
    annotations = {"flow.volcano.sh/rerun": request} | ({"flow.volcano.sh/rerun-flows": flows} if flows else {})
    metadata = cluster.flow.metadata.model_copy(update={"annotations": annotations})
    cluster.flow = cluster.flow.model_copy(update={"metadata": metadata})


def failed_diamond() -> Cluster:
    cluster = Cluster(jobflow(DIAMOND_KEEP))
    for step in (["a"], ["b"]):
        cluster.step()
        for flow in step:
            cluster.move(flow, P.COMPLETED)
    cluster.step()
    cluster.move("d", P.COMPLETED)
    cluster.move("c", P.FAILED)
    cluster.step()
    assert cluster.phase is JobFlowPhase.FAILED
    return cluster


def test_a_rerun_runs_the_failed_flow_and_what_follows_it_again_keeping_what_completed():
    cluster = failed_diamond()
    ask_rerun(cluster, "one")
    result = cluster.step()
    assert [c.job_name for c in result.creates] == ["test-c-r1"]
    assert cluster.phase is JobFlowPhase.RUNNING
    assert cluster.flow.status.rerun.from_attempt == {"c": 2}
    assert [e.message for e in result.events if e.reason == "Rerun"] == ["rerun request one: run again: c"]
    cluster.move_job("test-c-r1", P.COMPLETED)
    assert started(cluster) == ["e"]
    cluster.move("e", P.COMPLETED)
    cluster.step()
    assert cluster.phase is JobFlowPhase.SUCCEED
    assert sorted(cluster.jobs) == ["test-a", "test-b", "test-c", "test-c-r1", "test-d", "test-e"]
    assert cluster.step().creates == []  # the same request is handled once


def test_a_rerun_of_a_jobflow_that_has_not_failed_changes_nothing_and_says_why():
    cluster = Cluster(jobflow(DIAMOND_KEEP))
    cluster.step()
    ask_rerun(cluster, "early")
    result = cluster.step()
    assert result.creates == []
    assert cluster.flow.status.rerun.message == ("nothing run again: the JobFlow is Pending, and only a Failed "
                                                 "JobFlow is rerun")


def test_a_rerun_can_name_flows_and_runs_everything_downstream_of_them():
    cluster = failed_diamond()
    ask_rerun(cluster, "two", flows="b")
    assert [c.job_name for c in cluster.step().creates] == ["test-b-r1"]
    assert cluster.flow.status.rerun.from_attempt == {"b": 2, "c": 2, "d": 2}
    cluster.move_job("test-b-r1", P.COMPLETED)
    assert started(cluster) == ["c", "d"]
    assert sorted(c for c in cluster.jobs if c.startswith("test-c") or c.startswith("test-d")) == [
        "test-c", "test-c-r1", "test-d", "test-d-r1"]
