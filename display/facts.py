"""What a JobFlow looks like right now, flow by flow: the facts ``kubectl jobflow status`` and ``graph`` show, and
the dashboard's pages, gathered once; and the text of its queue, cost and pods, as both say them.

A pure function of the JobFlow as read from the cluster and the vcjobs it created (no clock, no I/O). For each
flow, in DAG order (:func:`jobflow_core.dag.graph.flow_graph`): its vcjob's phase, creation time, restarts and pods
per task and phase, or, for a flow without a vcjob yet, what it waits for. Live vcjobs are believed first (they
are newer than the JobFlow's status); a vcjob that is gone (``jobRetainPolicy: delete``, a TTL) is described by
the status' record of it. Only vcjobs the JobFlow controls (owner UID) count, as in the engine.

A flow that makes child JobFlows (``flows[].jobFlow``) is read as the engine reads it: each child it controls is a
stand-in vcjob (:func:`jobflow_core.flows.children.as_job`: its phase as its flow's run), and the facts of each child
(its own flows, and theirs) can be nested under it by the caller that has them (:mod:`display.family`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from jobflow_core import Observation, observe
from jobflow_core.dag.graph import flow_graph
from jobflow_core.flows.children import ChildJob, as_job
from jobflow_core.flows.units import FlowNode
from jobflow_core.insight.cost import total
from jobflow_core.models import (
    format_time,
    AwaitedJobFlow,
    Cost,
    DeadlineStatus,
    QueueStatus,
    FlowJobStatus,
    JobFlow,
    JobFlowStatus,
    SkippedFlow,
    TaskState,
    VcJob,
    VcJobPhase,
    WaitingFlow,
)
from jobflow_core.queueing.line import ordinal
from jobflow_core.vocabulary.api import JOBFLOW, PARENT, PARENT_FLOW
from jobflow_core.vocabulary.naming import is_owned_by
from jobflow_core.vocabulary.phase import is_final
from jobflow_core.vocabulary.resources import describe, of_wire

WAITING = "Waiting"
"""The phase shown for a flow whose vcjob does not exist yet."""
SKIPPED = "Skipped"
"""The phase shown for a flow that will never run (``status.skippedFlows``)."""
CREATED = "Created"
"""The phase shown for a vcjob Volcano has not looked at yet (phase ``""``)."""
CACHED = "Cached"
"""The phase shown for a memoized flow that reused an earlier run instead of running (``reason: Cached``)."""
POD_PHASES = ("Pending", "Running", "Succeeded", "Failed", "Unknown")


@dataclass(frozen=True)
class FlowRow:
    name: str
    level: int
    after: list[str]
    job: str
    phase: str
    live: bool
    """The vcjob exists now (False: not created yet, or gone and known from the status' record)."""
    created: datetime | None
    restarts: int | None
    tasks: dict[str, dict[str, int]] = field(default_factory=dict)
    """Pods per task and pod phase (``taskStatusCount``); zero counts left out."""
    replicas: dict[str, int] = field(default_factory=dict)
    waiting_for: list[str] = field(default_factory=list)
    message: str | None = None
    expected_start: datetime | None = None
    """For a waiting flow: when it is expected to start (``waitingFlows[].expectedStart``)."""
    ran: str | None = None
    """How long a finished vcjob ran (its ``runningDuration``, e.g. ``4s``); Volcano keeps no pod counts then."""
    items: dict[str, int] = field(default_factory=dict)
    """For a ``forEach`` flow: how many of its items are in each shown phase (Waiting for those not started); for
    a ``repeat`` flow, of its iterations so far."""
    iterations: bool = False
    """``items`` counts a ``repeat`` flow's iterations."""
    each: list[tuple[int, str, str]] = field(default_factory=list)
    """For a ``forEach`` or ``repeat`` flow: each item's (iteration's) index, vcjob and shown phase."""
    attempts: int = 0
    """How many vcjobs the flow has had (more than one with ``retry`` or after a rerun); items count once each."""
    result: str | None = None
    """The current vcjob's result (its pods' termination message), when the engine recorded one."""
    cost: Cost | None = None
    """What the row's vcjob cost once it ended (``jobStatusList[].cost``); for a ``forEach`` or ``repeat`` flow,
    its items' (iterations') vcjobs added up. None while nothing is charged."""
    child_template: str | None = None
    """For a flow whose work is a child JobFlow (``flows[].jobFlow``): the JobFlowTemplate it is made from; its
    ``job`` is then the child JobFlow's name (``items``' too), not a vcjob's."""


@dataclass(frozen=True)
class JobFlowFacts:
    namespace: str
    name: str
    phase: str
    progress: str
    reason: str | None
    message: str | None
    created: datetime | None
    rows: list[FlowRow]
    expected_completion: datetime | None = None
    critical_path: list[str] = field(default_factory=list)
    queue: QueueStatus | None = None
    """``status.queue``: the Volcano queue, Waiting (and where in line) or Admitted (and what it reserves)."""
    cost: Cost | None = None
    """``status.cost``: requests x seconds run of the ended vcjobs."""
    awaited: list[AwaitedJobFlow] = field(default_factory=list)
    """``status.awaitedJobFlows``: the other JobFlows it waits for, what each is bound to and how it ended."""
    parent: tuple[str, str | None] | None = None
    """For a child JobFlow: its parent JobFlow's name and the flow that made it (:func:`parent_of`)."""
    deadline: DeadlineStatus | None = None
    """``status.deadline``: on time, at risk, missed or met against ``spec.deadline``."""
    children: dict[str, JobFlowFacts] = field(default_factory=dict)
    """The facts of the child JobFlows its flows made, by name (a row's ``job``, an item's), each with its own
    children: only what the caller nested (:func:`display.family.take_family`); empty otherwise."""

    @property
    def ended(self) -> bool:
        return self.phase in ("Succeed", "Failed")


def take(jobflow: dict[str, Any], jobs: Iterable[dict[str, Any]], *, now: datetime | None = None,
         children: Iterable[dict[str, Any]] = (), nested: Mapping[str, JobFlowFacts] | None = None) -> JobFlowFacts:
    """The facts of ``jobflow`` from its vcjobs ``jobs`` and the child JobFlows ``children`` (those it does not
    control are ignored, as vcjobs are), with ``nested``: the facts of those children, where the caller has them."""
    flow = JobFlow.model_validate(jobflow)
    status = flow.status or JobFlowStatus()
    graph = flow_graph(flow)
    live: dict[str, VcJob] = {job.name: job for job in map(VcJob.model_validate, jobs) if is_owned_by(job, flow)}
    live.update((job.name, job) for job in (as_job(JobFlow.model_validate(child)) for child in children)
                if is_owned_by(job, flow))
    made_from = {f.name: f.job_flow.template for f in flow.spec.flows or () if f.job_flow is not None}
    records = {record.name: record for record in status.job_status_list or ()}
    conditions = status.conditions or {}
    waiting = {entry.name: entry for entry in status.waiting_flows or ()}
    skipped = {entry.name: entry for entry in status.skipped_flows or ()}
    observation = observe(flow, jobs=live.values(), now=now)  # what the engine decides, for flows the status lacks
    views = {view.name: view for view in observation.views}
    rows: list[FlowRow] = []
    for name in graph.order:
        if name in graph.undefined:
            continue
        node = observation.node(name)
        if node.fan_out:
            rows.append(_fan_out_row(node, level=graph.levels[name], after=graph.targets(name), records=records,
                                     live=live, waiting=waiting, skipped=skipped, observation=observation,
                                     child_template=made_from.get(name)))
            continue
        view = views[name]
        vcjob = view.next_job_name  # the current attempt's, or the retry's about to start
        current = view.current if not view.superseded else None
        common = {"name": name, "level": graph.levels[name], "after": graph.targets(name), "job": vcjob,
                  "attempts": view.current.number - (current is not None and current.job is None
                                                     and current.record is None),
                  "result": records[vcjob].result if vcjob in records else None,
                  "cost": records[vcjob].cost if vcjob in records else None, "child_template": made_from.get(name)}
        if view.retrying:
            row = FlowRow(**common, live=False, created=None, restarts=None,
                          **_not_started(name, waiting=waiting, skipped=skipped, observation=observation))
        elif vcjob in live and isinstance(live[vcjob], ChildJob):
            row = FlowRow(**common, phase=_shown(live[vcjob].phase), live=True, restarts=None,
                          created=live[vcjob].metadata.creation_timestamp)
        elif vcjob in live:
            row = _live_row(live[vcjob], **common)
        elif vcjob in records:
            record, condition = records[vcjob], conditions.get(vcjob)
            row = FlowRow(**common, phase=CACHED if record.cached_from else _shown(record.state), live=False,
                          created=record.start_timestamp,
                          restarts=record.restart_count,
                          tasks=_counts(condition.task_status_count if condition else None),
                          ran=_ran(record.state, condition.running_duration if condition else None))
        else:
            row = FlowRow(**common, live=False, created=None, restarts=None,
                          **_not_started(name, waiting=waiting, skipped=skipped, observation=observation))
        rows.append(row)
    state = status.state
    return JobFlowFacts(
        namespace=flow.namespace,
        name=flow.name,
        phase=(state.phase.value if state and state.phase else ""),
        progress=status.progress or f"{sum(row.phase == 'Completed' for row in rows)}/{len(rows)}",
        reason=state.reason if state else None,
        message=state.message if state else None,
        queue=status.queue,
        deadline=status.deadline,
        cost=status.cost,
        awaited=list(status.awaited_job_flows or ()),
        created=flow.metadata.creation_timestamp,
        rows=rows,
        expected_completion=status.expected_completion,
        critical_path=list(status.critical_path or ()),
        parent=parent_of(jobflow),
        children={name: facts for name, facts in (nested or {}).items()
                  if name in live and isinstance(live[name], ChildJob)},
    )


def parent_of(obj: Mapping[str, Any]) -> tuple[str, str | None] | None:
    """The parent JobFlow's name and the flow that made ``obj``, for a child JobFlow (labelled so, and controlled
    by a JobFlow of that name); None for a JobFlow that is no child."""
    meta = obj.get("metadata") or {}
    labels = meta.get("labels") or {}
    parent = labels.get(PARENT)
    controlled = any(ref.get("controller") and ref.get("kind") == JOBFLOW.kind and ref.get("name") == parent
                     for ref in meta.get("ownerReferences") or ())
    return (parent, labels.get(PARENT_FLOW)) if parent and controlled else None


def _fan_out_row(node: FlowNode, *, level: int, after: list[str], records: dict[str, FlowJobStatus],
                 live: dict[str, VcJob], waiting: dict[str, WaitingFlow], skipped: dict[str, SkippedFlow],
                 observation: Observation, child_template: str | None) -> FlowRow:
    """One row for a ``forEach`` flow: its items counted by phase; the vcjobs are ``<jobflow>-<flow>-<index>``."""
    units = [unit for unit in node.units if not unit.placeholder]
    shown: list[str] = []
    completed = set(observation.previous.completed_jobs or ())
    for unit in units:
        name = unit.next_job_name
        if unit.retrying or (name not in live and name not in records and name not in completed):
            shown.append(WAITING)
        elif name in live or name in records:
            shown.append(_shown(live[name].phase if name in live else records[name].state))
        else:
            shown.append(VcJobPhase.COMPLETED.value)  # named only, in completedJobs (jobflow_core.planning.status)
    counts = {phase: shown.count(phase) for phase in dict.fromkeys(sorted(shown, key=_item_rank))}
    created = [unit.job.metadata.creation_timestamp for unit in units if unit.job is not None]
    job = f"{observation.jobflow.name}-{node.name}-[0-{len(units) - 1}]" if units else "-"
    common = {"name": node.name, "level": level, "after": after, "job": job, "items": counts,
              "attempts": sum(unit.job is not None or unit.next_job_name in records for unit in units),
              "iterations": node.repeats, "child_template": child_template,
              "each": [(unit.item.index if unit.item else 0, unit.next_job_name, phase)
                       for unit, phase in zip(units, shown, strict=True)],
              "live": any(unit.job is not None for unit in units), "created": min(created, default=None),
              "cost": total(records[unit.next_job_name].cost for unit in units if unit.next_job_name in records),
              "restarts": sum((unit.job.status.retry_count or 0) for unit in units
                              if unit.job is not None and unit.job.status) if created else None}
    if node.phase is None:
        return FlowRow(**common, **_not_started(node.name, waiting=waiting, skipped=skipped,
                                                observation=observation))
    return FlowRow(**common, phase=_shown(node.phase if is_final(node.phase) else VcJobPhase.RUNNING),
                   message=waiting[node.name].message if node.name in waiting else None)


def _item_rank(phase: str) -> int:
    order = ("Completed", "Running", "Pending", CREATED, WAITING)
    return order.index(phase) if phase in order else -1


def _not_started(name: str, *, waiting: dict[str, WaitingFlow], skipped: dict[str, SkippedFlow],
                 observation: Observation) -> dict[str, Any]:
    """Phase, waits and message of a flow without a vcjob: as the status says, else as the engine would decide."""
    if name in skipped:
        return {"phase": SKIPPED, "message": skipped[name].message}
    if name in waiting:
        return {"phase": WAITING, "waiting_for": list(waiting[name].waiting_for or []),
                "message": waiting[name].message, "expected_start": waiting[name].expected_start}
    readiness = observation.readiness.get(name)
    if readiness is None:
        return {"phase": WAITING}
    if readiness.skip is not None:
        return {"phase": SKIPPED, "message": readiness.skip}
    return {"phase": WAITING, "waiting_for": list(readiness.waiting_for),
            "message": readiness.message if readiness.waiting_for else None}


def _shown(phase: VcJobPhase | None) -> str:
    return CREATED if phase in (None, VcJobPhase.NEW) else phase.value


def _live_row(vcjob: VcJob, **common: Any) -> FlowRow:
    status = vcjob.status
    tasks = _counts(status.task_status_count if status else None)
    if not tasks and status:
        # Volcano drops taskStatusCount once a vcjob has finished; its pod counters remain.
        pods = {phase: getattr(status, phase.lower(), None) or 0 for phase in POD_PHASES}
        tasks = {"pods": {phase: count for phase, count in pods.items() if count}} if any(pods.values()) else {}
    replicas = {task.name: task.replicas for task in (vcjob.spec.tasks if vcjob.spec else None) or ()
                if task.name and task.replicas is not None}
    if "pods" in tasks:
        replicas["pods"] = sum(replicas.values())
    return FlowRow(**common, phase=_shown(vcjob.phase), live=True,
                   created=vcjob.metadata.creation_timestamp, restarts=(status.retry_count if status else None) or 0,
                   tasks=tasks, replicas=replicas,
                   ran=_ran(vcjob.phase, status.running_duration if status else None))


def _ran(phase: VcJobPhase | None, duration: str | None) -> str | None:
    return duration if is_final(phase) else None


def _counts(counts: dict[str, TaskState] | None) -> dict[str, dict[str, int]]:
    shown = {}
    for task, state in (counts or {}).items():
        phases = {phase: count for phase, count in (state.phase or {}).items() if count}
        if phases:
            shown[task] = dict(sorted(phases.items(), key=lambda item: _phase_rank(item[0])))
    return shown


def _phase_rank(phase: str) -> tuple[int, str]:
    return (POD_PHASES.index(phase) if phase in POD_PHASES else len(POD_PHASES), phase)


def queue_line(queue: QueueStatus) -> str:
    """``Queue gpu: Waiting, 3rd in line (needs 8 CPU)`` or ``Queue gpu: Admitted, reserves 8 CPU``."""
    if queue.state == "Waiting":
        line = f"Queue {queue.name}: Waiting, {ordinal(queue.position or 0)} in line"
        line += f" (needs {describe(of_wire(queue.requests))})" if queue.requests else ""
    else:
        line = f"Queue {queue.name}: {queue.state or 'Admitted'}"
        line += f", reserves {describe(of_wire(queue.reserved))}" if queue.reserved else ""
    return line + (f"; {queue.message}" if queue.message and queue.state != "Waiting" else "")


def deadline_line(deadline: DeadlineStatus) -> str:
    """``Deadline 2026-11-29T06:00:00Z: AtRisk: expected to succeed at ...`` (the state, and what it said when it took
    it)."""
    line = f"Deadline {format_time(deadline.at)}: {deadline.state}"
    return line + (f": {deadline.message}" if deadline.message else "")


def awaited_line(entry: AwaitedJobFlow) -> str:
    """``Waits for JobFlowTemplate/nightly: JobFlow nightly-29401 Succeed`` (what a dependency on another JobFlow is
    bound to, and how it ended or why it failed; else what it waits for)."""
    bound = f"JobFlow {entry.job_flow}" if entry.job_flow else "not bound yet"
    if entry.phase is not None:
        return f"Waits for {entry.name}: {bound} {entry.phase.value}"
    if entry.reason is not None:
        return f"Waits for {entry.name}: {bound}, failed ({entry.reason}): {entry.message or ''}"
    return f"Waits for {entry.name}: {entry.message or bound}"


def cost_text(cost: Cost) -> str:
    """``240 CPU core-s, 120 memory GiB-s, 60 GPU-s`` (zeros left out)."""
    parts = [(cost.cpu_seconds, "CPU core-s"), (cost.memory_gib_seconds, "memory GiB-s"), (cost.gpu_seconds, "GPU-s")]
    return ", ".join(f"{value:g} {unit}" for value, unit in parts if value) or "0"


def tasks_text(row: FlowRow) -> str:
    """``ps: 1/1 Running; worker: 1/2 Running, 1/2 Succeeded``."""
    parts = []
    for task, phases in row.tasks.items():
        total = row.replicas.get(task)
        counts = ", ".join(f"{count}/{total} {phase}" if total else f"{count} {phase}"
                           for phase, count in phases.items())
        parts.append(f"{task}: {counts}")
    return "; ".join(parts)
