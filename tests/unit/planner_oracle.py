"""The planner as it was before issue 41 (main 4371d0f..48a424f): the differential oracle of the new one.

Issue 41 asks that the old planner be kept as a Hypothesis oracle until the new one has replaced it: for every
observation the two must give the same :class:`~jobflow_core.planning.planner.Plan` (``test_planner_oracle.py``).
This is the old ``plan_observation`` and ``_blockers``, word for word but for their names; what they call is the
core's (the helpers neither change touched). Delete this file with the old planner's last difference.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from jobflow_core.flows.memo import Entry, newly_memoized
from jobflow_core.models import FlowState, JobFlowPhase, JobFlowStatus, JobTemplate, SkippedFlow
from jobflow_core.dag.probes import DEFAULT_RECHECK_SECONDS
from jobflow_core.insight.eta import estimates_of, forecast
from jobflow_core.insight.template_stats import newly_ended
from jobflow_core.planning import notifications
from jobflow_core.planning.failures import why_failed
from jobflow_core.planning.observation import Observation
from jobflow_core.planning.planner import (Blocker, Create, Delete, Memoize, Plan, Release, UpdateTemplate,
                                           WriteStatus, _aborts, _deletes, _ended_at, _estimates, _events, _ready_since,
                                           _waiting_flows, pending_recheck)
from jobflow_core.planning.starts import NO_ROOM, START_RULES, FlowDecision, Verdict, decide_all
from jobflow_core.planning.status import build_status
from jobflow_core.queueing.line import QueueView
from jobflow_core.queueing.status import held_of, never_scheduled, queue_events, queue_status
from jobflow_core.vocabulary.kube_events import Event, EventType, Reason, job_created
from jobflow_core.vocabulary.naming import has_record_finalizer, template_name, template_of
from jobflow_core.vocabulary.phase import is_final


def old_plan_observation(
    observation: Observation, /, *, templates: Mapping[str, JobTemplate],
    recheck_seconds: int = DEFAULT_RECHECK_SECONDS, rejections: Mapping[str, str] | None = None,
    notify: bool = False, memo: Mapping[str, Entry] | None = None,
    queues: Mapping[str, QueueView] | None = None,
    _written: JobFlowStatus | None = None, _cached: tuple[Event, ...] = (),
) -> Plan:
    """The planner as it was before queueing was asked once and a memo hit stopped planning twice."""
    decisions = decide_all(observation, templates=templates, rejections=rejections, memo=memo, queues=queues)
    hits = [decision for decision in decisions if decision.resolution is not None]
    if hits and observation.now is not None:
        records = [d.resolution.record for d in hits if d.resolution is not None]
        events = tuple(Event(EventType.NORMAL, Reason.CACHED, d.message) for d in hits)
        # The reuse is written before anything that rests on it is created (the write comes before the creates).
        return old_plan_observation(observation.with_records(records), templates=templates,
                                recheck_seconds=recheck_seconds, rejections=rejections, notify=notify,
                                memo=memo, queues=queues,
                                _written=observation.jobflow.status if not _cached else _written,
                                _cached=_cached + events)
    starting = [decision for decision in decisions if decision.verdict is Verdict.START]
    creating = [decision.view.next_job_name for decision in starting]
    phase = observation.flow_phase(creating=creating)
    blockers = _old_blockers(observation, decisions, queues=queues or {})
    held = next((d.admission for d in decisions if d.rule is NO_ROOM and d.admission is not None), None)
    state = FlowState(
        phase=phase,
        reason=blockers[0].reason if blockers else (Reason.WAITING_FOR_QUEUE if held else None),
        message="; ".join(blocker.message for blocker in blockers) or (held.message if held else None),
    )
    skipped = list({decision.view.name: SkippedFlow(name=decision.view.name, job_name=decision.view.job_name,
                                                    reason=decision.reason, message=decision.message)
                    for decision in reversed(decisions) if decision.verdict is Verdict.SKIPPED}.values())[::-1]
    estimates = _estimates(observation, templates)
    expected = forecast(observation.jobflow, {node.name: node for node in observation.nodes},
                        observation.outcomes.of, estimates_of(estimates))
    status = build_status(observation, creating=creating, state=state,
                          waiting=_waiting_flows(decisions, recheck_seconds=recheck_seconds, expected=expected,
                                                 awaits=observation.awaits),
                          skipped=skipped, recheck_seconds=pending_recheck(observation), estimates=estimates,
                          forecast=expected)
    status = status.model_copy(update={"queue": queue_status(observation, decisions, held=held_of(decisions),
                                                                        queues=queues or {}),
                                       # issue 45's status.endTimestamp, worked out as the new planner does
                                       "end_timestamp": _ended_at(observation, status)
                                       if phase in (JobFlowPhase.SUCCEED, JobFlowPhase.FAILED) else None})
    status = notifications.record(observation.jobflow, status, now=observation.now, enabled=notify)
    previous = _written if _cached else observation.jobflow.status
    changed = status.to_wire() != (previous.to_wire() if previous else {})
    deletes = _deletes(observation, phase=phase)
    # Our finalizer has done its job once the vcjob's end is in the status written here (or already there):
    # being deleted, or ended. Released at once, it never holds a namespace that is deleted while no engine runs.
    releases = [*(job for job in observation.owned if has_record_finalizer(job)
                  and (job.metadata.deletion_timestamp is not None or is_final(job.phase))),
                *observation.orphans]
    added: dict[str, list[str]] = {}
    for decision in starting:
        if decision.manifest is not None:
            added.setdefault(template_name(decision.view.flow), []).append(decision.view.next_job_name)
    removed: dict[str, list[str]] = {}
    for job in observation.owned:
        if job.name in deletes and (name := template_of(job)):
            removed.setdefault(name, []).append(job.name)
    creates = tuple(Create(decision.view.name, decision.manifest, job_created(decision.view.next_job_name),
                           _ready_since(observation, decision.view.flow))
                    for decision in starting if decision.manifest is not None)
    events = (*_cached, *_events(observation.jobflow, phase=phase, state=state, skipped=skipped,
                                 rerun=observation.rerun, blocker=blockers[0] if blockers else None),
              *queue_events(previous.queue if previous else None, status.queue))
    write = (WriteStatus(status, events, rerun_accepted=observation.rerun_accepted),) if changed else ()
    return Plan(
        actions=(
            *(UpdateTemplate(template, runs=tuple(runs)) for template, runs in sorted(newly_ended(observation).items())),
            *(Memoize(key, entry) for key, entry in newly_memoized(observation)),
            *write,
            *creates,
            *_aborts(observation),
            *(Delete(name) for name in deletes),
            *(Release(job) for job in releases),
            *(UpdateTemplate(name, added=tuple(added.get(name, ())), removed=tuple(removed.get(name, ())))
              for name in sorted(added.keys() | removed.keys())),
        ),
        status=status,
        decisions=tuple(decisions),
    )




def _old_blockers(observation: Observation, decisions: Sequence[FlowDecision], *,
              queues: Mapping[str, QueueView]) -> list[Blocker]:
    """JobFlow-level failures first, then the blocked flows, grouped by reason in the order of the start table (a
    vcjob already created that its queue can no longer ever hold counts with the flows never started for that)."""
    failure = why_failed(observation)
    blockers = [Blocker(failure.reason, failure.message)] if failure else []
    stuck = never_scheduled(observation, queues)
    by_reason: dict[Reason, list[str]] = {}
    for rule in START_RULES:
        if rule.verdict is Verdict.BLOCKED and rule.reason is not None:
            messages = by_reason.setdefault(rule.reason, [*stuck] if rule.reason is Reason.UNSCHEDULABLE else [])
            messages.extend(d.message for d in decisions if d.rule is rule)
    # A JobFlow-wide message (a whole-flow stage that never fits) is the same for each of its flows: said once.
    blockers += [Blocker(reason, "; ".join(dict.fromkeys(messages))) for reason, messages in by_reason.items()
                 if messages]
    return blockers
