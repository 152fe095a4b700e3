"""Stop and terminate (``spec.shutdown``), planned step by step: what is aborted, what still starts, how it ends.

``spec.shutdown: Stop`` aborts every vcjob that runs but a ``finally`` flow's, starts nothing new but the ``finally``
flows, and ends the JobFlow Failed with reason ``Stopped``; ``Terminate`` aborts the ``finally`` flows' vcjobs too and
starts nothing at all (reason ``Terminated``). Aborts are level-triggered (asked on every plan until Volcano is
bringing the vcjob to an end), nothing is retried once shut down, suspend does not hold a stopped JobFlow's
``finally`` flows, and a rerun is refused until ``spec.shutdown`` is removed. The race of a stop against real
reconcilers is ``test_stop_properties.py``; here the planner alone, as :class:`scenario.Cluster` carries out its plans.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jobflow_core import Abort, Memoize, observe, plan, plan_observation
from jobflow_core.models import JobFlow, JobFlowPhase, JobFlowStatus, VcJob, VcJobPhase
from jobflow_core.vocabulary.naming import job_name
from jobflow_core.vocabulary.phase import FlowOutcome, is_final
from scenario import T0, Cluster, jobflow, templates_for, vcjob

P = VcJobPhase

STOPPABLE = """
spec:
  flows:
  - name: a
  - name: b
  - name: c
    dependsOn: {targets: [a, b]}
  - name: z
    finally: true
