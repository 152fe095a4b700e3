"""Approval gates: a flow that runs no vcjob and waits until someone approves or rejects it.

A flow with ``approval`` (:class:`~jobflow_core.models.Approval`) *opens* once its dependencies are met, like any
flow would start; then it waits for an answer. Approved, it is recorded Completed; rejected, Failed; so its
dependents, ``outcome: Failed`` handlers and ``finally`` flows see it like any flow. The record
(``jobStatusList``, reason ``Approved``, ``Rejected`` or ``ApprovalTimeout``) stands for a vcjob that never exists,
the way a memoized run's does (:mod:`jobflow_core.flows.memo`): one kind of row in the start table
(:mod:`jobflow_core.planning.starts`, verdict ``recorded``), not a special case.

An answer comes through one of two doors, and **the first recorded answer wins and never changes**:

* **a person**: ``kubectl jobflow approve|reject JF FLOW`` (or the dashboard) writes the annotation
  ``approval.flow.volcano.sh/<flow>`` (:func:`answer_text`) naming the gate's record (its ``jobName``: a rerun
  makes a new one), the decision and the user. The admission webhook checks the user against the request's
  authenticated user and the gate's ``approvers``, and refuses a changed answer
  (:mod:`jobflow_core.validation.approvals`);
* **a CloudEvent** at ``/trigger`` (straight, or through a Broker) whose data names ``namespace``, ``jobflow``,
  ``flow`` and ``decision``: accepted only when its ``type`` (and ``source``) is one the gate's ``events`` lists
  (:func:`event_accepted`), or when it is signed with the engine's key (:func:`signature`). The handler offers it
  to the planner; the same event twice finds the gate answered and changes nothing.

The answer is written to ``status.approvals`` with who, when and why, in the same guarded status write as the
record; a write lost to a race is planned again from the new truth, where the other answer may already be.
``timeoutSeconds`` counts from when the gate opened (:func:`opened_at`); then ``onTimeout`` (default Rejected) is
the answer. No event has to arrive: the status's ``recheckSeconds`` wakes the engine (see docs/reference.md).
"""

import hashlib
import hmac
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Final

from jobflow_core.flows.deadlines import after
from jobflow_core.models import (Approval, ApprovalDecision, ApprovalRecord, Flow, FlowJobStatus, JobFlow,
                                 VcJobPhase, format_time)
from jobflow_core.vocabulary.api import APPROVAL_PREFIX
from jobflow_core.vocabulary.kube_events import Reason
from jobflow_core.vocabulary.spec_errors import SpecError

DECISIONS = {"approve": ApprovalDecision.APPROVED, "approved": ApprovalDecision.APPROVED,
             "reject": ApprovalDecision.REJECTED, "rejected": ApprovalDecision.REJECTED}
"""How an answer may spell its decision (any case)."""


@dataclass(frozen=True)
class Answer:
    """One answer to one gate's record ``job_name`` (``""`` for an event's: the record that waits), by a user (the
    annotation), an event, or the timeout."""

    job_name: str
    decision: ApprovalDecision
    user: str | None = None
    source: str | None = None
    event_id: str | None = None
    message: str | None = None
    timed_out: bool = False


def annotation_key(flow: str) -> str:
    return APPROVAL_PREFIX + flow


def decision_of(text: object) -> ApprovalDecision | None:
    return DECISIONS.get(text.lower()) if isinstance(text, str) else None


def answer_text(answer: Answer) -> str:
    """The annotation's value for ``answer`` (what the CLI and the dashboard write)."""
    return json.dumps({"jobName": answer.job_name, "decision": answer.decision.value, "user": answer.user,
                       **({"message": answer.message} if answer.message else {})}, separators=(",", ":"))


def parse_answer(text: str) -> Answer | str:
    """The answer an annotation's value holds, or why it holds none (a sentence)."""
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if not isinstance(value, dict):
        return 'not a JSON object like {"jobName":"...","decision":"Approved","user":"..."}'
    decision, job_name, user = decision_of(value.get("decision")), value.get("jobName"), value.get("user")
    if decision is None:
        return f"decision {value.get('decision')!r} is neither Approved nor Rejected"
    if not isinstance(job_name, str) or not job_name:
        return "it names no jobName (the gate's record it answers; see kubectl jobflow status)"
    if not isinstance(user, str) or not user:
        return "it names no user"
    message = value.get("message")
    return Answer(job_name=job_name, decision=decision, user=user,
                  message=message if isinstance(message, str) and message else None)


