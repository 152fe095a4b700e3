"""The rules of a JobFlow that waits for another (:mod:`jobflow_core.dag.awaits`): one example per row of
``AWAIT_RULES``, the binding, which flows a JobFlow-level dependency holds, the wake labels, and the properties: a
binding is never chosen again, and an end once recorded never changes, whatever is read in whatever order."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from jobflow_core import plan_observation
from jobflow_core.dag.awaits import (AWAIT_RULES, WAITS_FOR_JOBFLOW, WAITS_FOR_TEMPLATE, Run, Seen, awaited_by,
                                     label_name, relabel, settle, to_read, wait_labels, waiters_selectors)
from jobflow_core.models import AwaitedOutcome, JobFlow, JobFlowPhase
from jobflow_core.planning.observation import observe
from jobflow_core.vocabulary.api import RUN_OF
from jobflow_core.vocabulary.phase import FlowOutcome

T0 = datetime(2026, 11, 28, 20, 0, tzinfo=UTC)


def waiter(depends: dict | None = None, *, flows: list | None = None, status: dict | None = None,
           name: str = "b") -> JobFlow:
    spec: dict = {"flows": flows or [{"name": "eval"}]}
    if depends is not None:
        spec["dependsOn"] = depends
    return JobFlow.model_validate({"metadata": {"name": name, "namespace": "default", "uid": "uid-b",
                                                "creationTimestamp": "2026-11-28T20:00:00Z"},
                                   "spec": spec, "status": status})


def run(name: str, *, uid: str | None = None, created: datetime = T0, phase: JobFlowPhase | None = None,
        ended: datetime | None = None, template: str | None = None, waits_for: frozenset[str] = frozenset()) -> Run:
    return Run(name, uid or f"uid-{name}", created, phase, ended, template, waits_for)


BY_NAME = {"jobFlows": [{"name": "a", "timeoutSeconds": 600}]}


def entry(jobflow: JobFlow, seen: Seen | None, now: datetime = T0 + timedelta(seconds=5)):
    [found] = settle(jobflow, seen, now=now).values()
    return found


def test_the_rules_are_the_table_of_the_docstring_in_its_order():
    assert [rule.when for rule in AWAIT_RULES] == [
        "the status records how it ended", "its bound run is seen ended within its timeout",
        "its timeoutSeconds passed", "its bound run is gone", "its bound run waits, bound, for this JobFlow"]


def test_a_dependency_by_name_binds_the_jobflow_when_first_seen_and_waits_for_it_to_end():
    assert entry(waiter(BY_NAME), Seen(jobflows={"a": None})).message == 'waiting for JobFlow "a" to be created'
    found = entry(waiter(BY_NAME), Seen(jobflows={"a": run("a", phase=JobFlowPhase.RUNNING)}))
    assert (found.job_flow, found.uid, found.phase, found.reason) == ("a", "uid-a", None, None)
    assert found.bound_at == T0 + timedelta(seconds=5)
    assert found.message == 'waiting for JobFlow "a" to end (it is Running)'


def test_row_1_a_recorded_end_stands_whatever_is_read_now():
    recorded = {"awaitedJobFlows": [{"name": "JobFlow/a", "jobFlow": "a", "uid": "uid-a", "phase": "Succeed"}]}
    for seen in (Seen(jobflows={"a": None}), Seen(jobflows={"a": run("a", phase=JobFlowPhase.FAILED)}), None):
        assert entry(waiter(BY_NAME, status=recorded), seen, now=T0 + timedelta(days=1)).phase is JobFlowPhase.SUCCEED


def test_row_2_the_bound_run_seen_ended_gives_its_phase_and_end():
    found = entry(waiter(BY_NAME), Seen(jobflows={"a": run("a", phase=JobFlowPhase.FAILED, ended=T0)}))
    assert (found.phase, found.end_timestamp, found.reason) == (JobFlowPhase.FAILED, T0, None)


def test_row_3_the_timeout_fails_it_also_when_the_run_ended_after_the_deadline_but_was_seen_late():
    late = T0 + timedelta(seconds=700)
    assert entry(waiter(BY_NAME), Seen(jobflows={"a": None}), now=late).reason == "TimedOut"
    ended_late = run("a", phase=JobFlowPhase.SUCCEED, ended=T0 + timedelta(seconds=650))
    assert entry(waiter(BY_NAME), Seen(jobflows={"a": ended_late}), now=late).reason == "TimedOut"
    in_time = run("a", phase=JobFlowPhase.SUCCEED, ended=T0 + timedelta(seconds=500))
    assert entry(waiter(BY_NAME), Seen(jobflows={"a": in_time}), now=late).phase is JobFlowPhase.SUCCEED


def test_row_4_a_bound_run_gone_or_replaced_by_another_of_its_name_fails_it():
    bound = {"awaitedJobFlows": [{"name": "JobFlow/a", "jobFlow": "a", "uid": "uid-a"}]}
    assert entry(waiter(BY_NAME, status=bound), Seen(jobflows={"a": None})).reason == "Deleted"
    assert entry(waiter(BY_NAME, status=bound), Seen(jobflows={"a": run("a", uid="new")})).reason == "Deleted"
    assert entry(waiter(BY_NAME, status=bound), None).reason is None, "nothing read: nothing decided"


def test_row_5_a_bound_run_that_waits_bound_for_this_one_is_a_cycle():
    found = entry(waiter(BY_NAME), Seen(jobflows={"a": run("a", waits_for=frozenset({"uid-b"}))}))
    assert found.reason == "Cycle"
    assert entry(waiter(BY_NAME), Seen(jobflows={"a": run("a", waits_for=frozenset({"x"}))})).reason is None


def test_a_template_dependency_binds_the_newest_run_within_its_window_never_itself():
    depends = {"jobFlows": [{"template": "t", "withinSeconds": 3600}]}
    old = run("t-1", created=T0 - timedelta(hours=2), phase=JobFlowPhase.SUCCEED, template="t")
    fresh = run("t-2", created=T0 - timedelta(minutes=30), phase=JobFlowPhase.RUNNING, template="t")
    newer = run("t-3", created=T0 + timedelta(minutes=1), template="t")
    itself = run("b", uid="uid-b", created=T0 + timedelta(minutes=2), template="t")
    assert entry(waiter(depends), Seen(templates={"t": (old,)})).job_flow is None
    assert entry(waiter(depends), Seen(templates={"t": (old, fresh)})).job_flow == "t-2"
    assert entry(waiter(depends), Seen(templates={"t": (newer, old, fresh, itself)})).job_flow == "t-3"
    other = run("x", created=T0, template="other")
    assert entry(waiter(depends), Seen(templates={"t": (other,)})).job_flow is None


def test_a_jobflow_dependency_holds_its_root_flows_with_its_outcome_unless_a_flow_says_its_own():
    flows = [{"name": "a"}, {"name": "b", "dependsOn": {"targets": ["a"]}}, {"name": "c", "finally": True},
             {"name": "d", "dependsOn": {"jobFlows": [{"name": "x"}], "outcome": "Failed"}}]
    jobflow = waiter({"jobFlows": [{"name": "y"}], "outcome": "Finished"}, flows=flows)
    assert {flow.name: awaited_by(jobflow, flow) for flow in jobflow.spec.flows} == {
        "a": ("JobFlow/y",), "b": (), "c": (), "d": ("JobFlow/x", "JobFlow/y")}


def test_flows_read_a_dependency_like_a_target_with_their_outcome():
    depends = {"jobFlows": [{"name": "a"}], "outcome": AwaitedOutcome.FAILED.value}
    ended = Seen(jobflows={"a": run("a", phase=JobFlowPhase.SUCCEED, ended=T0)})
    observation = observe(waiter(depends), jobs=[], now=T0, awaited=ended)
    assert observation.outcomes.of["JobFlow/a"] is FlowOutcome.SUCCEEDED
    assert observation.outcomes.of["eval"] is FlowOutcome.SKIPPED, "it runs only if a fails"
    assert observation.phase is JobFlowPhase.SUCCEED
    failed = Seen(jobflows={"a": run("a", phase=JobFlowPhase.FAILED, ended=T0)})
    observation = observe(waiter(depends), jobs=[], now=T0, awaited=failed)
    assert observation.readiness["eval"].ready and not observation.outcomes.unhandled_failure


def test_what_is_read_labels_and_selectors():
    jobflow = waiter({"jobFlows": [{"name": "a"}, {"template": "t"}]})
    assert (to_read(jobflow).names, to_read(jobflow).templates) == (("a",), ("t",))
    entries = settle(jobflow, Seen(jobflows={"a": run("a")}, templates={"t": (run("t-9", template="t"),)}), now=T0)
    assert wait_labels(jobflow, entries) == {WAITS_FOR_JOBFLOW + "a": "true", WAITS_FOR_JOBFLOW + "t-9": "true"}
    unbound = settle(jobflow, Seen(jobflows={"a": None}, templates={"t": ()}), now=T0)
    assert wait_labels(jobflow, unbound) == {WAITS_FOR_JOBFLOW + "a": "true", WAITS_FOR_TEMPLATE + "t": "true"}
    labelled = jobflow.model_copy(update={"metadata": jobflow.metadata.model_copy(update={"labels": {
        WAITS_FOR_TEMPLATE + "t": "true", "team": "x"}})})
    assert relabel(labelled, wait_labels(jobflow, entries)) == {
        WAITS_FOR_TEMPLATE + "t": None, WAITS_FOR_JOBFLOW + "a": "true", WAITS_FOR_JOBFLOW + "t-9": "true"}
    assert relabel(labelled, {WAITS_FOR_TEMPLATE + "t": "true"}) is None
    assert waiters_selectors({"metadata": {"name": "t-9", "labels": {RUN_OF: "t"}}}) == [
        WAITS_FOR_JOBFLOW + "t-9", WAITS_FOR_TEMPLATE + "t"]
    long = "n" * 80
    assert len(label_name(long)) <= 63 and label_name(long) != label_name(long[:-1] + "m")


def test_the_plan_relabels_first_and_records_the_binding():
    plan = plan_observation(observe(waiter(BY_NAME), jobs=[], now=T0, awaited=Seen(jobflows={"a": run("a")})),
                            templates={})
    assert type(plan.actions[0]).__name__ == "Relabel"
    assert plan.status.awaited_job_flows[0].uid == "uid-a"
    assert plan.status.waiting_flows[0].waiting_for == ["JobFlow/a"]
    assert plan.status.waiting_flows[0].expected_start is None, "nobody forecasts another JobFlow's end"
    assert plan.status.recheck_seconds, "a pending timeout is looked at again"


PHASES = st.sampled_from([None, JobFlowPhase.PENDING, JobFlowPhase.RUNNING, JobFlowPhase.SUCCEED,
                          JobFlowPhase.FAILED])
RUNS = st.builds(lambda n, uid, minutes, phase, end: run(f"t-{n}", uid=f"u{uid}", template="t",
                                                         created=T0 + timedelta(minutes=minutes), phase=phase,
                                                         ended=T0 + timedelta(minutes=end) if end is not None
                                                         else None),
                 st.integers(0, 3), st.integers(0, 4), st.integers(-120, 120), PHASES,
                 st.one_of(st.none(), st.integers(0, 200)))
READS = st.one_of(st.none(), st.builds(
    lambda runs, by_name: Seen(jobflows={r.name: (r if keep else None) for r, keep in by_name},
                               templates={"t": tuple(runs)}),
    st.lists(RUNS, max_size=4), st.lists(st.tuples(RUNS, st.booleans()), max_size=3)))


@settings(max_examples=300, deadline=None)
@given(reads=st.lists(st.tuples(READS, st.integers(0, 300)), min_size=1, max_size=8),
       depends=st.sampled_from([{"template": "t", "withinSeconds": 3600, "timeoutSeconds": 9000},
                                {"template": "t"}, {"name": "t-1", "timeoutSeconds": 3000}]))
def test_a_binding_is_never_chosen_again_and_an_end_never_changes(reads, depends):
    jobflow = waiter({"jobFlows": [depends]})
    bound, ended, now = None, None, T0
    for seen, step in reads:
        now += timedelta(seconds=step)
        [found] = settle(jobflow, seen, now=now).values()
        if bound is not None:
            assert (found.job_flow, found.uid) == bound
        if ended is not None:
            assert (found.phase, found.end_timestamp, found.reason) == ended
        if found.uid:
            bound = (found.job_flow, found.uid)
        if found.phase or found.reason:
            ended = (found.phase, found.end_timestamp, found.reason)
        jobflow = JobFlow.model_validate({**jobflow.to_wire(), "status": {"awaitedJobFlows": [found.to_wire()]}})


def test_kubectl_jobflow_status_names_each_dependency_what_it_is_bound_to_and_how_it_ended():
    from datetime import datetime

    from display.facts import take
    from kubectl_jobflow.status import as_data, render

    entries = [{"name": "JobFlowTemplate/train", "jobFlow": "train-9", "uid": "u9", "phase": "Succeed"},
               {"name": "JobFlow/x", "jobFlow": "x", "uid": "ux", "reason": "Deleted", "message": "it went"},
               {"name": "JobFlow/y", "message": 'waiting for JobFlow "y" to be created'}]
    raw = waiter({"jobFlows": [{"template": "train"}, {"name": "x"}, {"name": "y"}]},
                 status={"state": {"phase": "Running"}, "awaitedJobFlows": entries}).to_wire()
    facts = take(raw | {"kind": "JobFlow"}, [])
    shown = render(facts, now=datetime(2026, 11, 28, 21, tzinfo=UTC))
    assert "Waits for JobFlowTemplate/train: JobFlow train-9 Succeed\n" in shown
    assert "Waits for JobFlow/x: JobFlow x, failed (Deleted): it went\n" in shown
    assert 'Waits for JobFlow/y: waiting for JobFlow "y" to be created\n' in shown
    assert as_data(facts, now=datetime(2026, 11, 28, 21, tzinfo=UTC))["awaitedJobFlows"] == entries


def test_a_rerun_forgets_a_failed_end_but_never_a_succeed_nor_a_binding():
    ended = {"awaitedJobFlows": [{"name": "JobFlow/a", "jobFlow": "a", "uid": "uid-a", "phase": "Succeed"},
                                 {"name": "JobFlow/c", "jobFlow": "c", "uid": "uid-c", "phase": "Failed"}]}
    jobflow = waiter({"jobFlows": [{"name": "a"}, {"name": "c"}]}, status=ended)
    settled = settle(jobflow, Seen(jobflows={"a": None, "c": run("c", uid="uid-c", phase=JobFlowPhase.RUNNING)}),
                     now=T0, forget_ends=True)
    assert settled["JobFlow/a"].phase is JobFlowPhase.SUCCEED, "its run is gone: the recorded Succeed stands"
    assert (settled["JobFlow/c"].phase, settled["JobFlow/c"].uid) == (None, "uid-c"), "waits for its rerun"


def test_a_run_waiting_for_its_own_template_binds_only_an_earlier_run():
    depends = {"jobFlows": [{"template": "t", "withinSeconds": 90000}]}
    me = JobFlow.model_validate({**waiter(depends).to_wire(), "metadata": {
        "name": "t-2", "namespace": "default", "uid": "uid-t2", "creationTimestamp": "2026-11-28T20:00:00Z",
        "labels": {RUN_OF: "t"}}})
    yesterday = run("t-1", created=T0 - timedelta(days=1), template="t")
    tomorrow = run("t-3", created=T0 + timedelta(days=1), template="t")
    [found] = settle(me, Seen(templates={"t": (yesterday, tomorrow)}), now=T0).values()
    assert found.job_flow == "t-1"
    [first] = settle(me, Seen(templates={"t": (tomorrow,)}), now=T0).values()
    assert first.job_flow is None, "the first run has no earlier one to wait for"


def test_the_jobflows_outcome_holds_for_root_flows_that_name_jobflows_of_their_own():
    jobflow = waiter({"jobFlows": [{"name": "y"}], "outcome": "Finished"},
                     flows=[{"name": "audit", "dependsOn": {"jobFlows": [{"name": "x"}]}}])
    seen = Seen(jobflows={"x": run("x", phase=JobFlowPhase.SUCCEED, ended=T0),
                          "y": run("y", phase=JobFlowPhase.FAILED, ended=T0)})
    observation = observe(jobflow, jobs=[], now=T0, awaited=seen)
    assert observation.readiness["audit"].ready, "it waits for both to end, as spec.dependsOn.outcome says"


def test_a_finally_flow_reads_a_failed_dependency_as_the_jobflows_failure():
    jobflow = waiter({"jobFlows": [{"name": "x"}]}, flows=[{"name": "a"}, {"name": "z", "finally": True}])
    observation = observe(jobflow, jobs=[], now=T0,
                          awaited=Seen(jobflows={"x": run("x", phase=JobFlowPhase.FAILED, ended=T0)}))
    outcome = observation.outcomes.jobflow_outcome()
    assert (outcome["outcome"], outcome["failedFlows"], outcome["failedJobFlows"]) == ("Failed", [], ["JobFlow/x"])
    assert observation.readiness["z"].ready


def test_no_completion_is_forecast_while_another_jobflow_has_not_ended():
    plan = plan_observation(observe(waiter(BY_NAME), jobs=[], now=T0, awaited=Seen(jobflows={"a": run("a")})),
                            templates={})
    assert plan.status.expected_completion is None and not plan.status.critical_path
