"""The JobFlow status, computed from one observation and nothing else.

The status must come out the same every time the same observation is planned, so that the shell can skip a
write that would change nothing. It therefore never reads a clock: every time in it comes from the vcjobs
themselves.

For each vcjob the JobFlow knows (the flows' jobs in spec order, then jobs of flows no longer in the spec):

* it is named in exactly one list, by its effective phase (:data:`JOB_LIST_OF_PHASE`). A vcjob that is gone
  keeps the list of its recorded phase; a vcjob being created by this plan is pending.
* ``jobStatusList`` has its record (with its ``result`` once a condition needed it): ``startTimestamp`` is the vcjob's
  creation time; ``endTimestamp`` is its ``status.state.lastTransitionTime`` once its phase is final, otherwise absent
  (upstream sends ``null``); ``restartCount`` is ``status.retryCount``; ``runningHistories`` is derived from the vcjob's
  own ``status.conditions`` (each condition opens a span that the next one closes), not from when we happened to look.
  Records of vcjobs that are gone are kept: they are the only trace of them.
* ``conditions[<vcjob>]`` has its phase, ``createTime``, ``runningDuration`` (the vcjob's own, or for a finished
  vcjob ``lastTransitionTime - creationTimestamp`` in Go's duration format) and ``taskStatusCount``.

A ``forEach`` flow's items are summarised in ``fanOuts`` (counts, failed indexes as ranges, the first error), and
an item whose first attempt Completed without a result anyone reads is only *named* (in ``completedJobs``), with
no record and no condition: per-item detail is kept for items that run, failed, were retried or carry a result,
so a fan-out of a thousand succeeded items costs about 30 bytes each. (The observation reads such an item back
from ``completedJobs``.)

``cost`` adds up each ended vcjob's ``jobStatusList[].cost``, its gang's requests x the seconds it ran
(:mod:`jobflow_core.insight.cost`), worked out when its end is recorded. ``failureRate`` is failed vcjobs over those
that ended, every attempt, item and iteration counted. ``estimates``, ``expectedCompletion``, ``criticalPath`` and
``waitingFlows[].expectedStart`` are the forecast of :mod:`jobflow_core.insight.eta` (the completion and the path only
while the JobFlow has not ended).

Then the state (decided by the planner), ``progress`` (flows that ended: Completed, Skipped, or failed and
handled, over all flows; the same two numbers in ``flowsEnded`` and ``flowsTotal``, for kube-state-metrics, which
reads numbers only), ``waitingFlows``, ``skippedFlows`` and ``observedGeneration``. Empty lists are left out,
as Go's ``omitempty`` does.
"""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

from jobflow_core.flows.units import FlowNode
from jobflow_core.flows.vcjobs import gang_of
from jobflow_core.flows.children import ChildJob
from jobflow_core.insight.cost import job_cost
from jobflow_core.insight.cost import total as total_cost
from jobflow_core.insight.eta import Forecast
from jobflow_core.models import (
    Estimate,
    FanOutStatus,
    FlowCondition,
    FlowJobStatus,
    FlowState,
    JobFlowPhase,
    JobFlowStatus,
    JobRunningHistory,
    JobStatus,
    SkippedFlow,
    VcJob,
    VcJobPhase,
    WaitingFlow,
)
from jobflow_core.planning.observation import Observation
from jobflow_core.vocabulary.durations import go_duration
from jobflow_core.vocabulary.phase import FlowOutcome, JobCategory, category_of, is_final

JOB_LIST_OF_PHASE: Final = MappingProxyType(
    {
        VcJobPhase.NEW: "pendingJobs",
        VcJobPhase.PENDING: "pendingJobs",
        VcJobPhase.RUNNING: "runningJobs",
        VcJobPhase.COMPLETED: "completedJobs",
        VcJobPhase.FAILED: "failedJobs",
        VcJobPhase.TERMINATED: "terminatedJobs",
        VcJobPhase.ABORTING: "unKnowJobs",
        VcJobPhase.ABORTED: "unKnowJobs",
        VcJobPhase.RESTARTING: "unKnowJobs",
        VcJobPhase.COMPLETING: "unKnowJobs",
        VcJobPhase.TERMINATING: "unKnowJobs",
    }
)
"""The status list (JSON name) that names a vcjob in each phase. ``""`` is pending here; upstream said unknown."""


