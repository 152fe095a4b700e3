"""What a run cost: requested CPU, memory and GPU times seconds, per vcjob, summed per JobFlow and per JobTemplate.

What a platform team charges back is what a vcjob held, not what it used: the requests of its gang (the
``minAvailable`` pods Volcano must place together, :mod:`jobflow_core.vocabulary.resources`; recorded on each vcjob the
engine creates, annotation ``flow.volcano.sh/gang-requests``) for as long as it ran: from the moment Volcano first said
Running (its ``status.conditions``) to its end (``status.state.lastTransitionTime``); a vcjob that never ran costs
nothing. Units: CPU cores x seconds, memory GiB x seconds, GPUs (``nvidia.com/gpu``) x seconds.

A vcjob's cost is worked out once, when its end is recorded (``jobStatusList[].cost``; kept after the vcjob is
gone); the JobFlow's ``status.cost`` adds up its records, and a JobTemplate's ``status.cost`` every counted run of
it (:mod:`jobflow_core.insight.template_stats`: each run once).
"""

from collections.abc import Iterable
from datetime import datetime

from jobflow_core.models import Cost, VcJob, VcJobPhase
from jobflow_core.vocabulary.resources import CPU, GPU, MEMORY, Resources

GIB = 2**30


def job_cost(job: VcJob, gang: Resources) -> Cost | None:
    """The cost of an ended vcjob whose gang requested ``gang`` (None while it has not ended, or without a gang)."""
    state = job.status.state if job.status else None
    ended = state.last_transition_time if state else None
    if not gang or ended is None:
        return None
    return of(gang, seconds=max(0.0, (ended - (ran_from(job) or ended)).total_seconds()))


def ran_from(job: VcJob) -> datetime | None:
    """When Volcano first said the vcjob Running (None: it never ran)."""
    conditions = (job.status.conditions if job.status else None) or []
    return next((c.last_transition_time for c in conditions if c.status is VcJobPhase.RUNNING), None)


def of(gang: Resources, *, seconds: float) -> Cost:
    return Cost(cpu_seconds=round(gang.get(CPU, 0) / 1000 * seconds, 3),
                memory_gib_seconds=round(gang.get(MEMORY, 0) / GIB * seconds, 3),
                gpu_seconds=round(gang.get(GPU, 0) * seconds, 3))


def total(costs: Iterable[Cost | None]) -> Cost | None:
    """The sum (None when nothing was charged)."""
    found = [cost for cost in costs if cost is not None]
    if not found:
        return None
    return Cost(cpu_seconds=round(sum(c.cpu_seconds or 0 for c in found), 3),
                memory_gib_seconds=round(sum(c.memory_gib_seconds or 0 for c in found), 3),
                gpu_seconds=round(sum(c.gpu_seconds or 0 for c in found), 3))
