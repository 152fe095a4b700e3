"""The validating webhook's decisions, over plain JSON: an AdmissionReview in, an AdmissionReview out.

The API server sends ``admission.k8s.io/v1`` AdmissionReviews for every CREATE and UPDATE of a JobFlow,
JobTemplate or JobFlowTemplate (``manifests/webhook/``). :func:`review` answers one, with the same checks the planner
uses, so what the webhook rejects and what the planner fails are one set of rules with one set of messages:

* JobFlows: :func:`jobflow_core.validation.jobflows.validate` (a DAG of defined, unique, well-named flows; probes);
* JobTemplates: :func:`jobflow_core.validation.jobtemplates.validate_template` (Volcano's vcjob rules);
* JobFlowTemplates: :func:`jobflow_core.validation.jobflowtemplates.validate_jobflowtemplate` (the schedule, the
  time zone, the triggers and the JobFlow each run would be);
* all three: no unknown field (:func:`jobflow_core.validation.fields.unknown_fields`), where the API server cannot
  see (a subtree the CRD keeps as it is: a JobFlowTemplate's ``jobFlow.spec``, a vcjob spec when ``vcjob_spec``,
  Volcano's schema of it, is given) and where it can (it has dropped those before the webhook sees the object, unless
  the client asked for strict field validation, which then refused them: kubectl does).

A JobFlow's CREATE or UPDATE is checked first for who answers its approval gates
(:mod:`jobflow_core.validation.approvals`): each ``approval.flow.volcano.sh/<flow>`` annotation it adds or changes
must answer a gate, in the name of the request's user (``request.userInfo``), who must be one of the gate's
approvers, and must not change an answer already given. The engine trusts the user an answer names only because of
this check.

A request is allowed when the object has no error. A denial carries ``status.code`` 422 and ``reason: Invalid``
and a message listing the problems (the first :data:`MAX_LISTED`), each with what to do; the API server prefixes
it with ``admission webhook "<name>" denied the request:``. An answer refused for who sent it (not the user it
names, not an approver) carries 403 and ``reason: Forbidden`` instead, as the API server's own refusal of a request
RBAC does not allow. An UPDATE also gets warnings (:mod:`jobflow_core.validation.update_warnings`) when it changes
something vcjobs created earlier will not see.

Two rules keep the webhook from getting in the way:

* An UPDATE that leaves the spec as it was is allowed even if the object is invalid (with its problems as a
  warning): objects stored before the webhook was installed, or before a rule was added, must still take label,
  annotation and finalizer changes, and be deleted. The approval check still applies (an answer is an annotation,
  written with the spec unchanged); an update that adds or changes no answer is not affected by it.
* Operations other than CREATE and UPDATE are allowed unchecked, should a configuration send them.

Below a JobFlow (or a JobFlowTemplate's run) with child flows is a tree of child JobFlows its own spec cannot
show: given the namespace's JobFlowTemplates (``flow_templates``, read by the caller only for those objects, and
not for an UPDATE that leaves the spec as it was), :mod:`jobflow_core.validation.nesting` refuses cycles of
templates, too deep a nesting, undeclared parameters, and names that collide or grow too long down the tree. A
JobFlowTemplate is checked with itself in place of its stored version, so an update that closes a cycle is refused.
The same templates show whether a JobFlowTemplate's runs would wait (``dependsOn.jobFlows``, by ``template``) for
runs that wait for them (:func:`jobflow_core.validation.awaits.template_cycle`), read for those that wait for runs of
a template too.
What it could not check (a JobFlowTemplate that does not exist yet; templates that could not be read) is a warning,
never a denial.

A body that is not an AdmissionReview at all raises :class:`BadReview`, which the handler answers with 400.
Well-formed reviews of objects that do not even parse as the kind (possible for fields the CRD schema leaves
open, e.g. ``patch.jobSpec``) are denied with pydantic's description of the bad fields.
"""

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from jobflow_core.models import JobFlow, JobFlowTemplate, JobTemplate
from jobflow_core.validation.approvals import Refusal
from jobflow_core.validation.approvals import refusal as approval_refusal
from jobflow_core.validation.awaits import jobflow_cycle, template_cycle, waits_by_name, waits_for_templates
from jobflow_core.validation.fields import unknown_fields
from jobflow_core.validation.jobflows import SpecError, validate
from jobflow_core.validation.jobflowtemplates import validate_jobflowtemplate
from jobflow_core.validation.jobtemplates import validate_template
from jobflow_core.validation.nesting import Nesting, has_children, jobflow_nesting, template_nesting
from jobflow_core.validation.update_warnings import jobflow_update_warnings, jobtemplate_update_warnings
from jobflow_core.vocabulary.api import JOBFLOW as JOBFLOW_TYPE
from jobflow_core.vocabulary.api import JOBFLOWTEMPLATE as JOBFLOWTEMPLATE_TYPE
from jobflow_core.vocabulary.api import JOBTEMPLATE as JOBTEMPLATE_TYPE
from jobflow_core.vocabulary.api import ApiType

