"""Properties of plans over random JobFlows: random DAGs and graphs with cycles, random vcjobs and records."""

from collections import Counter
from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from jobflow_core import plan
from jobflow_core.models import (
    DependsOn,
    Flow,
    JobFlow,
    JobFlowSpec,
    JobFlowStatus,
    JobTemplate,
    VcJob,
    VcJobPhase,
)
from jobflow_core.validation.jobflows import validate
from jobflow_core.vocabulary.naming import is_owned_by, job_name
from scenario import T0, jobflow, template, vcjob

LISTS = ["pendingJobs", "runningJobs", "completedJobs", "failedJobs", "terminatedJobs", "unKnowJobs"]
FINAL = {VcJobPhase.COMPLETED, VcJobPhase.FAILED, VcJobPhase.TERMINATED, VcJobPhase.ABORTED}


@dataclass(frozen=True)
class World:
    flow: JobFlow
    jobs: list[VcJob]
    templates: dict[str, JobTemplate]

    def run(self, flow: JobFlow | None = None, jobs: list[VcJob] | None = None):
        return plan(flow or self.flow, templates=self.templates, jobs=self.jobs if jobs is None else jobs, now=T0)

    def effective_phase(self, flow: str) -> VcJobPhase | None:
        name = job_name(jobflow=self.flow.name, flow=flow)
        live = [job for job in self.jobs if job.name == name and is_owned_by(job, self.flow)]
        if live:
            return live[0].phase
        records = [r for r in self.flow.status.job_status_list or () if r.name == name] if self.flow.status else []
        return records[0].state if records else None


@st.composite
def worlds(draw, *, acyclic: bool) -> World:
    names = [f"f{index}" for index in range(draw(st.integers(min_value=0, max_value=8)))]
    flows = []
    for index, name in enumerate(names):
        pool = names[:index] if acyclic else names
        targets = draw(st.lists(st.sampled_from(pool), max_size=3)) if pool else []
        flows.append({"name": name, "dependsOn": {"targets": targets}} if targets else {"name": name})
    deleting = draw(st.booleans()) and draw(st.booleans())
    metadata = "metadata: {deletionTimestamp: '2026-01-02T03:04:05Z'}\n" if deleting else ""
    policy = draw(st.sampled_from(["retain", "delete"]))
    base = jobflow(f"{metadata}spec: {{jobRetainPolicy: {policy}, flows: {flows}}}")
    jobs, records = [], []
    for name in names:
        kind = draw(st.sampled_from(["none", "live", "record", "live and record", "foreign"]))
        phase = draw(st.sampled_from(list(VcJobPhase)))
        if "live" in kind:
            jobs.append(vcjob(base, name, phase))
        if "record" in kind:
            records.append({"name": job_name(jobflow=base.name, flow=name), **({"state": phase} if phase else {})})
        if kind == "foreign":
            jobs.append(vcjob(base, name, phase, owner_uid="someone-else"))
    flow = base.model_copy(update={"status": JobFlowStatus.model_validate({"jobStatusList": records})})
    available = draw(st.lists(st.sampled_from(names), unique=True)) if names else []
    return World(flow=flow, jobs=jobs, templates={name: template(name) for name in available})


any_worlds = st.one_of(worlds(acyclic=True), worlds(acyclic=False))


@given(any_worlds)
@settings(max_examples=300)
def test_a_plan_only_creates_flows_whose_targets_are_all_completed(world):
    flows = {flow.name: flow for flow in world.flow.spec.flows or ()}
    for create in world.run().creates:
        flow = flows[create.flow]
        targets = (flow.depends_on.targets if flow.depends_on else None) or []
        assert all(world.effective_phase(target) is VcJobPhase.COMPLETED for target in targets)


@given(any_worlds)
@settings(max_examples=300)
def test_a_plan_never_creates_a_job_that_exists_or_finished_nor_anything_when_invalid_or_deleted(world):
    result = world.run()
    if validate(world.flow) or world.flow.metadata.deletion_timestamp:
        assert result.creates == []
    existing = {job.name for job in world.jobs}
    for create in result.creates:
        name = create.job_name
        assert name not in existing
        assert world.effective_phase(name.removeprefix("test-")) not in FINAL


@given(any_worlds)
def test_a_plan_is_deterministic_whatever_the_order_of_the_listed_jobs(world):
    assert world.run() == world.run() == world.run(jobs=list(reversed(world.jobs)))


@given(any_worlds)
def test_planning_again_with_the_written_status_changes_nothing_and_repeats_no_event(world):
    first = world.run()
    again = world.run(flow=world.flow.model_copy(update={"status": first.status}))
    assert again.status == first.status
    assert (again.status_changed, again.events) == (False, [])


@given(any_worlds)
def test_every_job_the_status_names_is_in_exactly_one_list(world):
    wire = world.run().status.to_wire()
    named = Counter(name for list_name in LISTS for name in wire.get(list_name, []))
    assert all(count == 1 for count in named.values())


def layer_before(index: int) -> list[str]:
    """Two flows per layer, each depending on both flows of the layer before."""
    layer = index // 2
    return [f"f{2 * layer - 2}", f"f{2 * layer - 1}"] if layer else []


def test_a_ten_thousand_flow_layered_dag_is_planned_at_once():
    flows = [Flow(name=f"f{i}", depends_on=DependsOn(targets=layer_before(i))) for i in range(10_000)]
    flow = jobflow("metadata: {name: t}").model_copy(update={"spec": JobFlowSpec(flows=flows)})
    completed = [vcjob(flow, f"f{i}", VcJobPhase.COMPLETED) for i in range(5_000)]
    result = plan(flow, templates={f"f{i}": template(f"f{i}") for i in (5_000, 5_001)}, jobs=completed, now=T0)
    assert [c.job_name for c in result.creates] == ["t-f5000", "t-f5001"]
    assert result.status.progress == "5000/10000"
