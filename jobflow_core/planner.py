"""The planner: one JobFlow and what exists in the cluster in, the writes that move it forward out.

``plan`` is a pure function in the style of a Metacontroller hook: it reads no clock, talks to no API server,
draws no random numbers and changes none of its inputs. The shell lists the vcjobs, fetches the JobTemplates
the plan will need (:func:`templates_needed`), calls :func:`plan`, and carries out the :class:`Plan`. Planning
the same inputs twice gives the same plan, so the shell may re-plan whenever anything happens.

One plan, step by step:

1. Observe (:mod:`jobflow_core.observation`): each flow next to its vcjob (only vcjobs this JobFlow controls,
   by owner UID) and its record in the previous status; the spec's validation errors.
2. Gate: compute the JobFlow phase (:mod:`jobflow_core.phase`). Failed (any job failed, or the spec is
   invalid) and Terminating (being deleted) start nothing; the status still follows the live vcjobs.
3. Start: every flow whose vcjob should exist but does not (never created, or vanished before it finished) and
   whose targets are all Completed is created from its JobTemplate (:mod:`jobflow_core.jobs`). A flow whose
   JobTemplate is missing, or whose vcjob name is taken by a vcjob we do not own, waits and says why.
4. Status (:mod:`jobflow_core.status`), with the jobs being created already listed as pending.
5. Clean up: with ``jobRetainPolicy: delete``, a Succeed JobFlow deletes all its live vcjobs (their records
   stay in the status); a vcjob being deleted (by us, a user or its TTL) is released from our finalizer, since
   the status about to be written holds its record.
6. Events: a phase change, and a Warning when the blocking reason or message is new. Creation events come
   separately, one per create, because they may only be recorded once the create succeeded.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from jobflow_core.dependencies import starts_allowed
from jobflow_core.events import Event, EventType, Reason, job_created, phase_changed
from jobflow_core.jobs import build_job
from jobflow_core.naming import has_record_finalizer
from jobflow_core.template_validation import validate_template
from jobflow_core.models import (
    FlowState,
    JobFlow,
    JobFlowPhase,
    JobFlowStatus,
    JobSpec,
    JobTemplate,
    RetainPolicy,
    VcJob,
    WaitingFlow,
)
from jobflow_core.observation import FlowView, Observation, observe
from jobflow_core.phase import JobCategory, category_of
from jobflow_core.probes import DEFAULT_RECHECK_SECONDS, CheckResult, NetworkCheck
from jobflow_core.status import build_status


@dataclass(frozen=True)
class Plan:
    """What the shell should do, in this order: create, delete, write the status, record the events."""

    creates: list[dict[str, Any]]
    """vcjob manifests to POST."""
    create_events: list[Event]
    """``create_events[i]`` is to be recorded once ``creates[i]`` was created (upstream's ``Created`` event)."""
    deletes: list[str]
    """Names of vcjobs (in the JobFlow's namespace) to DELETE."""
    releases: list[str]
    """vcjobs being deleted whose record is in ``status``: remove our finalizer once the status is written."""
    status: JobFlowStatus
    status_changed: bool
    """Whether ``status`` differs from the JobFlow's current status; if not, the write can be skipped."""
    events: list[Event]


@dataclass(frozen=True)
class Blocker:
    """Why the JobFlow cannot go on as it should: a reason word and a message saying what to do.

    The first blocker's reason becomes ``status.state.reason``; all messages, joined, ``status.state.message``.
    """

    reason: Reason
    message: str


def network_checks_needed(jobflow: JobFlow, /, *, jobs: Sequence[VcJob]) -> list[NetworkCheck]:
    """The HTTP/TCP probe checks the shell should run before :func:`plan`: those of flows that could start now."""
    observation = observe(jobflow, jobs=jobs)
    return observation.network_checks(_candidates(observation))


def templates_needed(jobflow: JobFlow, /, *, jobs: Sequence[VcJob],
                     probe_results: Mapping[NetworkCheck, CheckResult] | None = None) -> list[str]:
    """Names of the JobTemplates :func:`plan` will look up for these inputs: those of the flows it would start."""
    observation = observe(jobflow, jobs=jobs, probe_results=probe_results)
    return [view.flow.name for view in _startable(observation) if view.foreign is None]


def plan(
    jobflow: JobFlow, /, *, templates: Mapping[str, JobTemplate], jobs: Sequence[VcJob], now: datetime,
    probe_results: Mapping[NetworkCheck, CheckResult] | None = None,
    recheck_seconds: int = DEFAULT_RECHECK_SECONDS,
    rejections: Mapping[str, str] | None = None,
) -> Plan:
    """Plan one step of ``jobflow``.

    ``templates`` maps JobTemplate names (in the JobFlow's namespace) to templates; it needs at least those
    :func:`templates_needed` names, and a name it lacks counts as a JobTemplate that does not exist. ``jobs``
    are the vcjobs the shell listed (for example by label ``volcano.sh/createdByJobFlow``); those this JobFlow
    does not control are only used to detect name conflicts. ``now`` is part of the contract for features that
    will need time (probe timeouts, retry backoff); nothing reads it yet, which keeps re-planning idempotent.
    ``probe_results`` answers the checks of :func:`network_checks_needed` (an unanswered check has not passed);
    a flow still waiting for a probe tells, in ``waitingFlows[].recheckSeconds``, how soon to look again.
    ``rejections`` maps flows whose vcjob the API server refused (Volcano's webhook) to its message: those wait,
    and say why, until the template or the cluster is fixed.
    """
    observation = observe(jobflow, jobs=jobs, probe_results=probe_results)
    startable = _startable(observation)
    conflicts = {view.flow.name: _conflict_message(observation, view) for view in startable if view.foreign is not None}
    missing = {
        view.flow.name: _template_missing_message(observation, view)
        for view in startable
        if view.flow.name not in conflicts and view.flow.name not in templates
    }
    manifests = {view.flow.name: build_job(jobflow, flow=view.flow.name, template=templates[view.flow.name])
                 for view in startable if view.flow.name not in conflicts and view.flow.name not in missing}
    invalid = {name: _invalid_job_message(observation, templates[name], manifest)
               for name, manifest in manifests.items() if validate_template(_as_template(templates[name], manifest))}
    refused = {name: f'the API server refused vcjob "{manifest["metadata"]["name"]}": {(rejections or {})[name]} '
                     f'(fix JobTemplate "{observation.jobflow.namespace}/{name}" or the cluster; the flow will retry)'
               for name, manifest in manifests.items() if name in (rejections or {}) and name not in invalid}
    starting = {name: manifest for name, manifest in manifests.items() if name not in invalid and name not in refused}
    creates, creating = list(starting.values()), list(starting)
    broken_probes = {view.flow.name: "; ".join(observation.readiness(view).errors)
                     for view in _candidates(observation) if observation.readiness(view).errors}
    blockers = _failure_blockers(observation) + [
        Blocker(reason, "; ".join(messages.values()))
        for reason, messages in ((Reason.JOB_NAME_CONFLICT, conflicts), (Reason.TEMPLATE_NOT_FOUND, missing),
                                 (Reason.INVALID_TEMPLATE, invalid), (Reason.JOB_REJECTED, refused),
                                 (Reason.PROBE_TASK_NOT_FOUND, broken_probes))
        if messages
    ]

    phase = observation.flow_phase(creating=creating)
    state = FlowState(
        phase=phase,
        reason=blockers[0].reason if blockers else None,
        message="; ".join(blocker.message for blocker in blockers) or None,
    )
    status = build_status(
        observation,
        creating=creating,
        state=state,
        waiting=_waiting_flows(observation, creating=set(creating),
                               holds={**conflicts, **missing, **invalid, **refused, **broken_probes},
                               phase=phase, recheck_seconds=recheck_seconds),
    )
    previous = jobflow.status
    return Plan(
        creates=creates,
        create_events=[job_created(manifest["metadata"]["name"]) for manifest in creates],
        deletes=_deletes(observation, phase=phase),
        releases=[job.name for job in observation.owned
                  if job.metadata.deletion_timestamp is not None and has_record_finalizer(job)],
        status=status,
        status_changed=status.to_wire() != (previous.to_wire() if previous else {}),
        events=_events(jobflow, phase=phase, blocker=blockers[0] if blockers else None, message=state.message),
    )


def _candidates(observation: Observation) -> list[FlowView]:
    """Flows that need a vcjob, while the JobFlow still starts anything: their dependencies decide."""
    if not starts_allowed(observation.flow_phase()):
        return []
    return [view for view in observation.views if view.needs_job]


def _startable(observation: Observation) -> list[FlowView]:
    """Flows whose vcjob should be created now, if their JobTemplate exists and their job name is free."""
    return [view for view in _candidates(observation) if observation.readiness(view).ready]


def _failure_blockers(observation: Observation) -> list[Blocker]:
    if observation.jobflow.metadata.deletion_timestamp is not None:
        return []
    if observation.errors:
        return [Blocker(Reason.INVALID_SPEC, "; ".join(str(error) for error in observation.errors))]
    namespace = observation.jobflow.namespace
    failed = [
        f'vcjob "{namespace}/{view.job_name}" of flow "{view.flow.name}" is {view.phase}'
        for view in observation.views
        if category_of(view.phase) is JobCategory.FAILED
    ]
    if not failed:
        return []
    advice = "a JobFlow fails when one of its jobs fails: fix the cause, then delete and re-create the JobFlow"
    return [Blocker(Reason.JOB_FAILED, f"{'; '.join(failed)} ({advice})")]


def _as_template(template: JobTemplate, manifest: Mapping[str, Any]) -> JobTemplate:
    """The template as the flow will run it: its spec with the flow's patch merged in."""
    return template.model_copy(update={"spec": JobSpec.model_validate(manifest["spec"])})


def _invalid_job_message(observation: Observation, template: JobTemplate, manifest: Mapping[str, Any]) -> str:
    errors = "; ".join(str(error) for error in validate_template(_as_template(template, manifest)))
    return (f'JobTemplate "{observation.jobflow.namespace}/{template.name}" (with the flow\'s patch) would make an '
            f"invalid vcjob: {errors}")


def _template_missing_message(observation: Observation, view: FlowView) -> str:
    return (
        f'JobTemplate "{observation.jobflow.namespace}/{view.flow.name}" not found: '
        "create it (kubectl apply -f ...) and the flow will continue"
    )


def _conflict_message(observation: Observation, view: FlowView) -> str:
    jobflow = observation.jobflow
    return (
        f'vcjob "{jobflow.namespace}/{view.job_name}" already exists and is not controlled by JobFlow '
        f'"{jobflow.namespace}/{jobflow.name}": delete or rename that vcjob (or rename flow "{view.flow.name}") '
        "and the flow will continue"
    )


def _waiting_flows(
    observation: Observation, *, creating: set[str], holds: Mapping[str, str], phase: JobFlowPhase,
    recheck_seconds: int,
) -> list[WaitingFlow]:
    """Flows without a vcjob, what they wait for, and why."""
    waiting = []
    for view in observation.views:
        if view.phase is not None or view.flow.name in creating:
            continue
        readiness = observation.readiness(view)
        message = holds.get(view.flow.name, readiness.message)
        probing = readiness.probing and starts_allowed(phase)
        if not starts_allowed(phase):
            message = f"not started: the JobFlow is {phase}"
        elif probing:
            message = f"{message} (checked again every {recheck_seconds}s)"
        waiting.append(
            WaitingFlow(
                name=view.flow.name,
                job_name=view.job_name,
                waiting_for=list(readiness.waiting_for) or None,
                message=message,
                recheck_seconds=recheck_seconds if probing else None,
            )
        )
    return waiting


def _deletes(observation: Observation, *, phase: JobFlowPhase) -> list[str]:
    policy = observation.jobflow.spec.job_retain_policy
    if policy is RetainPolicy.DELETE and phase is JobFlowPhase.SUCCEED:
        return [job.name for job in observation.owned]
    return []


def _events(
    jobflow: JobFlow, *, phase: JobFlowPhase, blocker: Blocker | None, message: str | None
) -> list[Event]:
    """Events for what is new compared with the previous status, so that re-planning never repeats one."""
    before = (jobflow.status.state if jobflow.status else None) or FlowState()
    events = []
    if before.phase != phase:
        events.append(phase_changed(jobflow=jobflow.name, old=before.phase, new=phase))
    if blocker and (blocker.reason, message) != (before.reason, before.message):
        events.append(Event(EventType.WARNING, blocker.reason, message or blocker.message))
    return events
