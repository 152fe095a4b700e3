"""What a run cost (``jobflow_core.insight.cost``): its gang's requests x the seconds it ran, per vcjob, JobFlow,
JobTemplate."""

from __future__ import annotations

from datetime import timedelta

from jobflow_core import plan
from jobflow_core.insight.template_stats import record_runs, ended_job
from jobflow_core.models import Cost, VcJobPhase
from jobflow_core.vocabulary.api import GANG_REQUESTS
from scenario import T0, jobflow, templates_for, vcjob

P = VcJobPhase
FLOW = jobflow("spec: {flows: [{name: a}, {name: b, dependsOn: {targets: [a]}}]}")


def ended(flow: str, *, ran_from: int, ended_at: int, gang: str = '{"cpu":"8","memory":"4Gi","nvidia.com/gpu":"2"}'):
    job = vcjob(FLOW, flow, P.COMPLETED, changed=T0 + timedelta(seconds=ended_at),
                conditions=[(P.PENDING, T0), (P.RUNNING, T0 + timedelta(seconds=ran_from)),
                            (P.COMPLETED, T0 + timedelta(seconds=ended_at))])
    return job.model_copy(update={"metadata": job.metadata.model_copy(update={"annotations": {GANG_REQUESTS: gang}})})


def test_a_vcjob_costs_its_gang_s_requests_for_the_seconds_it_ran_and_the_jobflow_adds_them_up():
    result = plan(FLOW, templates=templates_for(FLOW), jobs=[ended("a", ran_from=10, ended_at=40),
                                                            ended("b", ran_from=45, ended_at=55, gang='{"cpu":"2"}')],
                  now=T0 + timedelta(minutes=1))
    records = {r.name: r.cost for r in result.status.job_status_list}
    assert records["test-a"] == Cost(cpu_seconds=240.0, memory_gib_seconds=120.0, gpu_seconds=60.0)
    assert records["test-b"] == Cost(cpu_seconds=20.0, memory_gib_seconds=0.0, gpu_seconds=0.0)
    assert result.status.cost == Cost(cpu_seconds=260.0, memory_gib_seconds=120.0, gpu_seconds=60.0)


def test_a_vcjob_that_has_not_ended_or_never_ran_costs_nothing_yet():
    running = vcjob(FLOW, "a", P.RUNNING, conditions=[(P.RUNNING, T0)])
    assert plan(FLOW, templates=templates_for(FLOW), jobs=[running], now=T0).status.cost is None
    upstream_job = vcjob(FLOW, "a", P.COMPLETED, changed=T0)  # no gang annotation: made before the engine wrote it
    assert plan(FLOW, templates=templates_for(FLOW), jobs=[upstream_job], now=T0).status.cost is None


def test_a_template_adds_up_the_cost_of_each_run_once_even_when_it_is_replayed():
    run = ended_job(ended("a", ran_from=10, ended_at=40), template="a")
    once = record_runs(None, [run])
    assert once.cost == Cost(cpu_seconds=240.0, memory_gib_seconds=120.0, gpu_seconds=60.0)
    assert record_runs(once, [run]).cost == once.cost