def annotated(jobflow: JobFlow) -> dict[str, Answer]:
    """The people's answers the JobFlow's annotations hold, by gate (unreadable ones are left out: the webhook
    refuses them)."""
    answers = {}
    for key, text in (jobflow.metadata.annotations or {}).items():
        if key.startswith(APPROVAL_PREFIX):
            answer = parse_answer(text)
            if isinstance(answer, Answer):
                answers[key.removeprefix(APPROVAL_PREFIX)] = answer
    return answers


def may_answer(approval: Approval, *, user: str, groups: Iterable[str]) -> bool:
    """Whether ``user`` (with ``groups``) is one of the gate's ``approvers`` (unset: anyone)."""
    approvers = approval.approvers
    if approvers is None or (approvers.users is None and approvers.groups is None):
        return True
    return user in (approvers.users or ()) or bool(set(groups) & set(approvers.groups or ()))


def event_accepted(approval: Approval, *, type: str, source: str) -> bool:
    """Whether a CloudEvent of ``type`` from ``source`` may answer the gate (its ``events``)."""
    return any(entry.type == type and entry.source in (None, source) for entry in approval.events or ())


SIGNED: Final = "jobflow-approval/v1"
"""What a signed approval's text starts with: the same key signs snapshots, whose texts never start so."""


def signature(key: bytes, *, namespace: str, jobflow: str, flow: str, decision: ApprovalDecision, source: str,
              event_id: str) -> str:
    """The ``jobflowsignature`` extension that makes an approval event acceptable to any gate: HMAC-SHA256, hex,
    under the engine's key (the snapshot key), of the compact JSON list of :data:`SIGNED`, the namespace, JobFlow,
    gate, decision (``Approved`` or ``Rejected``), the event's ``source`` and ``id`` (a list: no field can run into
    the next). The source and id are signed because they are what makes an event count once
    (``status.approvals``): a signed event sent again under another source is not signed."""
    text = json.dumps([SIGNED, namespace, jobflow, flow, decision.value, source, event_id], separators=(",", ":"))
    return hmac.new(key, text.encode(), hashlib.sha256).hexdigest()


def signed(key: bytes, given: object, **fields: Any) -> bool:
    """Whether ``given`` (the event's ``jobflowsignature``, as sent) is :func:`signature` of ``fields``; anything
    that is not 64 hex digits is not (and is compared with nothing)."""
    if not isinstance(given, str) or len(given) != 64 or not all(c in "0123456789abcdef" for c in given):
        return False
    return hmac.compare_digest(given.encode(), signature(key, **fields).encode())


def opened_at(jobflow: JobFlow, ends: Iterable[datetime | None], *, previous: datetime | None) -> datetime | None:
    """When a gate opened, for its timeout: the latest end among its targets (``ends``), the acceptance of the
    rerun that runs it again (``previous``), or the JobFlow's creation, whichever is last."""
    known = [time for time in (*ends, previous, jobflow.metadata.creation_timestamp) if time is not None]
    return max(known) if known else None


def timeout_at(flow: Flow, opened: datetime | None) -> datetime | None:
    approval = flow.approval
    return after(opened, approval.timeout_seconds) if approval is not None else None


def timeout_answer(flow: Flow, *, job_name: str) -> Answer:
    assert flow.approval is not None
    decision = flow.approval.on_timeout or ApprovalDecision.REJECTED
    return Answer(job_name=job_name, decision=decision, timed_out=True,
                  message=f"no answer within timeoutSeconds ({flow.approval.timeout_seconds})")


def reason_of(answer: Answer) -> Reason:
    if answer.timed_out:
        return Reason.APPROVAL_TIMEOUT
    return Reason.APPROVED if answer.decision is ApprovalDecision.APPROVED else Reason.REJECTED


def describe(answer: Answer) -> str:
    """Who answered, in words: ``alice``, ``the CloudEvent ID from SOURCE``, ``the timeout``."""
    if answer.timed_out:
        return "the timeout"
    if answer.user:
        return answer.user
    return f"CloudEvent {answer.event_id} from {answer.source}"


