"""``status.queue``, and the vcjobs a queue can no longer hold, from one plan (:mod:`jobflow_core.queueing.line`).

* **Waiting**: a JobFlow that has not started and has no room yet (the start table's ``NO_ROOM`` row): its queue,
  its place in line, what its first stages need (its widest stage with ``wholeFlowAdmission``) and why.
* **Admitted**: a JobFlow that started: what the gangs of its unfinished vcjobs, and of those this plan creates,
  request (``reserved``), which JobFlows behind it leave free; with ``wholeFlowAdmission``, at least its widest stage
  until it ends. The queue is the one its vcjobs join; without any, the one recorded before.
* **Held**: a started JobFlow whose next stages wait while at-risk JobFlows that overtook it hold the queue
  (:func:`jobflow_core.queueing.line.overtaken`): it reserves what those stages need, so that JobFlows behind it
  still count it, and is woken like a waiting one.
* **none**: a JobFlow that has not started and is not waiting for room (blocked for another reason) holds no place
  in line; one whose vcjobs request nothing (and whose queue has nothing to say) has no ``status.queue`` at all.

While PriorityClass ``volcano-jobflow-started`` is missing, a started JobFlow says so in ``status.queue.message``
and, once, in a Warning event (:func:`queue_events`).

A vcjob still Pending whose gang its queue can no longer ever hold (the capability was lowered since it was created)
is reported with the flows blocked as ``Unschedulable`` (:func:`never_scheduled`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from jobflow_core.flows.vcjobs import gang_of
from jobflow_core.models import JobFlowPhase, QueueStatus, VcJobPhase
from jobflow_core.queueing.line import (ADMITTED, DEFAULT_QUEUE, HELD, PRIORITY_CLASS, WAITING, Admission, QueueView,
                                        never_fits, queue_of, reserved_of)
from jobflow_core.vocabulary import resources
from jobflow_core.vocabulary.kube_events import Event, EventType, Reason
from jobflow_core.vocabulary.phase import is_final

if TYPE_CHECKING:  # the planner's values, taken as arguments: planning is the room above this one
    from jobflow_core.planning.observation import Observation
    from jobflow_core.planning.starts import FlowDecision

NO_PRIORITY_CLASS: Final = (
    f"PriorityClass {PRIORITY_CLASS} is not installed (or cannot be read): this JobFlow's next vcjobs get no priority "
    "over the first stages of newer JobFlows; kubectl apply -f manifests/priorityclasses.yaml")
"""``status.queue.message`` of a started JobFlow while the PriorityClass is missing (and its Warning event's)."""


@dataclass(frozen=True)
class QueueOutcome:
    """What queueing tells the planner about one plan, asked once (:func:`consult`)."""

    status: QueueStatus | None
    """``status.queue``."""
    held: Admission | None
    """Why the JobFlow waits in its queue's line (the start table's ``NO_ROOM``), or None."""
    unschedulable: list[str]
    """Its vcjobs the queue can no longer ever hold (:func:`never_scheduled`), said with the Unschedulable flows."""
    events: list[Event]
    """The Warning when the PriorityClass went missing (:func:`queue_events`)."""


def consult(observation: Observation, decisions: Sequence[FlowDecision], *, queues: Mapping[str, QueueView],
            written: QueueStatus | None) -> QueueOutcome:
    """Everything the planner asks of queueing for one plan, in one call; ``written`` is ``status.queue`` as the
    API server has it (what an event is said against)."""
    held = held_of(decisions)
    status = queue_status(observation, decisions, held=held, queues=queues)
    return QueueOutcome(status=status, held=held, unschedulable=never_scheduled(observation, queues),
                        events=queue_events(written, status))


def held_of(decisions: Sequence[FlowDecision]) -> Admission | None:
    """Why the JobFlow waits in line: the admission of the first flow the start table's ``NO_ROOM`` held back."""
    return next((d.admission for d in decisions if d.no_room and d.admission is not None), None)


def queue_status(observation: Observation, decisions: Sequence[FlowDecision], *, held: Admission | None,
                 queues: Mapping[str, QueueView]) -> QueueStatus | None:
    """``status.queue``: Waiting with its place in line while the queue has no room for a JobFlow that has not
    started; once started, Admitted with what its unfinished vcjobs' gangs (and those created now) reserve. The
    queue is the one its vcjobs join; without any, the one recorded before (none for a JobFlow no queue was read
    for, as upstream's). ``held``: :func:`held_of` the decisions."""
    previous = observation.previous.queue
    admission = held
    if admission is not None and observation.started:  # overtaken by at-risk JobFlows: keeps its room behind them
        live = [gang_of(job) for job in observation.owned if not is_final(job.phase)]
        return QueueStatus(name=admission.queue, state=HELD,
                           reserved=resources.to_wire(reserved_of([*live, admission.needs])) or None,
                           message=admission.message)
    if admission is not None:
        return QueueStatus(name=admission.queue, state=WAITING, position=admission.position,
                           requests=resources.to_wire(admission.needs) or None, message=admission.message)
    creating = [d.manifest for d in decisions if d.starts and d.manifest is not None]
    live = [job for job in observation.owned if not is_final(job.phase)]
    names = [queue_of(m["spec"]) for m in creating] + [job.spec.queue or DEFAULT_QUEUE for job in live if job.spec]
    name = names[0] if names else (previous.name if previous else None)
    if not (names or observation.started):
        return None  # not in line: blocked for another reason (or nothing known), so it holds no place
    if name is None:
        return previous
    reserved = reserved_of([*(resources.gang_requests(m["spec"]) for m in creating), *(gang_of(job) for job in live)])
    widest: dict[str, str] | None = None
    if observation.jobflow.spec.whole_flow_admission:  # keeps room for its widest stage until it ends
        admitted = next((d.admission for d in decisions if d.admission is not None and d.admission.start), None)
        widest = resources.to_wire(admitted.needs) if admitted else (previous.requests if previous else None)
        if observation.phase not in (JobFlowPhase.SUCCEED, JobFlowPhase.FAILED) and (creating or live or widest):
            reserved = resources.most(reserved, resources.of_wire(widest))
    view = queues.get(name)
    if view is None:
        message = previous.message if previous and previous.name == name else None
    else:
        message = None if view.priority_class else NO_PRIORITY_CLASS
    if not (reserved or widest or message):
        return None  # nothing to say (vcjobs that request nothing, as upstream's examples): no field, as before
    return QueueStatus(name=name, state=ADMITTED, requests=widest or None, reserved=resources.to_wire(reserved) or None,
                       message=message)


def never_scheduled(observation: Observation, queues: Mapping[str, QueueView]) -> list[str]:
    """The JobFlow's vcjobs still Pending whose gang (their annotation) their queue can never hold: its capability
    or the nodes shrank since they were created. Volcano would keep them Pending for ever, saying only that the
    gang is not ready."""
    messages = []
    for job in observation.owned:
        if job.phase not in (VcJobPhase.PENDING, VcJobPhase.NEW) or job.metadata.deletion_timestamp is not None:
            continue
        why = never_fits(queues.get((job.spec.queue if job.spec else None) or DEFAULT_QUEUE), request=gang_of(job))
        if why:
            messages.append(f'vcjob "{job.name}" of JobFlow "{observation.jobflow.namespace}/'
                            f'{observation.jobflow.name}" stays Pending: {why.replace("; nothing was created", "")} '
                            f"(delete it, or fix the queue, and the flow goes on)")
    return messages


def queue_events(previous: QueueStatus | None, queue: QueueStatus | None) -> list[Event]:
    """A Warning when the PriorityClass went missing for this JobFlow (not on every plan that still finds it
    missing): the status alone is read by few, an event shows in ``kubectl describe`` and the cluster's event feed."""
    if queue is None or queue.message != NO_PRIORITY_CLASS or (previous and previous.message == NO_PRIORITY_CLASS):
        return []
    return [Event(EventType.WARNING, Reason.PRIORITY_CLASS_MISSING, NO_PRIORITY_CLASS)]
