"""Properties of retries and conditions under faults: random JobFlows, random failures, random event trouble.

Each step of a run is one of: an event delivered (plan, create, write the status); the same, but the handler is
killed after some of its creates and before its status write (the next event sees the vcjobs but not the
status); time passing; or Volcano ending a running vcjob. A duplicated event is just one more delivery, and a
reordered one changes nothing, because the planner re-reads the truth (the vcjobs) on every event.

Whatever happens: no attempt's vcjob is created twice, no flow gets more attempts than its limit allows, a retry
starts only after its backoff, a flow starts only once its targets' last attempts allow it, a flow whose
condition is false never starts, and the JobFlow ends Succeed or Failed once nothing runs.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jobflow_core import plan
from jobflow_core.models import AwaitedOutcome, JobFlowPhase, VcJob, VcJobPhase
from jobflow_core.vocabulary.phase import FlowOutcome, JobCategory, category_of, outcome_of_phase
from scenario import Cluster, jobflow

P = VcJobPhase
pytestmark = pytest.mark.filterwarnings("ignore:The recursion limit will not be reset")
"""cel-python raises the recursion limit each time a CEL environment is made (for the first condition seen)."""
RETRIED_BY_DEFAULT = (P.FAILED, P.TERMINATED, P.ABORTED)


@st.composite
def retried_flows(draw) -> str:
    count = draw(st.integers(min_value=1, max_value=5))
    flows = []
    for index in range(count):
        pool = [f["name"] for f in flows]
        targets = draw(st.lists(st.sampled_from(pool), max_size=2, unique=True)) if pool else []
        flow: dict = {"name": f"f{index}"}
        if targets:
            outcome = draw(st.sampled_from([None, "Failed", "Finished"]))
            flow["dependsOn"] = {"targets": targets} | ({"outcome": outcome} if outcome else {})
        if draw(st.booleans()):
            flow["retry"] = {"limit": draw(st.integers(min_value=0, max_value=3)),
                             "backoff": {"delaySeconds": draw(st.integers(min_value=0, max_value=300)),
                                         "factor": draw(st.sampled_from([1, 2, 3])),
                                         "maxDelaySeconds": 400}}
        if draw(st.integers(min_value=0, max_value=3)) == 0:
            flow["when"] = draw(st.sampled_from(["true", "false"]))
        flows.append(flow)
    policy = draw(st.sampled_from(["FailFast", "KeepGoing"]))
    return f"spec: {{failurePolicy: {policy}, flows: {flows}}}"


def attempt_name(flow: str, attempt: int) -> str:
    return f"test-{flow}" + (f"-r{attempt - 1}" if attempt > 1 else "")


def limit_of(spec: dict, flow: str) -> int:
    return spec[flow].get("retry", {}).get("limit", 0)


def backoff(spec: dict, flow: str, *, after: int) -> timedelta:
    """The wait before attempt ``after + 1``, from the spec's numbers (not the planner's code)."""
    settings_ = spec[flow]["retry"]["backoff"]
    seconds = settings_["delaySeconds"] * settings_["factor"] ** (after - 1)
    return timedelta(seconds=min(seconds, settings_["maxDelaySeconds"]))


def final_outcome(cluster: Cluster, spec: dict, flow: str, skipped: set[str]) -> FlowOutcome | None:
    """What a dependent may see of ``flow``: its last attempt's outcome once no retry follows, or Skipped."""
    if flow in skipped:
        return FlowOutcome.SKIPPED
    attempts = [cluster.jobs[name] for n in range(1, 5) if (name := attempt_name(flow, n)) in cluster.jobs]
    if not attempts:
        return None
    last = attempts[-1].status.state.phase if attempts[-1].status and attempts[-1].status.state else None
    outcome = outcome_of_phase(last)
    if outcome is FlowOutcome.FAILED and len(attempts) <= limit_of(spec, flow) and last in RETRIED_BY_DEFAULT:
        return None  # a retry follows
    return outcome if outcome in (FlowOutcome.SUCCEEDED, FlowOutcome.FAILED) else None


