"""Who may answer an approval gate: the validating webhook's check of a JobFlow's approval annotations.

A person answers approval gate ``<flow>`` (:mod:`jobflow_core.flows.gates`) by writing the annotation
``approval.flow.volcano.sh/<flow>`` on the JobFlow (``kubectl jobflow approve|reject`` does), whose value names the
gate's record (``jobName``), the decision and the user. The engine records that user in ``status.approvals`` as
who answered, and checks nothing itself: the annotation is all it sees. **The user in an answer is trustworthy only
because this check runs at admission**: it refuses an answer whose user is not the one the API server authenticated
for the request. Without the webhook installed (``manifests/webhook/``) an answer is only as trustworthy as the RBAC
on ``update`` and ``patch`` of ``jobflows``: whoever may update a JobFlow may write any user and any decision into
it. ``approvers`` is read from the gate as stored (on an UPDATE), so a request that names itself an approver and
answers at once is refused; but whoever may update a JobFlow may change its spec in one request and answer in the
next: ``approvers`` is as strong as the RBAC on the JobFlow's spec (give the approvers ``patch`` through a role that
others lack, or answer by signed CloudEvents).

:func:`refusal` judges each approval annotation a CREATE or UPDATE adds, or whose value it changes (compared with
``oldObject``). Removing one is allowed: what the engine recorded of it (``status.approvals``) stays, and rule 5
holds the gate to it. An annotation the request leaves as it was is not judged again, so
a metadata-only update that touches no answer is reviewed exactly as before this check existed. The rules, in order;
the first one an annotation breaks refuses the request:

1. it names a flow that is an approval gate of the JobFlow's spec (``spec.flows[].approval``);
2. its value reads as an answer (:func:`jobflow_core.flows.gates.parse_answer`);
3. its ``user`` is the request's user (``request.userInfo.username``);
4. that user, or one of their groups (``request.userInfo.groups``), is among the gate's ``approvers`` as stored
   before the request (:func:`jobflow_core.flows.gates.may_answer`; unset: anyone);
5. it does not change an answer already given to the same record (``jobName``): neither one ``oldObject``'s
   annotation holds nor one the engine recorded in ``status.approvals`` (from a person, a CloudEvent or the
   timeout). Writing the same decision by the same user again is no change (``kubectl jobflow approve`` twice);
   a rerun makes a new record, which may be answered afresh.

Rules 3 and 4 refuse *who* asks, not what the object says: the webhook answers them ``403 Forbidden``, as the API
server answers a request RBAC does not allow (kubectl shows ``Error from server (Forbidden)``). The others are
``422 Invalid``, as every other denial of the webhook: rule 5 in particular is how Kubernetes refuses a change to an
immutable field. Not ``409 Conflict``: clients retry conflicts, and this answer is final.
"""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from jobflow_core.flows.gates import (Answer, annotation_key, answer_of, describe, gate_named, may_answer,
                                      parse_answer, recorded)
from jobflow_core.models import Approval, ApprovalRecord, Approvers, JobFlow
from jobflow_core.vocabulary.api import APPROVAL_PREFIX

ANSWER_WITH = "answer with kubectl jobflow approve|reject, which names you"


@dataclass(frozen=True)
class Refusal:
    """Why the request may not write an approval annotation (a sentence that says what to do)."""

    message: str
    forbidden: bool = False
    """It is who asks that is refused (rules 3 and 4: 403 Forbidden), not what the object says (422 Invalid)."""


@dataclass(frozen=True)
class Requester:
    """The request's user as the API server authenticated it (``request.userInfo``)."""

    username: str
    groups: tuple[str, ...] = ()


def refusal(*, new: JobFlow, old: Mapping[str, Any] | None, user_info: object) -> Refusal | None:
    """Why the request of ``user_info`` (``request.userInfo``) may not write the JobFlow ``new`` over the stored
    ``old`` (as the request holds it; None for a CREATE): the first approval annotation, by key, it adds or changes
    that breaks a rule; None when none does."""
    before = _annotations(old)
    changed = sorted((key, text) for key, text in (new.metadata.annotations or {}).items()
                     if key.startswith(APPROVAL_PREFIX) and before.get(key) != text)
    if not changed:
        return None
    requester = _requester(user_info)
    approvals, stored_gates = _approvals(old), _gates(old)
    for key, text in changed:
        flow = key.removeprefix(APPROVAL_PREFIX)
        found = _judge(new, flow=flow, text=text, requester=requester, old_text=before.get(key),
                       approvals=approvals, stored=stored_gates.get(flow))
        if found is not None:
            return found
    return None