REVIEW_VERSIONS = ("admission.k8s.io/v1", "admission.k8s.io/v1beta1")
"""The AdmissionReview versions answered (in the version asked); the manifests ask for v1 only."""

CHECKED_OPERATIONS = ("CREATE", "UPDATE")

MAX_LISTED = 10
"""Problems spelled out in a denial; the rest are counted (a 2,000-flow JobFlow can have 2,000 problems)."""

INVALID = 422
FORBIDDEN = 403

FlowTemplates = Callable[[str], Mapping[str, JobFlowTemplate] | str]
"""The JobFlowTemplates of a namespace by name, as the caller reads them; or why they could not be read."""
JobFlows = Callable[[str], Mapping[str, JobFlow] | str]
"""The JobFlows of a namespace by name, as the caller reads them; or why they could not be read."""


class BadReview(ValueError):
    """The body is not an AdmissionReview request; the message says what is missing."""


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    message: str | None = None
    warnings: tuple[str, ...] = ()
    forbidden: bool = False
    """A denial of who asks (403 Forbidden) rather than of what the object says (422 Invalid)."""


@dataclass(frozen=True)
class Reviewed:
    """One type the webhook validates: how to read it, check it, warn about an update of it, and what a request
    may not write whatever the spec (``refuse``: given the new object, the stored one or None for a CREATE, and
    ``request.userInfo``)."""

    api_type: ApiType
    model: type[BaseModel]
    check: Callable[[Any], list[SpecError]]
    warn: Callable[[Any, Any], list[str]]
    refuse: Callable[..., Refusal | None] = lambda *, new, old, user_info: None
    nesting: Callable[[Any, Mapping[str, JobFlowTemplate]], Nesting] | None = None
    """The checks of the tree of child JobFlows below the object, given its namespace's JobFlowTemplates."""
    nests: Callable[[Any], bool] = lambda new: False
    """Whether the object has a tree below it (only then are the JobFlowTemplates read)."""

    @property
    def name(self) -> str:
        return self.api_type.kind


JOBFLOW = Reviewed(JOBFLOW_TYPE, JobFlow, validate, jobflow_update_warnings, approval_refusal,
                   nesting=lambda new, templates: jobflow_nesting(new, templates=templates),
                   nests=lambda new: has_children(new.spec))
JOBTEMPLATE = Reviewed(JOBTEMPLATE_TYPE, JobTemplate, validate_template, jobtemplate_update_warnings)


def _template_tree(new: JobFlowTemplate, templates: Mapping[str, JobFlowTemplate]) -> Nesting:
    """What a JobFlowTemplate's runs make below them (child JobFlows) and wait for (runs of other templates that
    must not wait for them): both need the namespace's JobFlowTemplates."""
    found = template_nesting(new, templates=templates) if has_children(new.spec.job_flow.spec) else Nesting([], [])
    return Nesting([*found.errors, *template_cycle(new, templates=templates)], found.notes)


JOBFLOWTEMPLATE = Reviewed(JOBFLOWTEMPLATE_TYPE, JobFlowTemplate, validate_jobflowtemplate, lambda old, new: [],
                           nesting=_template_tree,
                           nests=lambda new: has_children(new.spec.job_flow.spec)
                           or any(name != new.name for name in waits_for_templates(new.spec.job_flow.spec)))