@dataclass(frozen=True)
class _Known:
    """One vcjob the status reports on: its name, effective phase, record and condition."""

    name: str
    phase: VcJobPhase | None
    record: FlowJobStatus | None
    condition: FlowCondition | None


def build_status(
    observation: Observation,
    *,
    creating: Iterable[str],
    state: FlowState,
    waiting: Sequence[WaitingFlow],
    skipped: Sequence[SkippedFlow],
    recheck_seconds: int | None = None,
    estimates: Sequence[Estimate] = (),
    forecast: Forecast | None = None,
) -> JobFlowStatus:
    """The new status; ``creating`` names the vcjobs this plan creates."""
    known = _known_jobs(observation, creating=set(creating))
    lists: dict[str, list[str]] = {name: [] for name in JOB_LIST_OF_PHASE.values()}
    for job in known:
        if job.phase is not None:
            lists[JOB_LIST_OF_PHASE[job.phase]].append(job.name)
    outcomes = observation.outcomes
    ended = sum(outcomes.of.get(node.name) is FlowOutcome.SUCCEEDED
                or (outcomes.of.get(node.name) is FlowOutcome.FAILED and node.name in outcomes.handled)
                for node in observation.nodes) + len(skipped)
    return JobFlowStatus.model_validate(
        {
            **{name: jobs or None for name, jobs in lists.items()},
            "jobStatusList": [job.record for job in known if job.record is not None] or None,
            "conditions": {job.name: job.condition for job in known if job.condition is not None} or None,
            "state": state,
            "progress": f"{ended}/{len(observation.nodes)}",
            "flowsEnded": ended,
            "flowsTotal": len(observation.nodes),
            "waitingFlows": list(waiting) or None,
            "skippedFlows": list(skipped) or None,
            "failureRate": _failure_rate(known),
            "cost": total_cost(job.record.cost for job in known if job.record is not None),
            "estimates": list(estimates) or None,
            "expectedCompletion": forecast.completion if forecast and _open(state) else None,
            "criticalPath": list(forecast.critical_path) if forecast and forecast.critical_path and _open(state)
            else None,
            "fanOuts": [_fan_out(node, namespace=observation.jobflow.namespace) for node in observation.nodes
                        if node.flow.for_each is not None and node.items is not None] or None,
            "recheckSeconds": recheck_seconds,
            "rerun": observation.rerun,
            "observedGeneration": observation.jobflow.metadata.generation,
        }
    )


def _known_jobs(observation: Observation, *, creating: set[str]) -> list[_Known]:
    known = []
    for view in observation.views:
        # Attempt numbers only where there can be several attempts (upstream's JobFlows get none).
        numbered = view.flow.retry is not None or len(view.attempts) > 1 or view.first > 1
        starting = view.needs_job and view.next_job_name in creating
        for attempt in view.attempts if not view.placeholder else ():
            if starting and attempt.number == view.next_attempt:
                continue
            result = observation.results.get(attempt.job_name)
            if view.flow.for_each is not None and attempt.number == 1 and attempt.phase is VcJobPhase.COMPLETED \
                    and result is None:
                known.append(_Known(attempt.job_name, VcJobPhase.COMPLETED, None, None))  # named only: bounded
            elif attempt.job is not None:
                known.append(_from_live(attempt.job, attempt=attempt.number if numbered else None, result=result))
            else:
                known.append(_Known(attempt.job_name, attempt.phase, attempt.record, attempt.condition))
        if starting:
            name = view.next_job_name
            known.append(_Known(name, VcJobPhase.NEW, _new_record(name, view.next_attempt if numbered else None),
                                None))
    reported = {job.name for job in known}
    # vcjobs of flows that were removed from the spec: live ones as observed, vanished ones as recorded.
    for job in observation.owned:
        if job.name not in reported:
            known.append(_from_live(job, result=observation.results.get(job.name)))
            reported.add(job.name)
    conditions = observation.previous.conditions or {}
    for record in observation.previous.job_status_list or ():
        if record.name and record.name not in reported:
            known.append(_Known(record.name, record.state, record, conditions.get(record.name)))
            reported.add(record.name)
    return known


