"""Child JobFlows: a flow whose work is a JobFlow made from a JobFlowTemplate (``flows[].jobFlow``).

The child is a real JobFlow, controlled by its parent (owner reference: deleting the parent deletes it), named like
the vcjob the flow would have had (``<parent>-<flow>``, ``-<index>`` for an item, ``-r<k>`` for a retry), and
labelled :data:`~jobflow_core.vocabulary.api.PARENT` (``kubectl get jf -l flow.volcano.sh/parent=NAME``),
:data:`~jobflow_core.vocabulary.api.PARENT_FLOW`, :data:`~jobflow_core.vocabulary.api.CHILD_TEMPLATE` and
:data:`~jobflow_core.vocabulary.api.DEPTH`. Its spec is the template's ``spec.jobFlow.spec`` with the flow's
parameters (placeholders replaced as in a patch), so it plans, runs and records itself like any JobFlow.

The parent sees each child as a stand-in vcjob (:func:`as_job`): the planner's units, start table, outcomes,
retries, items, loops and status read a flow's run through one shape, so a child flow gets ``dependsOn``,
``outcome``, ``when``, ``forEach``, ``repeat``, ``finally``, ``retry`` and ``memoize`` from the rows that already
decide them for vcjobs. What differs is said here, in tables:

* the child's phase, as the phase of the run the parent records (:data:`CHILD_PHASES`);
* its result: its ``status.outputs`` as a JSON object, so ``{{targets.FLOW.result.KEY}}`` and CEL's
  ``targets.FLOW.result.KEY`` read one output (:func:`result_text`);
* its cost: the child's ``status.cost``, which already adds up its own vcjobs' and children's (so a parent's cost
  includes every level below it);
* what stopping it means: ``spec.shutdown`` set on the child (:func:`shutdown_patch`), where a vcjob gets Volcano's
  AbortJob; a suspend of the parent is written into its running children, and taken back on resume
  (:func:`suspend_patch`).

A manual rerun of the parent does not replace a failed child: it asks the child to rerun its own failed flows
(:data:`~jobflow_core.vocabulary.api.RERUN` on the child, :func:`rerun_patch`), and the parent counts that child as
Pending until the child's status shows the rerun accepted (:func:`pending_rerun`). A retry (the policy) makes a new
child, as it makes a new vcjob.
"""

import json
from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final

from pydantic import Field

from jobflow_core.flows.outputs import ANY_TARGET_PLACEHOLDER, clean, references, value_of
from jobflow_core.flows.parameters import Item, substitute, values
from jobflow_core.models import (Cost, Flow, JobFlow, JobFlowPhase, JobState, JobStatus, Parameter, Shutdown, VcJob,
                                 VcJobPhase)
from jobflow_core.vocabulary.api import (CHILD_TEMPLATE, DEPTH, JOBFLOW, PARENT, PARENT_FLOW, PARENT_STARTED,
                                         RECORD_FINALIZER, RERUN, RERUN_FLOWS, SUSPENDED_BY_PARENT)
from jobflow_core.vocabulary.kube_events import Reason
from jobflow_core.vocabulary.naming import attempt_job_name, owner_reference
from jobflow_core.vocabulary.spec_errors import SpecError

if TYPE_CHECKING:
    from jobflow_core.models import JobFlowTemplate

MAX_DEPTH: Final = 5
"""How deep children may nest below a JobFlow without a parent. Each level adds one reconcile between a child's end
and its parent's next step, and ``-<flow>`` to every name below it (names are bounded, 63 characters for a label
value); five levels hold any pipeline of pipelines we have seen, and a deeper one is almost surely a template that
includes itself."""

STOPPED_REASONS: Final = frozenset({Reason.STOPPED.value, Reason.TERMINATED.value})

CHILD_PHASES: Final[Mapping[JobFlowPhase | None, VcJobPhase]] = {
    None: VcJobPhase.NEW,
    JobFlowPhase.PENDING: VcJobPhase.PENDING,
    JobFlowPhase.RUNNING: VcJobPhase.RUNNING,
    JobFlowPhase.SUSPENDED: VcJobPhase.RUNNING,
    JobFlowPhase.TERMINATING: VcJobPhase.TERMINATING,
    JobFlowPhase.SUCCEED: VcJobPhase.COMPLETED,
    JobFlowPhase.FAILED: VcJobPhase.FAILED,
}
"""The child's phase (``status.state.phase``) as its flow's run: a suspended child has not ended (Running); a child
being deleted is Terminating. A Failed child that was stopped or terminated (``state.reason``) is ``Aborted``, as a
vcjob aborted by a stop is; otherwise Failed (:func:`phase_of`)."""


