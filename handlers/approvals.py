"""An approval gate answered by a CloudEvent at ``/trigger`` (:mod:`jobflow_core.flows.gates`).

An event is an answer when its data is a JSON object naming ``jobflow``, ``flow`` and ``decision`` (``approve`` or
``reject``, any case; ``Approved``/``Rejected`` too), with ``namespace`` (unless the handler serves one only) and an
optional ``message``. It is taken only from a sender the gate trusts: its ``type`` (and ``source``) is among the
gate's ``approval.events``, or it carries the extension ``jobflowsignature``, the HMAC of
:func:`jobflow_core.flows.gates.signature` under the engine's key. The answer is then offered to one reconcile of the
JobFlow, which records it with the gate's record, in the guarded status write (the first recorded answer wins).

The reply says what became of it, with codes the delivering path acts on rightly: 202 when the answer is recorded
(or was already, the same event delivered twice); 403 for a sender the gate does not trust, and 422 for an answer
that cannot be taken (no such JobFlow or gate, a gate that waits for no answer now): neither is retried by a Broker
or by Knative's sources, since retrying cannot help. A refused sender also leaves a Warning Event
(``ApprovalRefused``) on the JobFlow, so its owner sees who tried. Faults of the API server are the reconcile's,
answered as every event's (503, retried).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from handlers.dispatch import Dispatcher, PartlyFailed
from handlers.jobflows import Reconciler
from apiclient.rest import ApiError, Conflict, Gone, Unavailable
from jobflow_core.flows.gates import Answer, decision_of, event_accepted, gate_named, signed
from jobflow_core.vocabulary.api import APPROVAL_SIGNATURE
from jobflow_core.models import JobFlow
from jobflow_core.vocabulary.kube_events import Reason

if TYPE_CHECKING:  # the triggers are imported on the first event at /trigger (routes.py)
    from jobflow_core.schedules.triggers import Incoming

log = logging.getLogger("handlers.approvals")


@dataclass(frozen=True)
class Reply:
    """What became of an approval event: the HTTP status and, for a refusal, why."""

    status: int
    message: str = ""


def is_answer(event: Incoming) -> bool:
    data = event.data
    return isinstance(data, dict) and all(key in data for key in ("jobflow", "flow", "decision"))


def answer_event(reconciler: Reconciler, event: Incoming, *, extensions: dict[str, Any],
                 key: bytes | None) -> Reply:
    """Take the answer ``event`` carries to its gate, if its sender may give it."""
    data: dict[str, Any] = event.data
    namespace = data.get("namespace") or (reconciler.namespaces[0] if len(reconciler.namespaces) == 1 else None)
    name, flow, decision = data.get("jobflow"), data.get("flow"), decision_of(data.get("decision"))
    if not all(isinstance(value, str) and value for value in (namespace, name, flow)) or decision is None:
        return Reply(422, "an approval event's data names namespace, jobflow, flow (strings) and decision "
                          f"(approve or reject); this one has {sorted(data)} and decision {data.get('decision')!r}")
    if reconciler.namespaces and namespace not in reconciler.namespaces:
        return Reply(422, f"this handler serves namespaces {', '.join(reconciler.namespaces)}, not {namespace!r}")
    raw = reconciler.kube.get_jobflow(namespace, name)
    if raw is None:
        return Reply(422, f"JobFlow {namespace}/{name} not found: check the event's namespace and jobflow")
    jobflow = JobFlow.model_validate(raw)
    gate = gate_named(jobflow, flow)
    if gate is None or gate.approval is None:
        return Reply(422, f'flow "{flow}" of JobFlow {namespace}/{name} is no approval gate')
    trusted = event_accepted(gate.approval, type=event.type, source=event.source) or (
        key is not None and signed(key, extensions.get(APPROVAL_SIGNATURE), namespace=namespace, jobflow=name,
                                   flow=flow, decision=decision, source=event.source, event_id=event.id))
    if not trusted:
        why = (f'approval event {event.id} of type "{event.type}" from "{event.source}" refused for gate "{flow}": '
               "the gate's approval.events name no such type and source, and the event is not signed with the "
               "engine's key")
        log.warning("%s/%s: %s", namespace, name, why)
        try:  # told to the JobFlow's owner; a refusal that could not be told is still a refusal (never retried)
            reconciler.kube.record_event(raw, type_="Warning", reason=Reason.APPROVAL_REFUSED.value, message=why,
                                         now=reconciler.clock())
        except (ApiError, Conflict, Gone, Unavailable) as error:
            log.warning("could not record the refusal on JobFlow %s/%s: %s", namespace, name, error)
        return Reply(403, why)
    message = data.get("message") if isinstance(data.get("message"), str) else None
    answer = Answer(job_name="", decision=decision, source=event.source, event_id=event.id, message=message)
    outcome = reconciler.jobflow(namespace, name, answers={flow: answer})
    try:  # a status write our event source sends no event for: what waits for this JobFlow follows here
        Dispatcher(reconciler).follow_up(outcome)
    except PartlyFailed as failed:
        log.warning("%s/%s answered; what follows it: %s (the resync makes up for it)", namespace, name, failed)
    return _what_became_of(reconciler, namespace, name, flow, answer)


def _what_became_of(reconciler: Reconciler, namespace: str, name: str, flow: str, answer: Answer) -> Reply:
    """202 when the gate's record that waited is answered (by this event, or before it); 422 when the gate waits
    for no answer (not open yet, or held)."""
    raw = reconciler.kube.get_jobflow(namespace, name)
    status = JobFlow.model_validate(raw).status if raw is not None else None
    entries = [entry for entry in (status.approvals if status else None) or () if entry.flow == flow]
    if any(entry.source == answer.source and entry.event_id == answer.event_id for entry in entries):
        return Reply(202)
    waiting = next((item for item in (status.waiting_flows if status else None) or () if item.name == flow), None)
    if waiting is None and entries:
        return Reply(202)  # answered before this event; the first answer stands
    why = waiting.message if waiting is not None and waiting.message else "it is not waiting (see kubectl jobflow " \
                                                                           f"status {name})"
    return Reply(422, f'gate "{flow}" of JobFlow {namespace}/{name} takes no answer now: {why}')