KINDS = {reviewed.api_type.plural: reviewed for reviewed in (JOBFLOW, JOBTEMPLATE, JOBFLOWTEMPLATE)}
"""By resource (plural), as in the webhook paths ``/validate/<resource>``."""


def review(body: object, *, kind: Reviewed, vcjob_spec: Mapping[str, Any] | None = None,
           flow_templates: FlowTemplates | None = None, jobflows: JobFlows | None = None) -> dict[str, Any]:
    """The AdmissionReview answering ``body`` (already decoded from JSON); raises :class:`BadReview`.
    ``vcjob_spec``: Volcano's schema of a vcjob's spec, to check the vcjob specs inside (none: not checked);
    ``flow_templates``: reads a namespace's JobFlowTemplates, to check the tree of child JobFlows (none: not
    checked); ``jobflows``: reads a namespace's JobFlows, to refuse a JobFlow that waits by name for JobFlows that
    wait for it (:func:`jobflow_core.validation.awaits.jobflow_cycle`; none: not checked)."""
    if not isinstance(body, Mapping):
        raise BadReview(f"an AdmissionReview is a JSON object, not {type(body).__name__}")
    api_version = body.get("apiVersion")
    if body.get("kind") != "AdmissionReview" or api_version not in REVIEW_VERSIONS:
        raise BadReview(
            f"expected kind AdmissionReview in apiVersion {' or '.join(REVIEW_VERSIONS)}, "
            f"got kind {body.get('kind')!r} in apiVersion {api_version!r}"
        )
    request = body.get("request")
    if not isinstance(request, Mapping):
        raise BadReview("the AdmissionReview has no request object")
    uid = request.get("uid")
    if not isinstance(uid, str) or not uid:
        raise BadReview("the AdmissionReview request has no uid")
    verdict = decide(request, kind=kind, vcjob_spec=vcjob_spec, flow_templates=flow_templates, jobflows=jobflows)
    response: dict[str, Any] = {"uid": uid, "allowed": verdict.allowed}
    if not verdict.allowed:
        code, reason = (FORBIDDEN, "Forbidden") if verdict.forbidden else (INVALID, "Invalid")
        response["status"] = {"code": code, "reason": reason, "message": verdict.message}
    if verdict.warnings:
        response["warnings"] = list(verdict.warnings)
    return {"apiVersion": api_version, "kind": "AdmissionReview", "response": response}


def decide(request: Mapping[str, Any], *, kind: Reviewed, vcjob_spec: Mapping[str, Any] | None = None,
           flow_templates: FlowTemplates | None = None, jobflows: JobFlows | None = None) -> Verdict:
    """Allow or deny one AdmissionReview ``request`` for an object of ``kind`` (``vcjob_spec``, ``flow_templates``
    and ``jobflows``: as for :func:`review`)."""
    operation = request.get("operation")
    if operation not in CHECKED_OPERATIONS:
        return Verdict(allowed=True)
    requested = request.get("kind")
    if not isinstance(requested, Mapping):
        raise BadReview("the AdmissionReview request has no kind")
    expected = {"group": kind.api_type.group, "version": kind.api_type.version, "kind": kind.name}
    if {key: requested.get(key) for key in expected} != expected:
        shown = "/".join(str(requested.get(key) or "") for key in ("group", "version", "kind"))
        return Verdict(
            allowed=False,
            message=f"this webhook validates {kind.api_type.api_version} {kind.name}, not {shown}: "
            "fix the rules of the ValidatingWebhookConfiguration that sent it here",
        )
    namespace = request.get("namespace")
    new_raw = _object(request, "object")
    try:
        new = _parse(kind, new_raw, namespace)
    except ValidationError as error:
        return Verdict(allowed=False, message=_unreadable(kind, error))
    old_raw = _object(request, "oldObject") if operation == "UPDATE" else None
    # Before the spec's rules, and whatever they say: an answer is written with the spec unchanged.
    refused = kind.refuse(new=new, old=old_raw, user_info=request.get("userInfo"))
    if refused is not None:
        return Verdict(allowed=False, message=refused.message, forbidden=refused.forbidden)
    errors = [*unknown_fields(new_raw, kind.model, vcjob_spec=vcjob_spec), *kind.check(new)]
    unchanged = old_raw is not None and old_raw.get("spec") == new_raw.get("spec")
    # The tree below depends on the JobFlowTemplates as they are now: an update that leaves what it is made of as it
    # was (a stop, a suspend, a retry's) is not refused for a template edited since.
    same_tree = old_raw is not None and _tree_inputs(old_raw) == _tree_inputs(new_raw)
    below, notes = ([], []) if same_tree else look_down(new, kind=kind, flow_templates=flow_templates)
    errors += below
    if old_raw is None and kind is JOBFLOW and jobflows is not None and waits_by_name(new):
        read = jobflows(new.namespace)
        if isinstance(read, str):
            notes = [*notes, f"JobFlows waiting for each other were not checked: the JobFlows of namespace "
                             f"{new.namespace} could not be read ({read})"]
        else:
            errors += jobflow_cycle(new, jobflows={name: flow for name, flow in read.items() if name != new.name})
    if old_raw is None:
        return _verdict(errors, warnings=notes)
    try:
        old = _parse(kind, old_raw, namespace)
    except ValidationError:
        return _verdict(errors, warnings=notes)
    warnings = [*notes, *kind.warn(old, new)]
    if errors and unchanged:
        kept = f"this {kind.name} is invalid, and is let through only because its spec is unchanged: {_listed(errors)}"
        return Verdict(allowed=True, warnings=(kept, *warnings))
    return _verdict(errors, warnings=warnings)