class ChildJob(VcJob):
    """A child JobFlow as the parent's planner sees it: a vcjob of kind ``JobFlow`` (see the module docstring)."""

    result: str | None = Field(None, exclude=True)
    """Its ``status.outputs`` as JSON text, once it succeeded; None before."""
    cost: Cost | None = Field(None, exclude=True)
    accepted_rerun: str | None = Field(None, exclude=True)
    """The id of the last rerun request it handled (its ``status.rerun.id``)."""
    suspended: bool = Field(False, exclude=True)
    shutdown: Shutdown | None = Field(None, exclude=True)
    suspended_by_parent: bool = Field(False, exclude=True)


def makes_children(jobflow: Mapping[str, Any]) -> bool:
    """Whether a flow of ``jobflow`` (JSON, as read) makes child JobFlows: only then are there children to list."""
    flows = (jobflow.get("spec") or {}).get("flows") or ()
    return any(isinstance(flow, Mapping) and flow.get("jobFlow") is not None for flow in flows)


def is_child_job(job: VcJob | None) -> bool:
    return isinstance(job, ChildJob)


def phase_of(child: JobFlow) -> VcJobPhase:
    state = child.status.state if child.status else None
    phase = CHILD_PHASES[state.phase if state else None]
    if phase is VcJobPhase.FAILED and state is not None and state.reason in STOPPED_REASONS:
        return VcJobPhase.ABORTED
    return phase


def ended_at(child: JobFlow) -> datetime | None:
    """When the child ended: its ``status.endTimestamp``, else (a status written before there was one) its records'
    latest end; None while it runs."""
    status = child.status
    if status is not None and status.end_timestamp is not None:
        return status.end_timestamp
    ends = [record.end_timestamp for record in (status.job_status_list if status else None) or ()
            if record.end_timestamp is not None]
    return max(ends) if ends else None


def result_text(child: JobFlow) -> str:
    """The child's result: its outputs as compact JSON (``{}`` without any)."""
    outputs = child.status.outputs if child.status else None
    return json.dumps(outputs or {}, separators=(",", ":"), sort_keys=True)


def as_job(child: JobFlow) -> ChildJob:
    """The stand-in vcjob of ``child`` (see :class:`ChildJob`)."""
    phase = phase_of(child)
    status = child.status
    final = phase in (VcJobPhase.COMPLETED, VcJobPhase.FAILED, VcJobPhase.ABORTED)
    state = JobState(phase=phase, reason=status.state.reason if status and status.state else None,
                     message=status.state.message if status and status.state else None,
                     last_transition_time=ended_at(child) if final else None)
    annotations = child.metadata.annotations or {}
    return ChildJob(apiVersion=JOBFLOW.api_version, kind=JOBFLOW.kind, metadata=child.metadata,
                    status=JobStatus(state=state), result=result_text(child) if phase is VcJobPhase.COMPLETED else None,
                    cost=status.cost if status else None,
                    accepted_rerun=status.rerun.id if status and status.rerun else None,
                    suspended=bool(child.spec.suspend), suspended_by_parent=SUSPENDED_BY_PARENT in annotations,
                    shutdown=child.spec.shutdown)


def pending_rerun(job: ChildJob) -> ChildJob:
    """The child as the parent counts it while a rerun it asked for is not accepted yet: Pending, not ended."""
    return job.model_copy(update={"status": JobStatus(state=JobState(phase=VcJobPhase.PENDING)), "result": None})


def depth_of(jobflow: JobFlow) -> int:
    """How deep ``jobflow`` nests (0: no parent)."""
    text = (jobflow.metadata.labels or {}).get(DEPTH, "0")
    return int(text) if text.isdigit() else 0


def parameters_of(flow: Flow, template: "JobFlowTemplate", *, params: Mapping[str, str], item: Item | None,
                  targets: Mapping[str, str]) -> tuple[list[Parameter], list[str]]:
    """The child's ``spec.parameters``: the template's declared ones, with the flow's values (placeholders
    replaced); and the names the flow sets that the template does not declare."""
    declared = list(template.spec.job_flow.spec.parameters or ())
    names = {parameter.name for parameter in declared}
    given = flow.job_flow.parameters if flow.job_flow else None
    wire = substitute({"jobFlow": {"parameters": [p.to_wire() for p in given or ()]}}, params=params, item=item,
                      targets=targets)
    set_here = {p["name"]: p.get("value") for p in wire["jobFlow"]["parameters"]}
    unknown = [name for name in set_here if name not in names]
    return [Parameter(name=p.name, value=p.value if set_here.get(p.name) is None else set_here[p.name],
                      description=p.description) for p in declared], unknown