def _judge(jobflow: JobFlow, *, flow: str, text: str, requester: Requester, old_text: str | None,
           approvals: list[ApprovalRecord], stored: Approval | None) -> Refusal | None:
    """The rules of the module's docstring, in its order, for the answer ``text`` to gate ``flow``. Who may answer
    is read from the gate as stored (``stored``), when it is: a request that names itself an approver and answers
    at once is judged by the approvers it replaces."""
    where = f"JobFlow {jobflow.namespace}/{jobflow.name}"
    named = gate_named(jobflow, flow)
    gate = named.approval if named is not None else None
    if gate is None:
        return Refusal(f'flow "{flow}" of {where} is no approval gate: the annotation {annotation_key(flow)} '
                       "answers only a flow with approval (remove it, or name a gate: kubectl jobflow status)")
    answer = parse_answer(text)
    if isinstance(answer, str):
        return Refusal(f"the annotation {annotation_key(flow)} of {where} holds no answer: {answer} ({ANSWER_WITH})")
    if answer.user != requester.username:
        return Refusal(f'the answer to gate "{flow}" of {where} names user "{answer.user}" but the request comes '
                       f'from "{requester.username}": {ANSWER_WITH}', forbidden=True)
    judge = stored or gate
    if not may_answer(judge, user=requester.username, groups=requester.groups):
        return Refusal(f'user "{requester.username}" may not answer gate "{flow}" of {where}: '
                       f"{_approvers(judge)} (ask one of them to answer)", forbidden=True)
    earlier = _earlier(job_name=answer.job_name, old_text=old_text, approvals=approvals)
    if earlier is not None and (earlier.decision, earlier.user) != (answer.decision, answer.user):
        return Refusal(f'gate "{flow}" of {where} was already answered: {earlier.decision.value} by '
                       f"{describe(earlier)}; an answer never changes (a rerun opens the gate again with a new "
                       "record to answer: kubectl jobflow retry)")
    return None


def _earlier(*, job_name: str, old_text: str | None, approvals: Iterable[ApprovalRecord]) -> Answer | None:
    """The answer the gate's record ``job_name`` already has: the engine's (``status.approvals``) first, else the
    stored annotation's (``old_text``)."""
    entry = recorded(approvals, job_name)
    if entry is not None:
        return answer_of(entry)
    stored = parse_answer(old_text) if old_text is not None else None
    return stored if isinstance(stored, Answer) and stored.job_name == job_name else None


def _approvers(gate: Approval) -> str:
    approvers = gate.approvers or Approvers()
    named = [f"{what} {', '.join(f'{name!r}' for name in names)}"
             for what, names in (("users", approvers.users), ("groups", approvers.groups)) if names]
    if not named:
        return "it names no approver, so only a CloudEvent (approval.events) or its timeout answers it"
    return f"its approvers are {' and '.join(named)}"


def _requester(user_info: object) -> Requester:
    info = user_info if isinstance(user_info, Mapping) else {}
    username, groups = info.get("username"), info.get("groups")
    return Requester(username=username if isinstance(username, str) else "",
                     groups=tuple(g for g in groups if isinstance(g, str)) if isinstance(groups, list) else ())


def _annotations(old: Mapping[str, Any] | None) -> dict[str, str]:
    # Read from the stored object as it is: an object stored before a rule was added need not parse as a JobFlow.
    metadata = old.get("metadata") if old is not None else None
    annotations = metadata.get("annotations") if isinstance(metadata, Mapping) else None
    if not isinstance(annotations, Mapping):
        return {}
    return {key: text for key, text in annotations.items() if isinstance(text, str)}


def _gates(old: Mapping[str, Any] | None) -> dict[str, Approval]:
    """The approval gates of the stored object, by flow (read leniently, as :func:`_approvals`)."""
    spec = old.get("spec") if old is not None else None
    flows = spec.get("flows") if isinstance(spec, Mapping) else None
    found = {}
    for flow in flows if isinstance(flows, list) else ():
        if isinstance(flow, Mapping) and isinstance(flow.get("name"), str) \
                and isinstance(flow.get("approval"), Mapping):
            try:
                found.setdefault(flow["name"], Approval.model_validate(flow["approval"]))
            except ValidationError:
                continue
    return found


def _approvals(old: Mapping[str, Any] | None) -> list[ApprovalRecord]:
    status = old.get("status") if old is not None else None
    entries = status.get("approvals") if isinstance(status, Mapping) else None
    found = []
    for entry in entries if isinstance(entries, list) else ():
        try:
            found.append(ApprovalRecord.model_validate(entry))
        except ValidationError:
            continue  # only the engine writes status; an entry it could not have written answers nothing
    return found