def _open(state: FlowState) -> bool:
    """A JobFlow still expected to end (not Succeed nor Failed): only then is a completion time a forecast."""
    return state.phase not in (JobFlowPhase.SUCCEED, JobFlowPhase.FAILED)


def _failure_rate(known: Sequence[_Known]) -> float | None:
    """Failed vcjobs over vcjobs that ended (attempts, items and iterations alike); None before any ended."""
    ended = [job for job in known if is_final(job.phase)]
    if not ended:
        return None
    return round(sum(category_of(job.phase) is JobCategory.FAILED for job in ended) / len(ended), 4)


def _fan_out(node: FlowNode, *, namespace: str) -> FanOutStatus:
    """A ``forEach`` flow's items counted by how they stand; the failed ones' indexes as ranges."""
    units = [unit for unit in node.units if not unit.placeholder]
    failed = [unit for unit in units if not unit.retrying and category_of(unit.phase) is JobCategory.FAILED]
    return FanOutStatus(
        name=node.name,
        total=len(units),
        succeeded=sum(unit.phase is VcJobPhase.COMPLETED for unit in units),
        failed=len(failed),
        running=sum(unit.running for unit in units),
        waiting=sum(unit.needs_job for unit in units),
        failed_indexes=index_ranges([unit.item.index for unit in failed if unit.item]) or None,
        first_error=f'item {failed[0].item.index if failed[0].item else 0}: vcjob "{namespace}/{failed[0].job_name}"'
                    f" is {failed[0].phase}" if failed else None,
    )


def index_ranges(indexes: Iterable[int]) -> str:
    """``[3, 7, 10, 11, 12]`` as ``"3,7,10-12"`` (sorted), the way Kubernetes writes a Job's completed indexes."""
    spans: list[list[int]] = []
    for index in sorted(set(indexes)):
        if spans and index == spans[-1][1] + 1:
            spans[-1][1] = index
        else:
            spans.append([index, index])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)


def _new_record(name: str, attempt: int | None) -> FlowJobStatus:
    return FlowJobStatus(name=name, restart_count=0, attempt=attempt)


def _from_live(job: VcJob, *, attempt: int | None = None, result: str | None = None) -> _Known:
    status = job.status or JobStatus()
    phase = job.phase
    created = job.metadata.creation_timestamp
    ended = status.state.last_transition_time if status.state and is_final(phase) else None
    record = FlowJobStatus(
        name=job.name,
        state=phase or None,
        start_timestamp=created,
        end_timestamp=ended,
        restart_count=status.retry_count or 0,
        running_histories=_histories(job) or None,
        attempt=attempt,
        reason=(status.state.reason or None) if attempt is not None and status.state and ended else None,
        result=result,
        cost=(job.cost if isinstance(job, ChildJob) else job_cost(job, gang_of(job))) if ended else None,
    )
    running_duration = status.running_duration
    if running_duration is None and created and ended:
        running_duration = go_duration(ended - created)
    condition = FlowCondition(
        phase=phase or None,
        create_time=created,
        running_duration=running_duration,
        task_status_count=status.task_status_count,
    )
    return _Known(job.name, phase, record, condition)


def _histories(job: VcJob) -> list[JobRunningHistory]:
    conditions = (job.status.conditions if job.status else None) or []
    if not conditions:
        if job.phase is VcJobPhase.NEW:
            return []
        return [JobRunningHistory(start_timestamp=job.metadata.creation_timestamp, state=job.phase)]
    # Volcano appends a condition on every status update, so the same phase often repeats (Pending, Pending,
    # Running, ...): a history span starts where the phase changes.
    changes = [c for i, c in enumerate(conditions) if i == 0 or c.status != conditions[i - 1].status]
    ends = [following.last_transition_time for following in changes[1:]] + [None]
    return [
        JobRunningHistory(start_timestamp=condition.last_transition_time, end_timestamp=end, state=condition.status)
        for condition, end in zip(changes, ends, strict=True)
    ]