def _tree_inputs(raw: Mapping[str, Any]) -> tuple[Any, ...]:
    """What the tree of child JobFlows below an object is made of: a JobFlow's flows and parameters, a
    JobFlowTemplate's ``jobFlow``."""
    spec = raw.get("spec") if isinstance(raw.get("spec"), Mapping) else {}
    return spec.get("flows"), spec.get("parameters"), spec.get("jobFlow")


def look_down(new: Any, *, kind: Reviewed, flow_templates: FlowTemplates | None) -> tuple[list[SpecError], list[str]]:
    """The errors of the tree of child JobFlows below ``new``, and what of it was not checked: nothing when the kind
    has no tree, this one has none, or no ``flow_templates`` is given; a warning when they cannot be read."""
    if kind.nesting is None or flow_templates is None or not kind.nests(new):
        return [], []
    read = flow_templates(new.namespace)
    if isinstance(read, str):
        return [], [f"child JobFlows were not checked: the JobFlowTemplates of namespace {new.namespace} could not "
                    f"be read ({read})"]
    found = kind.nesting(new, read)
    return found.errors, found.notes


def _object(request: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = request.get(key)
    if not isinstance(value, Mapping):
        raise BadReview(f"the AdmissionReview request of a {request.get('operation')} has no {key}")
    return value


def _parse(kind: Reviewed, raw: Mapping[str, Any], namespace: object) -> Any:
    parsed = kind.model.model_validate(raw)
    # The namespace of a namespaced object is in its metadata by the time admission runs; the request names it too.
    if parsed.metadata.namespace is None and isinstance(namespace, str) and namespace:
        parsed = parsed.model_copy(update={"metadata": parsed.metadata.model_copy(update={"namespace": namespace})})
    return parsed


def _verdict(errors: Sequence[SpecError], *, warnings: Sequence[str]) -> Verdict:
    if errors:
        return Verdict(allowed=False, message=_listed(errors), warnings=tuple(warnings))
    return Verdict(allowed=True, warnings=tuple(warnings))


def _listed(errors: Sequence[SpecError]) -> str:
    shown = "; ".join(str(error) for error in errors[:MAX_LISTED])
    more = len(errors) - MAX_LISTED
    return f"{shown}; and {more} more problems" if more > 0 else shown


def _unreadable(kind: Reviewed, error: ValidationError) -> str:
    problems = "; ".join(
        f"{'.'.join(str(part) for part in detail['loc']) or '(the object)'}: {detail['msg']}"
        for detail in error.errors()[:MAX_LISTED]
    )
    return f"this object cannot be read as a {kind.name}: {problems} (fix these fields)"