def record_of(answer: Answer, *, flow: str, now: datetime | None) -> tuple[FlowJobStatus, ApprovalRecord]:
    """The gate's record (Completed or Failed, no vcjob) and its ``status.approvals`` entry."""
    state = VcJobPhase.COMPLETED if answer.decision is ApprovalDecision.APPROVED else VcJobPhase.FAILED
    record = FlowJobStatus(name=answer.job_name, state=state, startTimestamp=now, endTimestamp=now,
                           reason=reason_of(answer).value)
    entry = ApprovalRecord(flow=flow, jobName=answer.job_name, decision=answer.decision, user=answer.user,
                           source=answer.source, eventId=answer.event_id, timedOut=answer.timed_out or None,
                           time=now, message=answer.message)
    return record, entry


def gate_named(jobflow: JobFlow, flow: str) -> Flow | None:
    """The flow ``flow`` of ``jobflow`` if it is an approval gate (the first of that name, as the planner reads it)."""
    found = next((item for item in jobflow.spec.flows or () if item.name == flow), None)
    return found if found is not None and found.approval is not None else None


def answer_of(entry: ApprovalRecord) -> Answer:
    """A recorded answer (``status.approvals``) as an :class:`Answer`, to be told or compared like a new one."""
    return Answer(job_name=entry.job_name, decision=entry.decision, user=entry.user, source=entry.source,
                  event_id=entry.event_id, message=entry.message, timed_out=bool(entry.timed_out))


def recorded(approvals: Iterable[ApprovalRecord] | None, job_name: str) -> ApprovalRecord | None:
    return next((entry for entry in approvals or () if entry.job_name == job_name), None)


def waiting_message(jobflow: JobFlow, flow: Flow, *, job_name: str, timeout: datetime | None) -> str:
    assert flow.approval is not None
    what = f": {flow.approval.message}" if flow.approval.message else ""
    until = f"; without an answer by {format_time(timeout)} it is {(flow.approval.on_timeout or 'Rejected')}" \
        if timeout is not None else ""
    return (f'waiting for approval of "{flow.name}"{what} (kubectl jobflow approve -n {jobflow.namespace} '
            f'{jobflow.name} {flow.name}, or reject; record {job_name}){until}')


NOT_ON_A_GATE = (("jobTemplate", "job_template"), ("patch", "patch"), ("retry", "retry"),
                 ("retryPolicy", "retry_policy"), ("timeoutSeconds", "timeout_seconds"), ("forEach", "for_each"),
                 ("repeat", "repeat"), ("memoize", "memoize"))
"""Fields about a flow's vcjob, which a gate does not have."""


def errors(jobflow: JobFlow) -> list[SpecError]:
    """A gate that also describes a vcjob, a negative timeout, an event entry without a type."""
    found = []
    for flow in jobflow.spec.flows or ():
        approval = flow.approval
        if approval is None:
            continue
        for wire, attribute in NOT_ON_A_GATE:
            if getattr(flow, attribute) is not None:
                found.append(SpecError(code="InvalidApproval",
                                       message=f'flow "{flow.name}": {wire} on an approval gate, which runs no vcjob',
                                       hint=f"drop {wire}, or put it on a flow of its own"))
        if approval.timeout_seconds is not None and approval.timeout_seconds <= 0:
            found.append(SpecError(code="InvalidApproval", message=f'flow "{flow.name}": approval.timeoutSeconds '
                                   f"{approval.timeout_seconds} is not over 0", hint="give seconds, e.g. 3600"))
        for entry in approval.events or ():
            if not entry.type:
                found.append(SpecError(code="InvalidApproval", message=f'flow "{flow.name}": approval.events has '
                                       "an entry without a type", hint="name the CloudEvent type it accepts"))
    return found


def offered_for(flow: str, answers: Mapping[str, Answer], jobflow: JobFlow, *, job_name: str) -> Answer | None:
    """The answer to gate ``flow``'s record ``job_name``, by order of arrival: a person's (admitted before the
    event reached us), then one the shell offers from an event. An event names no record (it answers the one
    that waits), and one whose id is already in ``status.approvals`` answered before: it answers nothing again
    (the same event delivered twice, or after a rerun)."""
    person = annotated(jobflow).get(flow)
    if person is not None and person.job_name == job_name:
        return person
    event = answers.get(flow)
    if event is None or event.job_name not in ("", job_name):
        return None
    seen = {(entry.source, entry.event_id) for entry in (jobflow.status.approvals if jobflow.status else None) or ()
            if entry.event_id}
    return None if (event.source, event.event_id) in seen else replace(event, job_name=job_name)