"""
"""Two roots, a flow after both, and a ``finally`` flow."""

UNSET = object()


def edited(flow: JobFlow, *, shutdown: object = UNSET, suspend: bool | None = None,
           annotations: dict[str, str] | None = None) -> JobFlow:
    """``flow`` as a user's ``kubectl patch`` leaves it: ``spec.shutdown`` set (or removed with None), ``spec.suspend``,
    annotations added."""
    wire = flow.to_wire()
    if shutdown is None:
        wire["spec"].pop("shutdown", None)
    elif shutdown is not UNSET:
        wire["spec"]["shutdown"] = shutdown
    if suspend is not None:
        wire["spec"]["suspend"] = suspend
    if annotations:
        wire["metadata"].setdefault("annotations", {}).update(annotations)
    return JobFlow.model_validate(wire)


def shut_down(cluster: Cluster, how: str) -> None:
    cluster.flow = edited(cluster.flow, shutdown=how)


def running_a_and_b(how: str | None = None) -> Cluster:
    """STOPPABLE with ``a`` Running and ``b`` Pending (and, if ``how``, ``spec.shutdown`` set now)."""
    cluster = Cluster(jobflow(STOPPABLE))
    assert [c.job_name for c in cluster.step().creates] == ["test-a", "test-b"]
    cluster.move("a", P.RUNNING)
    cluster.move("b", P.PENDING)
    cluster.step()
    if how:
        shut_down(cluster, how)
    return cluster


def only_z_running() -> Cluster:
    """STOPPABLE with every flow but the ``finally`` one Completed, and that one Running."""
    cluster = Cluster(jobflow(STOPPABLE))
    cluster.step()
    cluster.move("a", P.COMPLETED)
    cluster.move("b", P.COMPLETED)
    cluster.step()
    cluster.move("c", P.COMPLETED)
    assert [c.job_name for c in cluster.step().creates] == ["test-z"]
    cluster.move("z", P.RUNNING)
    cluster.step()
    assert cluster.phase is JobFlowPhase.RUNNING
    return cluster


def aborted(result) -> dict[str, str]:
    return {abort.job_name: abort.event.reason for abort in result.of(Abort)}


def decision(result, flow: str):
    return next(d for d in result.decisions if d.view.name == flow)


# Stop


def test_a_stop_aborts_every_vcjob_that_runs_with_reason_stopped_and_starts_nothing_new():
    cluster = running_a_and_b("Stop")
    result = cluster.step()
    assert aborted(result) == {"test-a": "Stopped", "test-b": "Stopped"}
    [abort_a, _] = result.of(Abort)
    assert (abort_a.command["action"], abort_a.command["target"]["name"]) == ("AbortJob", "test-a")
    assert abort_a.event.message == 'aborting vcjob "test-a" of flow "a": the JobFlow was stopped (spec.shutdown: Stop)'
    assert result.creates == []
    assert decision(result, "c").message == "not started: the JobFlow was stopped (spec.shutdown: Stop)"
    state = cluster.flow.status.state
    assert (state.phase, state.reason) == (JobFlowPhase.FAILED, "Stopped")
    assert state.message == (
        "Stopped (spec.shutdown: Stop): what ran was aborted, nothing new starts, its finally flows run (to run what "
        "did not finish again: kubectl jobflow retry -n default test, which also removes spec.shutdown)")


def test_after_a_stop_the_finally_flow_starts_once_the_aborted_vcjobs_ended_and_the_jobflow_ends_failed_stopped():
    cluster = running_a_and_b("Stop")
    cluster.step()
    cluster.move("a", P.ABORTED)
    cluster.move("b", P.ABORTING)
    assert cluster.step().creates == []  # b is still being aborted: z waits for every other flow to end
    cluster.move("b", P.ABORTED)
    assert [c.job_name for c in cluster.step().creates] == ["test-z"]
    cluster.move("z", P.COMPLETED)
    cluster.step()
    state = cluster.flow.status.state
    assert (state.phase, state.reason) == (JobFlowPhase.FAILED, "Stopped")
    assert "its finally flows run" in state.message
    assert cluster.job_names() == ["test-a", "test-b", "test-z"]  # c never started
    assert cluster.step().creates == []


def test_a_stop_does_not_abort_the_finally_flow_that_runs():
    cluster = only_z_running()
    shut_down(cluster, "Stop")
    result = cluster.step()
    assert aborted(result) == {}
    assert cluster.phase is JobFlowPhase.FAILED  # stopped before every flow ended
    cluster.move("z", P.COMPLETED)
    cluster.step()
    assert (cluster.phase, cluster.flow.status.state.reason) == (JobFlowPhase.FAILED, "Stopped")


# Terminate


def test_terminate_aborts_the_finally_flows_vcjob_too():
    cluster = only_z_running()
    shut_down(cluster, "Terminate")
    result = cluster.step()
    assert aborted(result) == {"test-z": "Terminated"}
    state = cluster.flow.status.state
    assert (state.phase, state.reason) == (JobFlowPhase.FAILED, "Terminated")
    assert state.message.startswith("Terminated (spec.shutdown: Terminate): what ran was aborted, nothing new starts, "
                                    "its finally flows do not run")


def test_terminate_aborts_what_runs_and_never_starts_the_finally_flow():
    cluster = running_a_and_b("Terminate")
    assert aborted(cluster.step()) == {"test-a": "Terminated", "test-b": "Terminated"}
    cluster.move("a", P.ABORTED)
    cluster.move("b", P.ABORTED)
    for _ in range(3):
        result = cluster.step()
        assert result.creates == []
    assert decision(result, "z").message == "not started: the JobFlow was terminated (spec.shutdown: Terminate)"
    assert cluster.job_names() == ["test-a", "test-b"]
    assert (cluster.phase, cluster.flow.status.state.reason) == (JobFlowPhase.FAILED, "Terminated")


# Aborts are level-triggered


@pytest.mark.parametrize("how", ["Stop", "Terminate"])
@pytest.mark.parametrize("phase", [P.NEW, P.PENDING, P.RUNNING, P.RESTARTING])
def test_an_abort_is_asked_again_on_every_plan_while_the_vcjob_still_runs(how, phase):
    flow = edited(jobflow(STOPPABLE), shutdown=how)
    jobs = [vcjob(flow, "a", phase)]
    for _ in range(3):
        result = plan(flow, templates=templates_for(flow), jobs=jobs, now=T0)
        assert [abort.job_name for abort in result.of(Abort)] == ["test-a"]
        flow = flow.model_copy(update={"status": result.status})


@pytest.mark.parametrize("how", ["Stop", "Terminate"])
@pytest.mark.parametrize("phase", [P.ABORTING, P.ABORTED, P.TERMINATING, P.COMPLETING, P.COMPLETED, P.FAILED,
                                   P.TERMINATED])
def test_no_abort_is_asked_once_volcano_brings_the_vcjob_to_an_end(how, phase):
    flow = edited(jobflow(STOPPABLE), shutdown=how)
    result = plan(flow, templates=templates_for(flow), jobs=[vcjob(flow, "a", phase)], now=T0)
    assert result.of(Abort) == []


def test_the_aborts_stop_as_soon_as_volcano_is_aborting_the_vcjob():
    cluster = running_a_and_b("Stop")
    assert aborted(cluster.step()) == {"test-a": "Stopped", "test-b": "Stopped"}
    assert aborted(cluster.step()) == {"test-a": "Stopped", "test-b": "Stopped"}  # the Command was lost: again
    cluster.move("a", P.ABORTING)
    assert aborted(cluster.step()) == {"test-b": "Stopped"}
    cluster.move("a", P.ABORTED)
    cluster.move("b", P.ABORTING)
    assert aborted(cluster.step()) == {}
    cluster.move("b", P.ABORTED)
    assert aborted(cluster.step()) == {}


# Nothing runs again once shut down

RETRIED = """
spec:
  flows:
  - name: a
    retry: {limit: 3}
  - name: handler
    dependsOn: {targets: [a], outcome: Failed}
  - name: b
    dependsOn: {targets: [a]}
  - name: z
    finally: true