def allowed(cluster: Cluster, spec: dict, flow: str, skipped: set[str]) -> bool:
    """Whether ``flow``'s targets allow it to start, ``skipped`` being the flows the plan has decided to skip."""
    depends_on = spec[flow].get("dependsOn")
    if not depends_on:
        return True
    outcomes = [final_outcome(cluster, spec, target, skipped) for target in depends_on["targets"]]
    awaited = AwaitedOutcome(depends_on.get("outcome", "Succeeded"))
    if awaited is AwaitedOutcome.SUCCEEDED:
        return all(o is FlowOutcome.SUCCEEDED for o in outcomes)
    if awaited is AwaitedOutcome.FAILED:
        return FlowOutcome.FAILED in outcomes  # any target failed (docs/reference.md)
    return None not in outcomes


def ended_at(job: VcJob) -> datetime:
    return job.status.state.last_transition_time


@given(retried_flows(), st.data())
@settings(max_examples=150, deadline=None)
def test_under_lost_and_repeated_events_no_attempt_runs_twice_early_or_beyond_its_limit(text, data):
    cluster = Cluster(jobflow(text))
    spec = {flow.name: flow.model_dump(by_alias=True, exclude_none=True) for flow in cluster.flow.spec.flows}
    created: set[str] = set()
    for _ in range(80):
        action = data.draw(st.sampled_from(["deliver", "deliver", "killed", "wait", "end"]))
        if action == "wait":
            cluster.now += timedelta(seconds=data.draw(st.integers(min_value=1, max_value=400)))
            continue
        running = sorted(name for name, job in cluster.jobs.items()
                         if category_of(job.phase) not in (JobCategory.DONE, JobCategory.FAILED))
        if action == "end":
            if running:
                name = data.draw(st.sampled_from(running))
                cluster.move_job(name, data.draw(st.sampled_from([P.COMPLETED, P.FAILED, P.ABORTED])))
            continue
        result = plan(cluster.flow, templates=cluster.templates, jobs=list(cluster.jobs.values()), now=cluster.now)
        creates = result.creates
        if action == "killed":
            creates = creates[:data.draw(st.integers(min_value=0, max_value=len(creates)))]
        for create in creates:
            name, flow = create.job_name, create.flow
            assert name not in created, f"{name} created twice"
            attempt = int(create.manifest["metadata"]["labels"].get("flow.volcano.sh/attempt", "1"))
            assert name == attempt_name(flow, attempt)
            assert attempt <= limit_of(spec, flow) + 1, f"{name}: more attempts than the limit allows"
            assert spec[flow].get("when") != "false", f"{flow} started though its condition is false"
            if attempt > 1:
                previous = cluster.jobs[attempt_name(flow, attempt - 1)]
                assert previous.phase in RETRIED_BY_DEFAULT, f"{name} while attempt {attempt - 1} had not failed"
                assert cluster.now >= ended_at(previous) + backoff(spec, flow, after=attempt - 1), f"{name} early"
            else:
                skipped = {entry.name for entry in result.status.skipped_flows or ()}
                assert allowed(cluster, spec, flow, skipped), f"{flow} started before its targets allowed it"
            created.add(name)
            cluster.add_job(create)
        if action == "deliver":
            cluster.flow = cluster.flow.model_copy(update={"status": result.status})
    # The end: Volcano ends what runs, time passes, events arrive, until nothing more is created.
    for _ in range(40):
        for name, job in list(cluster.jobs.items()):
            if category_of(job.phase) not in (JobCategory.DONE, JobCategory.FAILED):
                cluster.move_job(name, P.COMPLETED)
        cluster.now += timedelta(seconds=400)
        if not cluster.step().creates and cluster.phase in (JobFlowPhase.SUCCEED, JobFlowPhase.FAILED):
            break
    assert cluster.phase in (JobFlowPhase.SUCCEED, JobFlowPhase.FAILED), cluster.flow.status
