"""Properties of the extended planner over random JobFlows run to the end, and of upstream JobFlows.

A random JobFlow (a DAG with random ``dependsOn.outcome``, ``finally`` flows and failure policy) is driven to its
end: each step plans, creates what the plan creates, and Volcano ends some running vcjob, Completed or Failed,
as hypothesis chooses.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from jobflow_core import observe
from jobflow_core.models import AwaitedOutcome, JobFlowPhase, VcJobPhase
from jobflow_core.vocabulary.phase import FlowOutcome, JobCategory, category_of, outcome_of_phase
from scenario import Cluster, jobflow
from test_planner_properties import any_worlds

P = VcJobPhase


@st.composite
def control_flows(draw) -> str:
    count = draw(st.integers(min_value=1, max_value=7))
    flows = []
    for index in range(count):
        final = draw(st.booleans()) and draw(st.booleans())
        pool = [f["name"] for f in flows if bool(f.get("finally")) == final]
        targets = draw(st.lists(st.sampled_from(pool), max_size=2, unique=True)) if pool else []
        flow = {"name": f"f{index}"} | ({"finally": True} if final else {})
        if targets:
            outcome = draw(st.sampled_from([None, "Succeeded", "Failed", "Finished"]))
            flow["dependsOn"] = {"targets": targets} | ({"outcome": outcome} if outcome else {})
        flows.append(flow)
    policy = draw(st.sampled_from(["FailFast", "KeepGoing"]))
    return f"spec: {{failurePolicy: {policy}, flows: {flows}}}"


def outcome_now(cluster: Cluster, flow: str) -> FlowOutcome | None:
    job = cluster.jobs.get(f"test-{flow}")
    if job is not None:
        return outcome_of_phase(job.phase)
    skipped = {s.name for s in cluster.flow.status.skipped_flows or ()} if cluster.flow.status else set()
    return FlowOutcome.SKIPPED if flow in skipped else None


def dependencies_allow(cluster: Cluster, flow_name: str) -> bool:
    flow = next(f for f in cluster.flow.spec.flows if f.name == flow_name)
    targets = flow.depends_on.targets if flow.depends_on else None
    if not targets:
        return True
    outcomes = [outcome_now(cluster, target) for target in targets]
    awaited = flow.depends_on.outcome or AwaitedOutcome.SUCCEEDED
    if awaited is AwaitedOutcome.SUCCEEDED:
        return all(o is FlowOutcome.SUCCEEDED for o in outcomes)
    if awaited is AwaitedOutcome.FAILED:
        return FlowOutcome.FAILED in outcomes
    return None not in outcomes


@given(control_flows(), st.data())
@settings(max_examples=100, deadline=None)
def test_run_to_the_end_no_flow_starts_twice_or_early_and_the_jobflow_ends(text, data):
    cluster = Cluster(jobflow(text))
    created: list[str] = []
    for _ in range(30):
        result = cluster.step()
        # What the flows' targets had done when the plan was made: the jobs before it, the skips it decided.
        before = Cluster(cluster.flow)
        before.jobs = {name: job for name, job in cluster.jobs.items()
                       if name not in {create.job_name for create in result.creates}}
        for create in result.creates:
            assert create.flow not in created, f"{create.flow} started twice"
            assert dependencies_allow(before, create.flow), f"{create.flow} started early"
            created.append(create.flow)
        running = sorted(name for name, job in cluster.jobs.items()
                         if category_of(job.phase) not in (JobCategory.DONE, JobCategory.FAILED))
        if not running and not result.creates:
            break
        if running:
            name = data.draw(st.sampled_from(running))
            cluster.move(name.removeprefix("test-"), data.draw(st.sampled_from([P.COMPLETED, P.FAILED])))
    cluster.step()
    assert cluster.phase in (JobFlowPhase.SUCCEED, JobFlowPhase.FAILED), cluster.flow.status


def upstream_phase(categories: set[JobCategory]) -> JobFlowPhase:
    """Upstream-compatible rules, as they were before outcomes, skips and finally flows existed."""
    if JobCategory.FAILED in categories:
        return JobFlowPhase.FAILED
    if categories <= {JobCategory.DONE}:
        return JobFlowPhase.SUCCEED
    if categories & {JobCategory.ACTIVE, JobCategory.DONE}:
        return JobFlowPhase.RUNNING
    return JobFlowPhase.PENDING


@given(any_worlds)
def test_a_jobflow_written_for_upstream_plans_as_before_no_skips_and_the_old_phase_rules(world):
    result = world.run()
    assert result.status.skipped_flows is None
    observation = observe(world.flow, jobs=world.jobs)
    if world.flow.metadata.deletion_timestamp is None and not observation.errors:
        created = {create.flow for create in result.creates}
        categories = {category_of(P.NEW if view.name in created else view.phase) for view in observation.views}
        assert result.status.state.phase is upstream_phase(categories)