"""


def test_a_flow_with_retries_left_aborted_by_a_stop_gets_no_new_attempt_and_its_failure_handler_does_not_start():
    cluster = Cluster(jobflow(RETRIED))
    cluster.step()
    cluster.move("a", P.RUNNING)
    shut_down(cluster, "Stop")
    assert aborted(cluster.step()) == {"test-a": "Stopped"}
    cluster.move("a", P.ABORTED)
    created = [c.job_name for _ in range(3) for c in cluster.step().creates]
    assert created == ["test-z"]
    assert decision(cluster.step(), "handler").message == "not started: the JobFlow was stopped (spec.shutdown: Stop)"
    assert (cluster.phase, cluster.flow.status.state.reason) == (JobFlowPhase.FAILED, "Stopped")


def test_the_same_aborted_vcjob_without_a_stop_is_retried():
    """The control of the test above: it is the stop that keeps ``a`` from its second attempt."""
    flow = jobflow(RETRIED)
    result = plan(flow, templates=templates_for(flow), jobs=[vcjob(flow, "a", P.ABORTED)], now=T0 + timedelta(hours=1))
    assert [c.job_name for c in result.creates] == ["test-a-r1"]


MEMOIZED = "spec: {flows: [{name: a, memoize: {}}, {name: b, dependsOn: {targets: [a]}}, {name: z, finally: true}]}"


@pytest.mark.parametrize(("end", "memoized"), [(P.ABORTED, False), (P.COMPLETED, True)])
def test_a_memoized_flow_aborted_by_a_stop_is_not_memoized(end, memoized):
    cluster = Cluster(jobflow(MEMOIZED))
    cluster.step()
    cluster.move("a", P.RUNNING)
    shut_down(cluster, "Stop")
    cluster.step()
    cluster.move("a", end)  # aborted as asked, or (the control) it completed before the abort took effect
    observation = observe(cluster.flow, jobs=list(cluster.jobs.values()), now=cluster.now)
    result = plan_observation(observation.with_answers(results={"test-a": "s3://bucket/out"}),
                              templates=cluster.templates)
    assert bool(result.of(Memoize)) is memoized


# Suspended


def test_stopping_a_suspended_jobflow_runs_its_finally_flow_and_holds_the_others():
    flow = edited(jobflow(STOPPABLE), suspend=True, shutdown="Stop")
    result = plan(flow, templates=templates_for(flow), jobs=[vcjob(flow, "a", P.COMPLETED)], now=T0)
    assert [c.job_name for c in result.creates] == ["test-z"]
    assert decision(result, "b").message == "not started: the JobFlow was stopped (spec.shutdown: Stop)"
    assert decision(result, "c").verdict == "held"
    assert (result.status.state.phase, result.status.state.reason) == (JobFlowPhase.FAILED, "Stopped")


def test_a_suspended_jobflow_holds_its_finally_flow_until_it_is_stopped():
    """The control of the test above: without the stop, suspend holds every flow, the ``finally`` one too."""
    flow = edited(jobflow(STOPPABLE), suspend=True)
    result = plan(flow, templates=templates_for(flow), jobs=[vcjob(flow, "a", P.COMPLETED)], now=T0)
    assert result.creates == []
    assert result.status.state.phase is JobFlowPhase.SUSPENDED


def test_terminating_a_suspended_jobflow_starts_nothing():
    flow = edited(jobflow(STOPPABLE), suspend=True, shutdown="Terminate")
    for jobs in ([], [vcjob(flow, "a", P.COMPLETED)], [vcjob(flow, "a", P.COMPLETED), vcjob(flow, "b", P.ABORTED)]):
        result = plan(flow, templates=templates_for(flow), jobs=jobs, now=T0)
        assert result.creates == []
        assert "start" not in {d.verdict for d in result.decisions}
        assert (result.status.state.phase, result.status.state.reason) == (JobFlowPhase.FAILED, "Terminated")


# Rerun


def stopped_with_a_completed_and_b_aborted() -> Cluster:
    cluster = Cluster(jobflow(STOPPABLE))
    cluster.step()
    cluster.move("a", P.COMPLETED)
    cluster.move("b", P.RUNNING)
    shut_down(cluster, "Stop")
    assert aborted(cluster.step()) == {"test-b": "Stopped"}
    cluster.move("b", P.ABORTED)
    assert [c.job_name for c in cluster.step().creates] == ["test-z"]
    cluster.move("z", P.COMPLETED)
    cluster.step()
    assert (cluster.phase, cluster.flow.status.state.reason) == (JobFlowPhase.FAILED, "Stopped")
    return cluster


def test_a_rerun_is_refused_while_spec_shutdown_is_set_and_says_to_remove_it():
    cluster = stopped_with_a_completed_and_b_aborted()
    cluster.flow = edited(cluster.flow, annotations={"flow.volcano.sh/rerun": "1"})
    result = cluster.step()
    assert result.creates == []
    why = ("nothing run again: spec.shutdown is Stop; remove it with the request (kubectl jobflow retry does both)")
    assert (cluster.flow.status.rerun.id, cluster.flow.status.rerun.message) == ("1", why)
    assert [e.message for e in result.events if e.reason == "Rerun"] == [f"rerun request 1: {why}"]
    assert (cluster.phase, cluster.flow.status.state.reason) == (JobFlowPhase.FAILED, "Stopped")


def test_once_shutdown_is_removed_a_rerun_runs_again_what_did_not_finish_and_keeps_what_completed():
    cluster = stopped_with_a_completed_and_b_aborted()
    cluster.flow = edited(cluster.flow, shutdown=None, annotations={"flow.volcano.sh/rerun": "2"})
    result = cluster.step()
    assert [c.job_name for c in result.creates] == ["test-b-r1"]  # a completed: kept
    assert cluster.flow.status.rerun.from_attempt == {"b": 2}
    assert cluster.phase is JobFlowPhase.RUNNING
    cluster.move_job("test-b-r1", P.COMPLETED)
    assert [c.job_name for c in cluster.step().creates] == ["test-c"]  # held by the stop, it runs now
    cluster.move("c", P.COMPLETED)
    result = cluster.step()
    assert result.creates == []  # z completed before the rerun: kept, as every flow that completed
    assert (cluster.phase, cluster.flow.status.state.reason) == (JobFlowPhase.SUCCEED, None)
    assert cluster.job_names() == ["test-a", "test-b", "test-b-r1", "test-c", "test-z"]


def stopped_with_retries_left() -> Cluster:
    """RETRIED stopped while ``a`` (3 retries left) ran: aborted, ``z`` completed, Failed (Stopped)."""
    cluster = Cluster(jobflow(RETRIED))
    cluster.step()
    cluster.move("a", P.RUNNING)
    shut_down(cluster, "Stop")
    cluster.step()
    cluster.move("a", P.ABORTED)
    assert [c.job_name for c in cluster.step().creates] == ["test-z"]
    cluster.move("z", P.COMPLETED)
    cluster.step()
    assert (cluster.phase, cluster.flow.status.state.reason) == (JobFlowPhase.FAILED, "Stopped")
    return cluster


def test_a_rerun_after_a_stop_runs_the_aborted_flow_again_at_once_with_its_retries_afresh():
    """``kubectl jobflow retry`` removes ``spec.shutdown`` in the same patch as its request: the rerun is still
    decided on the stopped JobFlow, so the aborted attempt is a failure that runs again, not a retry in waiting."""
    cluster = stopped_with_retries_left()
    cluster.flow = edited(cluster.flow, shutdown=None, annotations={"flow.volcano.sh/rerun": "3"})
    result = cluster.step()
    assert cluster.flow.status.rerun.from_attempt == {"a": 2}
    assert cluster.flow.status.rerun.message == "run again: a"
    assert [c.job_name for c in result.creates] == ["test-a-r1"]  # at once: no backoff of a retry
    for attempt in ("test-a-r1", "test-a-r2", "test-a-r3"):  # its three retries, whole
        cluster.move_job(attempt, P.FAILED)
        cluster.now += timedelta(hours=1)
        cluster.step()
    cluster.move_job("test-a-r4", P.COMPLETED)
    assert [c.job_name for c in cluster.step().creates] == ["test-b"]


def test_taking_spec_shutdown_away_by_hand_undoes_nothing_until_a_rerun():
    cluster = stopped_with_retries_left()
    before = cluster.flow.status
    cluster.flow = edited(cluster.flow, shutdown=None)
    cluster.now += timedelta(hours=1)  # long past any retry backoff
    result = cluster.step()
    assert result.creates == [] and result.of(Abort) == []
    assert (cluster.phase, cluster.flow.status.state.reason) == (JobFlowPhase.FAILED, "Stopped")
    assert cluster.flow.status.job_status_list == before.job_status_list


def test_a_terminated_jobflow_reruns_once_shutdown_is_removed():
    cluster = running_a_and_b("Terminate")
    cluster.step()
    cluster.move("a", P.ABORTED)
    cluster.move("b", P.ABORTED)
    cluster.step()
    cluster.flow = edited(cluster.flow, shutdown=None, annotations={"flow.volcano.sh/rerun": "again"})
    assert [c.job_name for c in cluster.step().creates] == ["test-a-r1", "test-b-r1"]
    assert (cluster.flow.status.state.phase, cluster.flow.status.state.reason) in (
        (JobFlowPhase.PENDING, None), (JobFlowPhase.RUNNING, None))  # every flow runs again: nothing runs yet


# After the end


@pytest.mark.parametrize("how", ["Stop", "Terminate"])
def test_a_stop_after_the_jobflow_succeeded_changes_nothing(how):
    cluster = only_z_running()
    cluster.move("z", P.COMPLETED)
    cluster.step()
    assert cluster.phase is JobFlowPhase.SUCCEED
    before = cluster.flow.status
    shut_down(cluster, how)
    result = cluster.step()
    assert (result.actions, cluster.flow.status) == ((), before)
    assert (cluster.phase, cluster.flow.status.state.reason) == (JobFlowPhase.SUCCEED, None)


HANDLED = "spec: {flows: [{name: train}, {name: alert, dependsOn: {targets: [train], outcome: Failed}}]}"


@pytest.mark.parametrize("how", ["Stop", "Terminate"])
def test_a_stop_after_a_jobflow_with_a_skipped_handler_succeeded_changes_nothing(how):
    cluster = Cluster(jobflow(HANDLED))
    cluster.step()
    cluster.move("train", P.COMPLETED)
    cluster.step()
    assert (cluster.phase, cluster.flow.status.progress) == (JobFlowPhase.SUCCEED, "2/2")
    assert [flow.name for flow in cluster.flow.status.skipped_flows] == ["alert"]
    before = cluster.flow.status
    shut_down(cluster, how)
    result = cluster.step()
    assert (result.actions, cluster.flow.status) == ((), before)


# Properties

HOW = st.sampled_from(["Stop", "Terminate"])
PHASES = st.sampled_from([None, *VcJobPhase])


@st.composite
def shapes(draw) -> list[dict]:
    """A random DAG of up to 6 flows: dependencies on earlier flows (awaiting success, a failure or the end),
    ``finally`` flows, retries."""
    flows: list[dict] = []
    for index in range(draw(st.integers(min_value=1, max_value=6))):
        entry: dict = {"name": f"f{index}"}
        if draw(st.integers(min_value=0, max_value=3)) == 0:
            entry["finally"] = True
        earlier = [flow["name"] for flow in flows if flow.get("finally", False) == entry.get("finally", False)]
        if earlier and draw(st.booleans()):  # a flow that is not finally may not wait for one that is
            entry["dependsOn"] = {"targets": draw(st.lists(st.sampled_from(earlier), min_size=1, max_size=2,
                                                            unique=True))}
            outcome = draw(st.sampled_from([None, None, "Failed", "Finished"]))
            if outcome:
                entry["dependsOn"]["outcome"] = outcome
        if draw(st.integers(min_value=0, max_value=3)) == 0:
            entry["retry"] = {"limit": draw(st.integers(min_value=1, max_value=3))}
        flows.append(entry)
    return flows


def spec_of(flows: list[dict], *, keep_going: bool = False, suspend: bool = False, shutdown: str | None = None) -> str:
    """The spec, as JSON (which is YAML)."""
    return json.dumps({"flows": flows, **({"failurePolicy": "KeepGoing"} if keep_going else {}),
                       **({"suspend": True} if suspend else {}), **({"shutdown": shutdown} if shutdown else {})})


@dataclass
class ShutDownWorld:
    flow: JobFlow
    jobs: list[VcJob]
    how: str

    @property
    def finals(self) -> set[str]:
        return {flow.name for flow in self.flow.spec.flows or () if flow.final}

    def effective(self, flow: str) -> VcJobPhase | None:
        name = job_name(jobflow=self.flow.name, flow=flow)
        live = [job.phase for job in self.jobs if job.name == name]
        records = [r.state for r in (self.flow.status.job_status_list if self.flow.status else None) or ()
                   if r.name == name]
        return live[0] if live else records[0] if records else None


@st.composite
def shut_down_worlds(draw) -> ShutDownWorld:
    """A random JobFlow with ``spec.shutdown`` set, each flow's vcjob in a random phase (live, only recorded, or
    none)."""
    how = draw(HOW)
    spec = spec_of(draw(shapes()), keep_going=draw(st.booleans()), suspend=draw(st.booleans()), shutdown=how)
    flow = jobflow(f"spec: {spec}")
    jobs, records = [], []
    for entry in flow.spec.flows or ():
        kind = draw(st.sampled_from(["none", "live", "record"]))
        phase = draw(PHASES)
        if kind == "live":
            jobs.append(vcjob(flow, entry.name, phase))
        elif kind == "record":
            name = job_name(jobflow=flow.name, flow=entry.name)
            records.append({"name": name, **({"state": phase} if phase else {})})
    status = JobFlowStatus.model_validate({"jobStatusList": records})
    return ShutDownWorld(flow.model_copy(update={"status": status}), jobs, how)


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(shut_down_worlds())
def test_once_shut_down_a_plan_starts_nothing_but_finally_flows_aborts_what_runs_and_the_jobflow_has_ended(world):
    result = plan(world.flow, templates=templates_for(world.flow), jobs=world.jobs, now=T0)
    created = {create.flow for create in result.creates}
    if world.how == "Terminate":
        assert created == set()
    else:
        assert created <= world.finals, f"started after a stop: {created - world.finals}"
    phase = result.status.state.phase
    assert phase in (JobFlowPhase.FAILED, JobFlowPhase.SUCCEED)
    stays = world.finals if world.how == "Stop" else set()
    running = {job.name for job in world.jobs if not is_final(job.phase)
               and job.phase not in (P.ABORTING, P.TERMINATING, P.COMPLETING)
               and job.name.removeprefix("test-") not in stays}
    assert {abort.job_name for abort in result.of(Abort)} == running
    if phase is JobFlowPhase.SUCCEED:  # only a JobFlow whose every flow had already ended: final, or skipped
        outcomes = observe(world.flow, jobs=world.jobs, now=T0).outcomes.of
        for flow in world.flow.spec.flows or ():
            assert is_final(world.effective(flow.name)) or outcomes[flow.name] is FlowOutcome.SKIPPED, flow.name
        assert result.status.state.reason is None
    else:
        assert result.status.state.reason == ("Stopped" if world.how == "Stop" else "Terminated")


NEXT = {None: [P.PENDING, P.RUNNING], P.NEW: [P.PENDING, P.RUNNING], P.PENDING: [P.RUNNING, P.ABORTED],
        P.RUNNING: [P.COMPLETED, P.FAILED, P.RESTARTING, P.COMPLETING], P.RESTARTING: [P.RUNNING],
        P.COMPLETING: [P.COMPLETED], P.ABORTING: [P.ABORTED], P.TERMINATING: [P.TERMINATED]}
"""How Volcano may move a vcjob on, by itself."""


@dataclass
class Store:
    """The API server's copy of the JobFlow (each status written is a new version) and its vcjobs."""

    flow: JobFlow
    jobs: dict[str, VcJob] = field(default_factory=dict)
    versions: list[JobFlowStatus | None] = field(default_factory=list)
    job_lists: list[list[VcJob]] = field(default_factory=list)
    asked: set[str] = field(default_factory=set)
    """Vcjobs an abort was asked for: Volcano's job controller carries it out when it gets to it."""
    phases: list[JobFlowPhase] = field(default_factory=list)
    now: datetime = T0

    def __post_init__(self) -> None:
        self.templates = templates_for(self.flow)

    def remember(self) -> None:
        self.versions.append(self.flow.status)
        self.job_lists.append(list(self.jobs.values()))

    def plan(self, *, status: JobFlowStatus | None, jobs: list[VcJob]):
        self.now += timedelta(seconds=20)
        return plan(self.flow.model_copy(update={"status": status}), templates=self.templates, jobs=jobs,
                    now=self.now)

    def carry_out(self, result) -> None:
        """What the shell does with a plan made from the stored status: write, then create and abort."""
        if result.status_changed:
            self.flow = self.flow.model_copy(update={"status": result.status})
            self.phases.append(result.status.state.phase)
        for create in result.creates:
            if create.job_name not in self.jobs:  # else the API server answers AlreadyExists
                manifest = create.manifest
                self.jobs[create.job_name] = VcJob.model_validate(manifest | {"metadata": manifest["metadata"] | {
                    "uid": f"uid-{create.job_name}", "creationTimestamp": self.now}})
        self.asked |= {abort.job_name for abort in result.of(Abort)}

    def move(self, name: str, phase: VcJobPhase) -> None:
        self.now += timedelta(seconds=20)
        job = self.jobs[name].to_wire()
        job["status"] = {"state": {"phase": phase, "lastTransitionTime": self.now}}
        self.jobs[name] = VcJob.model_validate(job)


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(flows=shapes(), keep_going=st.booleans(), how=HOW, data=st.data())
def test_after_a_stop_no_sequence_of_moves_and_late_or_repeated_plans_starts_a_flow_or_takes_the_phase_back(
        flows, keep_going, how, data):
    store = Store(jobflow(f"spec: {spec_of(flows, keep_going=keep_going)}"))
    finals = {flow["name"] for flow in flows if flow.get("finally")}
    may_start = finals if how == "Stop" else set()
    store.remember()
    stop_at = data.draw(st.integers(min_value=0, max_value=15), label="the stop lands after this many steps")
    log: list[str] = []
    for step in range(data.draw(st.integers(min_value=stop_at + 1, max_value=40), label="steps")):
        if step == stop_at:
            failed_before = store.flow.status is not None and store.flow.status.state is not None and \
                store.flow.status.state.phase is JobFlowPhase.FAILED
            store.flow = edited(store.flow, shutdown=how)
            log.append(f"shutdown: {how}")
        stopped = step >= stop_at
        movable = [(name, phase) for name, job in sorted(store.jobs.items()) for phase in NEXT.get(job.phase, ())]
        movable += [(name, P.ABORTING) for name in sorted(store.asked) if store.jobs[name].phase in
                    (P.NEW, P.PENDING, P.RUNNING, P.RESTARTING)]
        kind = data.draw(st.sampled_from(["plan", "twice", "late status", "late jobs",
                                          *(["volcano"] * 3 if movable else [])]))
        if kind == "volcano":
            name, phase = data.draw(st.sampled_from(movable))
            store.move(name, phase)
            log.append(f"{name} -> {phase}")
            store.remember()
            continue
        moments = st.integers(min_value=0, max_value=len(store.versions) - 1)
        for _ in range(2 if kind == "twice" else 1):  # twice: the same event delivered again
            status = store.versions[data.draw(moments)] if kind == "late status" else store.flow.status
            jobs = store.job_lists[data.draw(moments)] if kind == "late jobs" else list(store.jobs.values())
            result = store.plan(status=status, jobs=jobs)
            log.append(f"{kind}: {[c.job_name for c in result.creates]} {result.status.state.phase}")
            if stopped:
                started = {create.flow for create in result.creates}
                assert started <= may_start, f"started after the stop: {started - may_start} after {log}"
                assert result.status.state.phase in (JobFlowPhase.FAILED, JobFlowPhase.SUCCEED), log
            if kind != "late status":  # a plan from an older status loses its write (resourceVersion): no more
                store.carry_out(result)
        store.remember()
        if JobFlowPhase.FAILED in store.phases:
            after = store.phases[store.phases.index(JobFlowPhase.FAILED):]
            assert set(after) == {JobFlowPhase.FAILED}, f"phases written: {store.phases} after {log}"
    for _ in range(10):  # Volcano carries out the aborts; a finally flow that may run completes
        for name, job in list(store.jobs.items()):
            if not is_final(job.phase):
                store.move(name, P.COMPLETED if name.removeprefix("test-") in may_start else P.ABORTED)
        store.carry_out(store.plan(status=store.flow.status, jobs=list(store.jobs.values())))
    state = store.flow.status.state
    assert all(is_final(job.phase) for job in store.jobs.values()), log
    assert state.phase in (JobFlowPhase.FAILED, JobFlowPhase.SUCCEED), log
    if state.phase is JobFlowPhase.FAILED and not failed_before:  # a JobFlow failed before: its reason stays
        assert state.reason == ("Stopped" if how == "Stop" else "Terminated"), (state, log)


def test_a_stop_after_a_terminate_changes_nothing_and_starts_no_finally_flow():
    cluster = running_a_and_b("Terminate")
    cluster.step()
    cluster.move("a", P.ABORTED)
    cluster.move("b", P.ABORTED)
    cluster.step()
    assert (cluster.phase, cluster.flow.status.state.reason) == (JobFlowPhase.FAILED, "Terminated")
    shut_down(cluster, "Stop")
    assert cluster.step().creates == []  # z, held by the terminate, stays held
    assert cluster.flow.status.state.reason == "Terminated"


def test_a_stop_of_a_jobflow_that_had_failed_keeps_why_it_failed_and_aborts_what_still_runs():
    cluster = running_a_and_b()
    cluster.move("a", P.FAILED)
    cluster.step()
    assert (cluster.phase, cluster.flow.status.state.reason) == (JobFlowPhase.FAILED, "JobFailed")
    shut_down(cluster, "Stop")
    assert aborted(cluster.step()) == {"test-b": "Stopped"}
    assert cluster.flow.status.state.reason == "JobFailed"