def child_manifest(parent: JobFlow, *, flow: Flow, template: "JobFlowTemplate", attempt: int = 1,
                   item: Item | None = None, targets: Mapping[str, str] | None = None,
                   parent_started: bool = False) -> dict[str, Any]:
    """The child JobFlow of attempt ``attempt`` of ``flow`` (of its ``item``), ready to POST."""
    assert flow.job_flow is not None
    parameters, _ = parameters_of(flow, template, params=values(parent), item=item, targets=targets or {})
    run = template.spec.job_flow
    spec = run.spec.model_copy(update={"parameters": parameters} if parameters else {})
    meta = run.metadata
    labels = {**((meta.labels if meta else None) or {}), PARENT: parent.name, PARENT_FLOW: flow.name,
              CHILD_TEMPLATE: template.name, DEPTH: str(depth_of(parent) + 1)}
    annotations = {**((meta.annotations if meta else None) or {})}
    if parent_started or (parent.metadata.annotations or {}).get(PARENT_STARTED) == "true":
        annotations[PARENT_STARTED] = "true"
    return {
        "apiVersion": JOBFLOW.api_version, "kind": JOBFLOW.kind,
        "metadata": {
            "name": attempt_job_name(jobflow=parent.name, flow=flow.name, attempt=attempt,
                                     index=item.index if item else None),
            "namespace": parent.namespace, "labels": labels, "annotations": annotations,
            "ownerReferences": [owner_reference(parent)], "finalizers": [RECORD_FINALIZER],
        },
        "spec": spec.to_wire(),
    }


def shutdown_patch(shutdown: Shutdown) -> dict[str, Any]:
    """The merge patch that stops (or terminates) a child: where a vcjob is aborted."""
    return {"spec": {"shutdown": shutdown.value}}


def suspend_patch(suspend: bool) -> dict[str, Any]:
    """The merge patch that suspends a running child with its parent (marked, so a resume of the parent resumes
    only the children it suspended), or resumes it."""
    if suspend:
        return {"metadata": {"annotations": {SUSPENDED_BY_PARENT: "true"}}, "spec": {"suspend": True}}
    return {"metadata": {"annotations": {SUSPENDED_BY_PARENT: None}}, "spec": {"suspend": None}}


def rerun_patch(request_id: str) -> dict[str, Any]:
    """The merge patch that asks a failed child to rerun its failed flows (:mod:`jobflow_core.dag.reruns`), as
    ``kubectl jobflow retry`` asks: its ``spec.shutdown`` (a stop its parent handed down) and a flow list left by an
    earlier request go with it."""
    return {"metadata": {"annotations": {RERUN: request_id, RERUN_FLOWS: None}}, "spec": {"shutdown": None}}


def outputs_of(jobflow: JobFlow, variables_of: Mapping[str, Mapping[str, Any]]) -> tuple[dict[str, str], list[str]]:
    """``spec.outputs`` worked out: each value with its ``{{params.NAME}}`` and ``{{targets...}}`` placeholders
    replaced from the flows' variables (:func:`jobflow_core.dag.outcomes.target_variables`); and why some have none
    (a key the result lacks: that output is left out, and the parent that reads it says which)."""
    params = values(jobflow)
    found: dict[str, str] = {}
    problems: list[str] = []
    for output in jobflow.spec.outputs or ():
        text = substitute(output.value, params=params)
        known: dict[str, str] = {}
        for ref in references(text):
            if ref.target is None or ref.field is None:
                continue
            value, error = value_of(ref, variables_of.get(ref.target, {}))
            if error is not None:
                problems.append(f'output "{output.name}": {error}')
            else:
                known[ref.text] = value or ""
        if all(ref.text in known for ref in references(text) if ref.target is not None and ref.field is not None):
            found[output.name] = clean(ANY_TARGET_PLACEHOLDER.sub(lambda m: known.get(m.group(1), m.group(0)), text))
    return found, problems


def output_targets(jobflow: JobFlow) -> list[str]:
    """The flows whose results ``spec.outputs`` read."""
    return list(dict.fromkeys(ref.target for output in jobflow.spec.outputs or ()
                              for ref in references(output.value) if ref.target is not None))


NOT_ON_A_CHILD: Final = (("jobTemplate", "job_template"), ("patch", "patch"), ("approval", "approval"))
"""Fields about a flow's own vcjob (or gate), which a child flow does not have."""


def errors(jobflow: JobFlow) -> list[SpecError]:
    """A child flow that also describes a vcjob or a gate, names no template, or sets a parameter twice."""
    found = []
    for flow in jobflow.spec.flows or ():
        child = flow.job_flow
        if child is None:
            continue
        for wire, attribute in NOT_ON_A_CHILD:
            if getattr(flow, attribute) is not None:
                found.append(SpecError(code="InvalidChild", message=f'flow "{flow.name}": {wire} on a child JobFlow '
                                       "flow, which runs no vcjob of its own",
                                       hint=f"drop {wire}, or put it on a flow of its own"))
        if not child.template:
            found.append(SpecError(code="InvalidChild", message=f'flow "{flow.name}": jobFlow.template is empty',
                                   hint="name the JobFlowTemplate the child is made from"))
        names = [parameter.name for parameter in child.parameters or ()]
        for name in dict.fromkeys(name for name in names if names.count(name) > 1):
            found.append(SpecError(code="InvalidChild", message=f'flow "{flow.name}": jobFlow.parameters sets '
                                   f'"{name}" twice', hint="set each parameter once"))
    return found
